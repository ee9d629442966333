//! The body of an OTLP/HTTP trace export (`ExportTraceServiceRequest`), written by hand in
//! both encodings: protobuf (`application/x-protobuf`, the default) and the OTLP JSON mapping
//! (`application/json`: hex ids, integer enums, 64-bit integers as decimal strings).
//!
//! Only the messages a span of ours fills are written: resource spans, scope spans, span,
//! status and key-values (string, int and bool values). Field numbers are those of
//! `opentelemetry/proto/trace/v1/trace.proto` and `common/v1/common.proto`.

use serde_json::{json, Value};

use super::context::hex;
use super::span::{AttributeValue, SpanData, SpanStatus};

/// What every export says of where the spans come from.
#[derive(Debug, Clone)]
pub struct Resource {
    /// `service.name`.
    pub service_name: String,
}

const SCOPE_NAME: &str = "toolwire";
const SCOPE_VERSION: &str = env!("CARGO_PKG_VERSION");

fn resource_attributes(resource: &Resource) -> [(&'static str, AttributeValue); 4] {
    [
        (
            "service.name",
            AttributeValue::Str(resource.service_name.clone().into()),
        ),
        ("telemetry.sdk.name", "toolwire".into()),
        ("telemetry.sdk.language", "rust".into()),
        ("telemetry.sdk.version", SCOPE_VERSION.into()),
    ]
}

// --- protobuf ---------------------------------------------------------------------------

const LEN: u8 = 2;
const VARINT: u8 = 0;
const FIXED64: u8 = 1;

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, u64::from(field << 3 | u32::from(wire)));
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn bytes_field(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    key(out, field, LEN);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A nested message: written into the buffer, then its length put in front.
fn message(out: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    body(&mut inner);
    bytes_field(out, field, &inner);
}

fn key_value(out: &mut Vec<u8>, field: u32, name: &str, value: &AttributeValue) {
    message(out, field, |kv| {
        bytes_field(kv, 1, name.as_bytes());
        message(kv, 2, |any| match value {
            AttributeValue::Str(text) => bytes_field(any, 1, text.as_bytes()),
            AttributeValue::Bool(flag) => {
                key(any, 2, VARINT);
                varint(any, u64::from(*flag));
            }
            AttributeValue::Int(number) => {
                key(any, 3, VARINT);
                // int64: two's complement as a 64-bit varint.
                varint(any, *number as u64);
            }
        });
    });
}

fn span_proto(out: &mut Vec<u8>, span: &SpanData) {
    message(out, 2, |s| {
        bytes_field(s, 1, &span.context.trace_id);
        bytes_field(s, 2, &span.context.span_id);
        if let Some(state) = span.context.tracestate() {
            bytes_field(s, 3, state.as_bytes());
        }
        if let Some(parent) = &span.parent {
            bytes_field(s, 4, parent);
        }
        bytes_field(s, 5, span.name.as_bytes());
        key(s, 6, VARINT);
        varint(s, u64::from(span.kind.otlp()));
        key(s, 7, FIXED64);
        s.extend_from_slice(&span.start_unix_nanos.to_le_bytes());
        key(s, 8, FIXED64);
        s.extend_from_slice(&span.end_unix_nanos.to_le_bytes());
        for (name, value) in &span.attributes {
            key_value(s, 9, name, value);
        }
        if span.dropped_attributes > 0 {
            key(s, 10, VARINT);
            varint(s, u64::from(span.dropped_attributes));
        }
        if let SpanStatus::Error(text) = &span.status {
            message(s, 15, |status| {
                bytes_field(status, 2, text.as_bytes());
                key(status, 3, VARINT);
                varint(status, 2);
            });
        }
    });
}

/// `spans` as a protobuf `ExportTraceServiceRequest`.
pub fn encode_protobuf(resource: &Resource, spans: &[SpanData]) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + spans.len() * 256);
    // ExportTraceServiceRequest.resource_spans = 1
    message(&mut out, 1, |rs| {
        // ResourceSpans.resource = 1 { attributes = 1 }
        message(rs, 1, |r| {
            for (name, value) in &resource_attributes(resource) {
                key_value(r, 1, name, value);
            }
        });
        // ResourceSpans.scope_spans = 2 { scope = 1 { name = 1, version = 2 }, spans = 2 }
        message(rs, 2, |ss| {
            message(ss, 1, |scope| {
                bytes_field(scope, 1, SCOPE_NAME.as_bytes());
                bytes_field(scope, 2, SCOPE_VERSION.as_bytes());
            });
            for span in spans {
                span_proto(ss, span);
            }
        });
    });
    out
}

// --- JSON -------------------------------------------------------------------------------

fn any_json(value: &AttributeValue) -> Value {
    match value {
        AttributeValue::Str(text) => json!({"stringValue": text}),
        AttributeValue::Bool(flag) => json!({"boolValue": flag}),
        AttributeValue::Int(number) => json!({"intValue": number.to_string()}),
    }
}

fn attributes_json<'a>(
    attributes: impl IntoIterator<Item = &'a (&'static str, AttributeValue)>,
) -> Value {
    Value::Array(
        attributes
            .into_iter()
            .map(|(name, value)| json!({"key": name, "value": any_json(value)}))
            .collect(),
    )
}

fn span_json(span: &SpanData) -> Value {
    let mut object = json!({
        "traceId": hex(&span.context.trace_id),
        "spanId": hex(&span.context.span_id),
        "name": span.name,
        "kind": span.kind.otlp(),
        "startTimeUnixNano": span.start_unix_nanos.to_string(),
        "endTimeUnixNano": span.end_unix_nanos.to_string(),
        "attributes": attributes_json(&span.attributes),
    });
    if let Some(parent) = &span.parent {
        object["parentSpanId"] = hex(parent).into();
    }
    if let Some(state) = span.context.tracestate() {
        object["traceState"] = state.into();
    }
    if span.dropped_attributes > 0 {
        object["droppedAttributesCount"] = span.dropped_attributes.into();
    }
    if let SpanStatus::Error(text) = &span.status {
        object["status"] = json!({"code": 2, "message": text});
    }
    object
}

/// `spans` as an `ExportTraceServiceRequest` in the OTLP JSON mapping.
pub fn encode_json(resource: &Resource, spans: &[SpanData]) -> Vec<u8> {
    let body = json!({"resourceSpans": [{
        "resource": {"attributes": attributes_json(&resource_attributes(resource))},
        "scopeSpans": [{
            "scope": {"name": SCOPE_NAME, "version": SCOPE_VERSION},
            "spans": spans.iter().map(span_json).collect::<Vec<_>>(),
        }],
    }]});
    serde_json::to_vec(&body).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::{SpanKind, SpanSink, Tracer};
    use parking_lot::Mutex;
    use std::sync::Arc;

    /// A protobuf reader just big enough to check the writer: fields of one message, by
    /// number, as varints, fixed64s or byte strings.
    #[derive(Debug, Clone, PartialEq)]
    enum Field {
        Varint(u64),
        Fixed64(u64),
        Bytes(Vec<u8>),
    }

    fn read_varint(bytes: &[u8], at: &mut usize) -> u64 {
        let mut value = 0u64;
        let mut shift = 0;
        loop {
            let byte = bytes[*at];
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return value;
            }
            shift += 7;
        }
    }

    fn fields(bytes: &[u8]) -> Vec<(u32, Field)> {
        let mut at = 0;
        let mut out = Vec::new();
        while at < bytes.len() {
            let key = read_varint(bytes, &mut at);
            let (number, wire) = ((key >> 3) as u32, (key & 7) as u8);
            let field = match wire {
                VARINT => Field::Varint(read_varint(bytes, &mut at)),
                FIXED64 => {
                    let value = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
                    at += 8;
                    Field::Fixed64(value)
                }
                LEN => {
                    let len = read_varint(bytes, &mut at) as usize;
                    let value = bytes[at..at + len].to_vec();
                    at += len;
                    Field::Bytes(value)
                }
                other => panic!("unexpected wire type {other}"),
            };
            out.push((number, field));
        }
        out
    }

    fn get(fields: &[(u32, Field)], number: u32) -> Vec<Field> {
        fields
            .iter()
            .filter(|(n, _)| *n == number)
            .map(|(_, f)| f.clone())
            .collect()
    }

    fn bytes(field: &Field) -> &[u8] {
        match field {
            Field::Bytes(b) => b,
            other => panic!("not bytes: {other:?}"),
        }
    }

    fn attributes(span: &[(u32, Field)]) -> Vec<(String, Vec<(u32, Field)>)> {
        get(span, 9)
            .iter()
            .map(|kv| {
                let kv = fields(bytes(kv));
                let name = String::from_utf8(bytes(&get(&kv, 1)[0]).to_vec()).unwrap();
                (name, fields(bytes(&get(&kv, 2)[0])))
            })
            .collect()
    }

    #[derive(Clone, Default)]
    struct Collect(Arc<Mutex<Vec<SpanData>>>);
    impl SpanSink for Collect {
        fn export(&self, span: SpanData) {
            self.0.lock().push(span);
        }
    }

    fn two_spans() -> Vec<SpanData> {
        let sink = Collect::default();
        let tracer = Tracer::new(sink.clone());
        let mut parent = tracer.start("tools/call add", SpanKind::Client, None);
        parent.set("mcp.method.name", "tools/call");
        parent.set("jsonrpc.request.id", String::from("7"));
        parent.set("answer", -3i64);
        parent.set("ok", true);
        let mut child = tracer.start(
            "execute_tool add",
            SpanKind::Internal,
            Some(parent.context()),
        );
        child.fail("BUSY", "no worker free");
        drop(child);
        drop(parent);
        let spans = sink.0.lock().clone();
        spans
    }

    #[test]
    fn protobuf_decodes_to_the_spans() {
        let spans = two_spans();
        let resource = Resource {
            service_name: "svc".into(),
        };
        let body = encode_protobuf(&resource, &spans);
        let request = fields(&body);
        let resource_spans = get(&request, 1);
        assert_eq!(resource_spans.len(), 1);
        let rs = fields(bytes(&resource_spans[0]));
        let resource_attrs: Vec<_> = get(&fields(bytes(&get(&rs, 1)[0])), 1)
            .iter()
            .map(|kv| fields(bytes(kv)))
            .collect();
        let service = resource_attrs
            .iter()
            .find(|kv| bytes(&get(kv, 1)[0]) == b"service.name")
            .unwrap();
        assert_eq!(
            get(&fields(bytes(&get(service, 2)[0])), 1),
            vec![Field::Bytes(b"svc".to_vec())]
        );
        let scope_spans = fields(bytes(&get(&rs, 2)[0]));
        let scope = fields(bytes(&get(&scope_spans, 1)[0]));
        assert_eq!(bytes(&get(&scope, 1)[0]), b"toolwire");
        let decoded: Vec<_> = get(&scope_spans, 2)
            .iter()
            .map(|s| fields(bytes(s)))
            .collect();
        assert_eq!(decoded.len(), 2);
        for (span, data) in decoded.iter().zip(&spans) {
            assert_eq!(bytes(&get(span, 1)[0]), data.context.trace_id);
            assert_eq!(bytes(&get(span, 2)[0]), data.context.span_id);
            assert_eq!(bytes(&get(span, 5)[0]), data.name.as_bytes());
            assert_eq!(
                get(span, 6),
                vec![Field::Varint(u64::from(data.kind.otlp()))]
            );
            assert_eq!(get(span, 7), vec![Field::Fixed64(data.start_unix_nanos)]);
            assert_eq!(get(span, 8), vec![Field::Fixed64(data.end_unix_nanos)]);
        }
        // The child (ended first) points at the parent, and failed.
        assert_eq!(bytes(&get(&decoded[0], 4)[0]), spans[1].context.span_id);
        assert!(get(&decoded[1], 4).is_empty());
        let status = fields(bytes(&get(&decoded[0], 15)[0]));
        assert_eq!(bytes(&get(&status, 2)[0]), b"no worker free");
        assert_eq!(get(&status, 3), vec![Field::Varint(2)]);
        let attrs = attributes(&decoded[1]);
        let find = |name: &str| attrs.iter().find(|(n, _)| n == name).unwrap().1.clone();
        assert_eq!(
            find("mcp.method.name"),
            vec![(1, Field::Bytes(b"tools/call".to_vec()))]
        );
        assert_eq!(find("answer"), vec![(3, Field::Varint(-3i64 as u64))]);
        assert_eq!(find("ok"), vec![(2, Field::Varint(1))]);
        let child_attrs = attributes(&decoded[0]);
        assert_eq!(child_attrs[0].0, "error.type");
    }

    #[test]
    fn json_follows_the_otlp_mapping() {
        let spans = two_spans();
        let resource = Resource {
            service_name: "svc".into(),
        };
        let body: Value = serde_json::from_slice(&encode_json(&resource, &spans)).unwrap();
        let rs = &body["resourceSpans"][0];
        assert_eq!(
            rs["resource"]["attributes"][0],
            json!({"key": "service.name", "value": {"stringValue": "svc"}})
        );
        let out = rs["scopeSpans"][0]["spans"].as_array().unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["traceId"], hex(&spans[0].context.trace_id));
        assert_eq!(out[0]["parentSpanId"], hex(&spans[1].context.span_id));
        assert_eq!(out[0]["kind"], 1);
        assert_eq!(out[1]["kind"], 3);
        assert_eq!(
            out[0]["status"],
            json!({"code": 2, "message": "no worker free"})
        );
        assert_eq!(
            out[1]["startTimeUnixNano"],
            spans[1].start_unix_nanos.to_string()
        );
        assert!(out[1].get("parentSpanId").is_none());
        assert!(out[1]["attributes"]
            .as_array()
            .unwrap()
            .contains(&json!({"key": "answer", "value": {"intValue": "-3"}})));
    }
}
