//! A lenient byte-level scan of JSON text, for what the strict parser cannot say:
//!
//! - the id (and whether it is a request) of a frame the parser refused (nested deeper than its
//!   limit, a number out of range such as `1e400`, invalid UTF-8), so the call waiting for it
//!   fails at once instead of at its deadline;
//! - where an integer outside the 64-bit range sits (serde_json would turn it into a rounded
//!   float without a word), so it can be refused by name instead of silently changed.
//!
//! The scan never recurses (a depth is a counter, a path a vector) and never allocates more
//! than the path it reports, so any input, however deep or malformed, costs one pass.

use super::RequestId;

/// What [`recover`] could read of a frame the parser refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// The top-level `id`, when it is an integer that fits `i64` or a plain string.
    pub(crate) id: Option<RequestId>,
    /// A top-level `method` member was seen: a request or notification, not a response.
    pub(crate) method_present: bool,
}

/// Skips whitespace from `at`; returns the index of the next byte that is not.
fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && matches!(bytes[at], b' ' | b'\t' | b'\n' | b'\r') {
        at += 1;
    }
    at
}

/// The end (one past the closing quote) of the string starting at `at` (a `"`), or the end of
/// the input when it is unterminated.
fn string_end(bytes: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Decodes a string token's text leniently (escapes of `"`, `\` and `/` and the usual control
/// escapes; `\u` escapes and invalid UTF-8 give `None`, which is enough for ids and keys).
fn decode_simple(token: &[u8]) -> Option<String> {
    let inner = token.get(1..token.len().checked_sub(1)?)?;
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        match inner[i] {
            b'\\' => {
                let escaped = *inner.get(i + 1)?;
                out.push(match escaped {
                    b'"' | b'\\' | b'/' => escaped,
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    _ => return None,
                });
                i += 2;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The end of the number or literal token starting at `at`.
fn token_end(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len()
        && !matches!(
            bytes[at],
            b',' | b'}' | b']' | b':' | b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'{' | b'['
        )
    {
        at += 1;
    }
    at
}

/// The value of a JSON integer literal (`-?(0|[1-9][0-9]*)`) that fits `i64`; `None` for
/// anything else, so `-07` or `+7` (which Rust's parser would take) is not read as an id the
/// peer never wrote.
fn json_integer(token: &[u8]) -> Option<i64> {
    let digits = token.strip_prefix(b"-").unwrap_or(token);
    let well_formed = match digits {
        [b'0'] => true,
        [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    if !well_formed {
        return None;
    }
    std::str::from_utf8(token).ok()?.parse::<i64>().ok()
}

/// Reads what can be read of a frame the parser refused: its top-level `id` and whether it has
/// a `method`. `None` when the text does not even start as a JSON object.
pub(crate) fn recover(bytes: &[u8]) -> Option<Recovered> {
    let mut at = skip_ws(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    let mut recovered = Recovered {
        id: None,
        method_present: false,
    };
    // At depth 1 we alternate: a key, a colon, a value; deeper values are skipped whole.
    let mut depth = 1usize;
    let mut expecting_key = true;
    let mut key: Option<Vec<u8>> = None;
    // Set by a top-level colon: the next non-blank byte starts the member's value, and only a
    // token starting there is the id (`"id":x"7"` or `"id":+7` has none).
    let mut value_next = false;
    while at < bytes.len() && depth > 0 {
        let byte = bytes[at];
        let starts_value = depth == 1 && value_next;
        if depth == 1 && !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
            value_next = false;
        }
        match byte {
            b'"' => {
                let end = string_end(bytes, at);
                if depth == 1 {
                    if expecting_key {
                        key = Some(bytes[at..end].to_vec());
                    } else if starts_value && key.as_deref() == Some(b"\"id\"") {
                        recovered.id = decode_simple(&bytes[at..end]).map(RequestId::String);
                    }
                }
                at = end;
                continue;
            }
            b':' if depth == 1 => {
                expecting_key = false;
                value_next = true;
                if key.as_deref() == Some(b"\"method\"") {
                    recovered.method_present = true;
                }
            }
            b',' if depth == 1 => {
                expecting_key = true;
                key = None;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            b'-' | b'0'..=b'9' if depth == 1 && !expecting_key => {
                let end = token_end(bytes, at);
                if starts_value && key.as_deref() == Some(b"\"id\"") {
                    recovered.id = json_integer(&bytes[at..end]).map(RequestId::Number);
                }
                at = end;
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    Some(recovered)
}

/// Whether JSON text nests arrays and objects deeper than `bound` (`{}` is 1, a scalar 0),
/// strings skipped: one pass without recursion that stops at the first level past the bound,
/// so text nested 200,000 deep costs no more than its bytes up to there.
pub(crate) fn deeper_than(bytes: &[u8], bound: usize) -> bool {
    let mut depth = 0usize;
    let mut at = 0usize;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                at = string_end(bytes, at);
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                if depth > bound {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    false
}

/// A container the scan is inside, with where in it the current value is.
enum Frame {
    Object { key: Option<String> },
    Array { index: usize },
}

/// True when `bytes` holds a run of 19 or more ASCII digits: the cheap test that comes first,
/// since only such a run can be an integer outside the 64-bit range.
pub(crate) fn has_long_digit_run(bytes: &[u8]) -> bool {
    let mut run = 0usize;
    for &byte in bytes {
        if byte.is_ascii_digit() {
            run += 1;
            if run >= 19 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// True when an integer literal (no fraction, no exponent) fits `i64` or `u64`.
fn fits_64_bits(literal: &str) -> bool {
    literal.parse::<i64>().is_ok() || literal.parse::<u64>().is_ok()
}

/// The JSON pointer and text of the first integer literal outside the 64-bit range, when
/// there is one. Meant for text the strict parser accepted.
pub(crate) fn wide_integer(bytes: &[u8]) -> Option<(String, String)> {
    if !has_long_digit_run(bytes) {
        return None;
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        match bytes[at] {
            b'{' => {
                stack.push(Frame::Object { key: None });
                at += 1;
            }
            b'[' => {
                stack.push(Frame::Array { index: 0 });
                at += 1;
            }
            b'}' | b']' => {
                stack.pop();
                at += 1;
            }
            b',' => {
                match stack.last_mut() {
                    Some(Frame::Array { index }) => *index += 1,
                    Some(Frame::Object { key }) => *key = None,
                    None => {}
                }
                at += 1;
            }
            b'"' => {
                let end = string_end(bytes, at);
                let after = skip_ws(bytes, end);
                if let Some(Frame::Object { key }) = stack.last_mut() {
                    if key.is_none() && bytes.get(after) == Some(&b':') {
                        *key = Some(decode_simple(&bytes[at..end]).unwrap_or_else(|| "?".into()));
                        at = after + 1;
                        continue;
                    }
                }
                at = end;
            }
            b'-' | b'0'..=b'9' => {
                let end = token_end(bytes, at);
                let literal = String::from_utf8_lossy(&bytes[at..end]).into_owned();
                if !literal.contains(['.', 'e', 'E']) && !fits_64_bits(&literal) {
                    return Some((pointer(&stack), literal));
                }
                at = end;
            }
            _ => at += 1,
        }
    }
    None
}

fn pointer(stack: &[Frame]) -> String {
    let mut text = String::new();
    for frame in stack {
        match frame {
            Frame::Object { key: Some(key) } => {
                text.push('/');
                text.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Frame::Object { key: None } => {}
            Frame::Array { index } => {
                text.push('/');
                text.push_str(&index.to_string());
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_the_id_of_frames_the_parser_refuses() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(
            recover(deep.as_bytes()),
            Some(Recovered {
                id: Some(RequestId::Number(7)),
                method_present: false
            })
        );
        let huge = br#"{"jsonrpc":"2.0","result":{"x":1e400},"id":"a-1"}"#;
        assert_eq!(
            recover(huge).unwrap().id,
            Some(RequestId::String("a-1".into()))
        );
        let bad_utf8 = b"{\"id\":3,\"result\":\"\xff\xfe\"}";
        assert_eq!(recover(bad_utf8).unwrap().id, Some(RequestId::Number(3)));
        let request = br#"{"method":"x","id":4,"params":[1e999]}"#;
        let read = recover(request).unwrap();
        assert!(read.method_present);
        assert_eq!(read.id, Some(RequestId::Number(4)));
        // An id inside a nested object is not the frame's id.
        assert_eq!(
            recover(br#"{"result":{"id":9},"x":1e999}"#).unwrap().id,
            None
        );
        assert_eq!(recover(b"not json"), None);
        // Only a JSON integer is an id: no leading zero, no plus sign, no fraction.
        for text in [
            &br#"{"id":-07,"result":1e999}"#[..],
            br#"{"id":+7,"result":1e999}"#,
            br#"{"id":00,"result":1e999}"#,
            br#"{"id":7.0,"result":1e999}"#,
            br#"{"id":x"7","result":1e999}"#,
        ] {
            assert_eq!(
                recover(text).unwrap().id,
                None,
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
        assert_eq!(
            recover(br#"{"id":-0,"result":1e999}"#).unwrap().id,
            Some(RequestId::Number(0))
        );
        assert_eq!(
            recover(b"{\"id\" :\n \"q\" ,\"result\":1e999}").unwrap().id,
            Some(RequestId::String("q".into()))
        );
    }

    #[test]
    fn measures_depth_without_counting_brackets_in_strings() {
        assert!(!deeper_than(b"1", 0));
        assert!(deeper_than(b"{}", 0));
        assert!(!deeper_than(b"{}", 1));
        assert!(!deeper_than(br#"{"a":[{"b":"[[[{{{\"["}]}"#, 3));
        assert!(deeper_than(br#"{"a":[{"b":[]}]}"#, 3));
        let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
        assert!(deeper_than(deep.as_bytes(), 128));
        assert!(!deeper_than(deep.as_bytes(), 200_000));
    }

    #[test]
    fn finds_integers_outside_the_64_bit_range_with_their_pointer() {
        assert_eq!(wide_integer(br#"{"a":1,"b":[1,2,3]}"#), None);
        assert_eq!(
            wide_integer(br#"{"arguments":{"n":18446744073709551616}}"#),
            Some(("/arguments/n".into(), "18446744073709551616".into()))
        );
        assert_eq!(
            wide_integer(br#"{"a":[0,{"b":-9223372036854775809}]}"#),
            Some(("/a/1/b".into(), "-9223372036854775809".into()))
        );
        // The extremes that fit, long floats and digits inside strings are fine.
        assert_eq!(
            wide_integer(br#"{"u":18446744073709551615,"i":-9223372036854775808}"#),
            None
        );
        assert_eq!(wide_integer(br#"{"f":1.00000000000000000001}"#), None);
        assert_eq!(wide_integer(br#"{"s":"123456789012345678901234"}"#), None);
        assert_eq!(
            wide_integer(br#"[{"x":1},{"y":[true,null,123456789012345678901]}]"#),
            Some(("/1/y/2".into(), "123456789012345678901".into()))
        );
        assert_eq!(
            wide_integer(br#"{"a/b":{"c~d":99999999999999999999}}"#),
            Some(("/a~1b/c~0d".into(), "99999999999999999999".into()))
        );
    }
}
