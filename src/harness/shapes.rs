//! The LLM tool-call shapes: reading a call in, writing its result message out, and
//! describing tools to each API.
//!
//! In:
//!
//! * OpenAI: `{"id", "type": "function", "function": {"name", "arguments"}}`, where
//!   `arguments` is a string holding a JSON object (parsed as strictly as the call itself).
//! * Anthropic: `{"type": "tool_use", "id", "name", "input"}`, `input` an object.
//! * Plain: `{"tool", "arguments"}`, `arguments` an object.
//!
//! Each shape has an exact field set: a field more or less is `INVALID`.
//!
//! Out: OpenAI `{"role": "tool", "tool_call_id", "content"}`, Anthropic
//! `{"type": "tool_result", "tool_use_id", "content", "is_error"}`, plain: the outcome as
//! `{"status", "result", "detail"}`. Content is always a JSON string built by serde_json, so
//! whatever a tool returns stays data inside it.

use serde_json::{json, Map, Value};

use super::outcome::Outcome;
use super::parse::{check_size, kind_of, parse_strict, quote};

/// The shape a raw tool call arrives in (and its result message leaves in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallShape {
    /// An OpenAI Chat Completions tool call.
    OpenAi,
    /// An Anthropic Messages `tool_use` content block.
    Anthropic,
    /// `{"tool": …, "arguments": {…}}`.
    Plain,
}

impl CallShape {
    /// The shape's name in messages.
    pub fn describe(self) -> &'static str {
        match self {
            CallShape::OpenAi => "an OpenAI tool call",
            CallShape::Anthropic => "an Anthropic tool_use block",
            CallShape::Plain => "a plain tool call",
        }
    }

    fn fields(self) -> &'static [&'static str] {
        match self {
            CallShape::OpenAi => &["id", "type", "function"],
            CallShape::Anthropic => &["type", "id", "name", "input"],
            CallShape::Plain => &["tool", "arguments"],
        }
    }
}

/// A call that passed the shape checks: a name and an arguments object, not yet checked
/// against any registry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolRequest {
    pub(crate) call_id: Option<String>,
    pub(crate) name: String,
    pub(crate) arguments: Value,
}

/// A shape failure: the reason, and the call id when it could be read (to address the
/// reply).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ShapeError {
    pub(crate) reason: String,
    pub(crate) call_id: Option<String>,
}

/// The checks of a raw call before its name: the size in characters (at most `max_chars`,
/// counted before parsing), strict JSON (the reason then starts "the call is not strict
/// JSON", and the call id is recovered leniently, only to address the reply), and the exact
/// fields of `shape`.
pub(crate) fn read_raw(
    shape: CallShape,
    raw: &str,
    max_chars: usize,
) -> Result<ToolRequest, ShapeError> {
    check_size(raw, max_chars).map_err(|reason| ShapeError {
        reason,
        call_id: None,
    })?;
    let value = parse_strict(raw).map_err(|reason| ShapeError {
        reason: format!("the call is not strict JSON: {reason}"),
        call_id: lenient_call_id(raw),
    })?;
    extract(shape, &value)
}

/// Reads a strictly parsed value as a call of `shape`.
pub(crate) fn extract(shape: CallShape, value: &Value) -> Result<ToolRequest, ShapeError> {
    let call_id = value
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_owned);
    let fail = |reason: String| ShapeError {
        reason,
        call_id: call_id.clone(),
    };
    let what = shape.describe();
    let Value::Object(object) = value else {
        return Err(fail(format!(
            "{what} must be a JSON object, not {}",
            kind_of(value)
        )));
    };
    exact_fields(object, what, shape.fields()).map_err(fail)?;
    match shape {
        CallShape::OpenAi => {
            need_id(object, "id", what).map_err(fail)?;
            need_tag(object, "type", "function", what).map_err(fail)?;
            let function = match &object["function"] {
                Value::Object(function) => function,
                other => {
                    return Err(fail(format!(
                        "\"function\" in {what} must be an object, not {}",
                        kind_of(other)
                    )))
                }
            };
            let inner = "the \"function\" object of an OpenAI tool call";
            exact_fields(function, inner, &["name", "arguments"]).map_err(fail)?;
            let name = need_string(function, "name", inner).map_err(fail)?;
            let text = match &function["arguments"] {
                Value::String(text) => text,
                other => {
                    return Err(fail(format!(
                        "\"function.arguments\" must be a string holding a JSON object, not {}",
                        kind_of(other)
                    )))
                }
            };
            let arguments = parse_strict(text).map_err(|error| {
                fail(format!(
                    "\"function.arguments\" is not strict JSON: {error}"
                ))
            })?;
            need_object(&arguments, "function.arguments").map_err(fail)?;
            Ok(ToolRequest {
                call_id: call_id.clone(),
                name,
                arguments,
            })
        }
        CallShape::Anthropic => {
            need_tag(object, "type", "tool_use", what).map_err(fail)?;
            need_id(object, "id", what).map_err(fail)?;
            let name = need_string(object, "name", what).map_err(fail)?;
            need_object(&object["input"], "input").map_err(fail)?;
            Ok(ToolRequest {
                call_id: call_id.clone(),
                name,
                arguments: object["input"].clone(),
            })
        }
        CallShape::Plain => {
            let name = need_string(object, "tool", what).map_err(fail)?;
            need_object(&object["arguments"], "arguments").map_err(fail)?;
            Ok(ToolRequest {
                call_id: None,
                name,
                arguments: object["arguments"].clone(),
            })
        }
    }
}

/// Requires exactly the `fields` in `object`, naming every extra and missing one.
fn exact_fields(object: &Map<String, Value>, what: &str, fields: &[&str]) -> Result<(), String> {
    let extra: Vec<String> = object
        .keys()
        .filter(|key| !fields.contains(&key.as_str()))
        .map(|key| quote(key))
        .collect();
    let missing: Vec<String> = fields
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
    Err(format!(
        "{what} {}; it must have exactly the fields {}",
        problems.join(" and "),
        fields.join(", ")
    ))
}

fn need_string(object: &Map<String, Value>, field: &str, what: &str) -> Result<String, String> {
    match &object[field] {
        Value::String(text) => Ok(text.clone()),
        other => Err(format!(
            "{field:?} in {what} must be a string, not {}",
            kind_of(other)
        )),
    }
}

fn need_id(object: &Map<String, Value>, field: &str, what: &str) -> Result<(), String> {
    let id = need_string(object, field, what)?;
    if id.is_empty() {
        return Err(format!("{field:?} in {what} must not be empty"));
    }
    Ok(())
}

fn need_tag(object: &Map<String, Value>, field: &str, tag: &str, what: &str) -> Result<(), String> {
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

fn need_object(value: &Value, field: &str) -> Result<(), String> {
    if value.is_object() {
        Ok(())
    } else {
        Err(format!(
            "{field:?} must be a JSON object of named arguments, not {}",
            kind_of(value)
        ))
    }
}

/// Recovers a call id from text that failed the strict parse, only to address the reply
/// (nothing else is read from it, and nothing runs).
pub(crate) fn lenient_call_id(raw: &str) -> Option<String> {
    serde_json::from_str::<Value>(raw)
        .ok()?
        .get("id")?
        .as_str()
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

/// What the harness made of one raw call: the outcome, and what is needed to answer the
/// model in the call's own shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    /// The shape the call arrived in.
    pub shape: CallShape,
    /// The call's id (OpenAI `id`, Anthropic `id`); `None` for the plain shape and for a call
    /// too broken to read it from.
    pub call_id: Option<String>,
    /// The requested tool name, when the call got far enough to have one.
    pub tool: Option<String>,
    /// The outcome.
    pub outcome: Outcome,
}

impl ToolReply {
    /// The result message in the call's own shape (for the plain shape, the outcome as
    /// `{"status", "result", "detail"}`).
    pub fn message(&self) -> Value {
        match self.shape {
            CallShape::OpenAi => self.openai_message(),
            CallShape::Anthropic => self.anthropic_message(),
            CallShape::Plain => self.outcome.to_json(),
        }
    }

    /// `{"role": "tool", "tool_call_id", "content"}` (an empty id when none could be read).
    pub fn openai_message(&self) -> Value {
        json!({
            "role": "tool",
            "tool_call_id": self.call_id.clone().unwrap_or_default(),
            "content": self.outcome.model_text(),
        })
    }

    /// `{"type": "tool_result", "tool_use_id", "content", "is_error"}`, `is_error` being true
    /// for every status but `OK` (an empty id when none could be read).
    pub fn anthropic_message(&self) -> Value {
        json!({
            "type": "tool_result",
            "tool_use_id": self.call_id.clone().unwrap_or_default(),
            "content": self.outcome.model_text(),
            "is_error": !self.outcome.is_ok(),
        })
    }
}

/// An OpenAI `tools` entry.
pub(crate) fn openai_definition(name: &str, description: &str, schema: &Value) -> Value {
    json!({
        "type": "function",
        "function": {"name": name, "description": description, "parameters": schema},
    })
}

/// An Anthropic `tools` entry.
pub(crate) fn anthropic_definition(name: &str, description: &str, schema: &Value) -> Value {
    json!({"name": name, "description": description, "input_schema": schema})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(shape: CallShape, text: &str) -> Result<ToolRequest, ShapeError> {
        extract(shape, &parse_strict(text).unwrap())
    }

    #[test]
    fn openai_calls_are_read_with_their_arguments_parsed_strictly() {
        let call = read(
            CallShape::OpenAi,
            r#"{"id":"call_1","type":"function","function":{"name":"add","arguments":"{\"a\":1}"}}"#,
        )
        .unwrap();
        assert_eq!(call.call_id.as_deref(), Some("call_1"));
        assert_eq!(call.name, "add");
        assert_eq!(call.arguments, json!({"a": 1}));
        let error = read(
            CallShape::OpenAi,
            r#"{"id":"c","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"a\":2}"}}"#,
        )
        .unwrap_err();
        assert!(
            error.reason.contains("duplicate key \"a\""),
            "{}",
            error.reason
        );
        assert_eq!(error.call_id.as_deref(), Some("c"));
        let error = read(
            CallShape::OpenAi,
            r#"{"id":"c","type":"function","function":{"name":"add","arguments":{"a":1}}}"#,
        )
        .unwrap_err();
        assert!(error
            .reason
            .contains("must be a string holding a JSON object, not an object"));
        let error = read(
            CallShape::OpenAi,
            r#"{"id":"c","type":"function","function":{"name":"add","arguments":"[1]"}}"#,
        )
        .unwrap_err();
        assert!(error.reason.contains("not an array"), "{}", error.reason);
    }

    #[test]
    fn every_extra_and_missing_field_is_named() {
        let error = read(CallShape::Plain, r#"{"tool":"a","args":{},"x":1}"#).unwrap_err();
        assert_eq!(
            error.reason,
            "a plain tool call has the unexpected field(s) \"args\", \"x\" and lacks the \
             field(s) \"arguments\"; it must have exactly the fields tool, arguments"
        );
        let error = read(
            CallShape::OpenAi,
            r#"{"id":"c","type":"function","function":{"name":"a","arguments":"{}","strict":true}}"#,
        )
        .unwrap_err();
        assert!(error.reason.contains("\"strict\""), "{}", error.reason);
    }

    #[test]
    fn anthropic_blocks_need_the_tool_use_tag_and_an_object_input() {
        let call = read(
            CallShape::Anthropic,
            r#"{"type":"tool_use","id":"toolu_1","name":"echo","input":{"m":"hi"}}"#,
        )
        .unwrap();
        assert_eq!(
            (call.call_id.as_deref(), call.name.as_str()),
            (Some("toolu_1"), "echo")
        );
        let error = read(
            CallShape::Anthropic,
            r#"{"type":"tool_result","id":"t","name":"echo","input":{}}"#,
        )
        .unwrap_err();
        assert!(
            error.reason.contains("must be \"tool_use\""),
            "{}",
            error.reason
        );
        let error = read(
            CallShape::Anthropic,
            r#"{"type":"tool_use","id":"t","name":"echo","input":"hi"}"#,
        )
        .unwrap_err();
        assert!(
            error.reason.contains("\"input\" must be a JSON object"),
            "{}",
            error.reason
        );
    }

    #[test]
    fn wrong_types_are_named() {
        let error = read(CallShape::Plain, r#"{"tool":5,"arguments":{}}"#).unwrap_err();
        assert!(error
            .reason
            .contains("\"tool\" in a plain tool call must be a string, not a number"));
        let error = read(CallShape::Plain, r#"[1]"#).unwrap_err();
        assert!(error.reason.contains("must be a JSON object, not an array"));
        let error = read(
            CallShape::OpenAi,
            r#"{"id":"","type":"function","function":{"name":"a","arguments":"{}"}}"#,
        )
        .unwrap_err();
        assert!(error.reason.contains("must not be empty"));
    }

    #[test]
    fn the_id_of_a_broken_call_is_recovered_only_to_address_the_reply() {
        assert_eq!(
            lenient_call_id(r#"{"id":"c9","id":"c9","x":1}"#).as_deref(),
            Some("c9")
        );
        assert_eq!(lenient_call_id("{"), None);
    }
}
