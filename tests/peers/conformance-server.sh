#!/usr/bin/env bash
# Runs a frozen MCP conformance requirement set (suite 0.2.0-alpha.12) for the server leg,
# against toolwire's conformance server (examples/conformance_server.rs), on 127.0.0.1.
#
#   tests/peers/conformance-server.sh PEERS_DIR SERVER_BINARY REVISION [TOOLWIRE_BINARY]
#   tests/peers/conformance-server.sh PEERS_DIR URL REVISION [TOOLWIRE_BINARY]
#
# With TOOLWIRE_BINARY, the suite runs against `toolwire serve --http` in front of the server
# (an HTTP backend, policy `"namespace": "{tool}"`, so the names are the server's) instead of
# the server itself, and the same scenarios must pass: the gateway is held to what the
# server it fronts passes (the unscored ones below and the Skills scenarios included). A
# scenario the gateway does not pass yet is named in
# tests/peers/conformance-gateway-baseline-REVISION.txt (one a line; the file may only
# shrink): it is reported and decides nothing, and the run fails when one named there passes.
#
# Given a URL (http://…) instead of a binary, the suite runs against a server already
# serving there (several instances behind a load balancer, say) and nothing is started.
# REVISION is 2025-11-25 or 2026-07-28; one URL serves both. Every scored scenario must pass
# (there is no baseline: both sets pass in full). The scenarios that are not scored (the tasks
# extension, pending ones) run too, and every one of them passes today: each is named below
# (UNSCORED_PASSING), and the run fails when one of those stops passing, so an extension
# regresses no more quietly than a scored scenario. The Skills extension's server scenarios
# (SEP-2640) are in no requirement set (the suite's `pending` ones): at 2026-07-28 each runs
# by itself (`--scenario`, the 2026-07-28 wire) and must pass every check it has, none
# skipped, failed or warned (SKILLS_SCENARIOS). The server is started here on a port the
# system picks and stopped by its PID.
set -euo pipefail

PEERS_DIR=${1:?usage: conformance-server.sh PEERS_DIR SERVER_BINARY REVISION}
SERVER=${2:?usage: conformance-server.sh PEERS_DIR SERVER_BINARY REVISION}
REVISION=${3:?usage: conformance-server.sh PEERS_DIR SERVER_BINARY REVISION}
GATEWAY=${4:-}

# shellcheck disable=SC1091
. "$PEERS_DIR/peers.env"
[ -x "$TOOLWIRE_NODE22" ] || { echo "conformance: no Node 22 at $TOOLWIRE_NODE22" >&2; exit 2; }
[ -f "$TOOLWIRE_CONFORMANCE_NEXT_JS" ] || { echo "conformance: suite 0.2.0 missing at $TOOLWIRE_CONFORMANCE_NEXT_JS" >&2; exit 2; }
case "$SERVER" in
    http://* | https://*) url=$SERVER ;;
    *) url= ; [ -x "$SERVER" ] || { echo "conformance: no server binary at $SERVER" >&2; exit 2; } ;;
esac
[ -z "$GATEWAY" ] || [ -x "$GATEWAY" ] || { echo "conformance: no toolwire binary at $GATEWAY" >&2; exit 2; }

# The unscored scenarios that pass today, by revision; a scenario added to a set unscored is
# reported and decides nothing until it is named here.
case "$REVISION" in
    2025-11-25) UNSCORED_PASSING="server-session-lifecycle json-schema-2020-12 server-sse-polling" ;;
    2026-07-28) UNSCORED_PASSING="tasks-lifecycle tasks-capability-negotiation tasks-wire-fields
        tasks-request-state-removal tasks-mrtr-input tasks-request-headers
        tasks-dispatch-and-envelope tasks-status-notifications tasks-required-task-error
        tasks-mrtr-composition json-schema-2020-12 http-header-validation
        http-custom-header-server-validation" ;;
    *) UNSCORED_PASSING="" ;;
esac
SKILLS_SCENARIOS=""
[ "$REVISION" != 2026-07-28 ] || SKILLS_SCENARIOS="sep-2640-skills-manifest sep-2640-skills-directory
    sep-2640-skills-enumeration"

work=$(mktemp -d)
server_pid=
gateway_pid=
cleanup() {
    if [ -n "$gateway_pid" ]; then
        kill "$gateway_pid" 2>/dev/null || true
        wait "$gateway_pid" 2>/dev/null || true
    fi
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# The server holds its stdin open (a FIFO we keep a descriptor on) and prints its URL.
touch "$work/server.err"
if [ -z "$url" ]; then
    mkfifo "$work/stdin"
    "$SERVER" --port 0 --until-eof <"$work/stdin" >"$work/server.out" 2>"$work/server.err" &
    server_pid=$!
    exec 9>"$work/stdin"
    for _ in $(seq 1 200); do
        url=$(sed -n 's/^listening on //p' "$work/server.out")
        [ -n "$url" ] && break
        if ! kill -0 "$server_pid" 2>/dev/null; then
            cat "$work/server.err" >&2
            echo "conformance: the server exited before listening" >&2
            exit 2
        fi
        sleep 0.05
    done
fi
[ -n "$url" ] || { echo "conformance: the server did not say where it listens" >&2; exit 2; }
echo "conformance: server at $url, revision $REVISION"

# Through the gateway: `toolwire serve --http` on a port the system picks, the server its one
# HTTP backend; it says where it listens on stderr once bound.
BASELINE=""
if [ -n "$GATEWAY" ]; then
    printf '{"mcpServers": {"conformance": {"type": "http", "url": "%s"}},\n "toolwire": {"namespace": "{tool}"}}\n' \
        "$url" >"$work/gateway.json"
    # Not holding the server's stdin (descriptor 9), so that closing it stops the server.
    "$GATEWAY" --config "$work/gateway.json" serve --http 127.0.0.1:0 </dev/null 9>&- \
        >"$work/gateway.out" 2>"$work/gateway.err" &
    gateway_pid=$!
    gateway_url=
    for _ in $(seq 1 200); do
        gateway_url=$(sed -n 's/^toolwire: listening on //p' "$work/gateway.err")
        [ -n "$gateway_url" ] && break
        if ! kill -0 "$gateway_pid" 2>/dev/null; then
            cat "$work/gateway.err" >&2
            echo "conformance: the gateway exited before listening" >&2
            exit 2
        fi
        sleep 0.05
    done
    [ -n "$gateway_url" ] || { echo "conformance: the gateway did not say where it listens" >&2; exit 2; }
    echo "conformance: gateway at $gateway_url in front of it"
    url=$gateway_url
    baseline_file="$(dirname "$0")/conformance-gateway-baseline-$REVISION.txt"
    [ ! -f "$baseline_file" ] || BASELINE=$(grep -v '^#' "$baseline_file" | tr '\n' ' ' || true)
fi

status=0
(cd "$work" && PATH="$(dirname "$TOOLWIRE_NODE22"):$PATH" "$TOOLWIRE_NODE22" "$TOOLWIRE_CONFORMANCE_NEXT_JS" server \
    --url "$url" --requirements "$REVISION" -o "$work/out") >"$work/log" 2>&1 || status=$?
# The per-scenario lines, the totals, and the not-scored report.
sed -n '/=== SUMMARY ===/,$p' "$work/log"
# Through the gateway, a scenario of the baseline decides nothing, and one that passes must
# leave it (the baseline only shrinks).
if [ -n "$BASELINE" ]; then
    failing=$(sed -n '/=== SUMMARY ===/,/^Not scored/s/^✗ \([^:]*\):.*/\1/p' "$work/log" | sort -u)
    unexpected=""
    for scenario in $failing; do
        case " $BASELINE " in *" $scenario "*) ;; *) unexpected="$unexpected $scenario" ;; esac
    done
    for scenario in $BASELINE; do
        if grep -q "^✓ $scenario: " "$work/log"; then
            echo "conformance: $scenario passes through the gateway now at $REVISION: take it out of $baseline_file" >&2
            unexpected="$unexpected $scenario"
        fi
    done
    if [ "$status" -ne 0 ] && [ -z "$unexpected" ]; then
        echo "conformance: failing through the gateway, all in the baseline:" $failing
        status=0
    elif [ -n "$unexpected" ] && [ "$status" -eq 0 ]; then
        status=1
    fi
fi
if [ "$status" -ne 0 ]; then
    echo "conformance: scored server scenarios failed at $REVISION (suite exit $status)" >&2
    tail -n 40 "$work/server.err" >&2 || true
fi
for scenario in $UNSCORED_PASSING; do
    case " $BASELINE " in *" $scenario "*) continue ;; esac
    if ! grep -q "^✓ $scenario: " "$work/log"; then
        echo "conformance: the unscored scenario $scenario passed before and does not now at $REVISION" >&2
        grep "^. $scenario: " "$work/log" >&2 || echo "conformance: ($scenario did not run)" >&2
        [ "$status" -ne 0 ] || status=1
    fi
done
for scenario in $SKILLS_SCENARIOS; do
    log="$work/$scenario.log"
    scenario_status=0
    (cd "$work" && PATH="$(dirname "$TOOLWIRE_NODE22"):$PATH" "$TOOLWIRE_NODE22" "$TOOLWIRE_CONFORMANCE_NEXT_JS" \
        server --url "$url" --scenario "$scenario") >"$log" 2>&1 || scenario_status=$?
    summary=$(grep -E 'Passed: [0-9]+/[0-9]+' "$log" | tail -n 1 || true)
    total=$(sed -nE 's/.*Passed: ([0-9]+)\/([0-9]+).*/\2/p' <<<"$summary")
    passed=$(sed -nE 's/.*Passed: ([0-9]+)\/([0-9]+).*/\1/p' <<<"$summary")
    bad=$(sed -nE 's/.*, ([0-9]+) failed, ([0-9]+) warnings.*/\1+\2/p' <<<"$summary")
    if [ "$scenario_status" -eq 0 ] && [ -n "$total" ] && [ "$total" -gt 0 ] && [ "$passed" = "$total" ] \
        && [ "$((bad))" -eq 0 ] && ! grep -q 'SKIPPED' "$log"; then
        echo "✓ $scenario (extension, alone): $summary"
    else
        echo "conformance: the extension scenario $scenario does not pass every check at $REVISION (exit $scenario_status; ${summary:-no summary})" >&2
        sed 's/^/    /' "$log" | tail -n 40 >&2
        [ "$status" -ne 0 ] || status=1
    fi
done
# Stop the gateway (Ctrl-C), then close the server's stdin: it stops by itself.
if [ -n "$gateway_pid" ]; then
    kill -INT "$gateway_pid" 2>/dev/null || true
    wait "$gateway_pid" 2>/dev/null || true
    gateway_pid=
fi
if [ -n "$server_pid" ]; then
    exec 9>&-
    wait "$server_pid" 2>/dev/null || true
    server_pid=
fi
exit "$status"
