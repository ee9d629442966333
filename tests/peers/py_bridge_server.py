#!/usr/bin/env python3
"""A handshake-era MCP server on the official Python SDK (PyPI ``mcp`` 2.3.0, ``MCPServer``)
whose tools ask their client during the call, with the SDK's handshake-era API: requests
back to the client while the tool runs. Used behind ``toolwire serve`` by the gateway's
bridging test (tests/gateway/bridge_peers.rs).

    py_bridge_server.py        (stdio)

Tools: ``ask`` (``ctx.elicit``), ``summarize`` (``ctx.session.create_message``), ``where``
(``ctx.session.list_roots``), ``both`` (``ctx.elicit``, then ``create_message``).
"""

from __future__ import annotations

from pydantic import BaseModel

from mcp import types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer(name="toolwire-py-asker", version="0.1.0", log_level="WARNING")


class Answer(BaseModel):
    name: str = "nobody"


async def sampled(ctx: Context, text: str) -> str:
    result = await ctx.session.create_message(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))],
        max_tokens=32,
    )
    content = result.content
    return content.text if getattr(content, "type", "") == "text" else repr(content)


@server.tool(structured_output=False, description="Ask the user for a name and greet them.")
async def ask(ctx: Context) -> str:
    result = await ctx.elicit(message="What is your name?", schema=Answer)
    if result.action == "accept":
        return f"hello, {result.data.name}"
    return f"no name ({result.action})"


@server.tool(structured_output=False, description="Ask the client's model for a summary.")
async def summarize(ctx: Context) -> str:
    return "model said: " + await sampled(ctx, "Summarize: bridges")


@server.tool(structured_output=False, description="List the client's roots.")
async def where(ctx: Context) -> str:
    roots = await ctx.session.list_roots()
    return "roots: " + ",".join(str(root.uri) for root in roots.roots)


@server.tool(structured_output=False, description="Ask a name, then the model.")
async def both(ctx: Context) -> str:
    result = await ctx.elicit(message="What is your name?", schema=Answer)
    name = result.data.name if result.action == "accept" else f"({result.action})"
    return f"{name} / " + await sampled(ctx, "Say hi")


if __name__ == "__main__":
    server.run("stdio")
