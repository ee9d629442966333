//! The tool calls of a streamed OpenAI Chat Completions response, put together from their
//! deltas the way the official SDK does it (`openai-python`'s `accumulate_delta`): the
//! entries of `choices[0].delta.tool_calls` are matched by their `index`; `id`,
//! `function.name` and `function.arguments` fragments are appended in order, `type` is
//! replaced. The result is the SDK's assembled tool call, `index` included, ready for
//! [`crate::Harness::handle_all`] in [`super::CallShape::OpenAi`].
//!
//! Nothing here is checked the way a call is: the pieces are only joined, and the whole call
//! is then read as strictly as any other. Memory is bounded: a call stops growing one
//! character past the harness's `max_input_chars` (so that it is then refused for its size,
//! as any call that long is), and a stream with more calls than `max_calls_per_message` is
//! refused.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::super::parse::{kind_of, parse_strict};
use crate::error::{Error, Result};

/// The `data:` of the last event of a Chat Completions stream.
const DONE: &str = "[DONE]";

/// The tool calls of one streamed OpenAI Chat Completions response, put together from its
/// chunks. Made by [`crate::Harness::openai_deltas`], which gives it the harness's bounds.
///
/// ```
/// use toolwire::{CallShape, Harness, HarnessConfig, Status, ToolRegistry};
///
/// let harness = Harness::new(ToolRegistry::new(), HarnessConfig::default())?;
/// let mut deltas = harness.openai_deltas();
/// // The `data:` of each server-sent event, in order.
/// for chunk in [
///     r#"{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,
///         "id":"call_1","type":"function","function":{"name":"get-time","arguments":""}}]}}]}"#,
///     r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
///     r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
/// ] {
///     deltas.push_chunk(chunk)?;
/// }
/// let replies = harness.handle_all(CallShape::OpenAi, &deltas.calls());
/// assert_eq!(replies[0].call_id.as_deref(), Some("call_1"));
/// assert_eq!(replies[0].outcome.status, Status::UnknownTool);
/// # Ok::<(), toolwire::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiDeltas {
    calls: BTreeMap<u64, Partial>,
    max_calls: usize,
    max_chars: usize,
    max_chunk_chars: usize,
}

#[derive(Debug, Clone, Default)]
struct Partial {
    id: String,
    kind: Option<Value>,
    name: String,
    arguments: String,
    /// Characters taken so far (id, name and arguments), counted up to one past the bound.
    chars: usize,
}

impl OpenAiDeltas {
    pub(crate) fn new(max_calls: usize, max_chars: usize, max_chunk_chars: usize) -> Self {
        OpenAiDeltas {
            calls: BTreeMap::new(),
            max_calls,
            max_chars,
            max_chunk_chars,
        }
    }

    /// Takes one chunk of the stream (a `chat.completion.chunk` object, the `data:` of one
    /// server-sent event) and adds the tool-call deltas of its first choice (`index` 0; the
    /// other choices of an `n > 1` request are passed over). A chunk without tool calls (text,
    /// the role, the finish reason, usage) changes nothing, and neither does the stream's
    /// closing sentinel `[DONE]`, which may be passed on like the chunks.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when the chunk is longer than the harness's
    /// `max_message_chars`, is not strict JSON, has a delta entry without a non-negative
    /// integer `index` or with fields of the wrong type, or brings more calls than
    /// `max_calls_per_message`. The calls put together so far are kept.
    pub fn push_chunk(&mut self, chunk: &str) -> Result<()> {
        let refuse = |reason: String| Err(Error::Protocol(format!("a stream chunk {reason}")));
        if chunk.trim() == DONE {
            return Ok(());
        }
        if chunk.len() > self.max_chunk_chars
            && chunk.chars().take(self.max_chunk_chars + 1).count() > self.max_chunk_chars
        {
            return refuse(format!(
                "is more than {} characters long",
                self.max_chunk_chars
            ));
        }
        let value = match parse_strict(chunk) {
            Ok(value) => value,
            Err(reason) => return refuse(format!("is not strict JSON: {reason}")),
        };
        let Some(choices) = value.get("choices").and_then(Value::as_array) else {
            return refuse("has no \"choices\" array".into());
        };
        let first = choices
            .iter()
            .find(|choice| choice.get("index").and_then(Value::as_u64) == Some(0));
        let Some(deltas) = first.and_then(|choice| choice["delta"].get("tool_calls")) else {
            return Ok(());
        };
        let deltas = match deltas {
            Value::Array(deltas) => deltas,
            Value::Null => return Ok(()),
            other => return refuse(format!("has \"tool_calls\" as {}", kind_of(other))),
        };
        for delta in deltas {
            self.add(delta).or_else(refuse)?;
        }
        Ok(())
    }

    fn add(&mut self, delta: &Value) -> std::result::Result<(), String> {
        let Some(index) = delta.get("index").and_then(Value::as_u64) else {
            return Err("has a tool-call delta without a non-negative integer \"index\"".into());
        };
        fn text<'a>(value: Option<&'a Value>, field: &str) -> std::result::Result<&'a str, String> {
            match value {
                None | Some(Value::Null) => Ok(""),
                Some(Value::String(text)) => Ok(text.as_str()),
                Some(other) => Err(format!(
                    "has a tool-call delta whose {field:?} is {}",
                    kind_of(other)
                )),
            }
        }
        let function = match delta.get("function") {
            None | Some(Value::Null) => &Value::Null,
            Some(function @ Value::Object(_)) => function,
            Some(other) => {
                return Err(format!(
                    "has a tool-call delta whose \"function\" is {}",
                    kind_of(other)
                ))
            }
        };
        let id = text(delta.get("id"), "id")?;
        let name = text(function.get("name"), "function.name")?;
        let arguments = text(function.get("arguments"), "function.arguments")?;
        if !self.calls.contains_key(&index) && self.calls.len() >= self.max_calls {
            return Err(format!(
                "brings more than {} tool calls, the most handled at once",
                self.max_calls
            ));
        }
        let call = self.calls.entry(index).or_default();
        if let Some(kind) = delta.get("type").filter(|kind| !kind.is_null()) {
            call.kind = Some(kind.clone());
        }
        let bound = self.max_chars.saturating_add(1);
        for (piece, into) in [
            (id, &mut call.id),
            (name, &mut call.name),
            (arguments, &mut call.arguments),
        ] {
            // Past the bound the call is refused for its size anyway: keep no more of it.
            let room = bound.saturating_sub(call.chars);
            let taken: String = piece.chars().take(room).collect();
            call.chars += taken.chars().count();
            into.push_str(&taken);
        }
        Ok(())
    }

    /// The calls put together so far, in the order of their `index`, each as the text of an
    /// OpenAI tool call `{"index", "id", "type", "function": {"name", "arguments"}}` (the
    /// fields as the deltas gave them; an empty string for one that never came).
    pub fn calls(&self) -> Vec<String> {
        self.calls
            .iter()
            .map(|(index, call)| {
                let mut object = Map::new();
                object.insert("index".into(), json!(index));
                object.insert("id".into(), json!(call.id));
                object.insert(
                    "type".into(),
                    call.kind.clone().unwrap_or_else(|| json!("function")),
                );
                object.insert(
                    "function".into(),
                    json!({"name": call.name, "arguments": call.arguments}),
                );
                Value::Object(object).to_string()
            })
            .collect()
    }

    /// True when no tool-call delta came yet.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(deltas: Value) -> String {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {"tool_calls": deltas}, "finish_reason": null}]})
        .to_string()
    }

    #[test]
    fn fragments_are_joined_by_index_in_order() {
        let mut deltas = OpenAiDeltas::new(8, 1000, 10_000);
        for part in [
            json!([{"index": 0, "id": "call_a", "type": "function",
                    "function": {"name": "add", "arguments": ""}}]),
            json!([{"index": 1, "id": "call_b", "type": "function",
                    "function": {"name": "echo", "arguments": "{\"te"}}]),
            json!([{"index": 0, "function": {"arguments": "{\"a\":"}}]),
            json!([{"index": 0, "function": {"arguments": "1}"}},
                   {"index": 1, "function": {"arguments": "xt\":\"hi\"}"}}]),
        ] {
            deltas.push_chunk(&chunk(part)).unwrap();
        }
        deltas
            .push_chunk(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#)
            .unwrap();
        let calls: Vec<Value> = deltas
            .calls()
            .iter()
            .map(|text| serde_json::from_str(text).unwrap())
            .collect();
        assert_eq!(
            calls,
            vec![
                json!({"index": 0, "id": "call_a", "type": "function",
                       "function": {"name": "add", "arguments": "{\"a\":1}"}}),
                json!({"index": 1, "id": "call_b", "type": "function",
                       "function": {"name": "echo", "arguments": "{\"text\":\"hi\"}"}}),
            ]
        );
    }

    #[test]
    fn other_choices_and_chunks_without_calls_change_nothing() {
        let mut deltas = OpenAiDeltas::new(8, 1000, 10_000);
        let second_choice =
            r#"{"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"id":"x"}]}}]}"#;
        deltas.push_chunk(second_choice).unwrap();
        deltas
            .push_chunk(r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#)
            .unwrap();
        deltas
            .push_chunk(r#"{"choices":[],"usage":{"total_tokens":9}}"#)
            .unwrap();
        // The stream's own end is no error.
        deltas.push_chunk("[DONE]").unwrap();
        deltas.push_chunk(" [DONE]\n").unwrap();
        assert!(deltas.is_empty());
    }

    #[test]
    fn bad_chunks_are_refused_and_growth_is_bounded() {
        let mut deltas = OpenAiDeltas::new(2, 10, 400);
        for (text, reason) in [
            ("{\"choices\": [", "not strict JSON"),
            (r#"{"choices":[],"choices":[]}"#, "duplicate key"),
            (r#"{"object":"chat.completion.chunk"}"#, "no \"choices\""),
            (
                &chunk(json!([{"id": "no-index"}])),
                "without a non-negative integer",
            ),
            (&chunk(json!([{"index": 0, "id": 5}])), "\"id\" is a number"),
            (&"x".repeat(401), "more than 400 characters"),
        ] {
            match deltas.push_chunk(text) {
                Err(Error::Protocol(message)) => {
                    assert!(message.contains(reason), "{reason}: {message}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        deltas
            .push_chunk(&chunk(
                json!([{"index": 0, "id": "c", "function": {"arguments": "x".repeat(50)}},
                                      {"index": 7, "id": "d"}]),
            ))
            .unwrap();
        let error = deltas
            .push_chunk(&chunk(json!([{"index": 9, "id": "e"}])))
            .unwrap_err();
        assert!(
            error.to_string().contains("more than 2 tool calls"),
            "{error}"
        );
        // One character past the bound, and no more, is kept.
        let call: Value = serde_json::from_str(&deltas.calls()[0]).unwrap();
        assert_eq!(call["id"], "c");
        assert_eq!(call["function"]["arguments"].as_str().unwrap().len(), 10);
    }
}
