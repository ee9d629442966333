#!/usr/bin/env python3
"""A client on the official Python SDK (PyPI `mcp` 2.x), for toolwire's server interop tests.

Usage:
  py_client.py MODE TARGET [ARGS...]
    MODE   legacy (initialize handshake) | auto (server/discover, 2026-07-28 when offered)
    TARGET an http(s) URL, or a command (and its ARGS) to run over stdio

Runs against examples/http_server.rs: lists the tools; calls echo and add; count with a
progress callback (three reports expected); summarize, whose server asks this client's model
(a sampling request, or a 2026-07-28 input round) answered by the callback here; then starts a
long count and gives it up after 0.5 s (the SDK cancels it), and calls echo again. Prints one
`ok: ...` line per step and `PYCLIENT PASSED` at the end; exits 1 at the first failure.
"""
import sys

import anyio

from mcp import Client, StdioServerParameters, types


def fail(message):
    print(f"FAILED: {message}", flush=True)
    sys.exit(1)


def text_of(result):
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def sampling(context, params):
    asked = params.messages[0].content.text if params.messages else ""
    print(f"ok: sampling request reached the client ({asked!r})", flush=True)
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="short"),
        model="py-test-model",
        stop_reason="endTurn",
    )


async def main(mode, target):
    server = target[0] if target[0].startswith("http") else StdioServerParameters(command=target[0], args=target[1:])
    async with Client(server, mode=mode, sampling_callback=sampling) as client:
        print(f"ok: connected, protocol {client.protocol_version}", flush=True)
        tools = await client.list_tools()
        names = sorted(tool.name for tool in tools.tools)
        for wanted in ["add", "count", "echo", "summarize", "wait"]:
            if wanted not in names:
                fail(f"tool {wanted} not listed: {names}")
        print(f"ok: tools {names}", flush=True)
        echo = await client.call_tool("echo", {"message": "hi"})
        if text_of(echo) != "hi" or echo.is_error:
            fail(f"echo answered {echo}")
        print("ok: echo", flush=True)
        added = await client.call_tool("add", {"a": 2, "b": 3})
        if (added.structured_content or {}).get("sum") != 5:
            fail(f"add answered {added}")
        print("ok: add structured 5", flush=True)
        bad = await client.call_tool("add", {"a": "x", "b": 1})
        if not bad.is_error or "input schema" not in text_of(bad):
            fail(f"add with bad arguments answered {bad}")
        print("ok: bad arguments are a tool error with the repair message", flush=True)
        reports = []

        async def on_progress(progress, total, message):
            reports.append((progress, total, message))

        counted = await client.call_tool("count", {"steps": 3, "ms": 20}, progress_callback=on_progress)
        if text_of(counted) != "counted 3" or len(reports) < 3:
            fail(f"count answered {counted} with progress {reports}")
        print(f"ok: progress {reports}", flush=True)
        summary = await client.call_tool("summarize", {"text": "a long text"})
        if text_of(summary) != "summary: short":
            fail(f"summarize answered {summary}")
        print("ok: sampling round trip", flush=True)
        started = anyio.current_time()
        with anyio.move_on_after(0.5):
            await client.call_tool("count", {"steps": 1000, "ms": 10})
            fail("the long count finished")
        print(f"ok: long count given up after {anyio.current_time() - started:.2f}s", flush=True)
        again = await client.call_tool("echo", {"message": "still here"})
        if text_of(again) != "still here":
            fail(f"echo after the cancel answered {again}")
        print("ok: the connection goes on after the cancel", flush=True)
    print("PYCLIENT PASSED", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("legacy", "auto"):
        sys.exit(__doc__)
    anyio.run(main, sys.argv[1], sys.argv[2:])
