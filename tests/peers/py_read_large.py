#!/usr/bin/env python3
"""A host on the official Python SDK (PyPI `mcp` 2.x) that calls one tool through `toolwire
serve` and reports how the SDK took the answer, for the gateway's result-limit interop test.

Usage:
  py_read_large.py TOOL PATH COMMAND [ARGS...]
    TOOL     the front name of a file-reading tool (its backend declares an outputSchema)
    PATH     the file to read, passed as the tool's `path` argument
    COMMAND  the gateway to run over stdio, with its ARGS

Prints `PYREAD ACCEPTED isError=<bool> structured=<bool>` and the result's text when the SDK
accepts the answer (the SDK raises when a tool with an output schema answers a success without
structured content); prints `PYREAD REFUSED: <why>` and exits 1 when it does not.
"""
import sys

import anyio

from mcp import Client, StdioServerParameters


async def main(tool, path, command):
    server = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(server, mode="legacy") as client:
        await client.list_tools()
        try:
            result = await client.call_tool(tool, {"path": path})
        except Exception as error:  # the SDK's own refusal of the answer
            print(f"PYREAD REFUSED: {type(error).__name__}: {error}", flush=True)
            sys.exit(1)
        text = "".join(block.text for block in result.content if getattr(block, "type", "") == "text")
        # The SDK's names for `isError` and `structuredContent` (2.x: snake_case attributes).
        is_error = getattr(result, "is_error", None)
        if is_error is None:
            is_error = result.isError
        structured = getattr(result, "structured_content", getattr(result, "structuredContent", None))
        print(f"PYREAD ACCEPTED isError={is_error} structured={structured is not None}", flush=True)
        print(text[:400], flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3:])
