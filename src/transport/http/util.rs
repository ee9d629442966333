//! Small helpers of the HTTP transport: header values that must be visible ASCII, and bounded
//! reads of bodies.

use std::io::Read;

/// A header value as routing headers want it: plain when it is visible ASCII (spaces inside
/// allowed) without leading or trailing whitespace and does not look like the sentinel,
/// otherwise `=?base64?…?=` of its UTF-8.
pub(in crate::transport) fn header_value(text: &str) -> String {
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

/// A mirrored parameter's header value: as [`header_value`], except that an empty value is
/// sent plain (an empty header is well-formed, and the parameter was present).
pub(in crate::transport) fn param_value(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        header_value(text)
    }
}

/// Standard base64 with padding.
pub(in crate::transport) fn base64(bytes: &[u8]) -> String {
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
pub(in crate::transport) fn read_limited(
    reader: impl Read,
    limit: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut body = Vec::new();
    reader.take(limit as u64 + 1).read_to_end(&mut body)?;
    Ok((body.len() <= limit).then_some(body))
}

/// Reads up to `limit` bytes of a body for an error message, ignoring read errors.
pub(in crate::transport) fn read_prefix(reader: impl Read, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    let _ = reader.take(limit as u64).read_to_end(&mut body);
    body
}

/// The first `limit` bytes as text, cut on a character boundary, marked when cut.
pub(in crate::transport) fn excerpt(body: &[u8], limit: usize) -> String {
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
pub(in crate::transport) fn media_type(value: &str) -> String {
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
    fn header_values_are_plain_or_base64() {
        assert_eq!(header_value("get_weather"), "get_weather");
        assert_eq!(header_value("a b"), "a b");
        assert_eq!(header_value(" lead"), "=?base64?IGxlYWQ=?=");
        assert_eq!(header_value("héllo"), "=?base64?aMOpbGxv?=");
        assert_eq!(header_value("=?base64?x?="), "=?base64?PT9iYXNlNjQ/eD89?=");
        assert_eq!(param_value(""), "");
        assert_eq!(param_value("\tindented"), "=?base64?CWluZGVudGVk?=");
        assert_eq!(param_value("line1\r\nline2"), "=?base64?bGluZTENCmxpbmUy?=");
        assert_eq!(param_value("us west 1"), "us west 1");
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
