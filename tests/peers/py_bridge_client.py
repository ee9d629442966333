#!/usr/bin/env python3
"""A host on the official Python SDK (PyPI `mcp` 2.3.0) that speaks 2026-07-28 (`Client` in
auto mode, input rounds answered by its callbacks), calling through `toolwire serve` the
handshake-era tools of tests/peers/py_bridge_server.py, whose requests the gateway bridges
into input rounds.

Usage:
  py_bridge_client.py URL

Checks the protocol is 2026-07-28, then calls `mcp__asker__ask` (elicitation),
`mcp__asker__summarize` (sampling), `mcp__asker__where` (roots) and `mcp__asker__both` (two
rounds); prints one `ok: ...` line per step and `PYBRIDGE PASSED` at the end; exits 1 at the
first failure.
"""
import sys

import anyio

from mcp import Client, types


def fail(message):
    print(f"FAILED: {message}", flush=True)
    sys.exit(1)


def text_of(result):
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


ASKED = []


async def sampling(context, params):
    ASKED.append("sampling")
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="from the py host"),
        model="py-host-model",
        stop_reason="endTurn",
    )


async def elicitation(context, params):
    ASKED.append("elicitation")
    return types.ElicitResult(action="accept", content={"name": "Py"})


async def roots(context):
    ASKED.append("roots")
    return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])


async def main(url):
    async with Client(url, mode="auto", sampling_callback=sampling, elicitation_callback=elicitation,
                      list_roots_callback=roots) as client:
        if client.protocol_version != "2026-07-28":
            fail(f"the host speaks {client.protocol_version}, not 2026-07-28")
        print(f"ok: connected, protocol {client.protocol_version}", flush=True)
        for name, expected, asked in [("mcp__asker__ask", "hello, Py", ["elicitation"]),
                                      ("mcp__asker__summarize", "model said: from the py host", ["sampling"]),
                                      ("mcp__asker__where", "roots: file:///work", ["roots"]),
                                      ("mcp__asker__both", "Py / from the py host", ["elicitation", "sampling"])]:
            ASKED.clear()
            with anyio.fail_after(60):
                result = await client.call_tool(name, {})
            if result.is_error or text_of(result) != expected:
                fail(f"{name} answered {result}")
            if ASKED != asked:
                fail(f"{name} asked {ASKED}, not {asked}")
            print(f"ok: {name} answered through {len(asked)} round(s)", flush=True)
    print("PYBRIDGE PASSED", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    anyio.run(main, sys.argv[1])
