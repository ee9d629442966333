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
use toolwire::schema::{Schema, SchemaViolation};
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

/// Why the arguments do not fit the tool's input schema: for the person at the terminal, and
/// the harness's repair message (for the transcript, where a program reads it).
pub struct Misfit {
    /// Each failing field, what was wrong and what the field takes, then the tool's signature.
    pub human: String,
    /// The harness's message for a model: the fields and the whole schema.
    pub repair: String,
}

/// Checks the arguments against the tool's input schema.
/// A schema that does not compile (over a bound, or broken) refuses the call: arguments are
/// never sent unchecked.
pub fn check(tool: &Tool, input: &Value, arguments: &Value) -> Result<(), Misfit> {
    let schema = match Schema::compile(input) {
        Ok(schema) => schema,
        Err(error) => {
            let message = format!(
                "the input schema of `{}` cannot be used, so its arguments cannot be checked; \
                 nothing was run: {error}",
                tool.name
            );
            return Err(Misfit {
                human: message.clone(),
                repair: message,
            });
        }
    };
    match schema.validate(arguments) {
        Ok(()) => Ok(()),
        Err(violations) => Err(Misfit {
            human: explain(&tool.name, input, &violations),
            repair: schema.repair_message(&tool.name, &violations, 4_000),
        }),
    }
}

/// The person's message: which field, what is wrong, what it takes; then every argument the
/// tool takes (its signature).
fn explain(name: &str, schema: &Value, violations: &[SchemaViolation]) -> String {
    let mut text =
        format!("the arguments do not fit the input schema of `{name}`; nothing was run");
    for violation in violations.iter().take(MAX_SHOWN) {
        // The top-level property the violation is in, when there is one.
        let field = violation
            .path
            .strip_prefix('/')
            .map(|rest| rest.split('/').next().unwrap_or(rest))
            .map(|segment| segment.replace("~1", "/").replace("~0", "~"));
        match field {
            Some(field) => {
                let wants = property(schema, &field)
                    .map(expected)
                    .filter(|wants| !wants.is_empty())
                    .map(|wants| format!(" (expected {wants})"))
                    .unwrap_or_default();
                let at = if violation.path == format!("/{field}") {
                    format!("`{field}`")
                } else {
                    format!("`{field}` at {}", violation.path)
                };
                text.push_str(&format!("\n  {at}: {}{wants}", violation.message));
            }
            None => text.push_str(&format!("\n  {}", violation.message)),
        }
    }
    if violations.len() > MAX_SHOWN {
        text.push_str(&format!("\n  … and {} more", violations.len() - MAX_SHOWN));
    }
    text.push_str(&format!("\n{}", signature(name, schema)));
    text
}

/// The most violations listed.
const MAX_SHOWN: usize = 10;

/// `usage: toolwire call NAME key=<type> [opt=<type>]`, then a line per argument.
pub fn signature(name: &str, schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return format!("usage: toolwire call {name} (its schema declares no arguments)");
    };
    let mut usage = format!("usage: toolwire call {name}");
    let mut lines = String::new();
    let mut ordered: Vec<(&String, &Value)> = properties.iter().collect();
    // Required arguments first, each group in the schema's order.
    ordered.sort_by_key(|(key, _)| !required.contains(&key.as_str()));
    let width = ordered
        .iter()
        .map(|(key, _)| key.chars().count())
        .max()
        .unwrap_or(0);
    for (key, property) in ordered {
        let kind = types(property).join("|");
        let kind = if kind.is_empty() {
            "value".to_owned()
        } else {
            kind
        };
        if required.contains(&key.as_str()) {
            usage.push_str(&format!(" {key}=<{kind}>"));
        } else {
            usage.push_str(&format!(" [{key}=<{kind}>]"));
        }
        let mut line = format!("\n  {key:width$}  {}", expected(property));
        if required.contains(&key.as_str()) {
            line.push_str(", required");
        }
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            let first = description.lines().next().unwrap_or("");
            let first: String = first.chars().take(100).collect();
            line.push_str(&format!(" — {first}"));
        }
        lines.push_str(&line);
    }
    format!("{usage}{lines}")
}

/// What a property takes, in words: `integer ≥ 0`, `one of "a", "b"`, `string of at most 10
/// characters`.
fn expected(property: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        let shown: Vec<String> = values.iter().take(12).map(Value::to_string).collect();
        parts.push(format!("one of {}", shown.join(", ")));
    } else if let Some(value) = property.get("const") {
        parts.push(format!("exactly {value}"));
    } else {
        let kinds = types(property);
        if !kinds.is_empty() {
            parts.push(kinds.join(" or "));
        }
    }
    let number = |key: &str| property.get(key).filter(|value| value.is_number());
    for (key, words) in [
        ("minimum", "≥"),
        ("exclusiveMinimum", ">"),
        ("maximum", "≤"),
        ("exclusiveMaximum", "<"),
    ] {
        if let Some(bound) = number(key) {
            parts.push(format!("{words} {bound}"));
        }
    }
    for (key, words) in [
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("minItems", "at least {} items"),
        ("maxItems", "at most {} items"),
    ] {
        if let Some(bound) = number(key) {
            parts.push(words.replace("{}", &bound.to_string()));
        }
    }
    if let Some(pattern) = property.get("pattern").and_then(Value::as_str) {
        parts.push(format!("matching /{pattern}/"));
    }
    if let Some(format) = property.get("format").and_then(Value::as_str) {
        parts.push(format!("format {format}"));
    }
    if let Some(default) = property.get("default") {
        parts.push(format!("default {default}"));
    }
    parts.join(", ")
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
        let input = tool.input_schema().unwrap();
        assert!(check(&tool, &input, &json!({"ms": 1})).is_ok());
        let misfit = check(&tool, &input, &json!({"ms": "abc"})).unwrap_err();
        let message = misfit.repair;
        assert!(message.contains("nothing was run"), "{message}");
        assert!(message.contains("- field /ms:"), "{message}");
        assert!(message.contains("\"required\":[\"ms\"]"), "{message}");
        let human = misfit.human;
        assert!(
            human.contains("`ms`: \"abc\" is not of type \"integer\" (expected integer)"),
            "{human}"
        );
        assert!(
            human.contains("usage: toolwire call sleep ms=<integer>"),
            "{human}"
        );
        assert!(!human.contains("JSON Schema"), "{human}");
    }
}
