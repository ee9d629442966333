#!/usr/bin/env bash
# Installs the two gateways toolwire's is compared with (issue #29, item 5), each pinned to
# the exact release the figures in BENCHMARKS.md are for:
#
#   bench/compare/gateways/install.sh [DIR]     # DIR defaults to bench/compare/gateways
#
# * supergateway (npm), into DIR/node_modules: DIR/node_modules/.bin/supergateway
# * mcp-proxy (PyPI, github.com/sparfenyuk/mcp-proxy), into the venv DIR/venv:
#   DIR/venv/bin/mcp-proxy
#
# Needs npm (Node ≥ 20) and python3 (≥ 3.10) with venv; reaches the two registries.
set -euo pipefail
SUPERGATEWAY_VERSION=4.0.0
MCP_PROXY_VERSION=0.13.0
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here}
mkdir -p "$dir"
cd "$dir"
# package-lock.json pins what supergateway pulls in.
[ "$dir" = "$here" ] || cp "$here/package.json" "$here/package-lock.json" .
npm ci --no-audit --no-fund >&2
[ "$(node -p 'require("supergateway/package.json").version')" = "$SUPERGATEWAY_VERSION" ]
[ -x venv/bin/python ] || python3 -m venv venv
# constraints.txt pins what mcp-proxy pulls in to what was measured (pip freeze of the venv).
venv/bin/pip install --quiet --disable-pip-version-check -c "$here/constraints.txt" "mcp-proxy==$MCP_PROXY_VERSION" >&2
echo "supergateway $(node -e 'console.log(require("supergateway/package.json").version)'): $dir/node_modules/.bin/supergateway"
echo "mcp-proxy $(venv/bin/python -c 'import importlib.metadata as m; print(m.version("mcp-proxy"))'): $dir/venv/bin/mcp-proxy"
