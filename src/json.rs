//! Strict JSON, for the texts a person or a model writes: config files, a raw tool call, the
//! command line's arguments.
//!
//! serde_json keeps the last of two equal keys without a word, so `{"a":1,"a":2}` reads as
//! `{"a":2}` after something upstream (a reviewer, a checker, the user's own eye) saw
//! `{"a":1}`; and it rounds an integer outside 64 bits into a float. [`parse`] reads through
//! its own visitor that refuses a repeated key at any depth, refuses anything after the value,
//! and then refuses an integer outside the 64-bit range, each by name and place. Nesting is
//! limited by serde_json's recursion limit (128 levels).
//!
//! This module sits below every layer that reads such text (`config`, `harness`) and knows
//! none of them: each says the refusal in its own words ([`Refusal`] keeps the parts apart).

use std::fmt;
use std::fmt::Write as _;

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why [`parse`] refused a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not one JSON value: a syntax error, the end of the input, nesting past the limit, or
    /// data after the value. serde_json's message, with its line and column.
    Syntax(String),
    /// A key twice in one object: the message names the key, the object's JSON pointer, and
    /// the line and column where the second one was read.
    RepeatedKey(String),
    /// An integer literal outside the 64-bit range, which a parser would round.
    WideInteger {
        /// Where it is, as a JSON pointer.
        pointer: String,
        /// The literal as written.
        literal: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Syntax(message) | Refusal::RepeatedKey(message) => f.write_str(message),
            Refusal::WideInteger { pointer, literal } => write!(
                f,
                "the integer {literal} at {} is outside the 64-bit range",
                show_pointer(pointer)
            ),
        }
    }
}

/// Parses one JSON value strictly; see the module docs.
pub(crate) fn parse(text: &str) -> Result<Value, Refusal> {
    parse_recording(text, None)
}

/// [`parse`], and the keys of each object in the text's order (a `Value` keeps them
/// sorted), by the object's JSON pointer: for a config whose order means something.
pub(crate) fn parse_with_key_order(text: &str) -> Result<(Value, KeyOrders), Refusal> {
    let mut orders = KeyOrders::new();
    let value = parse_recording(text, Some(&mut orders))?;
    Ok((value, orders))
}

/// The keys of each object of a text in their order, by the object's JSON pointer.
pub(crate) type KeyOrders = std::collections::HashMap<String, Vec<String>>;

fn parse_recording(text: &str, orders: Option<&mut KeyOrders>) -> Result<Value, Refusal> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let mut path = String::new();
    let value = Strict {
        path: &mut path,
        orders,
    }
    .deserialize(&mut deserializer)
    .map_err(|error| match error.classify() {
        // The visitor builds any value serde_json reads, so the only data error is its own
        // refusal of a repeated key; everything else is the text's syntax.
        serde_json::error::Category::Data => Refusal::RepeatedKey(error.to_string()),
        _ => Refusal::Syntax(error.to_string()),
    })?;
    deserializer.end().map_err(|error| {
        Refusal::Syntax(format!("unexpected data after the JSON value ({error})"))
    })?;
    if let Some((pointer, literal)) = crate::wire::scan::wide_integer(text.as_bytes()) {
        return Err(Refusal::WideInteger { pointer, literal });
    }
    Ok(value)
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

/// A JSON pointer for messages: `(root)` for the empty pointer.
pub(crate) fn show_pointer(pointer: &str) -> &str {
    if pointer.is_empty() {
        "(root)"
    } else {
        pointer
    }
}

/// One JSON pointer segment: `~` and `/` escaped (RFC 6901).
pub(crate) fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Builds a `Value` like serde_json does, refusing a repeated key; carries the JSON pointer
/// of the value being read, for the message. One buffer for the whole parse, grown for a
/// child and cut back after it: the pointer is needed only for a refusal, so a value read
/// costs no allocation for it.
struct Strict<'p> {
    path: &'p mut String,
    /// Where each object's keys are recorded in order, when wanted.
    orders: Option<&'p mut KeyOrders>,
}

impl Strict<'_> {
    /// The pointer's length before `segment` (an escaped key) is appended.
    fn enter_key(&mut self, key: &str) -> usize {
        let len = self.path.len();
        self.path.push('/');
        for c in key.chars() {
            match c {
                '~' => self.path.push_str("~0"),
                '/' => self.path.push_str("~1"),
                c => self.path.push(c),
            }
        }
        len
    }

    fn enter_index(&mut self, index: usize) -> usize {
        let len = self.path.len();
        // Writing to a String cannot fail.
        let _ = write!(self.path, "/{index}");
        len
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D>(self, deserializer: D) -> Result<Value, D::Error>
    where
        D: serde::Deserializer<'de>,
    {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
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

    fn visit_seq<A>(mut self, mut access: A) -> Result<Value, A::Error>
    where
        A: SeqAccess<'de>,
    {
        let mut items = Vec::new();
        loop {
            let len = self.enter_index(items.len());
            let item = access.next_element_seed(Strict {
                path: &mut *self.path,
                orders: self.orders.as_deref_mut(),
            })?;
            self.path.truncate(len);
            match item {
                Some(item) => items.push(item),
                None => break,
            }
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A>(mut self, mut access: A) -> Result<Value, A::Error>
    where
        A: MapAccess<'de>,
    {
        let mut object = Map::new();
        let mut keys = Vec::new();
        while let Some(key) = access.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(A::Error::custom(format!(
                    "duplicate key {} in the object at {}",
                    quote(&key),
                    show_pointer(self.path)
                )));
            }
            let len = self.enter_key(&key);
            let value = access.next_value_seed(Strict {
                path: &mut *self.path,
                orders: self.orders.as_deref_mut(),
            })?;
            self.path.truncate(len);
            if self.orders.is_some() {
                keys.push(key.clone());
            }
            object.insert(key, value);
        }
        if let Some(orders) = self.orders {
            orders.insert(self.path.clone(), keys);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_input_reads_as_serde_json_reads_it() {
        let text =
            r#" {"a": [1, -2, 3.5, "x", null, true], "b": {"c": {}}, "d": 18446744073709551615} "#;
        assert_eq!(
            parse(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }

    #[test]
    fn key_orders_are_the_texts_by_pointer() {
        let (value, orders) =
            parse_with_key_order(r#"{"z": {"b": 1, "a": [{"y": 0, "x": 0}]}, "m": 2}"#).unwrap();
        assert_eq!(
            value,
            parse(r#"{"m": 2, "z": {"a": [{"x": 0, "y": 0}], "b": 1}}"#).unwrap()
        );
        assert_eq!(orders[""], ["z", "m"]);
        assert_eq!(orders["/z"], ["b", "a"]);
        assert_eq!(orders["/z/a/0"], ["y", "x"]);
    }

    #[test]
    fn a_repeated_key_is_its_own_refusal_with_its_place_and_line() {
        let refusal = parse("{\"a\": {\"k\": 1,\n \"k\": 2}}").unwrap_err();
        let Refusal::RepeatedKey(message) = refusal else {
            panic!("{refusal:?}");
        };
        assert!(
            message.starts_with("duplicate key \"k\" in the object at /a at line 2"),
            "{message}"
        );
    }

    #[test]
    fn syntax_trailing_data_and_depth_are_syntax() {
        for text in ["", "{\"a\": 1", "{\"a\": 1} 2", &"[".repeat(200)] {
            assert!(
                matches!(parse(text), Err(Refusal::Syntax(_))),
                "{text:?}: {:?}",
                parse(text)
            );
        }
    }

    #[test]
    fn a_wide_integer_is_named_with_its_pointer() {
        let refusal = parse(r#"{"x/y": [1, 123456789012345678901]}"#).unwrap_err();
        assert_eq!(
            refusal,
            Refusal::WideInteger {
                pointer: "/x~1y/1".into(),
                literal: "123456789012345678901".into()
            }
        );
        assert_eq!(
            refusal.to_string(),
            "the integer 123456789012345678901 at /x~1y/1 is outside the 64-bit range"
        );
    }

    #[test]
    fn quotes_are_escaped_and_bounded() {
        assert_eq!(quote("a\"b"), r#""a\"b""#);
        assert!(quote(&"x".repeat(500)).chars().count() < 90);
    }
}
