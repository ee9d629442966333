#!/usr/bin/env python3
"""A client on the official Python SDK (PyPI `mcp` 2.x) whose OpenTelemetry support sends a
known span context, for toolwire's trace-context interop test.

Usage:
  py_trace_client.py TRACE_ID SPAN_ID COMMAND [ARGS...]

Makes the span TRACE_ID/SPAN_ID (hex, sampled) the current OpenTelemetry context, then, over
stdio to COMMAND (given this process's whole environment, so its OTEL_* variables reach
it), calls the tool `echo`. The SDK injects the current context into the request's
`params._meta` (`traceparent`) itself; toolwire's server should continue that trace. Prints
`PYTRACE PASSED` at the end; exits 1 at the first failure.
"""
import os
import sys

import anyio
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from mcp import Client, StdioServerParameters


def fail(message):
    print(f"FAILED: {message}", flush=True)
    sys.exit(1)


async def main(trace_id, span_id, command):
    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    parent = SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    token = otel_context.attach(trace.set_span_in_context(NonRecordingSpan(parent)))
    try:
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("echo", {"message": "py-argument-value"})
            text = "".join(b.text for b in result.content if getattr(b, "type", "") == "text")
            if result.is_error or text != "py-argument-value":
                fail(f"echo answered {result!r}")
            print("ok: echo answered through the SDK", flush=True)
    finally:
        otel_context.detach(token)
    print("PYTRACE PASSED", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        fail("usage: py_trace_client.py TRACE_ID SPAN_ID COMMAND [ARGS...]")
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3:])
