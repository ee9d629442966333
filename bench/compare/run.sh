#!/usr/bin/env bash
# The comparison of toolwire with rmcp (issue #16, item 5), in one command:
#
#   bench/compare/run.sh [ROUNDS]        # builds (crates from the registry), then runs
#   COMPARE_SCALE=0.2 bench/compare/run.sh 1   # a quick pass
#
# Client and server share one pinned core (taskset -c CPU, default the last one; COMPARE_CPU
# to choose), each client in its own process, rounds interleaved. Prints a markdown table.
# The target directory stays under bench/compare/target; delete it after measuring (it is
# large), the lock file pins what was measured.
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_INCREMENTAL=0
cargo build --release --locked --quiet --bins
cpu=${COMPARE_CPU:-$(($(nproc) - 1))}
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); pinned to CPU $cpu" >&2
exec taskset -c "$cpu" target/release/toolwire-compare run "${1:-3}"
