#!/usr/bin/env bash
# Runs a frozen MCP conformance requirement set (suite 0.2.0-alpha.12) for the client leg,
# against toolwire's conformance client, judged against the baseline of scenarios not passed
# yet (tests/peers/conformance-baseline-REVISION.yml, which may only shrink).
#
#   tests/peers/conformance-requirements.sh PEERS_DIR CLIENT_BINARY REVISION
#
# REVISION is 2025-11-25 or 2026-07-28. Exits 0 when every scored scenario passes or is in
# the baseline, and no baseline entry passes (a stale entry fails the run: remove it).
set -euo pipefail

PEERS_DIR=${1:?usage: conformance-requirements.sh PEERS_DIR CLIENT_BINARY REVISION}
CLIENT=${2:?usage: conformance-requirements.sh PEERS_DIR CLIENT_BINARY REVISION}
REVISION=${3:?usage: conformance-requirements.sh PEERS_DIR CLIENT_BINARY REVISION}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BASELINE="$HERE/conformance-baseline-$REVISION.yml"
[ -f "$BASELINE" ] || { echo "conformance: no baseline $BASELINE" >&2; exit 2; }

# shellcheck disable=SC1091
. "$PEERS_DIR/peers.env"
[ -x "$TOOLWIRE_NODE22" ] || { echo "conformance: no Node 22 at $TOOLWIRE_NODE22" >&2; exit 2; }
[ -f "$TOOLWIRE_CONFORMANCE_NEXT_JS" ] || { echo "conformance: suite 0.2.0 missing at $TOOLWIRE_CONFORMANCE_NEXT_JS" >&2; exit 2; }
CLIENT="$(cd "$(dirname "$CLIENT")" && pwd)/$(basename "$CLIENT")"
case "$CLIENT" in *" "*) echo "conformance: the client path must not contain spaces" >&2; exit 2 ;; esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
(cd "$work" && PATH="$(dirname "$TOOLWIRE_NODE22"):$PATH" "$TOOLWIRE_NODE22" "$TOOLWIRE_CONFORMANCE_NEXT_JS" client \
    --command "$CLIENT" --requirements "$REVISION" --expected-failures "$BASELINE" -o "$work/out") \
    >"$work/log" 2>&1 || status=$?
# The per-scenario lines, the totals and the baseline's verdict.
sed -n '/=== SUITE SUMMARY ===/,$p' "$work/log"
exit "$status"
