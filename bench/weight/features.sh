#!/usr/bin/env bash
# What each cargo feature of toolwire costs: the program of bench/weight/toolwire built clean
# (release) with toolwire's default features off and one feature set on, for each set below.
# Prints a markdown table: the crates of the program's normal dependency tree, the crates
# compiled (cargo's `Compiling` lines, build scripts' and proc-macros' crates included), and
# the CPU time of the clean build (user + sys from /usr/bin/time; one run each, sources
# fetched beforehand, the build offline). The versions are toolwire's own Cargo.lock.
#
#   bench/weight/features.sh [FEATURE-SET...]   # default: none http server http,server websocket oauth rustls cli
#
# Each build's target directory is removed after it.
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
if [ $# -gt 0 ]; then sets=("$@"); else sets=(none http server http,server websocket oauth rustls cli); fi
export CARGO_INCREMENTAL=0 CARGO_TERM_COLOR=never
work=$(mktemp -d "${TMPDIR:-/tmp}/toolwire-features.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$root" && cargo fetch --locked --quiet)

echo "| features | crates in the normal tree | crates compiled | clean release build, CPU time |"
echo "|---|---|---|---|"
for set in "${sets[@]}"; do
    project=$work/project
    rm -rf "$project"
    mkdir -p "$project/src"
    cp toolwire/src/main.rs "$project/src/main.rs"
    cp "$root/Cargo.lock" "$project/Cargo.lock"
    features=""
    if [ "$set" != none ]; then features=$(echo "$set" | sed 's/[^,]*/"&"/g; s/,/, /g'); fi
    cat >"$project/Cargo.toml" <<EOF
[package]
name = "weight-toolwire"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
toolwire = { path = "$root", default-features = false, features = [$features] }
serde_json = "1"

[workspace]
EOF
    if ! (cd "$project" && CARGO_TARGET_DIR=$project/target /usr/bin/time -f '%U %S' \
        -o "$work/time" cargo build --release --offline 2>"$work/log"); then
        cat "$work/log" >&2
        exit 1
    fi
    read -r user sys <"$work/time"
    compiled=$(grep -c '^ *Compiling ' "$work/log")
    tree=$( (cd "$project" && cargo tree -e normal --prefix none --offline) |
        sed 's/ (\*)$//; s/ (proc-macro)$//' | sort -u | wc -l)
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
    label=$set
    [ "$set" = none ] && label="none (\`default-features = false\`)"
    [ "$set" = http,server ] && label="http, server (the default)"
    echo "| $label | $tree | $compiled | $cpu s |"
    rm -rf "$project/target"
done
