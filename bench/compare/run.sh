#!/usr/bin/env bash
# The comparison of toolwire with rmcp (issue #16, item 5), in one command:
#
#   bench/compare/run.sh [ROUNDS]        # builds (crates from the registry), then runs
#   COMPARE_SCALE=0.2 bench/compare/run.sh 1   # a quick pass
#   bench/compare/run.sh servers [ROUNDS] [FILTER]   # the servers side by side (issue #29, item 5)
#   COMPARE_SCALE=0.3 bench/compare/run.sh servers 3  # its quick pass (under 3 minutes)
#
# The servers' comparison takes the TypeScript and Python SDKs from TOOLWIRE_PEERS_DIR
# (tests/peers/install.sh; its peers.env is read); without it their rows are left out.
#
# Client and server share one pinned core (taskset -c CPU, default the last one; COMPARE_CPU
# to choose), each client in its own process, rounds interleaved. Prints a markdown table.
# The target directory is bench/compare/target (or CARGO_TARGET_DIR); delete it after measuring (it is
# large), the lock file pins what was measured.
#
#   bench/compare/run.sh gateway [ROUNDS]   # toolwire serve beside supergateway and mcp-proxy
#
# The gateway comparison (issue #29, item 5; src/bin/gateways.rs) needs gateways/install.sh
# run once (pinned supergateway and mcp-proxy); it builds the `toolwire` CLI (release, feature
# `cli`) unless TOOLWIRE_BIN names one. Everything (load client, gateway, backend) is pinned to
# one core, as above; COMPARE_SCALE=0.3 with 3 rounds is a quick pass (about a minute).
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_INCREMENTAL=0
case "${1:-}" in
gateway)
    cargo build --release --locked --quiet --bin gateways --bin echo_server
    if [ -z "${TOOLWIRE_BIN:-}" ]; then
        cargo build --release --locked --quiet --features cli --bin toolwire --manifest-path ../../Cargo.toml
        export TOOLWIRE_BIN="${CARGO_TARGET_DIR:-../../target}/release/toolwire"
    fi
    [ -x gateways/venv/bin/mcp-proxy ] && [ -d gateways/node_modules/supergateway ] || {
        echo "run bench/compare/gateways/install.sh first" >&2
        exit 2
    }
    cpu=${COMPARE_CPU:-$(($(nproc) - 1))}
    echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); pinned to CPU $cpu" >&2
    taskset -c "$cpu" "${CARGO_TARGET_DIR:-target}/release/gateways" run "${2:-5}"
    echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    exit
    ;;
esac
cargo build --release --locked --quiet --bins
cpu=${COMPARE_CPU:-$(($(nproc) - 1))}
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); pinned to CPU $cpu" >&2
bin=${CARGO_TARGET_DIR:-target}/release/toolwire-compare
case "${1:-}" in
servers)
    if [ -f "${TOOLWIRE_PEERS_DIR:-/nonexistent}/peers.env" ]; then
        set -a; . "$TOOLWIRE_PEERS_DIR/peers.env"; set +a
    fi
    exec taskset -c "$cpu" "$bin" servers "${2:-5}" "${3:-}"
    ;;
esac
exec taskset -c "$cpu" "$bin" run "${1:-3}"
