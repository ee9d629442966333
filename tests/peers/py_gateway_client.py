#!/usr/bin/env python3
"""A host on the official Python SDK (PyPI `mcp` 2.x) in front of `toolwire serve`, for the
gateway's interop tests.

Usage:
  py_gateway_client.py MODE TARGET [ARGS...]
    MODE   legacy (initialize handshake) | auto (server/discover, 2026-07-28 when offered)
    TARGET an http(s) URL, or a command (and its ARGS) to run over stdio

The gateway is expected to serve three servers, named `everything` (server-everything),
`python` (tests/peers/py_server.py) and `tools` (the bundled tool server), with `crash` of
`tools` denied. Lists the tools (all three servers' must be there, namespaced); calls each
server's echo; progress through two of them; a sampling round trip through server-everything
(its request reaches this client's callback and the answer goes back); a denied tool
(UNKNOWN_TOOL); then starts a long `slow` of the Python server and gives it up after 0.5 s
(the SDK cancels it; the gateway cancels the backend's call), and calls echo again. Prints
one `ok: ...` line per step and `PYGATEWAY PASSED` at the end; exits 1 at the first failure.
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
    print(f"ok: sampling request reached the host ({asked!r})", flush=True)
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="an answer from the host's model"),
        model="py-host-model",
        stop_reason="endTurn",
    )


WANTED = ["mcp__everything__echo", "mcp__everything__trigger-sampling-request",
          "mcp__python__echo", "mcp__python__slow", "mcp__tools__echo", "mcp__tools__sleep"]


async def main(mode, target):
    server = target[0] if target[0].startswith("http") else StdioServerParameters(command=target[0], args=target[1:])
    # The gateway answers at once; each server joins when it has started, and the host is
    # told the tool list changed: listed again on each notification, until all are there.
    changed = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with Client(server, mode=mode, sampling_callback=sampling, message_handler=on_message) as client:
        print(f"ok: connected, protocol {client.protocol_version}", flush=True)
        with anyio.fail_after(60):
            while True:
                current = changed
                tools = await client.list_tools()
                names = sorted(tool.name for tool in tools.tools)
                if all(wanted in names for wanted in WANTED) or mode != "legacy":
                    break
                await current.wait()
                changed = anyio.Event()
        for wanted in WANTED:
            if wanted not in names:
                fail(f"tool {wanted} not listed: {names}")
        if "mcp__tools__crash" in names:
            fail(f"the denied tool is listed: {names}")
        print(f"ok: {len(names)} tools of three servers", flush=True)
        for name, expected in [("mcp__everything__echo", "Echo: hi"), ("mcp__python__echo", "echo: hi"),
                               ("mcp__tools__echo", "hi")]:
            echoed = await client.call_tool(name, {"message": "hi"})
            if echoed.is_error or text_of(echoed) != expected:
                fail(f"{name} answered {echoed}")
        print("ok: echo through each server", flush=True)
        for name, arguments, wanted in [("mcp__tools__sleep", {"ms": 60, "progress": 3}, 3),
                                        ("mcp__python__slow", {"seconds": 0.2}, 10)]:
            reports = []

            async def on_progress(progress, total, message):
                reports.append(progress)

            done = await client.call_tool(name, arguments, progress_callback=on_progress)
            if done.is_error or len(reports) != wanted:
                fail(f"{name} answered {done} with progress {reports}")
        print("ok: progress through two servers", flush=True)
        sampled = await client.call_tool("mcp__everything__trigger-sampling-request", {"prompt": "hello"})
        if sampled.is_error or "an answer from the host's model" not in text_of(sampled):
            fail(f"the sampling tool answered {sampled}")
        print("ok: sampling round trip", flush=True)
        denied = await client.call_tool("mcp__tools__crash", {})
        if not denied.is_error or not text_of(denied).startswith("UNKNOWN_TOOL: "):
            fail(f"the denied tool answered {denied}")
        print("ok: the denied tool is UNKNOWN_TOOL", flush=True)
        bad = await client.call_tool("mcp__tools__add", {"a": "x", "b": 1})
        if not bad.is_error or not text_of(bad).startswith("INVALID: "):
            fail(f"add with bad arguments answered {bad}")
        print("ok: bad arguments are INVALID", flush=True)
        with anyio.move_on_after(0.5):
            await client.call_tool("mcp__python__slow", {"seconds": 30})
            fail("the long slow finished")
        print("ok: the long call given up", flush=True)
        again = await client.call_tool("mcp__python__echo", {"message": "still here"})
        if text_of(again) != "echo: still here":
            fail(f"echo after the cancel answered {again}")
        print("ok: the gateway goes on after the cancel", flush=True)
    print("PYGATEWAY PASSED", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("legacy", "auto"):
        sys.exit(__doc__)
    anyio.run(main, sys.argv[1], sys.argv[2:])
