#!/usr/bin/env bash
# Runs MCP conformance client scenarios against toolwire's conformance client.
#
#   tests/peers/conformance.sh PEERS_DIR CLIENT_BINARY [SCENARIO...]
#
# PEERS_DIR is a folder prepared by tests/peers/install.sh (it holds peers.env). Each scenario
# runs the suite's test server and hands its URL to CLIENT_BINARY as the last argument. A
# scenario passes only when the suite reports at least one check, no failure and no warning
# ("Passed: 0/0" is a failure: the suite prints it for a client that never connected).
# Exits non-zero unless every scenario passed.
set -euo pipefail

PEERS_DIR=${1:?usage: conformance.sh PEERS_DIR CLIENT_BINARY [SCENARIO...]}
CLIENT=${2:?usage: conformance.sh PEERS_DIR CLIENT_BINARY [SCENARIO...]}
shift 2
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(initialize tools_call sse-retry elicitation-sep1034-client-defaults)

# shellcheck disable=SC1091
. "$PEERS_DIR/peers.env"
[ -x "$TOOLWIRE_NODE22" ] || { echo "conformance: no Node 22 at $TOOLWIRE_NODE22" >&2; exit 2; }
[ -f "$TOOLWIRE_CONFORMANCE_JS" ] || { echo "conformance: suite missing at $TOOLWIRE_CONFORMANCE_JS" >&2; exit 2; }
[ -x "$CLIENT" ] || { echo "conformance: client $CLIENT is not executable" >&2; exit 2; }
# The suite runs from a scratch folder and splits the command on spaces: an absolute path
# without spaces is needed.
CLIENT="$(cd "$(dirname "$CLIENT")" && pwd)/$(basename "$CLIENT")"
case "$CLIENT" in *" "*) echo "conformance: the client path must not contain spaces" >&2; exit 2 ;; esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
for scenario in "${SCENARIOS[@]}"; do
  log="$work/$scenario.log"
  status=0
  # The suite runs the client command through a shell, appending the server URL.
  (cd "$work" && "$TOOLWIRE_NODE22" "$TOOLWIRE_CONFORMANCE_JS" client \
      --command "$CLIENT" --scenario "$scenario" --timeout 60000) >"$log" 2>&1 || status=$?
  summary=$(grep -E 'Passed: [0-9]+/[0-9]+' "$log" | tail -n 1 || true)
  total=$(sed -nE 's/.*Passed: [0-9]+\/([0-9]+).*/\1/p' <<<"$summary")
  bad=$(sed -nE 's/.*, ([0-9]+) failed, ([0-9]+) warnings.*/\1+\2/p' <<<"$summary")
  if [ "$status" -eq 0 ] && [ -n "$total" ] && [ "$total" -gt 0 ] && [ "$((bad))" -eq 0 ]; then
    echo "PASS $scenario ($summary)"
    passed=$((passed + 1))
  else
    echo "FAIL $scenario (exit $status; ${summary:-no summary})"
    sed 's/^/    /' "$log" | tail -n 40
    failed=$((failed + 1))
  fi
done
echo "conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
