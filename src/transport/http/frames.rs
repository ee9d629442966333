//! Small readings of frames and headers the HTTP transport needs: which responses a frame
//! carries, what an outbound frame is, the 2026-07-28 header values.

use std::io::Read;

use serde::de::{Deserializer, IgnoredAny};
use serde::Deserialize;
use serde_json::Value;

use crate::mcp::{HANDSHAKE_VERSIONS, META_PROTOCOL_VERSION};
use crate::wire::{ErrorObject, RequestId};

/// Whether a member was present, whatever its value (even `null`).
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| Present(true))
    }
}

/// Just enough of a message to tell a response and its id, skipping everything else.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Present,
    #[serde(default)]
    result: Present,
    #[serde(default)]
    error: Present,
}

impl Peek {
    fn response_id(self) -> Option<RequestId> {
        if self.method.0 || !(self.result.0 || self.error.0) {
            return None;
        }
        RequestId::from_value(self.id.as_ref()?).ok()
    }
}

/// The ids of the responses in a frame (one message or a batch). Anything unreadable has
/// none: the client reports it when it parses the frame.
pub(super) fn response_ids(bytes: &[u8]) -> Vec<RequestId> {
    let first = bytes.iter().find(|byte| !byte.is_ascii_whitespace());
    if first == Some(&b'[') {
        serde_json::from_slice::<Vec<Peek>>(bytes)
            .map(|peeks| peeks.into_iter().filter_map(Peek::response_id).collect())
            .unwrap_or_default()
    } else {
        serde_json::from_slice::<Peek>(bytes)
            .ok()
            .and_then(Peek::response_id)
            .into_iter()
            .collect()
    }
}

/// The outcome of `initialize` when `bytes` is its response: the negotiated version, or
/// the server's error.
pub(super) fn initialize_outcome(
    bytes: &[u8],
    id: &RequestId,
) -> Option<Result<Option<String>, ErrorObject>> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    if value.get("id").map(RequestId::from_value)?.ok()? != *id {
        return None;
    }
    if let Some(error) = value.get("error") {
        return Some(Err(ErrorObject::from_value(error).unwrap_or_else(|_| {
            ErrorObject::new(
                crate::wire::ErrorCode::INTERNAL_ERROR,
                format!("malformed error: {error}"),
            )
        })));
    }
    Some(Ok(value
        .get("result")
        .and_then(|result| result.get("protocolVersion"))
        .and_then(Value::as_str)
        .map(str::to_owned)))
}

/// What an outbound request tells the transport.
#[derive(Debug, Default)]
pub(super) struct RequestFacts {
    /// The 2026-07-28 (or later) version stamped in `params._meta`, if any.
    pub(super) modern_version: Option<String>,
    /// The `Mcp-Name` value for name-bearing methods.
    pub(super) name: Option<String>,
}

/// Reads the `_meta` protocol version and the name of a request line.
pub(super) fn request_facts(line: &str, method: &str) -> RequestFacts {
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return RequestFacts::default();
    };
    let params = value.get("params");
    let modern_version = params
        .and_then(|params| params.get("_meta"))
        .and_then(|meta| meta.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str)
        .filter(|version| !HANDSHAKE_VERSIONS.contains(version))
        .map(str::to_owned);
    let name_field = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    let name = name_field
        .and_then(|field| params.and_then(|params| params.get(field)))
        .and_then(Value::as_str)
        .map(str::to_owned);
    RequestFacts {
        modern_version,
        name,
    }
}

/// The ids of the requests in a batch line.
pub(super) fn batch_request_ids(line: &str) -> Vec<RequestId> {
    let Ok(Value::Array(elements)) = serde_json::from_str::<Value>(line) else {
        return Vec::new();
    };
    elements
        .iter()
        .filter(|element| element.get("method").is_some())
        .filter_map(|element| RequestId::from_value(element.get("id")?).ok())
        .collect()
}

/// A header value as 2026-07-28 wants it: plain when it is visible ASCII (spaces inside
/// allowed) without leading or trailing whitespace and does not look like the sentinel,
/// otherwise `=?base64?…?=` of its UTF-8.
pub(super) fn header_value(text: &str) -> String {
    let plain = !text.is_empty()
        && text.bytes().all(|byte| (0x20..=0x7e).contains(&byte))
        && !text.starts_with(' ')
        && !text.ends_with(' ')
        && (!text.starts_with("=?base64?") || !text.ends_with("?="));
    if plain {
        text.to_owned()
    } else {
        format!("=?base64?{}?=", base64(text.as_bytes()))
    }
}

/// Standard base64 with padding.
pub(super) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (index, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if index <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Reads at most `limit` bytes; `Ok(None)` when the body is longer.
pub(super) fn read_limited(reader: impl Read, limit: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut body = Vec::new();
    reader.take(limit as u64 + 1).read_to_end(&mut body)?;
    Ok((body.len() <= limit).then_some(body))
}

/// Reads up to `limit` bytes of a body for an error message, ignoring read errors.
pub(super) fn read_prefix(reader: impl Read, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    let _ = reader.take(limit as u64).read_to_end(&mut body);
    body
}

/// The first `limit` bytes as text, cut on a character boundary, marked when cut.
pub(super) fn excerpt(body: &[u8], limit: usize) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The media type of a `Content-Type` value, lower case, without parameters.
pub(super) fn media_type(value: &str) -> String {
    value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_ids_of_single_and_batch_frames() {
        assert_eq!(
            response_ids(br#"{"jsonrpc":"2.0","id":3,"result":null}"#),
            vec![RequestId::Number(3)]
        );
        assert_eq!(
            response_ids(br#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"x"}}"#),
            vec![RequestId::String("a".into())]
        );
        // A request from the server is not a response, nor is a result without an id.
        assert!(response_ids(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_empty());
        assert!(response_ids(br#"{"jsonrpc":"2.0","result":{}}"#).is_empty());
        assert!(response_ids(b"not json").is_empty());
        assert_eq!(
            response_ids(br#" [{"id":1,"result":1},{"method":"n"},{"id":2,"result":{"a":[1]}}]"#),
            vec![RequestId::Number(1), RequestId::Number(2)]
        );
    }

    #[test]
    fn initialize_outcome_reads_version_or_error() {
        let id = RequestId::Number(1);
        assert_eq!(
            initialize_outcome(
                br#"{"id":1,"result":{"protocolVersion":"2025-06-18"}}"#,
                &id
            ),
            Some(Ok(Some("2025-06-18".into())))
        );
        assert!(matches!(
            initialize_outcome(br#"{"id":1,"error":{"code":-32600,"message":"no"}}"#, &id),
            Some(Err(_))
        ));
        assert_eq!(initialize_outcome(br#"{"id":2,"result":{}}"#, &id), None);
    }

    #[test]
    fn request_facts_read_meta_and_name() {
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let facts = request_facts(line, "tools/call");
        assert_eq!(facts.modern_version.as_deref(), Some("2026-07-28"));
        assert_eq!(facts.name.as_deref(), Some("add"));
        let line =
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a b"}}"#;
        let facts = request_facts(line, "resources/read");
        assert_eq!(facts.modern_version, None);
        assert_eq!(facts.name.as_deref(), Some("file:///a b"));
    }

    #[test]
    fn header_values_are_plain_or_base64() {
        assert_eq!(header_value("get_weather"), "get_weather");
        assert_eq!(header_value("a b"), "a b");
        assert_eq!(header_value(" lead"), "=?base64?IGxlYWQ=?=");
        assert_eq!(header_value("héllo"), "=?base64?aMOpbGxv?=");
        assert_eq!(header_value("=?base64?x?="), "=?base64?PT9iYXNlNjQ/eD89?=");
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn excerpts_are_bounded_on_char_boundaries() {
        assert_eq!(excerpt(b"  short  ", 10), "short");
        assert_eq!(excerpt("ééééé".as_bytes(), 3), "é…");
        assert_eq!(
            read_limited(&b"12345"[..], 5).unwrap(),
            Some(b"12345".to_vec())
        );
        assert_eq!(read_limited(&b"123456"[..], 5).unwrap(), None);
        assert_eq!(
            media_type("Text/Event-Stream; charset=utf-8"),
            "text/event-stream"
        );
    }
}
