#!/usr/bin/env bash
# Weighs one program built two ways: a minimal stdio MCP client (start a server, list its
# tools, call `add`) on toolwire (bench/weight/toolwire) and on rmcp with tokio
# (bench/weight/rmcp), each a project of its own with only the features it needs and a
# committed lock file. For each, RUNS times, alternating: a clean release build in a fresh
# target directory (CPU time = user + sys of cargo and everything it ran, from /usr/bin/time;
# sources fetched beforehand, the build itself offline), the crates compiled (cargo's
# `Compiling` lines, build scripts' and proc-macros' crates included), the crates of the
# program's normal dependency tree, and the binary's size as built and stripped. Both
# binaries are then run against the bundled tool server, so what was weighed is known to work.
# Prints a markdown table: the median of the runs, with their range.
#
#   bench/weight/run.sh [RUNS]     # RUNS defaults to 3; about 2 minutes of CPU per build
#
# The target directories are removed afterwards (each is a few hundred MB); the lock files stay.
set -euo pipefail
cd "$(dirname "$0")"
runs=${1:-3}
export CARGO_INCREMENTAL=0 CARGO_TERM_COLOR=never
work=$(mktemp -d "${TMPDIR:-/tmp}/toolwire-weight.XXXXXX")
trap 'rm -rf "$work"' EXIT
programs=(toolwire rmcp)

for program in "${programs[@]}"; do
    (cd "$program" && cargo fetch --locked --quiet)
done

# The server both programs talk to: the main crate's tool_server, built once (not weighed).
server=$(cd ../.. && pwd)/target/debug/examples/tool_server
if [ ! -x "$server" ]; then
    (cd ../.. && cargo build --quiet --example tool_server)
fi

crates_in_tree() {
    (cd "$1" && cargo tree -e normal --prefix none --locked --offline) |
        sed 's/ (\*)$//; s/ (proc-macro)$//' | sort -u | wc -l
}

for ((run = 1; run <= runs; run++)); do
    for program in "${programs[@]}"; do
        target=$work/target-$program
        rm -rf "$target"
        if ! (cd "$program" && CARGO_TARGET_DIR=$target /usr/bin/time -f '%U %S %e' \
            -o "$work/time" cargo build --release --locked --offline 2>"$work/log"); then
            cat "$work/log" >&2
            exit 1
        fi
        read -r user sys wall <"$work/time"
        compiled=$(grep -c '^ *Compiling ' "$work/log")
        binary=$target/release/weight-$program
        strip -o "$work/stripped" "$binary"
        size=$(stat -c %s "$binary")
        stripped=$(stat -c %s "$work/stripped")
        output=$("$binary" "$server")
        case $output in
            *"add -> "*42*) ;;
            *) echo "weight-$program did not call add: $output" >&2; exit 1 ;;
        esac
        echo "$program $run $user $sys $wall $compiled $size $stripped" >>"$work/results"
        echo "run $run, $program: cpu $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') s, wall $wall s, $compiled crates compiled, $size B ($stripped B stripped)" >&2
        rm -rf "$target"
    done
done

# One row per program: the median and range of each measure over the runs.
echo
echo "Median of $runs clean release builds (range in brackets); $(nproc) CPUs, $(rustc --version | cut -d' ' -f1-2), load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| program | CPU time (user+sys) | wall time | crates compiled | crates in the normal tree | binary | stripped |"
echo "|---|---|---|---|---|---|---|"
for program in "${programs[@]}"; do
    tree=$(crates_in_tree "$program")
    label=$program
    [ "$program" = toolwire ] && label="toolwire $(sed -n 's/^version = "\(.*\)"/\1/p' ../../Cargo.toml | head -1) (default-features = false)"
    [ "$program" = rmcp ] && label="rmcp $(sed -n 's/^rmcp = { version = "=\([^"]*\)".*/\1/p' rmcp/Cargo.toml) + tokio (client, transport-child-process)"
    awk -v program="$program" -v label="$label" -v tree="$tree" '
        function median(values, n,    sorted, i, j, t) {
            for (i = 1; i <= n; i++) sorted[i] = values[i]
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                if (sorted[j] < sorted[i]) { t = sorted[i]; sorted[i] = sorted[j]; sorted[j] = t }
            lo = sorted[1]; hi = sorted[n]
            return (n % 2) ? sorted[(n + 1) / 2] : (sorted[n / 2] + sorted[n / 2 + 1]) / 2
        }
        $1 == program { n++; cpu[n] = $3 + $4; wall[n] = $5; compiled[n] = $6; size[n] = $7 / 1e6; stripped[n] = $8 / 1e6 }
        END {
            m = median(cpu, n); c = sprintf("%.1f s [%.1f–%.1f]", m, lo, hi)
            m = median(wall, n); w = sprintf("%.1f s [%.1f–%.1f]", m, lo, hi)
            m = median(compiled, n); k = sprintf("%d", m)
            m = median(size, n); s = sprintf("%.2f MB", m)
            m = median(stripped, n); t = sprintf("%.2f MB", m)
            printf "| %s | %s | %s | %s | %d | %s | %s |\n", label, c, w, k, tree, s, t
        }' "$work/results"
done
