//! Checks on the raw text of a call: its size, strict JSON, and the tool-name pattern.
//!
//! serde_json keeps the last of two equal keys without a word, so `{"a":1,"a":2}` would reach
//! a tool as `{"a":2}` after something upstream had checked `{"a":1}`. This module parses
//! through its own visitor that refuses a repeated key at any depth, and refuses anything
//! after the value.

use std::fmt;

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Which tool names the harness accepts, in registrations and in calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NameProfile {
    /// Only `^[a-z][a-z0-9-]{0,63}$`.
    Strict,
    /// The strict form, or the namespaced MCP form `^mcp__[a-z0-9-]+__[A-Za-z0-9_-]+$`, at
    /// most 64 characters in all (the limit OpenAI and Anthropic put on tool names). The
    /// server part has no underscore, so the first `__` after `mcp__` always ends it.
    #[default]
    Default,
}

impl NameProfile {
    /// The pattern in words, for rejection messages.
    pub fn describe(self) -> &'static str {
        match self {
            NameProfile::Strict => "^[a-z][a-z0-9-]{0,63}$",
            NameProfile::Default => {
                "^[a-z][a-z0-9-]{0,63}$ or ^mcp__[a-z0-9-]+__[A-Za-z0-9_-]+$ \
                 (at most 64 characters)"
            }
        }
    }

    /// True when `name` fits this profile.
    pub fn admits(self, name: &str) -> bool {
        match self {
            NameProfile::Strict => is_strict_name(name),
            NameProfile::Default => is_strict_name(name) || is_mcp_name(name),
        }
    }
}

/// The most characters of a caller's text quoted back in a message.
const QUOTE_CHARS: usize = 80;

/// Quotes a caller-supplied string for a message: escaped, and cut to a bound.
pub(crate) fn quote(text: &str) -> String {
    if text.chars().count() <= QUOTE_CHARS {
        format!("{text:?}")
    } else {
        let cut: String = text.chars().take(QUOTE_CHARS).collect();
        format!("{cut:?}…")
    }
}

/// Checks a tool name against the profile.
pub(crate) fn check_name(name: &str, profile: NameProfile) -> Result<(), String> {
    if profile.admits(name) {
        Ok(())
    } else {
        Err(format!(
            "the tool name {} is not a valid tool name: names must match {}",
            quote(name),
            profile.describe()
        ))
    }
}

fn is_strict_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match bytes.split_first() {
        Some((first, rest)) => {
            first.is_ascii_lowercase()
                && rest.len() <= 63
                && rest
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        }
        None => false,
    }
}

fn is_mcp_name(name: &str) -> bool {
    if name.len() > 64 {
        return false;
    }
    let Some(rest) = name.strip_prefix("mcp__") else {
        return false;
    };
    let Some((server, tool)) = rest.split_once("__") else {
        return false;
    };
    !server.is_empty()
        && server
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !tool.is_empty()
        && tool
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

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
pub fn parse_strict(text: &str) -> Result<Value, String> {
    let value = parse_strict_json(text)?;
    if let Some((pointer, literal)) = crate::wire::scan::wide_integer(text.as_bytes()) {
        return Err(format!(
            "the integer {literal} at {} is outside the 64-bit range; it cannot be passed on \
             exactly (JSON parsers would round it), so nothing was run",
            show_pointer(&pointer)
        ));
    }
    Ok(value)
}

fn parse_strict_json(text: &str) -> Result<Value, String> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = Strict {
        path: String::new(),
    }
    .deserialize(&mut deserializer)
    .map_err(|error| error.to_string())?;
    deserializer
        .end()
        .map_err(|error| format!("unexpected data after the JSON value ({error})"))?;
    Ok(value)
}

/// The largest integer every JSON reader holds exactly (JavaScript's `Number.MAX_SAFE_INTEGER`,
/// 2^53 − 1).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The first integer in `value` beyond ±(2^53 − 1), with its JSON pointer: many JSON readers
/// (JavaScript's among them) cannot hold it exactly.
pub(crate) fn unsafe_integer(value: &Value) -> Option<(String, String)> {
    // An explicit stack: arguments may be deep, and nothing here recurses.
    let mut stack: Vec<(String, &Value)> = vec![(String::new(), value)];
    while let Some((path, value)) = stack.pop() {
        match value {
            Value::Number(number) => {
                let beyond = match (number.as_i64(), number.as_u64()) {
                    (Some(signed), _) => signed.unsigned_abs() > MAX_SAFE_INTEGER,
                    (None, Some(unsigned)) => unsigned > MAX_SAFE_INTEGER,
                    _ => false,
                };
                if beyond {
                    return Some((path, number.to_string()));
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate().rev() {
                    stack.push((format!("{path}/{index}"), item));
                }
            }
            Value::Object(members) => {
                for (key, item) in members.iter().rev() {
                    let key = key.replace('~', "~0").replace('/', "~1");
                    stack.push((format!("{path}/{key}"), item));
                }
            }
            _ => {}
        }
    }
    None
}

/// A JSON pointer for messages: `(root)` for the empty pointer.
pub(crate) fn show_pointer(pointer: &str) -> &str {
    if pointer.is_empty() {
        "(root)"
    } else {
        pointer
    }
}

/// Builds a `Value` like serde_json does, refusing a repeated key; carries the JSON pointer
/// of the value being read, for the message.
struct Strict {
    path: String,
}

impl Strict {
    fn child(&self, segment: &str) -> Strict {
        let escaped = segment.replace('~', "~0").replace('/', "~1");
        Strict {
            path: format!("{}/{escaped}", self.path),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D>(self, deserializer: D) -> Result<Value, D::Error>
    where
        D: serde::Deserializer<'de>,
    {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        // JSON text cannot spell NaN or infinity, so this never falls back.
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A>(self, mut access: A) -> Result<Value, A::Error>
    where
        A: SeqAccess<'de>,
    {
        let mut items = Vec::new();
        while let Some(item) = access.next_element_seed(self.child(&items.len().to_string()))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A>(self, mut access: A) -> Result<Value, A::Error>
    where
        A: MapAccess<'de>,
    {
        let mut object = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(A::Error::custom(format!(
                    "duplicate key {} in the object at {}",
                    quote(&key),
                    show_pointer(&self.path)
                )));
            }
            let value = access.next_value_seed(self.child(&key))?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
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
    fn strict_names() {
        for good in ["a", "read-file", "x9", &format!("a{}", "b".repeat(63))] {
            assert!(NameProfile::Strict.admits(good), "{good}");
        }
        for bad in [
            "",
            "9a",
            "-a",
            "Read",
            "read_file",
            "a.b",
            "../secret",
            "a b",
            "é",
            &format!("a{}", "b".repeat(64)),
            "mcp__files__read",
        ] {
            assert!(!NameProfile::Strict.admits(bad), "{bad}");
        }
    }

    #[test]
    fn the_default_profile_admits_the_namespaced_mcp_form() {
        for good in ["echo", "mcp__files__read_file", "mcp__a-1__Tool-X_2"] {
            assert!(NameProfile::Default.admits(good), "{good}");
        }
        for bad in [
            "mcp__files",
            "mcp____read",
            "mcp__files__",
            "mcp__Files__read",
            "mcp__fi_les__read",
            "mcp__files__read.file",
            "mcp__files__../secret",
            &format!("mcp__s__{}", "t".repeat(57)),
        ] {
            assert!(!NameProfile::Default.admits(bad), "{bad}");
        }
        assert!(NameProfile::Default.admits(&format!("mcp__s__{}", "t".repeat(56))));
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
