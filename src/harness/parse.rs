//! Checks on the raw text of a call: its size and strict JSON. (The tool-name rule is MCP's,
//! in `crate::mcp::names`.)
//!
//! serde_json keeps the last of two equal keys without a word, so `{"a":1,"a":2}` would reach
//! a tool as `{"a":2}` after something upstream had checked `{"a":1}`. The call is read by the
//! crate's strict reader (`crate::json`, shared with the config files), which refuses a
//! repeated key at any depth, anything after the value, and an integer outside 64 bits.

use serde_json::Value;

use crate::json::Refusal;
pub(crate) use crate::json::{quote, show_pointer};

/// Checks the size of a call before it is parsed, counting no further than one past the
/// limit.
pub(crate) fn check_size(raw: &str, max_chars: usize) -> Result<(), String> {
    // A string no longer in bytes than the limit cannot be longer in characters.
    if raw.len() <= max_chars {
        return Ok(());
    }
    let counted = raw.chars().take(max_chars.saturating_add(1)).count();
    if counted <= max_chars {
        Ok(())
    } else {
        Err(format!(
            "the call is more than {max_chars} characters long; the limit is {max_chars}. \
             Send smaller arguments"
        ))
    }
}

/// Parses one JSON value strictly: a repeated key in any object, anything but whitespace
/// after the value, or an integer outside the 64-bit range (which a parser would round into a
/// float) is an error naming where it is.
///
/// Nesting is limited by serde_json's recursion limit (128 levels).
///
/// # Errors
///
/// The reason, in words: serde_json's message with its line and column for text that is not
/// one JSON value, `duplicate key "k" in the object at /pointer …` for a repeated key, or
/// `the integer … at /pointer is outside the 64-bit range …`.
pub fn parse_strict(text: &str) -> Result<Value, String> {
    crate::json::parse(text).map_err(|refusal| match refusal {
        Refusal::WideInteger { .. } => format!(
            "{refusal}; it cannot be passed on exactly (JSON parsers would round it), so \
             nothing was run"
        ),
        other => other.to_string(),
    })
}

/// The largest integer every JSON reader holds exactly (JavaScript's `Number.MAX_SAFE_INTEGER`,
/// 2^53 − 1).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The first integer in `value` beyond ±(2^53 − 1), with its JSON pointer: many JSON readers
/// (JavaScript's among them) cannot hold it exactly.
pub(crate) fn unsafe_integer(value: &Value) -> Option<(String, String)> {
    /// Where a value sits in its parent.
    enum Segment<'a> {
        Root,
        Index(usize),
        Key(&'a str),
    }
    // An explicit stack: arguments may be deep, and nothing here recurses. The pointer is
    // kept as the trail of segments down to the value being looked at and spelled out only
    // for a hit, so a clean call (nearly every call) allocates nothing per value.
    let mut stack: Vec<(usize, Segment, &Value)> = vec![(0, Segment::Root, value)];
    let mut trail: Vec<Segment> = Vec::new();
    while let Some((depth, segment, value)) = stack.pop() {
        trail.truncate(depth);
        trail.push(segment);
        match value {
            Value::Number(number) => {
                let beyond = match (number.as_i64(), number.as_u64()) {
                    (Some(signed), _) => signed.unsigned_abs() > MAX_SAFE_INTEGER,
                    (None, Some(unsigned)) => unsigned > MAX_SAFE_INTEGER,
                    _ => false,
                };
                if beyond {
                    let mut path = String::new();
                    for segment in &trail {
                        match segment {
                            Segment::Root => {}
                            Segment::Index(index) => path.push_str(&format!("/{index}")),
                            Segment::Key(key) => {
                                path.push('/');
                                path.push_str(&crate::json::pointer_segment(key));
                            }
                        }
                    }
                    return Some((path, number.to_string()));
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate().rev() {
                    stack.push((depth + 1, Segment::Index(index), item));
                }
            }
            Value::Object(members) => {
                for (key, item) in members.iter().rev() {
                    stack.push((depth + 1, Segment::Key(key), item));
                }
            }
            _ => {}
        }
    }
    None
}

/// Names the JSON type of a value, for messages ("a string", "an object", …).
pub(crate) use crate::wire::type_name as kind_of;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_parse_matches_serde_json_on_clean_input() {
        let text =
            r#" {"a": [1, -2, 3.5, "x", null, true], "b": {"c": {}}, "d": 18446744073709551615} "#;
        assert_eq!(
            parse_strict(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }

    #[test]
    fn a_duplicate_key_is_refused_at_any_depth_with_its_place() {
        let error = parse_strict(r#"{"a": 1, "a": 2}"#).unwrap_err();
        assert!(
            error.starts_with("duplicate key \"a\" in the object at (root)"),
            "{error}"
        );
        let error = parse_strict(r#"{"x": [{"ok": 1}, {"k/y": {"z": 1, "z": 1}}]}"#).unwrap_err();
        assert!(
            error.contains("\"z\" in the object at /x/1/k~1y"),
            "{error}"
        );
    }

    #[test]
    fn trailing_data_is_refused() {
        let error = parse_strict(r#"{"a": 1} {"a": 2}"#).unwrap_err();
        assert!(
            error.contains("unexpected data after the JSON value"),
            "{error}"
        );
        assert!(parse_strict("{\"a\": 1}\n").is_ok());
        assert!(parse_strict("").is_err());
        assert!(parse_strict("{\"a\": 1").is_err());
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(parse_strict(&deep).unwrap_err().contains("recursion limit"));
    }

    #[test]
    fn the_size_check_counts_characters_not_bytes() {
        assert!(check_size("ééé", 3).is_ok());
        assert!(check_size("éééé", 3).is_err());
        assert!(check_size(&"x".repeat(10), 10).is_ok());
        let error = check_size(&"x".repeat(11), 10).unwrap_err();
        assert!(error.contains("limit is 10"), "{error}");
    }

    #[test]
    fn quotes_are_escaped_and_bounded() {
        assert_eq!(quote("a\"b"), r#""a\"b""#);
        assert!(quote(&"x".repeat(500)).chars().count() < 90);
        assert_eq!(kind_of(&json!([])), "an array");
    }
}
