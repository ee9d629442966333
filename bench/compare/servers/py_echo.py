#!/usr/bin/env python3
"""The official Python SDK's server answering one ``echo`` tool, for the servers side by
side (``toolwire-compare servers``), written as the SDK's documentation shows (``MCPServer``,
a decorated function). PyPI ``mcp`` 2.3.0, installed by tests/peers/install.sh.

    py_echo.py stdio
    py_echo.py http-stateless PORT   # stateless_http=True
    py_echo.py http-sessions PORT    # sessions (Mcp-Session-Id)

HTTP is the SDK's own ``run("streamable-http")`` (uvicorn) on 127.0.0.1, answers as plain
JSON (``json_response=True``).
"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer(name="py-echo", version="0", log_level="WARNING")


@server.tool(structured_output=False, description="Returns the message it is given.")
def echo(message: str) -> str:
    return message


def main(argv: list[str]) -> None:
    mode = argv[0] if argv else "stdio"
    if mode == "stdio":
        server.run("stdio")
    elif mode in ("http-stateless", "http-sessions"):
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=int(argv[1]),
            streamable_http_path="/mcp",
            json_response=True,
            stateless_http=mode == "http-stateless",
        )
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1:])
