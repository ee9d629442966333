//! A call's arguments: one JSON object, or `key=value` pairs typed by the tool's input schema,
//! and the check against that schema with the harness's repair message.
//!
//! Every piece of JSON the user writes is read as strictly as the harness reads a model's
//! call ([`toolwire::harness::parse_strict`]): a key written twice is an error naming it
//! (serde_json alone would send the last one, not the one the user checked), and so is an
//! integer outside 64 bits (which it would round). An integer beyond ±(2^53 − 1) is sent as
//! written, with a warning from [`unsafe_integers`]: many servers cannot hold it exactly.

use std::io::Read;

use serde::de::IgnoredAny;
use serde_json::{Map, Number, Value};
use toolwire::harness::{parse_strict, MAX_SAFE_INTEGER};
use toolwire::schema::Schema;
use toolwire::Tool;

/// Why JSON text was refused.
enum Refused {
    /// It is not one JSON value.
    NotJson(String),
    /// It is JSON, but the strict reader refuses it: a repeated key, an integer outside 64
    /// bits.
    Strict(String),
}

/// Reads JSON text strictly, telling text that is not JSON from JSON that is refused.
fn strict(text: &str) -> Result<Value, Refused> {
    parse_strict(text).map_err(|reason| {
        // serde_json reads what the strict reader refuses for strictness alone.
        if serde_json::from_str::<IgnoredAny>(text).is_ok() {
            Refused::Strict(reason)
        } else {
            Refused::NotJson(reason)
        }
    })
}

/// The arguments from the command line: nothing (`{}`), one JSON object, `-` (a JSON object
/// on stdin), or `key=value` / `key:=JSON` pairs.
pub fn parse(raw: &[String], schema: &Value) -> Result<Value, String> {
    match raw {
        [] => return Ok(Value::Object(Map::new())),
        [one] if one == "-" => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|error| format!("cannot read the arguments from stdin: {error}"))?;
            return object(&text, "stdin");
        }
        [one] if one.trim_start().starts_with('{') => return object(one, "the argument"),
        _ => {}
    }
    let mut arguments = Map::new();
    for pair in raw {
        let (key, value) = if let Some((key, json)) = pair.split_once(":=") {
            let value = strict(json).map_err(|refused| match refused {
                Refused::NotJson(error) => {
                    format!("`{pair}`: the value after := must be JSON ({error})")
                }
                Refused::Strict(reason) => format!("`{pair}`: {reason}"),
            })?;
            (key, value)
        } else if let Some((key, text)) = pair.split_once('=') {
            let value = typed(text, property(schema, key))
                .map_err(|reason| format!("`{pair}`: {reason}"))?;
            (key, value)
        } else {
            return Err(format!(
                "`{pair}` is neither key=value, key:=JSON, nor one JSON object"
            ));
        };
        if key.is_empty() {
            return Err(format!("`{pair}` has no key before the ="));
        }
        if arguments.insert(key.to_owned(), value).is_some() {
            return Err(format!("the argument `{key}` is given twice"));
        }
    }
    Ok(Value::Object(arguments))
}

fn object(text: &str, source: &str) -> Result<Value, String> {
    match strict(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(format!("{source} must be a JSON object")),
        Err(Refused::NotJson(error)) => Err(format!("{source} is not valid JSON: {error}")),
        Err(Refused::Strict(reason)) => Err(format!("{source}: {reason}")),
    }
}

/// Every integer in `arguments` beyond ±(2^53 − 1) ([`MAX_SAFE_INTEGER`]), with its JSON
/// pointer, in document order: a server whose JSON reader keeps numbers as doubles
/// (JavaScript's does) would not hold it exactly.
pub fn unsafe_integers(arguments: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    // An explicit stack: nothing here recurses, however deep the arguments.
    let mut stack: Vec<(String, &Value)> = vec![(String::new(), arguments)];
    while let Some((pointer, value)) = stack.pop() {
        match value {
            Value::Number(number) => {
                let beyond = match (number.as_i64(), number.as_u64()) {
                    (Some(signed), _) => signed.unsigned_abs() > MAX_SAFE_INTEGER,
                    (None, Some(unsigned)) => unsigned > MAX_SAFE_INTEGER,
                    _ => false,
                };
                if beyond {
                    found.push((pointer, number.to_string()));
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate().rev() {
                    stack.push((format!("{pointer}/{index}"), item));
                }
            }
            Value::Object(members) => {
                for (key, item) in members.iter().rev() {
                    let segment = key.replace('~', "~0").replace('/', "~1");
                    stack.push((format!("{pointer}/{segment}"), item));
                }
            }
            _ => {}
        }
    }
    found
}

/// The schema of property `key`, if the input schema declares it.
fn property<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    schema.get("properties")?.get(key)
}

/// The JSON types a property admits, from `type`, `enum`, `const`, and the branches of
/// `anyOf` / `oneOf` (how optional fields are often written). Empty when unknown.
fn types(schema: &Value) -> Vec<&str> {
    let mut found = Vec::new();
    match schema.get("type") {
        Some(Value::String(kind)) => found.push(kind.as_str()),
        Some(Value::Array(kinds)) => found.extend(kinds.iter().filter_map(Value::as_str)),
        _ => {}
    }
    let literals = schema
        .get("enum")
        .and_then(Value::as_array)
        .map(|values| values.iter().collect::<Vec<_>>())
        .or_else(|| schema.get("const").map(|value| vec![value]));
    for value in literals.unwrap_or_default() {
        found.push(json_type(value));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            for branch in branches {
                found.extend(types(branch));
            }
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A `key=value` text as the value the property's type asks for. Text that fits none of the
/// types is kept as a string, so the schema check names the field and what it wanted.
///
/// # Errors
///
/// Text read as JSON that the strict reader refuses (a repeated key, an integer outside 64
/// bits), and an integer outside 64 bits for a numeric property that admits no string:
/// either would be sent as something other than what was written.
pub fn typed(text: &str, property: Option<&Value>) -> Result<Value, String> {
    let kinds = property.map(types).unwrap_or_default();
    if kinds.is_empty() {
        // An undeclared or untyped property: JSON when it reads as JSON, else the text.
        return match strict(text) {
            Ok(value) => Ok(value),
            Err(Refused::NotJson(_)) => Ok(Value::String(text.to_owned())),
            Err(Refused::Strict(reason)) => Err(reason),
        };
    }
    let has = |kind: &str| kinds.contains(&kind);
    if has("integer") || has("number") {
        match integer(text) {
            Ok(Some(number)) => return Ok(number),
            Ok(None) => {
                if let Some(number) = float(text).filter(|_| has("number")) {
                    return Ok(number);
                }
            }
            // An integer outside 64 bits is never rounded into a float: it stays the text
            // when the property also admits a string, else it is refused.
            Err(_) if has("string") => return Ok(Value::String(text.to_owned())),
            Err(reason) => return Err(reason),
        }
    }
    if has("boolean") {
        match text {
            "true" => return Ok(Value::Bool(true)),
            "false" => return Ok(Value::Bool(false)),
            _ => {}
        }
    }
    if has("null") && text == "null" {
        return Ok(Value::Null);
    }
    if has("object") || has("array") {
        match strict(text) {
            Ok(value @ (Value::Object(_) | Value::Array(_))) => return Ok(value),
            Err(Refused::Strict(reason)) => return Err(reason),
            Ok(_) | Err(Refused::NotJson(_)) => {}
        }
    }
    Ok(Value::String(text.to_owned()))
}

/// An integer literal as a number; `Ok(None)` when the text is not one, an error when it is
/// one outside the 64-bit range (a float would round it).
fn integer(text: &str) -> Result<Option<Value>, String> {
    let text = text.trim();
    if let Ok(value) = text.parse::<i64>() {
        return Ok(Some(Value::from(value)));
    }
    if let Ok(value) = text.parse::<u64>() {
        return Ok(Some(Value::from(value)));
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(format!(
            "the integer {text} is outside the 64-bit range; it cannot be passed on exactly \
             (JSON parsers would round it), so nothing was run"
        ));
    }
    Ok(None)
}

fn float(text: &str) -> Option<Value> {
    let value: f64 = text.trim().parse().ok()?;
    Number::from_f64(value).map(Value::Number)
}

/// Checks the arguments against the tool's input schema. The error is the harness's repair
/// message: each failing field, what is wrong with it, and the schema.
pub fn check(tool: &Tool, arguments: &Value) -> Result<(), String> {
    let schema = match Schema::compile(&tool.input_schema()) {
        Ok(schema) => schema,
        Err(error) => {
            log::warn!(
                "tool `{}` has an input schema that does not compile ({error}); sending the \
                 arguments unchecked",
                tool.name
            );
            return Ok(());
        }
    };
    match schema.validate(arguments) {
        Ok(()) => Ok(()),
        Err(violations) => Err(schema.repair_message(&tool.name, &violations, 4_000)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "ms": {"type": "integer"},
            "ratio": {"type": "number"},
            "loud": {"type": "boolean"},
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opt": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "mode": {"enum": ["a", "b"]}
        }})
    }

    fn args(pairs: &[&str]) -> Value {
        let raw: Vec<String> = pairs.iter().map(|pair| (*pair).to_owned()).collect();
        parse(&raw, &schema()).unwrap()
    }

    #[test]
    fn pairs_take_the_types_of_the_schema() {
        assert_eq!(
            args(&[
                "ms=5",
                "ratio=0.5",
                "loud=true",
                "name=42",
                "tags=[\"x\"]",
                "opt=null",
                "mode=a"
            ]),
            json!({"ms": 5, "ratio": 0.5, "loud": true, "name": "42", "tags": ["x"],
                   "opt": null, "mode": "a"})
        );
        assert_eq!(args(&["ratio=3"]), json!({"ratio": 3}));
        assert_eq!(
            args(&["other=7", "word=hi"]),
            json!({"other": 7, "word": "hi"})
        );
        assert_eq!(args(&["name:=42"]), json!({"name": 42}));
        assert_eq!(args(&["ms=abc"]), json!({"ms": "abc"}));
        assert_eq!(args(&["name=a=b"]), json!({"name": "a=b"}));
    }

    #[test]
    fn json_and_mistakes() {
        assert_eq!(args(&[r#"{"ms": 1}"#]), json!({"ms": 1}));
        assert_eq!(args(&[]), json!({}));
        let schema = schema();
        let bad = |raw: &[&str]| {
            let raw: Vec<String> = raw.iter().map(|pair| (*pair).to_owned()).collect();
            parse(&raw, &schema).unwrap_err()
        };
        assert!(bad(&["{nope"]).contains("not valid JSON"));
        assert!(bad(&["ms"]).contains("neither"));
        assert!(bad(&["ms=1", "ms=2"]).contains("twice"));
        assert!(bad(&["=1"]).contains("no key"));
        assert!(bad(&["tags:=[x"]).contains("must be JSON"));
    }

    #[test]
    fn json_is_read_as_strictly_as_the_harness_reads_it() {
        let schema = schema();
        let bad = |raw: &[&str]| {
            let raw: Vec<String> = raw.iter().map(|pair| (*pair).to_owned()).collect();
            parse(&raw, &schema).unwrap_err()
        };
        let error = bad(&[r#"{"ms": 1, "ms": 2}"#]);
        assert!(
            error.starts_with(r#"the argument: duplicate key "ms" in the object at (root)"#),
            "{error}"
        );
        for pair in [
            r#"x:={"k": 1, "k": 2}"#,
            r#"x={"k": 1, "k": 2}"#,
            r#"tags=[{"k": 1, "k": 2}]"#,
        ] {
            let error = bad(&[pair]);
            assert!(
                error.starts_with(&format!("`{pair}`: duplicate key \"k\"")),
                "{error}"
            );
        }
        for pair in [
            "ms=123456789012345678901",
            "ratio=-123456789012345678901",
            "x=123456789012345678901",
            "x:=123456789012345678901",
        ] {
            assert!(bad(&[pair]).contains("outside the 64-bit range"), "{pair}");
        }
        // Text that is not JSON is still the text, and a property that admits a string keeps
        // a wide integer as written.
        assert_eq!(args(&["x={nope"]), json!({"x": "{nope"}));
        let either = json!({"properties": {"id": {"type": ["integer", "string"]}}});
        let raw = vec!["id=123456789012345678901".to_owned()];
        assert_eq!(
            parse(&raw, &either).unwrap(),
            json!({"id": "123456789012345678901"})
        );
    }

    #[test]
    fn unsafe_integers_are_found_everywhere_in_order() {
        let arguments = json!({"a": 9007199254740991_i64, "b": [1, -9007199254740992_i64],
                               "c/d": {"e": 18446744073709551615_u64}, "f": 1e300});
        assert_eq!(
            unsafe_integers(&arguments),
            [
                ("/b/1".to_owned(), "-9007199254740992".to_owned()),
                ("/c~1d/e".to_owned(), "18446744073709551615".to_owned()),
            ]
        );
    }

    #[test]
    fn the_check_gives_the_repair_message() {
        let tool = Tool::from_value(json!({"name": "sleep", "inputSchema": {
            "type": "object", "required": ["ms"], "properties": {"ms": {"type": "integer"}}}}))
        .unwrap();
        assert!(check(&tool, &json!({"ms": 1})).is_ok());
        let message = check(&tool, &json!({"ms": "abc"})).unwrap_err();
        assert!(message.contains("nothing was run"), "{message}");
        assert!(message.contains("- field /ms:"), "{message}");
        assert!(message.contains("\"required\":[\"ms\"]"), "{message}");
    }
}
