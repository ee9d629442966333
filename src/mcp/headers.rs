//! Custom headers from tool parameters (2026-07-28, SEP-2243): a tool's `inputSchema` may
//! designate parameters with `x-mcp-header`, whose values the client mirrors into
//! `Mcp-Param-{name}` headers so that intermediaries can route without reading the body.
//!
//! The designations are read once, when the tool is listed, and checked against the rules a
//! client must enforce: a name that is a non-empty HTTP token (`1*tchar`, so no space, colon,
//! control or non-ASCII character), unique within the schema ignoring case, on a `string`,
//! `integer` or `boolean` property reachable from the root through `properties` keys alone.
//! A tool that breaks any of them is left out of the tool list (with a warning naming it and
//! the reason), so one malformed definition never makes the others unusable.
//!
//! At call time each designated value is read at its exact property path: a string as it is,
//! an integer in decimal, a boolean as `true`/`false`; an absent or null value (or one of
//! another type) sends no header. The transport encodes the text for the header (base64 for
//! what is not plain visible ASCII).

use std::collections::HashSet;

use serde_json::Value;

/// The extension keyword that designates a parameter.
const KEYWORD: &str = "x-mcp-header";

/// Keywords whose values are data, not subschemas: an `x-mcp-header` key inside them is not
/// an annotation.
const DATA_KEYWORDS: &[&str] = &["default", "const", "enum", "examples"];

/// One designated parameter: the header's name part and the property path to its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParamHeader {
    /// The `{name}` of `Mcp-Param-{name}`.
    pub(crate) name: String,
    /// The chain of `properties` keys from the arguments' root.
    pub(crate) path: Vec<String>,
}

/// True for an RFC 9110 `tchar`.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// The designations of an input schema, or why they are invalid (and with them the tool).
pub(crate) fn designations(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    visit(schema, Some(&mut Vec::new()), &mut found)?;
    let mut seen = HashSet::new();
    for header in &found {
        if !seen.insert(header.name.to_ascii_lowercase()) {
            return Err(format!(
                "the {KEYWORD} name {:?} is used more than once (names must be unique, ignoring case)",
                header.name
            ));
        }
    }
    Ok(found)
}

/// Walks a schema node. `path` is the chain of `properties` keys that reaches it, or `None`
/// when it is not statically reachable (under `items`, a composition, a conditional, `$defs`…).
fn visit(
    node: &Value,
    path: Option<&mut Vec<String>>,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    match node {
        Value::Array(items) => {
            for item in items {
                visit(item, None, found)?;
            }
            Ok(())
        }
        Value::Object(object) => {
            let mut path = path;
            if let Some(name) = object.get(KEYWORD) {
                let at = match &path {
                    Some(path) if !path.is_empty() => path.join("."),
                    Some(_) => {
                        return Err(format!(
                            "{KEYWORD} on the schema's root, which is not a parameter"
                        ))
                    }
                    None => {
                        return Err(format!(
                        "{KEYWORD} on a property that is not reachable through `properties` alone \
                             (under items, a composition, a condition, a definition or a $ref)"
                    ))
                    }
                };
                let chain: &[String] = path.as_deref().map_or(&[], Vec::as_slice);
                found.push(check(name, object, &at, chain)?);
            }
            for (key, child) in object {
                if key == KEYWORD || DATA_KEYWORDS.contains(&key.as_str()) {
                    continue;
                }
                if key == "properties" {
                    if let (Value::Object(properties), Some(path)) = (child, path.as_deref_mut()) {
                        for (property, schema) in properties {
                            path.push(property.clone());
                            let result = visit(schema, Some(path), found);
                            path.pop();
                            result?;
                        }
                        continue;
                    }
                }
                visit(child, None, found)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Checks one annotation: its name and the type of the property it is on.
fn check(
    name: &Value,
    property: &serde_json::Map<String, Value>,
    at: &str,
    path: &[String],
) -> Result<ParamHeader, String> {
    let Value::String(name) = name else {
        return Err(format!("the {KEYWORD} of `{at}` is not a string"));
    };
    if name.is_empty() {
        return Err(format!("the {KEYWORD} of `{at}` is empty"));
    }
    if let Some(bad) = name.bytes().find(|byte| !is_tchar(*byte)) {
        return Err(format!(
            "the {KEYWORD} {name:?} of `{at}` holds {:?}, which a header name cannot (only \
             letters, digits and !#$%&'*+-.^_`|~)",
            char::from(bad)
        ));
    }
    match property.get("type") {
        Some(Value::String(kind)) if matches!(kind.as_str(), "string" | "integer" | "boolean") => {}
        Some(Value::String(kind)) => {
            return Err(format!(
                "the {KEYWORD} {name:?} is on `{at}` of type {kind:?}; only string, integer and \
                 boolean parameters can be mirrored"
            ))
        }
        _ => {
            return Err(format!(
                "the {KEYWORD} {name:?} is on `{at}`, which declares no single type (string, \
                 integer or boolean)"
            ))
        }
    }
    Ok(ParamHeader {
        name: name.clone(),
        path: path.to_vec(),
    })
}

/// The largest integer JavaScript holds exactly; designated integers beyond it are not
/// mirrored (the rules forbid them).
const MAX_SAFE: i64 = (1 << 53) - 1;

/// The (name, text) of each designated parameter that has a value in `arguments`.
pub(crate) fn values(designations: &[ParamHeader], arguments: &Value) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    for header in designations {
        let mut value = arguments;
        let mut present = true;
        for key in &header.path {
            match value.get(key) {
                Some(next) => value = next,
                None => {
                    present = false;
                    break;
                }
            }
        }
        if !present {
            continue;
        }
        let text = match value {
            Value::String(text) => text.clone(),
            Value::Bool(flag) => flag.to_string(),
            Value::Number(number) => match number.as_i64() {
                Some(integer) if (-MAX_SAFE..=MAX_SAFE).contains(&integer) => integer.to_string(),
                _ => {
                    log::debug!(
                        "toolwire: not mirroring parameter `{}` into Mcp-Param-{}: {number} is not \
                         a safe integer",
                        header.path.join("."),
                        header.name
                    );
                    continue;
                }
            },
            // Null or absent: no header. Other types break the schema; the server says so.
            _ => continue,
        };
        headers.push((header.name.clone(), text));
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(schema: Value) -> Result<Vec<String>, String> {
        designations(&schema).map(|found| found.into_iter().map(|h| h.name).collect())
    }

    #[test]
    fn valid_designations_are_found_with_their_paths() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {
                "id": {"type": "integer", "x-mcp-header": "Id"}}},
            "plain": {"type": "number", "default": {"x-mcp-header": "NotOne"}}
        }});
        let found = designations(&schema).unwrap();
        assert_eq!(found.len(), 2);
        let id = found.iter().find(|header| header.name == "Id").unwrap();
        assert_eq!(id.path, vec!["nested".to_owned(), "id".to_owned()]);
        let args = json!({"region": "us", "nested": {"id": 7}, "plain": 1.5});
        let mut mirrored = values(&found, &args);
        mirrored.sort();
        assert_eq!(
            mirrored,
            vec![("Id".into(), "7".into()), ("Region".into(), "us".into())]
        );
        assert_eq!(values(&found, &json!({"region": null})), vec![]);
    }

    #[test]
    fn every_broken_rule_is_refused() {
        let prop = |p: Value| json!({"type": "object", "properties": {"p": p}});
        for bad in [
            prop(json!({"type": "string", "x-mcp-header": ""})),
            prop(json!({"type": "object", "x-mcp-header": "Data"})),
            prop(json!({"type": "array", "x-mcp-header": "Items"})),
            prop(json!({"type": "null", "x-mcp-header": "Nil"})),
            prop(json!({"type": "number", "x-mcp-header": "Float"})),
            prop(json!({"type": "string", "x-mcp-header": "My Region"})),
            prop(json!({"type": "string", "x-mcp-header": "Region:Primary"})),
            prop(json!({"type": "string", "x-mcp-header": "Région"})),
            prop(json!({"type": "string", "x-mcp-header": "Region\t1"})),
            json!({"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "MyField"},
                "b": {"type": "string", "x-mcp-header": "myfield"}}}),
            json!({"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}),
            json!({"anyOf": [{"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "A"}}}]}),
            json!({"$defs": {"a": {"type": "string", "x-mcp-header": "A"}}}),
        ] {
            assert!(names(bad.clone()).is_err(), "{bad} was accepted");
        }
        assert_eq!(
            names(json!({"type": "object"})).unwrap(),
            Vec::<String>::new()
        );
    }
}
