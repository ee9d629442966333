#!/usr/bin/env python3
"""A small MCP server used as an interop peer by toolwire's tests.

Built on the official Python SDK (PyPI ``mcp`` 2.3.0, ``MCPServer`` API).

    py_server.py stdio
    py_server.py http PORT [--json] [--stateless]
    py_server.py sse PORT


HTTP listens on 127.0.0.1 only; the endpoint is /mcp.  ``--json`` answers
POSTs with plain application/json instead of SSE, ``--stateless`` disables
sessions.  Diagnostics go to stderr; stdout carries only protocol traffic.
"""

from __future__ import annotations

import sys
import time

import anyio
from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

SERVER_NAME = "toolwire-py-peer"
SERVER_VERSION = "0.1.0"

server = MCPServer(name=SERVER_NAME, version=SERVER_VERSION, log_level="WARNING")


def note(text: str) -> None:
    """One line of diagnostics on stderr (never stdout: that is the wire)."""
    print(f"[py_server] {text}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------- tools


@server.tool(structured_output=False, description="Return the message, prefixed with 'echo: '.")
def echo(message: str) -> str:
    return f"echo: {message}"


@server.tool(structured_output=False, description="Add two numbers and return the sum as text.")
def add(a: float, b: float) -> str:
    return str(a + b)


@server.tool(
    structured_output=False,
    description="Sleep for the given number of seconds in 10 equal steps, "
    "reporting progress after each step when asked to. Can be cancelled."
)
async def slow(seconds: float, ctx: Context) -> str:
    steps = 10
    began = time.monotonic()
    try:
        for i in range(1, steps + 1):
            await anyio.sleep(seconds / steps)
            await ctx.report_progress(i, steps, f"step {i} of {steps}")
    except anyio.get_cancelled_exc_class():
        note(f"slow: cancelled after {time.monotonic() - began:.2f}s")
        raise
    return f"slept {seconds}s"


@server.tool(
    structured_output=False,
    description="Fail with an unexpected exception (reported as an isError result).",
)
def explode() -> str:
    raise RuntimeError("kaboom: explode() always fails")


@server.tool(
    structured_output=False,
    description="Fail on purpose with the given reason (reported as an isError result).",
)
def refuse(reason: str) -> str:
    raise ToolError(reason)


class Measurement(BaseModel):
    count: int
    total: float
    mean: float


@server.tool(description="Count, sum and average a list of numbers; returns structured content.")
def measure(values: list[float]) -> Measurement:
    if not values:
        raise ToolError("values must not be empty")
    total = float(sum(values))
    return Measurement(count=len(values), total=total, mean=total / len(values))


@server.tool(
    structured_output=False,
    description="Report the protocol version negotiated for this request.",
)
def whoami(ctx: Context) -> str:
    return f"protocol {ctx.protocol_version}"


class Answer(BaseModel):
    name: str = "nobody"


@server.tool(
    structured_output=False,
    description="Ask the user for a name (elicitation) and greet them.",
)
async def ask(ctx: Context) -> str:
    # The classic elicitation call: a request back to the client while the tool runs, which
    # needs the handshake era's back-channel.
    result = await ctx.elicit(message="What is your name?", schema=Answer)
    if result.action == "accept":
        return f"hello, {result.data.name}"
    return f"no name ({result.action})"


# ----------------------------------------------------------- resources, prompts


@server.resource(
    "toolwire://greeting",
    name="greeting",
    description="A fixed plain-text greeting.",
    mime_type="text/plain",
)
def greeting() -> str:
    return "Hello from the toolwire Python peer."


@server.prompt(description="Ask the model to greet someone by name.")
def greet(name: str) -> str:
    return f"Please write a short, friendly greeting for {name}."


# ---------------------------------------------------------------------- main


def usage() -> None:
    print("usage: py_server.py stdio | py_server.py http PORT [--json] [--stateless]",
          file=sys.stderr)
    sys.exit(2)


def main(argv: list[str]) -> None:
    if not argv:
        usage()
    mode, rest = argv[0], argv[1:]
    if mode == "stdio" and not rest:
        server.run("stdio")
    elif mode == "http" and rest and rest[0].isdigit():
        flags = set(rest[1:])
        if not flags <= {"--json", "--stateless"}:
            usage()
        port = int(rest[0])
        json_response = "--json" in flags
        stateless = "--stateless" in flags
        note(f"http on 127.0.0.1:{port}/mcp json={json_response} stateless={stateless}")
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=port,
            streamable_http_path="/mcp",
            json_response=json_response,
            stateless_http=stateless,
        )
    elif mode == "sse" and len(rest) == 1 and rest[0].isdigit():
        # The legacy HTTP+SSE transport (2024-11-05): GET /sse, POST /messages/?session_id=…
        port = int(rest[0])
        note(f"sse on 127.0.0.1:{port}/sse")
        server.run("sse", host="127.0.0.1", port=port, sse_path="/sse", message_path="/messages/")
    else:
        usage()


if __name__ == "__main__":
    main(sys.argv[1:])
