"""An OTLP/HTTP trace receiver for toolwire's telemetry tests.

Listens on 127.0.0.1 (an ephemeral port), accepts POST /v1/traces in both encodings and
decodes them with the official definitions: the `opentelemetry-proto` package's generated
classes for http/protobuf, and the same classes through protobuf's json_format for
http/json (after the OTLP JSON mapping's hex ids are turned into proto3 JSON's base64).
Prints, one JSON object per line on stdout:

  {"listening": PORT}      once, first
  {"request": {...}}       per export: its content type, size, whether the expected header
                           came, and which forbidden strings its raw body holds
  {"span": {...}}          per span: service, ids (hex), parent, name, kind, attributes,
                           status

Usage: otlp_receiver.py [--header NAME=VALUE] [--forbid TEXT]...
"""

import base64
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

EXPECTED_HEADER = None
FORBIDDEN = []
PRINT_LOCK = threading.Lock()


def emit(obj):
    with PRINT_LOCK:
        sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
        sys.stdout.flush()


def any_value(value):
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value
    return None


def hex_to_b64(text):
    return base64.b64encode(bytes.fromhex(text)).decode()


def json_request(body):
    """The OTLP JSON mapping as an ExportTraceServiceRequest: ids are hex there."""
    data = json.loads(body)
    for resource_spans in data.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = hex_to_b64(span[key])
    request = ExportTraceServiceRequest()
    json_format.ParseDict(data, request)
    return request


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        content_type = self.headers.get("Content-Type", "")
        header_ok = None
        if EXPECTED_HEADER is not None:
            name, value = EXPECTED_HEADER
            header_ok = self.headers.get(name) == value
        found = [text for text in FORBIDDEN if text.encode() in body]
        try:
            if self.path != "/v1/traces":
                raise ValueError("unexpected path " + self.path)
            if content_type.startswith("application/x-protobuf"):
                request = ExportTraceServiceRequest.FromString(body)
            elif content_type.startswith("application/json"):
                request = json_request(body)
            else:
                raise ValueError("unexpected content type " + content_type)
        except Exception as error:  # noqa: BLE001 - reported to the test, answered 400
            emit({"request": {"error": str(error), "content_type": content_type}})
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        emit({"request": {"content_type": content_type, "bytes": len(body),
                          "header_ok": header_ok, "forbidden": found}})
        for resource_spans in request.resource_spans:
            resource = {kv.key: any_value(kv.value) for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    emit({"span": {
                        "service": resource.get("service.name"),
                        "scope": scope_spans.scope.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": span.kind,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "attributes": {kv.key: any_value(kv.value) for kv in span.attributes},
                        "status_code": span.status.code,
                    }})
        if content_type.startswith("application/json"):
            answer, answer_type = b"{}", "application/json"
        else:
            answer = ExportTraceServiceResponse().SerializeToString()
            answer_type = "application/x-protobuf"
        self.send_response(200)
        self.send_header("Content-Type", answer_type)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


def main(argv):
    global EXPECTED_HEADER
    args = list(argv)
    while args:
        flag = args.pop(0)
        if flag == "--header":
            name, _, value = args.pop(0).partition("=")
            EXPECTED_HEADER = (name, value)
        elif flag == "--forbid":
            FORBIDDEN.append(args.pop(0))
        else:
            raise SystemExit("unknown argument " + flag)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    emit({"listening": server.server_address[1]})
    # Ends when the test closes our stdin (or kills us).
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
