#!/usr/bin/env bash
# Runs the MCP conformance suite's (0.2.0-alpha.12) client extension scenarios (the six
# authorization extensions and the four of Skills, SEP-2640) against toolwire's conformance
# client, one `client --scenario NAME` run each. The requirement sets list them as not
# scored, or not at all, so nothing else would fail on them: this script does.
#
#   tests/peers/conformance-extensions.sh PEERS_DIR CLIENT_BINARY [SCENARIO...]
#
# A scenario passes when the run exits 0 with at least one check and no failure, warning or
# skipped check (`--scenario` itself demands the first three). Exits non-zero unless every scenario passed.
set -euo pipefail

PEERS_DIR=${1:?usage: conformance-extensions.sh PEERS_DIR CLIENT_BINARY [SCENARIO...]}
CLIENT=${2:?usage: conformance-extensions.sh PEERS_DIR CLIENT_BINARY [SCENARIO...]}
shift 2
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(
  auth/client-credentials-jwt auth/client-credentials-basic auth/enterprise-managed-authorization
  auth/dpop auth/dpop-nonce auth/wif-jwt-bearer
  sep-2640-client-no-prefetch sep-2640-client-verify-digest sep-2640-client-verify-size
  sep-2640-client-verify-frontmatter
)

# shellcheck disable=SC1091
. "$PEERS_DIR/peers.env"
[ -x "$TOOLWIRE_NODE22" ] || { echo "conformance: no Node 22 at $TOOLWIRE_NODE22" >&2; exit 2; }
[ -f "$TOOLWIRE_CONFORMANCE_NEXT_JS" ] || { echo "conformance: suite 0.2.0 missing at $TOOLWIRE_CONFORMANCE_NEXT_JS" >&2; exit 2; }
[ -x "$CLIENT" ] || { echo "conformance: client $CLIENT is not executable" >&2; exit 2; }
CLIENT="$(cd "$(dirname "$CLIENT")" && pwd)/$(basename "$CLIENT")"
case "$CLIENT" in *" "*) echo "conformance: the client path must not contain spaces" >&2; exit 2 ;; esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
for scenario in "${SCENARIOS[@]}"; do
  log="$work/$(echo "$scenario" | tr / _).log"
  status=0
  (cd "$work" && PATH="$(dirname "$TOOLWIRE_NODE22"):$PATH" "$TOOLWIRE_NODE22" "$TOOLWIRE_CONFORMANCE_NEXT_JS" client \
      --command "$CLIENT" --scenario "$scenario" --timeout 60000) >"$log" 2>&1 || status=$?
  summary=$(grep -E 'Passed: [0-9]+/[0-9]+' "$log" | tail -n 1 || true)
  total=$(sed -nE 's/.*Passed: [0-9]+\/([0-9]+).*/\1/p' <<<"$summary")
  bad=$(sed -nE 's/.*, ([0-9]+) failed, ([0-9]+) warnings.*/\1+\2/p' <<<"$summary")
  if [ "$status" -eq 0 ] && [ -n "$total" ] && [ "$total" -gt 0 ] && [ "$((bad))" -eq 0 ] \
      && ! grep -q 'SKIPPED' "$log"; then
    echo "PASS $scenario ($summary)"
    passed=$((passed + 1))
  else
    echo "FAIL $scenario (exit $status; ${summary:-no summary})"
    sed 's/^/    /' "$log" | tail -n 40
    failed=$((failed + 1))
  fi
done
echo "conformance extensions: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
