//! The LLM tool-call shapes: reading a call in, writing its result message out, and
//! describing tools to each API.
//!
//! In (one call; `read`):
//!
//! * OpenAI Chat Completions: `{"id", "type": "function", "function": {"name",
//!   "arguments"}}`, where `arguments` is a string holding a JSON object (parsed as strictly
//!   as the call itself); a streamed call may keep its `index`.
//! * OpenAI Responses: the output item `{"type": "function_call", "call_id", "name",
//!   "arguments"}` (`arguments` a string again), with the item's optional `id`, `status`,
//!   `async`, `caller` and `namespace`.
//! * Anthropic Messages: `{"type": "tool_use", "id", "name", "input"}`, `input` an object,
//!   with the optional `caller` and `toolset_name`.
//! * Gemini: the part `{"functionCall": {"name", "args", "id"}}` (`args` and `id` optional,
//!   and `partialArgs` and `willContinue` as `null`), with the part's optional
//!   `thoughtSignature`, `thought` and its other fields as `null`, in camelCase or the SDK's
//!   snake_case.
//! * A `custom` tool call in either OpenAI shape is answered `INVALID`, saying why.
//! * Plain: `{"tool", "arguments"}`, `arguments` an object.
//!
//! Each shape has an exact field set: a field more or less is `INVALID`, named.
//!
//! Out (`reply`): OpenAI `{"role": "tool", "tool_call_id", "content"}`, Responses
//! `{"type": "function_call_output", "call_id", "output"}`, Anthropic `{"type":
//! "tool_result", "tool_use_id", "content", "is_error"}`, Gemini `{"functionResponse":
//! {"name", "id", "response": {"output"} or {"error"}}}`, plain: the outcome as `{"status",
//! "result", "detail"}`. The text is always a JSON string built by serde_json, so whatever a
//! tool returns stays data inside it.
//!
//! A whole assistant message or response (its several calls at once) is read by `message`;
//! the calls of a streamed response are put together from its events by `stream` (Chat
//! Completions deltas) and `events` (Responses events, Anthropic content-block deltas, Gemini
//! chunks).

use serde_json::Value;

use super::parse::{check_size, parse_strict};
use super::Harness;

mod events;
mod fields;
mod message;
mod read;
mod reply;
mod stream;

pub(crate) use events::StreamBounds;
pub use events::{AnthropicEvents, GeminiChunks, ResponsesEvents};
pub(crate) use message::calls_of;
pub use message::MessageReply;
pub(crate) use read::extract;
pub use reply::ToolReply;
pub(crate) use reply::{
    anthropic_definition, gemini_definitions, openai_definition, responses_definition,
};
pub use stream::OpenAiDeltas;

/// The shape a raw tool call arrives in (and its result message leaves in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallShape {
    /// An OpenAI Chat Completions tool call (an entry of an assistant message's
    /// `tool_calls`).
    OpenAi,
    /// An OpenAI Responses API `function_call` output item.
    OpenAiResponses,
    /// An Anthropic Messages `tool_use` content block.
    Anthropic,
    /// A Gemini `functionCall` part.
    Gemini,
    /// `{"tool": …, "arguments": {…}}`.
    Plain,
}

impl CallShape {
    /// Every shape.
    pub const ALL: [CallShape; 5] = [
        CallShape::OpenAi,
        CallShape::OpenAiResponses,
        CallShape::Anthropic,
        CallShape::Gemini,
        CallShape::Plain,
    ];

    /// The shape's name in messages.
    pub fn describe(self) -> &'static str {
        match self {
            CallShape::OpenAi => "an OpenAI tool call",
            CallShape::OpenAiResponses => "an OpenAI Responses function_call item",
            CallShape::Anthropic => "an Anthropic tool_use block",
            CallShape::Gemini => "a Gemini functionCall part",
            CallShape::Plain => "a plain tool call",
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

/// A shape failure: the reason, and what could be read to address the reply (the call id;
/// for Gemini also the name).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ShapeError {
    pub(crate) reason: String,
    pub(crate) call_id: Option<String>,
    pub(crate) name: Option<String>,
}

/// The checks of a raw call before its name: the size in characters (at most `max_chars`,
/// counted before parsing), strict JSON (the reason then starts "the call is not strict
/// JSON", and the address is recovered leniently, only to address the reply), and the exact
/// fields of `shape`.
pub(crate) fn read_raw(
    shape: CallShape,
    raw: &str,
    max_chars: usize,
) -> Result<ToolRequest, ShapeError> {
    check_size(raw, max_chars).map_err(|reason| ShapeError {
        reason,
        call_id: None,
        name: None,
    })?;
    let value = parse_strict(raw).map_err(|reason| {
        let address = lenient_address(shape, raw);
        ShapeError {
            reason: format!("the call is not strict JSON: {reason}"),
            call_id: address.call_id,
            name: address.name,
        }
    })?;
    extract(shape, &value)
}

/// Recovers the address of a call from text that failed the strict parse, only to address
/// the reply (nothing else is read from it, and nothing runs).
pub(crate) fn lenient_address(shape: CallShape, raw: &str) -> read::Address {
    serde_json::from_str::<Value>(raw)
        .map(|value| read::address_of(shape, &value))
        .unwrap_or_default()
}

/// Marks each reply whose call is a `custom` tool call ([`ToolReply::custom`]), so that its
/// Responses answer is a `custom_tool_call_output`. The call is looked at only when its text
/// mentions "custom", and only its `type` is read.
pub(crate) fn mark_custom<S: AsRef<str>>(shape: CallShape, calls: &[S], replies: &mut [ToolReply]) {
    let tag = match shape {
        CallShape::OpenAi => "custom",
        CallShape::OpenAiResponses => "custom_tool_call",
        _ => return,
    };
    for (call, reply) in calls.iter().zip(replies) {
        let call = call.as_ref();
        if call.contains("custom") {
            reply.custom = serde_json::from_str::<message::Tagged>(call)
                .is_ok_and(|tagged| tagged.kind.as_deref() == Some(tag));
        }
    }
}

/// The accumulators of streamed responses, each with the harness's bounds.
impl Harness {
    /// A new [`OpenAiDeltas`], to put together the tool calls of a streamed OpenAI Chat
    /// Completions response for [`Harness::handle_all`], bounded by this harness's
    /// [`super::HarnessConfig::max_calls_per_message`], [`super::HarnessConfig::max_input_chars`] (per
    /// call) and [`super::HarnessConfig::max_message_chars`] (per chunk).
    pub fn openai_deltas(&self) -> OpenAiDeltas {
        let config = &self.inner.config;
        OpenAiDeltas::new(
            config.max_calls_per_message,
            config.max_input_chars,
            config.max_message_chars,
        )
    }

    /// A new [`ResponsesEvents`], to put together the tool calls of a streamed OpenAI
    /// Responses response, bounded as [`Harness::openai_deltas`] is (per event for per chunk).
    pub fn responses_events(&self) -> ResponsesEvents {
        ResponsesEvents::new(self.stream_bounds())
    }

    /// A new [`AnthropicEvents`], to put together the `tool_use` blocks of a streamed
    /// Anthropic Messages response, bounded as [`Harness::openai_deltas`] is.
    pub fn anthropic_events(&self) -> AnthropicEvents {
        AnthropicEvents::new(self.stream_bounds())
    }

    /// A new [`GeminiChunks`], to gather the function calls of a streamed Gemini response,
    /// bounded as [`Harness::openai_deltas`] is.
    pub fn gemini_chunks(&self) -> GeminiChunks {
        GeminiChunks::new(self.stream_bounds())
    }

    fn stream_bounds(&self) -> StreamBounds {
        let config = &self.inner.config;
        StreamBounds {
            max_calls: config.max_calls_per_message,
            max_chars: config.max_input_chars,
            max_event_chars: config.max_message_chars,
        }
    }
}

/// The call id of a broken call in the shapes addressed by `id` (OpenAI, Anthropic).
#[cfg(test)]
fn lenient_call_id(raw: &str) -> Option<String> {
    lenient_address(CallShape::OpenAi, raw).call_id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_of_a_broken_call_is_recovered_only_to_address_the_reply() {
        assert_eq!(
            lenient_call_id(r#"{"id":"c9","id":"c9","x":1}"#).as_deref(),
            Some("c9")
        );
        assert_eq!(lenient_call_id("{"), None);
        let address = lenient_address(
            CallShape::Gemini,
            r#"{"functionCall":{"name":"add","name":"add","id":"g1"}}"#,
        );
        assert_eq!(
            (address.call_id.as_deref(), address.name.as_deref()),
            (Some("g1"), Some("add"))
        );
        let address = lenient_address(
            CallShape::OpenAiResponses,
            r#"{"call_id":"r1","call_id":"r1"}"#,
        );
        assert_eq!(address.call_id.as_deref(), Some("r1"));
    }

    #[test]
    fn a_broken_call_keeps_its_address() {
        let error = read_raw(
            CallShape::Gemini,
            r#"{"functionCall":{"name":"add","args":{"a":1,"a":2}}}"#,
            1000,
        )
        .unwrap_err();
        assert!(error.reason.starts_with("the call is not strict JSON"));
        assert_eq!(error.name.as_deref(), Some("add"));
        let error = read_raw(CallShape::Plain, &"x".repeat(20), 10).unwrap_err();
        assert!(error.reason.contains("characters long"));
        assert_eq!((error.call_id, error.name), (None, None));
    }
}
