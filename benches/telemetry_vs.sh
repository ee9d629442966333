#!/usr/bin/env bash
# What the tracing instrumentation costs with no exporter configured, beside the build before
# it existed (issue #26: "costs nothing measurable on the hot path, a benchmark beside main's
# build"). benches/telemetry.rs measures this build with and without an exporter; this script
# measures this build without one against another revision's build, in the same run:
#
#   benches/telemetry_vs.sh [REV]      # REV defaults to the commit before src/telemetry/ came
#   TOOLWIRE_BENCH_SCALE=0.2 benches/telemetry_vs.sh
#
# For each revision it builds (release) the bundled examples/tool_server.rs and a small driver
# program on that revision's library: the driver makes N sequential McpClient::call_tool calls
# to that revision's tool_server over stdio and prints the microseconds per call. The two
# drivers run in interleaved rounds (7 by default, TOOLWIRE_BENCH_ROUNDS) with every OTEL_*
# variable removed; the medians of the wall time per call and of the CPU time per call (user
# and system, the driver and its tool_server together, by /usr/bin/time) are printed with
# their ratios. The CPU time moves less than the wall time on a loaded machine. Both builds
# live in a temporary directory removed at the end, or in TOOLWIRE_BENCH_WORK=DIR, kept and
# reused (a second run only measures). Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."

rev=${1:-}
if [ -z "$rev" ]; then
  first=$(git log --format=%H --diff-filter=A -- src/telemetry/mod.rs | tail -n 1)
  rev=$(git rev-parse "$first^")
fi
base_commit=$(git rev-parse --short "$rev")
scale=${TOOLWIRE_BENCH_SCALE:-1}
calls=$(awk -v s="$scale" 'BEGIN { n = int(20000 * s); print (n < 1000 ? 1000 : n) }')
rounds=${TOOLWIRE_BENCH_ROUNDS:-7}

if [ -n "${TOOLWIRE_BENCH_WORK:-}" ]; then
  work=$TOOLWIRE_BENCH_WORK
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
# Extracted once per revision (a kept DIR is not rebuilt when run again).
if [ "$(cat "$work/base/.toolwire-rev" 2>/dev/null)" != "$base_commit" ]; then
  rm -rf "$work/base"
  mkdir -p "$work/base"
  git archive "$rev" | tar -x -C "$work/base"
  echo "$base_commit" > "$work/base/.toolwire-rev"
fi

# The driver: the same source for both revisions, on each one's library.
driver() {
  local name=$1 library=$2
  mkdir -p "$work/$name/src"
  cat > "$work/$name/Cargo.toml" <<EOF
[package]
name = "$name"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
toolwire = { path = "$library" }
serde_json = "1"

[workspace]
EOF
  cat > "$work/$name/src/main.rs" <<'EOF'
use std::time::Instant;

use serde_json::json;
use toolwire::{McpClient, McpConfig, StdioConfig};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let count: usize = args[2].parse().expect("a count");
    let client = McpClient::connect_stdio(StdioConfig::new(&args[1]), McpConfig::default())
        .expect("connect");
    for _ in 0..200 {
        client.call_tool("echo", json!({"message": "warm"})).expect("warm-up call");
    }
    let started = Instant::now();
    for id in 0..count {
        let result = client
            .call_tool("echo", json!({"message": format!("m{id}")}))
            .expect("call");
        assert!(!result.is_error);
    }
    println!("{}", started.elapsed().as_secs_f64() * 1e6 / count as f64);
    client.close().expect("close");
}
EOF
  # Both drivers take the same dependency versions: this tree's lock file.
  cp Cargo.lock "$work/$name/Cargo.lock"
}
driver driver-head "$PWD"
driver driver-base "$work/base"

echo "building this tree and $base_commit (release, in $work)" >&2
CARGO_TARGET_DIR="$work/target-head" cargo build --quiet --release --example tool_server
CARGO_TARGET_DIR="$work/target-head" cargo build --quiet --release \
  --manifest-path "$work/driver-head/Cargo.toml"
(cd "$work/base" && CARGO_TARGET_DIR="$work/target-base" cargo build --quiet --release \
  --example tool_server)
CARGO_TARGET_DIR="$work/target-base" cargo build --quiet --release \
  --manifest-path "$work/driver-base/Cargo.toml"

run() {
  local times="$work/times-$1"
  env $(env | sed -n 's/^\(OTEL_[A-Z_]*\)=.*/-u \1/p') /usr/bin/time -f '%U %S' -o "$times" \
    "$work/target-$1/release/driver-$1" "$work/target-$1/release/examples/tool_server" "$calls" \
    > "$work/wall-$1"
  awk -v c="$calls" -v w="$(cat "$work/wall-$1")" '{ printf "%s %.3f\n", w, ($1 + $2) * 1e6 / c }' "$times"
}
head_wall=()
head_cpu=()
base_wall=()
base_cpu=()
for _ in $(seq "$rounds"); do
  read -r wall cpu < <(run base)
  base_wall+=("$wall")
  base_cpu+=("$cpu")
  read -r wall cpu < <(run head)
  head_wall+=("$wall")
  head_cpu+=("$cpu")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
bw=$(median "${base_wall[@]}")
hw=$(median "${head_wall[@]}")
bc=$(median "${base_cpu[@]}")
hc=$(median "${head_cpu[@]}")
echo "sequential McpClient::call_tool to tool_server over stdio, $calls calls, medians of $rounds interleaved rounds, no exporter; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| build | wall µs per call | CPU µs per call (both processes) |\n|---|---|---|\n'
printf '| %s (before the instrumentation) | %.2f | %.2f |\n' "$base_commit" "$bw" "$bc"
printf '| this tree (instrumented, no exporter) | %.2f | %.2f |\n' "$hw" "$hc"
awk -v bw="$bw" -v hw="$hw" -v bc="$bc" -v hc="$hc" -v r="$base_commit" \
  'BEGIN { printf "ratio this tree / %s: wall %.3f, CPU %.3f\n", r, hw / bw, hc / bc }'
