#!/usr/bin/env python3
"""A host on the official Python SDK (PyPI `mcp` 2.x) that answers its server's requests for
input, for the gateway's bridging tests (tests/gateway/interop.rs).

Usage:
  py_rounds_host.py MODE URL TOOL=EXPECTED...
    MODE      legacy (initialize handshake: the server asks with ordinary requests) | auto
              (2026-07-28 when offered: the server asks with input rounds)
    URL       the server's Streamable HTTP URL
    TOOL=EXPECTED  a tool to call with no arguments and the text its result must contain

Answers every elicitation by accepting it with a value for each field of the requested schema
(the field's name as a string, `true` for a boolean, 7 for a number), every sampling request
with the text "Paris", and roots/list with one root, file:///work. Prints one
`asked: METHOD` line per request it answered, one `ok: TOOL: TEXT` line per call, and
`PYROUNDS PASSED` at the end; exits 1 at the first failure.
"""
import sys

import anyio

from mcp import Client, types


def fail(message):
    print(f"FAILED: {message}", flush=True)
    sys.exit(1)


def text_of(result):
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def sampling(context, params):
    print("asked: sampling/createMessage", flush=True)
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="Paris"),
        model="py-host-model",
        stop_reason="endTurn",
    )


async def elicitation(context, params):
    print("asked: elicitation/create", flush=True)
    schema = getattr(params, "requested_schema", None) or {}
    if hasattr(schema, "model_dump"):
        schema = schema.model_dump(by_alias=True, exclude_none=True)
    content = {}
    for name, field in (schema.get("properties") or {}).items():
        kind = field.get("type")
        content[name] = True if kind == "boolean" else 7 if kind in ("number", "integer") else name
    return types.ElicitResult(action="accept", content=content)


async def list_roots(context):
    print("asked: roots/list", flush=True)
    return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])


async def main(mode, url, calls):
    async with Client(url, mode=mode, sampling_callback=sampling, elicitation_callback=elicitation,
                      list_roots_callback=list_roots) as client:
        print(f"ok: connected, protocol {client.protocol_version}", flush=True)
        for call in calls:
            tool, _, expected = call.partition("=")
            with anyio.fail_after(30):
                result = await client.call_tool(tool, {})
            text = text_of(result)
            if result.is_error or expected not in text:
                fail(f"{tool}: expected {expected!r}, got {result!r}")
            print(f"ok: {tool}: {text}", flush=True)
    print("PYROUNDS PASSED", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("legacy", "auto"):
        fail(__doc__)
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3:])
