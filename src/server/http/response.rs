//! Writing HTTP/1.1 responses: whole ones with a length, and streams (SSE) in chunked
//! framing, so a connection stays usable after a stream ends.

use std::io::{self, Write};

/// The reason phrase of the statuses this server sends.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// A response's head.
pub(crate) fn head(status: u16, headers: &[(&str, String)], keep_alive: bool) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push_str("\r\n");
    }
    if !keep_alive {
        out.push_str("Connection: close\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// Writes a whole response with a body (and its length), in one write.
pub(crate) fn write_full<W: Write>(
    writer: &mut W,
    status: u16,
    content_type: Option<&str>,
    extra: &[(&str, String)],
    body: &[u8],
    keep_alive: bool,
) -> io::Result<()> {
    let mut headers: Vec<(&str, String)> = Vec::with_capacity(extra.len() + 2);
    if let Some(content_type) = content_type {
        headers.push(("Content-Type", content_type.to_owned()));
    }
    headers.push(("Content-Length", body.len().to_string()));
    headers.extend(extra.iter().cloned());
    let mut out = head(status, &headers, keep_alive);
    out.extend_from_slice(body);
    writer.write_all(&out)?;
    writer.flush()
}

/// A JSON error body that is not a JSON-RPC answer (a refused HTTP request): a JSON-RPC error
/// with a null id, as the official servers send.
pub(crate) fn error_body(code: i32, message: &str) -> Vec<u8> {
    serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes()
}

/// The head of an event stream; its body follows in chunks.
pub(crate) fn stream_head(extra: &[(&str, String)]) -> Vec<u8> {
    let mut headers: Vec<(&str, String)> = vec![
        ("Content-Type", "text/event-stream".into()),
        ("Cache-Control", "no-cache".into()),
        ("Transfer-Encoding", "chunked".into()),
    ];
    headers.extend(extra.iter().cloned());
    head(200, &headers, true)
}

/// One chunk of a chunked body.
pub(crate) fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// The end of a chunked body.
pub(crate) const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// One SSE event carrying a JSON-RPC message on a single `data:` line (compact JSON holds no
/// newline), with an id when the stream can be resumed.
pub(crate) fn event(id: Option<&str>, data: &str) -> String {
    let mut out = String::with_capacity(data.len() + 40);
    if let Some(id) = id {
        out.push_str("id: ");
        out.push_str(id);
        out.push('\n');
    }
    out.push_str("event: message\ndata: ");
    out.push_str(data);
    out.push_str("\n\n");
    out
}

/// The event that opens a resumable stream: its id and an empty `data`, so the client has
/// an id to resume from before the first message, and the reconnection delay.
pub(crate) fn priming(id: &str, retry_ms: u64) -> String {
    format!("id: {id}\nretry: {retry_ms}\ndata: \n\n")
}

/// A comment line: keeps idle intermediaries from closing a quiet stream, and finds out
/// whether the client is still there.
pub(crate) const KEEPALIVE: &str = ": keepalive\n\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_response_has_its_length_and_close_when_asked() {
        let mut out = Vec::new();
        write_full(&mut out, 404, Some("application/json"), &[], b"{}", false).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 404 Not Found\r\n"), "{text}");
        assert!(text.contains("Content-Length: 2\r\n"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("\r\n\r\n{}"));
    }

    #[test]
    fn events_and_chunks_are_framed() {
        assert_eq!(
            event(Some("1-2"), "{}"),
            "id: 1-2\nevent: message\ndata: {}\n\n"
        );
        assert_eq!(event(None, "{}"), "event: message\ndata: {}\n\n");
        assert_eq!(chunk(b"hello"), b"5\r\nhello\r\n");
        assert_eq!(priming("0-0", 500), "id: 0-0\nretry: 500\ndata: \n\n");
    }
}
