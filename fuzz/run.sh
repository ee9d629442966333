#!/usr/bin/env bash
# Builds every fuzz target and runs each for SECONDS (default 60); exits non-zero when any
# target crashed (the others still run).
#
#   fuzz/run.sh [SECONDS]          explore: a time limit, a random seed (a new run finds new inputs)
#   fuzz/run.sh --runs N [SEED [SECONDS]]
#                                  the gate: at most N inputs per target from SEED (default 1),
#                                  each target stopping at SECONDS too when given. A fixed seed
#                                  and count make runs alike, not identical (hash maps in the
#                                  code under test are seeded at random, which moves coverage),
#                                  so the long exploring runs by hand are what keep the gate
#                                  quiet: each one's finds go into regressions/ once fixed.
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). Runs on the stable toolchain: cargo-fuzz's
# nightly flags (-Zsanitizer=address) are allowed by RUSTC_BOOTSTRAP=1.
#
# The committed seeds in fuzz/corpus/<target>/ (and fuzz/regressions/<target>/) are read but
# never written: new inputs go to a scratch corpus (fuzz/target/corpus/<target>/, ignored by
# git, kept between runs so coverage accumulates). A crash leaves its input in
# fuzz/artifacts/<target>/; keep it in fuzz/regressions/<target>/ once fixed, where
# tests/jsonrpc/roundtrip_fuzz_inputs.rs replays it (see fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")"

runs=""
seed=1
if [ "${1:-}" = "--runs" ]; then
    runs="${2:?fuzz/run.sh: --runs needs a count}"
    seed="${3:-1}"
    cap="${4:-}"
else
    seconds="${1:-60}"
fi
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: cargo-fuzz is missing; install it with: cargo install cargo-fuzz" >&2
    exit 2
fi

targets=$(cargo fuzz list)
echo "fuzz targets: $(echo $targets)"
cargo fuzz build

failed=()
for target in $targets; do
    scratch="target/corpus/$target"
    mkdir -p "$scratch" "corpus/$target"
    if [ -n "$runs" ]; then
        # The scratch corpus is left out too: what an earlier run found would change the inputs.
        scratch="$(mktemp -d)"
        args=(-runs="$runs" -seed="$seed" -reload=0 -print_final_stats=1)
        budget="$runs inputs from seed $seed"
        if [ -n "$cap" ]; then
            args+=(-max_total_time="$cap")
            budget="$budget, at most ${cap}s"
        fi
    else
        args=(-max_total_time="$seconds" -print_final_stats=1)
        budget="${seconds}s"
    fi
    if [ -f "dict/$target.dict" ]; then
        args+=(-dict="dict/$target.dict")
    fi
    echo
    echo "==> $target: $budget"
    seeds=("corpus/$target")
    if [ -d "regressions/$target" ]; then
        seeds+=("regressions/$target")
    fi
    if ! cargo fuzz run "$target" "$scratch" "${seeds[@]}" -- "${args[@]}"; then
        failed+=("$target")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz/run.sh: crash or failure in: ${failed[*]} (inputs under fuzz/artifacts/)" >&2
    exit 1
fi
if [ -n "$runs" ]; then
    echo "fuzz/run.sh: every target ran $runs inputs from seed $seed without a crash"
else
    echo "fuzz/run.sh: every target ran ${seconds}s without a crash"
fi
