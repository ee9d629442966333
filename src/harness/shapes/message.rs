//! A whole assistant message in each provider's shape: the calls in it, and the message(s)
//! that answer them.
//!
//! The envelope (the message around the calls) is written by the provider's API, not by the
//! model, so it is read for what it holds and no more: other fields (text, reasoning,
//! annotations, usage) are the caller's business and are not checked. Each call in it is
//! handed on as its own text and read as strictly as a single call, so a repeated key in one
//! call's arguments makes that call `INVALID`, not the message unreadable. A repeated
//! container field (`"tool_calls"` twice) is refused, since it would hide calls.
//!
//! | shape | the message | its calls |
//! |---|---|---|
//! | OpenAI | the whole `ChatCompletion` (its `choices[0].message`), the assistant message, or its `tool_calls` array | every entry of `tool_calls` |
//! | Responses | the response, or its `output` array | the items of type `function_call` and `custom_tool_call` |
//! | Anthropic | the message (or response), or its `content` array | the blocks of type `tool_use` |
//! | Gemini | the whole `GenerateContentResponse` (its `candidates[0].content`), the content `{"role": "model", "parts"}`, or its `parts` | the parts with a `functionCall` (or `function_call`) |
//! | plain | an array of plain calls | every entry |
//!
//! Whatever the message holds besides its calls is passed over, and the calls are answered
//! in their order. An object that is none of these (it has none of the fields named) is
//! refused with the path expected, rather than read as a message without calls: a call must
//! never go unanswered because its message was not recognized. The choice (candidate) read
//! is the one with `index` 0, as in a stream: the others of an `n > 1` request are
//! alternatives the host did not pick. A Chat Completions message holding the deprecated
//! `function_call` is refused (its call would go unanswered).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::super::parse::quote;
use super::{CallShape, ToolReply};

/// The replies to an assistant message's tool calls, in the calls' order, and the
/// message(s) that carry them back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageReply {
    /// The shape of the message and its calls.
    pub shape: CallShape,
    /// One reply per call, in the order of the calls in the message.
    pub replies: Vec<ToolReply>,
}

impl MessageReply {
    /// What to append to the conversation, in order, in the provider's shape (nothing when
    /// the message held no calls):
    ///
    /// * OpenAI: one `{"role": "tool", "tool_call_id", "content"}` message per call;
    /// * Responses: one `{"type": "function_call_output", "call_id", "output"}` input item
    ///   per call;
    /// * Anthropic: one user message `{"role": "user", "content": [tool_result, …]}` holding
    ///   every result (the API wants them together, first in the message);
    /// * Gemini: one content `{"role": "user", "parts": [functionResponse, …]}`;
    /// * plain: one outcome `{"status", "result", "detail"}` per call.
    pub fn messages(&self) -> Vec<Value> {
        if self.replies.is_empty() {
            return Vec::new();
        }
        let each = || self.replies.iter().map(ToolReply::message);
        match self.shape {
            CallShape::Anthropic => {
                vec![json!({"role": "user", "content": each().collect::<Vec<_>>()})]
            }
            CallShape::Gemini => {
                vec![json!({"role": "user", "parts": each().collect::<Vec<_>>()})]
            }
            _ => each().collect(),
        }
    }
}

/// The calls of an assistant message in `shape`, each as its own text, in order.
///
/// # Errors
///
/// The reason, when the text is not one JSON value or not a message of the shape (a
/// container of the wrong type, a repeated container field, the wrong role, an object that
/// is no message of the shape at all).
pub(crate) fn calls_of(shape: CallShape, message: &str) -> Result<Vec<&str>, String> {
    let what = message_name(shape);
    if message.trim_start().starts_with('[') {
        let list: Vec<&RawValue> = serde_json::from_str(message).map_err(unreadable(what))?;
        return Ok(pick(shape, list));
    }
    let list = match shape {
        CallShape::OpenAi => openai_calls(message, what, true)?,
        CallShape::OpenAiResponses => {
            let envelope: ResponsesResponse =
                serde_json::from_str(message).map_err(unreadable(what))?;
            envelope.output.ok_or_else(|| {
                format!("{what} has no \"output\" array; pass the response or its output")
            })?
        }
        CallShape::Anthropic => {
            let envelope: AnthropicMessage =
                serde_json::from_str(message).map_err(unreadable(what))?;
            if envelope.role.is_none() && envelope.content.is_none() && envelope.kind.is_none() {
                return Err(format!(
                    "{what} has none of \"role\", \"type\" and \"content\"; pass the \
                     Message the API returned, or its \"content\" array"
                ));
            }
            need_role(envelope.role.as_deref(), "assistant", what)?;
            match envelope.content {
                None => Vec::new(),
                // A message whose content is one string holds no tool_use block.
                Some(content) if content.get().trim_start().starts_with('"') => Vec::new(),
                Some(content) => serde_json::from_str(content.get()).map_err(|error| {
                    format!("the \"content\" of {what} must be a string or an array ({error})")
                })?,
            }
        }
        CallShape::Gemini => gemini_calls(message, what, true)?,
        CallShape::Plain => {
            return Err(format!(
                "{what} must be a JSON array of plain calls, not {}",
                first_kind(message)
            ))
        }
    };
    Ok(pick(shape, list))
}

fn unreadable(what: &str) -> impl Fn(serde_json::Error) -> String + '_ {
    move |error| format!("{what} could not be read: {error}")
}

/// The `tool_calls` of an assistant message, or (when `whole` may be) of the first choice of
/// a whole `ChatCompletion`.
fn openai_calls<'a>(
    message: &'a str,
    what: &str,
    whole: bool,
) -> Result<Vec<&'a RawValue>, String> {
    let envelope: OpenAiMessage = serde_json::from_str(message).map_err(unreadable(what))?;
    if let Some(choices) = envelope.choices {
        if !whole {
            return Err(format!(
                "{what} (a choice's \"message\") has \"choices\" of its own; pass the \
                 ChatCompletion, or choices[0].message"
            ));
        }
        let inner = first_of(&choices, "choices", "message", what)?.ok_or_else(|| {
            format!(
                "{what}: the ChatCompletion has no choice with a \"message\" (the chunks of a \
                 stream, whose choices have a \"delta\", are put together by \
                 Harness::openai_deltas)"
            )
        })?;
        return openai_calls(inner.get(), what, false);
    }
    if envelope.role.is_none() && envelope.tool_calls.is_none() {
        return Err(format!(
            "{what} has none of \"choices\", \"role\" and \"tool_calls\"; pass the \
             ChatCompletion the API returned (its choices[0].message is read), the assistant \
             message, or its \"tool_calls\" array"
        ));
    }
    need_role(envelope.role.as_deref(), "assistant", what)?;
    if envelope
        .function_call
        .is_some_and(|call| call.get().trim() != "null")
    {
        return Err(format!(
            "{what} holds a \"function_call\" (the deprecated functions API), which is not \
             answered here; nothing was run. Offer the tools as \"tools\", whose calls come \
             in \"tool_calls\""
        ));
    }
    Ok(envelope.tool_calls.unwrap_or_default())
}

/// The `parts` of a model content, or (when `whole` may be) of the first candidate's content
/// of a whole `GenerateContentResponse`. A candidate without content (a response stopped for
/// safety) holds no calls.
fn gemini_calls<'a>(
    message: &'a str,
    what: &str,
    whole: bool,
) -> Result<Vec<&'a RawValue>, String> {
    let envelope: GeminiContent = serde_json::from_str(message).map_err(unreadable(what))?;
    if let Some(candidates) = envelope.candidates {
        if !whole {
            return Err(format!(
                "{what} (a candidate's \"content\") has \"candidates\" of its own; pass the \
                 GenerateContentResponse, or candidates[0].content"
            ));
        }
        return match first_of(&candidates, "candidates", "content", what)? {
            Some(content) => gemini_calls(content.get(), what, false),
            None => Ok(Vec::new()),
        };
    }
    if envelope.role.is_none() && envelope.parts.is_none() {
        return Err(format!(
            "{what} has none of \"candidates\", \"role\" and \"parts\"; pass the \
             GenerateContentResponse the API returned (its candidates[0].content is read), the \
             model content, or its \"parts\" array"
        ));
    }
    need_role(envelope.role.as_deref(), "model", what)?;
    Ok(envelope.parts.unwrap_or_default())
}

/// The `field` of the entry of `list` (`choices`, `candidates`) with `index` 0, or of its
/// only entry when that has no index; `None` when the entry has no such field (or is
/// `null`).
fn first_of<'a>(
    list: &[&'a RawValue],
    name: &str,
    field: &str,
    what: &str,
) -> Result<Option<&'a RawValue>, String> {
    let mut entries = Vec::with_capacity(list.len());
    for entry in list {
        let entry: Indexed = serde_json::from_str(entry.get()).map_err(|error| {
            format!("an entry of \"{name}\" in {what} could not be read: {error}")
        })?;
        entries.push(entry);
    }
    let chosen = match entries.iter().position(|entry| entry.index == Some(0)) {
        Some(position) => Some(position),
        None if entries.len() == 1 && entries[0].index.is_none() => Some(0),
        None if entries.is_empty() => return Ok(None),
        None => {
            return Err(format!(
                "{what} has no entry of \"{name}\" with \"index\" 0"
            ))
        }
    };
    Ok(chosen
        .and_then(|position| entries[position].field(field))
        .filter(|value| value.get().trim() != "null"))
}

/// The entries of a message's list that are calls. An entry whose kind cannot be told (not an
/// object, a repeated or non-string `type`) is taken as a call: the strict read of the call
/// then refuses it with the precise reason, and it is answered rather than passed over.
fn pick(shape: CallShape, list: Vec<&RawValue>) -> Vec<&str> {
    list.into_iter()
        .filter(|entry| match shape {
            CallShape::OpenAi | CallShape::Plain => true,
            CallShape::OpenAiResponses => {
                tagged(entry, "function_call") || tagged(entry, "custom_tool_call")
            }
            CallShape::Anthropic => tagged(entry, "tool_use"),
            CallShape::Gemini => match serde_json::from_str::<GeminiPart>(entry.get()) {
                Ok(part) => part.function_call.is_some() || part.snake_call.is_some(),
                Err(_) => true,
            },
        })
        .map(RawValue::get)
        .collect()
}

fn tagged(entry: &RawValue, tag: &str) -> bool {
    match serde_json::from_str::<Tagged>(entry.get()) {
        Ok(Tagged { kind: Some(kind) }) => kind == tag,
        Ok(Tagged { kind: None }) | Err(_) => true,
    }
}

fn need_role(role: Option<&str>, expected: &str, what: &str) -> Result<(), String> {
    match role {
        None => Ok(()),
        Some(role) if role == expected => Ok(()),
        Some(role) => Err(format!(
            "{what} has the role {}; the model's tool calls come in a {expected:?} message",
            quote(role)
        )),
    }
}

fn message_name(shape: CallShape) -> &'static str {
    match shape {
        CallShape::OpenAi => "the OpenAI assistant message",
        CallShape::OpenAiResponses => "the OpenAI Responses output",
        CallShape::Anthropic => "the Anthropic assistant message",
        CallShape::Gemini => "the Gemini model content",
        CallShape::Plain => "the list of plain calls",
    }
}

fn first_kind(text: &str) -> &'static str {
    match text.trim_start().chars().next() {
        Some('{') => "an object",
        Some('"') => "a string",
        Some(_) => "a scalar",
        None => "empty text",
    }
}

#[derive(Deserialize)]
struct OpenAiMessage<'a> {
    #[serde(default)]
    role: Option<String>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    function_call: Option<&'a RawValue>,
    #[serde(borrow, default)]
    choices: Option<Vec<&'a RawValue>>,
}

/// An entry of `choices` or `candidates`: its index, and the field holding the message.
#[derive(Deserialize)]
struct Indexed<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

impl<'a> Indexed<'a> {
    fn field(&self, name: &str) -> Option<&'a RawValue> {
        match name {
            "message" => self.message,
            _ => self.content,
        }
    }
}

#[derive(Deserialize)]
struct ResponsesResponse<'a> {
    #[serde(borrow, default)]
    output: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct AnthropicMessage<'a> {
    #[serde(default)]
    role: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct GeminiContent<'a> {
    #[serde(default)]
    role: Option<String>,
    #[serde(borrow, default)]
    parts: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    candidates: Option<Vec<&'a RawValue>>,
}

/// The `type` of an entry, and nothing else of it.
#[derive(Deserialize)]
pub(super) struct Tagged {
    #[serde(rename = "type", default)]
    pub(super) kind: Option<String>,
}

#[derive(Deserialize)]
struct GeminiPart {
    #[serde(rename = "functionCall", default)]
    function_call: Option<serde::de::IgnoredAny>,
    #[serde(rename = "function_call", default)]
    snake_call: Option<serde::de::IgnoredAny>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_messages_give_every_tool_call() {
        let message = r#"{"role":"assistant","content":null,"refusal":null,
            "tool_calls":[{"id":"a"},{"id":"b","id":"b"}]}"#;
        assert_eq!(
            calls_of(CallShape::OpenAi, message).unwrap(),
            vec![r#"{"id":"a"}"#, r#"{"id":"b","id":"b"}"#]
        );
        let text_only = r#"{"role":"assistant","content":"hello"}"#;
        assert!(calls_of(CallShape::OpenAi, text_only).unwrap().is_empty());
        assert_eq!(
            calls_of(CallShape::OpenAi, r#"[{"id":"a"}]"#).unwrap(),
            vec![r#"{"id":"a"}"#]
        );
        let twice = r#"{"tool_calls":[{"id":"a"}],"tool_calls":[]}"#;
        let error = calls_of(CallShape::OpenAi, twice).unwrap_err();
        assert!(error.contains("duplicate field `tool_calls`"), "{error}");
        let user = r#"{"role":"user","content":"hi"}"#;
        let error = calls_of(CallShape::OpenAi, user).unwrap_err();
        assert!(error.contains("role \"user\""), "{error}");
    }

    #[test]
    fn the_other_shapes_pick_their_calls_by_kind() {
        let anthropic = r#"{"id":"msg_1","type":"message","role":"assistant","content":[
            {"type":"thinking","thinking":"…","signature":"s"},
            {"type":"text","text":"Let me check."},
            {"type":"tool_use","id":"t1","name":"a","input":{}},
            {"type":"server_tool_use","id":"s1","name":"web_search","input":{}},
            {"type":"tool_use","id":"t2","name":"b","input":{}}],"stop_reason":"tool_use"}"#;
        let calls = calls_of(CallShape::Anthropic, anthropic).unwrap();
        assert_eq!(calls.len(), 2);
        assert!(calls[0].contains("\"t1\"") && calls[1].contains("\"t2\""));
        let plain_text = r#"{"role":"assistant","content":"no tools"}"#;
        assert!(calls_of(CallShape::Anthropic, plain_text)
            .unwrap()
            .is_empty());

        let responses = r#"{"id":"resp_1","output":[
            {"type":"reasoning","id":"rs_1","summary":[]},
            {"type":"function_call","call_id":"c1","name":"a","arguments":"{}"},
            {"type":"message","role":"assistant","content":[]},
            {"type":"function_call","call_id":"c2","name":"b","arguments":"{}"}]}"#;
        assert_eq!(
            calls_of(CallShape::OpenAiResponses, responses)
                .unwrap()
                .len(),
            2
        );
        let error = calls_of(CallShape::OpenAiResponses, r#"{"id":"resp_1"}"#).unwrap_err();
        assert!(error.contains("no \"output\" array"), "{error}");

        let gemini = r#"{"role":"model","parts":[{"text":"Checking."},
            {"functionCall":{"name":"a","args":{}},"thoughtSignature":"x"},
            {"functionCall":{"name":"b"}}]}"#;
        assert_eq!(calls_of(CallShape::Gemini, gemini).unwrap().len(), 2);
        let error = calls_of(CallShape::Gemini, r#"{"role":"user","parts":[]}"#).unwrap_err();
        assert!(error.contains("\"model\""), "{error}");

        assert_eq!(
            calls_of(CallShape::Plain, r#"[{"tool":"a","arguments":{}}]"#)
                .unwrap()
                .len(),
            1
        );
        let error = calls_of(CallShape::Plain, r#"{"tool":"a"}"#).unwrap_err();
        assert!(error.contains("must be a JSON array"), "{error}");
    }

    #[test]
    fn entries_whose_kind_cannot_be_told_are_answered_as_calls() {
        let blocks = r#"[{"type":"tool_use","type":"tool_use","id":"t"}, 7, {"type":5}]"#;
        assert_eq!(calls_of(CallShape::Anthropic, blocks).unwrap().len(), 3);
        let error = calls_of(CallShape::Anthropic, "{\"content\": [").unwrap_err();
        assert!(error.contains("could not be read"), "{error}");
    }

    #[test]
    fn whole_responses_give_the_calls_of_their_first_choice() {
        let completion = r#"{"object":"chat.completion","choices":[
            {"index":1,"message":{"role":"assistant","tool_calls":[{"id":"other"}]}},
            {"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"a"}]}}]}"#;
        assert_eq!(
            calls_of(CallShape::OpenAi, completion).unwrap(),
            vec![r#"{"id":"a"}"#]
        );
        let nested = r#"{"choices":[{"index":0,"message":{"choices":[]}}]}"#;
        let error = calls_of(CallShape::OpenAi, nested).unwrap_err();
        assert!(error.contains("of its own"), "{error}");
        let response = r#"{"candidates":[{"content":{"role":"model","parts":[
            {"text":"x"},{"function_call":{"name":"a"}},{"functionCall":{"name":"b"}}]}}]}"#;
        assert_eq!(calls_of(CallShape::Gemini, response).unwrap().len(), 2);
        let custom =
            r#"{"output":[{"type":"custom_tool_call","call_id":"c"},{"type":"web_search_call"}]}"#;
        assert_eq!(
            calls_of(CallShape::OpenAiResponses, custom).unwrap().len(),
            1
        );
    }
}
