//! The field checks every shape's reader shares: the exact field set, the types of ids,
//! tags and names, and the arguments object, each failure named for the model to repair.

use serde_json::{Map, Value};

use super::super::parse::{kind_of, parse_strict, quote};

/// The key of a field that may be spelled two ways (`camel` is returned when neither is
/// there, so that it is named as missing); both at once is refused.
pub(super) fn one_spelling<'a>(
    object: &Map<String, Value>,
    camel: &'a str,
    snake: &'a str,
    what: &str,
) -> Result<&'a str, String> {
    match (object.contains_key(camel), object.contains_key(snake)) {
        (true, true) => Err(format!(
            "{what} has both {camel:?} and {snake:?}, two spellings of one field; it must \
             have one"
        )),
        (false, true) => Ok(snake),
        _ => Ok(camel),
    }
}

/// A call naming a group its tool belongs to (`namespace`, `toolset_name`): the registry has
/// no groups, so the call would not run as written.
pub(super) fn no_group(
    object: &Map<String, Value>,
    field: &str,
    groups: &str,
    what: &str,
) -> Result<(), String> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(group)) => Err(format!(
            "{what} names the {} {}, and the tools here have no {groups}; nothing was run. \
             Call the tool by its name alone",
            field.replace('_', " "),
            quote(group)
        )),
        Some(other) => Err(format!(
            "{field:?} in {what} must be a string, not {}",
            kind_of(other)
        )),
    }
}

/// The arguments of the OpenAI shapes: a string holding a JSON object, read as strictly as
/// the call itself.
pub(super) fn arguments_text(value: &Value, field: &str) -> Result<Value, String> {
    let text = match value {
        Value::String(text) => text,
        other => {
            return Err(format!(
                "{field:?} must be a string holding a JSON object, not {}",
                kind_of(other)
            ))
        }
    };
    let arguments =
        parse_strict(text).map_err(|error| format!("{field:?} is not strict JSON: {error}"))?;
    need_object(&arguments, field)?;
    Ok(arguments)
}

/// Requires every field of `required`, allows those of `optional`, and names every extra and
/// missing one.
pub(super) fn fields(
    object: &Map<String, Value>,
    what: &str,
    required: &[&str],
    optional: &[&str],
) -> Result<(), String> {
    let extra: Vec<String> = object
        .keys()
        .filter(|key| !required.contains(&key.as_str()) && !optional.contains(&key.as_str()))
        .map(|key| quote(key))
        .collect();
    let missing: Vec<String> = required
        .iter()
        .filter(|field| !object.contains_key(**field))
        .map(|field| format!("{field:?}"))
        .collect();
    if extra.is_empty() && missing.is_empty() {
        return Ok(());
    }
    let mut problems = Vec::new();
    if !extra.is_empty() {
        problems.push(format!("has the unexpected field(s) {}", extra.join(", ")));
    }
    if !missing.is_empty() {
        problems.push(format!("lacks the field(s) {}", missing.join(", ")));
    }
    let may = if optional.is_empty() {
        String::new()
    } else {
        format!(" (and may have {})", optional.join(", "))
    };
    Err(format!(
        "{what} {}; it must have exactly the fields {}{may}",
        problems.join(" and "),
        required.join(", ")
    ))
}

pub(super) fn need_string(
    object: &Map<String, Value>,
    field: &str,
    what: &str,
) -> Result<String, String> {
    match &object[field] {
        Value::String(text) => Ok(text.clone()),
        other => Err(format!(
            "{field:?} in {what} must be a string, not {}",
            kind_of(other)
        )),
    }
}

pub(super) fn need_id(object: &Map<String, Value>, field: &str, what: &str) -> Result<(), String> {
    let id = need_string(object, field, what)?;
    if id.is_empty() {
        return Err(format!("{field:?} in {what} must not be empty"));
    }
    Ok(())
}

pub(super) fn need_tag(
    object: &Map<String, Value>,
    field: &str,
    tag: &str,
    what: &str,
) -> Result<(), String> {
    match &object[field] {
        Value::String(text) if text == tag => Ok(()),
        Value::String(text) => Err(format!(
            "{field:?} in {what} must be {tag:?}, not {}",
            quote(text)
        )),
        other => Err(format!(
            "{field:?} in {what} must be the string {tag:?}, not {}",
            kind_of(other)
        )),
    }
}

/// Who made the call (the model, or a program the provider ran for it): only its form is
/// checked, since the tool runs the same either way.
pub(super) fn need_caller(object: &Map<String, Value>, what: &str) -> Result<(), String> {
    match object.get("caller") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Object(caller)) if caller.get("type").is_some_and(Value::is_string) => Ok(()),
        Some(other) => Err(format!(
            "\"caller\" in {what} must be an object with a string \"type\", not {}",
            describe(other)
        )),
    }
}

pub(super) fn need_object(value: &Value, field: &str) -> Result<(), String> {
    if value.is_object() {
        Ok(())
    } else {
        Err(format!(
            "{field:?} must be a JSON object of named arguments, not {}",
            kind_of(value)
        ))
    }
}

/// A value's type, and the value itself when it is a short scalar ("the number -1").
pub(super) fn describe(value: &Value) -> String {
    match value {
        Value::Number(number) => format!("the number {number}"),
        Value::String(text) => format!("the string {}", quote(text)),
        Value::Object(_) => "an object without a string \"type\"".into(),
        other => kind_of(other).into(),
    }
}
