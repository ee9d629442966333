//! The result of one call in each provider's shape, and the tool definitions for each API.

use serde_json::{json, Map, Value};

use super::super::outcome::Outcome;
use super::CallShape;

/// What the harness made of one raw call: the outcome, and what is needed to answer the
/// model in the call's own shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    /// The shape the call arrived in.
    pub shape: CallShape,
    /// The call's id (OpenAI `id`, Responses `call_id`, Anthropic `id`, Gemini
    /// `functionCall.id`); `None` for the plain shape, for a Gemini call without one, and for
    /// a call too broken to read it from.
    pub call_id: Option<String>,
    /// The requested tool name, when the call got far enough to have one. For Gemini, whose
    /// replies are matched to calls by name, also the name of a call refused for its shape,
    /// when it could be read.
    pub tool: Option<String>,
    /// The outcome.
    pub outcome: Outcome,
    /// True for a `custom` tool call (Chat Completions `"type": "custom"`, a Responses
    /// `custom_tool_call`), which is always answered `INVALID` without running: every tool
    /// here takes JSON arguments. Its Responses reply is a `custom_tool_call_output`.
    pub custom: bool,
}

impl ToolReply {
    /// The result message in the call's own shape (for the plain shape, the outcome as
    /// `{"status", "result", "detail"}`).
    pub fn message(&self) -> Value {
        match self.shape {
            CallShape::OpenAi => self.openai_message(),
            CallShape::OpenAiResponses => self.responses_output(),
            CallShape::Anthropic => self.anthropic_message(),
            CallShape::Gemini => self.gemini_part(),
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

    /// The Responses API input item `{"type": "function_call_output", "call_id", "output"}`
    /// (`"custom_tool_call_output"` for a [`ToolReply::custom`] call; an empty id when none
    /// could be read). The API has no error flag: for every status but `OK` the output starts
    /// with the status word, as in [`Outcome::model_text`].
    pub fn responses_output(&self) -> Value {
        let kind = if self.custom {
            "custom_tool_call_output"
        } else {
            "function_call_output"
        };
        json!({
            "type": kind,
            "call_id": self.call_id.clone().unwrap_or_default(),
            "output": self.outcome.model_text(),
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

    /// The Gemini part `{"functionResponse": {"name", "id", "response"}}`: `response` is
    /// `{"output": text}` for `OK` and `{"error": text}` for every other status (the keys
    /// the Gemini API reads as a function's output and its error); `id` only when the call
    /// had one; an empty name when none could be read.
    pub fn gemini_part(&self) -> Value {
        let key = if self.outcome.is_ok() {
            "output"
        } else {
            "error"
        };
        let mut response = Map::new();
        response.insert("name".into(), json!(self.tool.clone().unwrap_or_default()));
        if let Some(id) = &self.call_id {
            response.insert("id".into(), json!(id));
        }
        response.insert("response".into(), json!({ key: self.outcome.model_text() }));
        json!({ "functionResponse": response })
    }
}

/// An OpenAI Chat Completions `tools` entry.
pub(crate) fn openai_definition(name: &str, description: &str, schema: &Value) -> Value {
    json!({
        "type": "function",
        "function": {"name": name, "description": description, "parameters": schema},
    })
}

/// An OpenAI Responses `tools` entry. `strict` is false because the API's strict mode
/// accepts only a subset of JSON Schema (every property required, no open objects) that
/// imported MCP schemas seldom fit; the harness checks the arguments against the full schema
/// itself.
pub(crate) fn responses_definition(name: &str, description: &str, schema: &Value) -> Value {
    json!({
        "type": "function",
        "name": name,
        "description": description,
        "parameters": schema,
        "strict": false,
    })
}

/// An Anthropic `tools` entry.
pub(crate) fn anthropic_definition(name: &str, description: &str, schema: &Value) -> Value {
    json!({"name": name, "description": description, "input_schema": schema})
}

/// The Gemini `tools` array: one tool holding every function declaration. The schema goes in
/// `parametersJsonSchema` (JSON Schema) rather than `parameters` (an OpenAPI subset that
/// refuses keywords MCP schemas use, such as `additionalProperties` and `$ref`).
pub(crate) fn gemini_definitions<'a>(
    tools: impl Iterator<Item = (&'a str, &'a str, &'a Value)>,
) -> Value {
    let declarations: Vec<Value> = tools
        .map(|(name, description, schema)| {
            json!({"name": name, "description": description, "parametersJsonSchema": schema})
        })
        .collect();
    json!([{ "functionDeclarations": declarations }])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::outcome::Status;

    fn reply(shape: CallShape, status: Status, id: Option<&str>) -> ToolReply {
        let mut outcome = Outcome::new(status, if status == Status::Ok { "" } else { "why" });
        if status == Status::Ok {
            outcome.result = json!({"sum": 3});
        }
        ToolReply {
            shape,
            call_id: id.map(str::to_owned),
            tool: Some("add".into()),
            outcome,
            custom: false,
        }
    }

    #[test]
    fn each_shape_renders_its_result_and_its_errors() {
        assert_eq!(
            reply(CallShape::OpenAiResponses, Status::Ok, Some("call_1")).message(),
            json!({"type": "function_call_output", "call_id": "call_1", "output": "{\"sum\":3}"})
        );
        assert_eq!(
            reply(CallShape::OpenAiResponses, Status::Busy, Some("call_1")).message()["output"],
            "BUSY: why"
        );
        assert_eq!(
            reply(CallShape::Gemini, Status::Ok, Some("g1")).message(),
            json!({"functionResponse": {"name": "add", "id": "g1",
                                        "response": {"output": "{\"sum\":3}"}}})
        );
        assert_eq!(
            reply(CallShape::Gemini, Status::Invalid, None).message(),
            json!({"functionResponse": {"name": "add", "response": {"error": "INVALID: why"}}})
        );
        assert_eq!(
            reply(CallShape::Anthropic, Status::Timeout, Some("t")).message()["is_error"],
            true
        );
    }
}
