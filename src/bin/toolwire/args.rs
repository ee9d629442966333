//! A call's arguments: one JSON object, or `key=value` pairs typed by the tool's input schema,
//! and the check against that schema with the harness's repair message.

use std::io::Read;

use serde_json::{Map, Number, Value};
use toolwire::schema::Schema;
use toolwire::Tool;

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
            let value = serde_json::from_str(json)
                .map_err(|error| format!("`{pair}`: the value after := must be JSON ({error})"))?;
            (key, value)
        } else if let Some((key, text)) = pair.split_once('=') {
            (key, typed(text, property(schema, key)))
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
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(format!("{source} must be a JSON object")),
        Err(error) => Err(format!("{source} is not valid JSON: {error}")),
    }
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
pub fn typed(text: &str, property: Option<&Value>) -> Value {
    let kinds = property.map(types).unwrap_or_default();
    if kinds.is_empty() {
        // An undeclared or untyped property: JSON when it reads as JSON, else the text.
        return serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()));
    }
    let has = |kind: &str| kinds.contains(&kind);
    if has("integer") {
        if let Some(number) = integer(text) {
            return number;
        }
    }
    if has("number") {
        if let Some(number) = integer(text).or_else(|| float(text)) {
            return number;
        }
    }
    if has("boolean") {
        match text {
            "true" => return Value::Bool(true),
            "false" => return Value::Bool(false),
            _ => {}
        }
    }
    if has("null") && text == "null" {
        return Value::Null;
    }
    if has("object") || has("array") {
        if let Ok(value @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str(text) {
            return value;
        }
    }
    Value::String(text.to_owned())
}

fn integer(text: &str) -> Option<Value> {
    let text = text.trim();
    if let Ok(value) = text.parse::<i64>() {
        return Some(Value::from(value));
    }
    text.parse::<u64>().ok().map(Value::from)
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
