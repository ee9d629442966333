//! The tool calls of a streamed OpenAI Responses, Anthropic Messages or Gemini response, put
//! together from the stream's events as the providers' SDKs do it, for
//! [`crate::Harness::handle_all`] in the stream's shape. (Chat Completions deltas: `stream`.)
//!
//! * Responses ([`ResponsesEvents`]): an item begun by `response.output_item.added` (a
//!   `function_call` or `custom_tool_call`, by `output_index`) grows by the
//!   `response.function_call_arguments.delta` (`response.custom_tool_call_input.delta`)
//!   fragments, is set whole by the matching `.done` event, and is finished by
//!   `response.output_item.done`, whose item replaces it.
//! * Anthropic ([`AnthropicEvents`]): a `tool_use` block begun by `content_block_start` (by
//!   `index`) gathers the `partial_json` of its `input_json_delta` deltas, and is finished by
//!   `content_block_stop`.
//! * Gemini ([`GeminiChunks`]): each chunk is a whole `GenerateContentResponse` whose parts
//!   are complete; the `functionCall` parts of its first candidate are taken in order.
//!
//! Only finished calls are given ([`ResponsesEvents::pending`] and
//! [`AnthropicEvents::pending`] count the others: a stream cut short). Nothing is checked the
//! way a call is: the pieces are only joined, and each call is then read as strictly as any
//! other. Every other event (text, reasoning, the response's lifecycle, errors, pings)
//! changes nothing: a stream the provider ended with an error is the host's to report.
//!
//! Memory is bounded by the harness's limits: an event longer than `max_message_chars` is
//! refused, a call stops growing one character past `max_input_chars` (so that it is then
//! refused for its size, as any call that long is), and a stream with more calls than
//! `max_calls_per_message` is refused.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::super::parse::{kind_of, parse_strict};
use super::message::calls_of;
use super::CallShape;
use crate::error::{Error, Result};

/// The bounds of an accumulator, from the harness's config.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamBounds {
    /// The most calls (`max_calls_per_message`).
    pub(crate) max_calls: usize,
    /// The most characters kept of one call, less one (`max_input_chars`).
    pub(crate) max_chars: usize,
    /// The longest event (`max_message_chars`).
    pub(crate) max_event_chars: usize,
}

impl StreamBounds {
    /// Reads one event: its size, strict JSON, an object.
    fn read(&self, event: &str) -> std::result::Result<Map<String, Value>, String> {
        let max = self.max_event_chars;
        if event.len() > max && event.chars().take(max + 1).count() > max {
            return Err(format!("is more than {max} characters long"));
        }
        match parse_strict(event) {
            Ok(Value::Object(object)) => Ok(object),
            Ok(other) => Err(format!("is {}, not an object", kind_of(&other))),
            Err(reason) => Err(format!("is not strict JSON: {reason}")),
        }
    }

    /// Room for one more call at `key` among `taken`.
    fn room<T>(&self, taken: &BTreeMap<u64, T>, key: u64) -> std::result::Result<(), String> {
        if taken.contains_key(&key) || taken.len() < self.max_calls {
            Ok(())
        } else {
            Err(format!(
                "brings more than {} tool calls, the most handled at once",
                self.max_calls
            ))
        }
    }

    /// Appends `piece` to `text`, keeping at most one character past the bound.
    fn append(&self, text: &mut String, chars: &mut usize, piece: &str) {
        let room = self.max_chars.saturating_add(1).saturating_sub(*chars);
        let taken: String = piece.chars().take(room).collect();
        *chars += taken.chars().count();
        text.push_str(&taken);
    }
}

fn refuse(what: &str, reason: String) -> Error {
    Error::Protocol(format!("{what} {reason}"))
}

fn index(object: &Map<String, Value>, field: &str) -> std::result::Result<u64, String> {
    object.get(field).and_then(Value::as_u64).ok_or_else(|| {
        format!(
            "has no non-negative integer {field:?} (it is {})",
            object.get(field).map_or("missing", kind_of)
        )
    })
}

fn text<'a>(object: &'a Map<String, Value>, field: &str) -> std::result::Result<&'a str, String> {
    match object.get(field) {
        Some(Value::String(text)) => Ok(text),
        other => Err(format!(
            "has {field:?} as {}, not a string",
            other.map_or("missing", kind_of)
        )),
    }
}

/// The tool calls of one streamed OpenAI Responses response, put together from its events.
/// Made by [`crate::Harness::responses_events`], which gives it the harness's bounds.
///
/// ```
/// use toolwire::{CallShape, Harness, HarnessConfig, Status, ToolRegistry};
///
/// let harness = Harness::new(ToolRegistry::new(), HarnessConfig::default())?;
/// let mut events = harness.responses_events();
/// // The `data:` of each server-sent event, in order (their `sequence_number`s left out).
/// for event in [
///     r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call",
///         "id":"fc_1","call_id":"call_1","name":"get-time","arguments":"","status":"in_progress"}}"#,
///     r#"{"type":"response.function_call_arguments.delta","output_index":0,"item_id":"fc_1",
///         "delta":"{}"}"#,
///     r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call",
///         "id":"fc_1","call_id":"call_1","name":"get-time","arguments":"{}","status":"completed"}}"#,
/// ] {
///     events.push_event(event)?;
/// }
/// let replies = harness.handle_all(CallShape::OpenAiResponses, &events.calls());
/// assert_eq!(replies[0].call_id.as_deref(), Some("call_1"));
/// assert_eq!(replies[0].outcome.status, Status::UnknownTool);
/// # Ok::<(), toolwire::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ResponsesEvents {
    items: BTreeMap<u64, Item>,
    bounds: StreamBounds,
}

#[derive(Debug, Clone)]
struct Item {
    /// The item's fields but its text.
    fields: Map<String, Value>,
    /// `arguments` (a function call) or `input` (a custom tool call).
    field: &'static str,
    text: String,
    chars: usize,
    done: bool,
}

impl ResponsesEvents {
    pub(crate) fn new(bounds: StreamBounds) -> Self {
        ResponsesEvents {
            items: BTreeMap::new(),
            bounds,
        }
    }

    /// Takes one event of the stream (the `data:` of one server-sent event, a
    /// `ResponseStreamEvent` object with its `type`). Only the events of `function_call` and
    /// `custom_tool_call` items change anything.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when the event is longer than the harness's
    /// `max_message_chars`, is not strict JSON or not an object with a string `type`, when an
    /// event of a call lacks its `output_index` or text (or has them of the wrong type), when
    /// a delta comes for an item never added, or when the stream brings more than
    /// `max_calls_per_message` calls. The calls put together so far are kept.
    pub fn push_event(&mut self, event: &str) -> Result<()> {
        let what = "a Responses stream event";
        let object = self.bounds.read(event).map_err(|why| refuse(what, why))?;
        self.add(&object).map_err(|why| refuse(what, why))
    }

    fn add(&mut self, event: &Map<String, Value>) -> std::result::Result<(), String> {
        let kind = text(event, "type")?;
        match kind {
            "response.output_item.added" | "response.output_item.done" => {
                let Some(Value::Object(item)) = event.get("item") else {
                    return Err("has no \"item\" object".into());
                };
                let field = match item.get("type").and_then(Value::as_str) {
                    Some("function_call") => "arguments",
                    Some("custom_tool_call") => "input",
                    _ => return Ok(()),
                };
                let at = index(event, "output_index")?;
                self.bounds.room(&self.items, at)?;
                let mut fields = item.clone();
                let whole = match fields.remove(field) {
                    None => String::new(),
                    Some(Value::String(whole)) => whole,
                    Some(other) => {
                        return Err(format!(
                            "has an item whose {field:?} is {}",
                            kind_of(&other)
                        ))
                    }
                };
                let mut entry = Item {
                    fields,
                    field,
                    text: String::new(),
                    chars: 0,
                    done: kind == "response.output_item.done",
                };
                self.bounds
                    .append(&mut entry.text, &mut entry.chars, &whole);
                self.items.insert(at, entry);
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                let piece = text(event, "delta")?;
                let bounds = self.bounds;
                let item = self.item(event)?;
                bounds.append(&mut item.text, &mut item.chars, piece);
            }
            "response.function_call_arguments.done" | "response.custom_tool_call_input.done" => {
                let field = if kind.ends_with("arguments.done") {
                    "arguments"
                } else {
                    "input"
                };
                let whole = text(event, field)?;
                let bounds = self.bounds;
                let item = self.item(event)?;
                item.text.clear();
                item.chars = 0;
                bounds.append(&mut item.text, &mut item.chars, whole);
            }
            _ => {}
        }
        Ok(())
    }

    fn item(&mut self, event: &Map<String, Value>) -> std::result::Result<&mut Item, String> {
        let at = index(event, "output_index")?;
        self.items.get_mut(&at).ok_or_else(|| {
            format!("is for the output item {at}, which no response.output_item.added began")
        })
    }

    /// The finished calls (those whose `response.output_item.done` came), in the order of
    /// their `output_index`, each as the text of its output item (`function_call` or
    /// `custom_tool_call`).
    pub fn calls(&self) -> Vec<String> {
        self.items
            .values()
            .filter(|item| item.done)
            .map(|item| {
                let mut object = item.fields.clone();
                object.insert(item.field.into(), json!(item.text));
                Value::Object(object).to_string()
            })
            .collect()
    }

    /// How many calls were begun and not finished (a stream cut short).
    pub fn pending(&self) -> usize {
        self.items.values().filter(|item| !item.done).count()
    }

    /// True when no call was begun yet.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// The tool calls of one streamed Anthropic Messages response, put together from its events.
/// Made by [`crate::Harness::anthropic_events`], which gives it the harness's bounds.
///
/// ```
/// use toolwire::{CallShape, Harness, HarnessConfig, Status, ToolRegistry};
///
/// let harness = Harness::new(ToolRegistry::new(), HarnessConfig::default())?;
/// let mut events = harness.anthropic_events();
/// for event in [
///     r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use",
///         "id":"toolu_1","name":"get-time","input":{}}}"#,
///     r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta",
///         "partial_json":"{\"zone\":"}}"#,
///     r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta",
///         "partial_json":"\"UTC\"}"}}"#,
///     r#"{"type":"content_block_stop","index":0}"#,
///     r#"{"type":"message_stop"}"#,
/// ] {
///     events.push_event(event)?;
/// }
/// let replies = harness.handle_all(CallShape::Anthropic, &events.calls());
/// assert_eq!(replies[0].call_id.as_deref(), Some("toolu_1"));
/// assert_eq!(replies[0].outcome.status, Status::UnknownTool);
/// # Ok::<(), toolwire::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct AnthropicEvents {
    blocks: BTreeMap<u64, Block>,
    bounds: StreamBounds,
}

#[derive(Debug, Clone)]
struct Block {
    /// `id`, `name` and the optional `caller` of the `content_block_start`.
    head: Map<String, Value>,
    /// The `input` the start brought (`{}`), used when no fragment came.
    start_input: Value,
    input: String,
    chars: usize,
    done: bool,
}

impl AnthropicEvents {
    pub(crate) fn new(bounds: StreamBounds) -> Self {
        AnthropicEvents {
            blocks: BTreeMap::new(),
            bounds,
        }
    }

    /// Takes one event of the stream (the `data:` of one server-sent event, a
    /// `RawMessageStreamEvent` object with its `type`). Only the events of `tool_use` blocks
    /// change anything.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when the event is longer than the harness's
    /// `max_message_chars`, is not strict JSON or not an object with a string `type`, when a
    /// `tool_use` block's event lacks its `index`, `id`, `name` or `partial_json` (or has
    /// them of the wrong type), when an `input_json_delta` comes for a block that is not a
    /// `tool_use`, or when the stream brings more than `max_calls_per_message` calls. The
    /// calls put together so far are kept.
    pub fn push_event(&mut self, event: &str) -> Result<()> {
        let what = "an Anthropic stream event";
        let object = self.bounds.read(event).map_err(|why| refuse(what, why))?;
        self.add(&object).map_err(|why| refuse(what, why))
    }

    fn add(&mut self, event: &Map<String, Value>) -> std::result::Result<(), String> {
        match text(event, "type")? {
            "content_block_start" => {
                let Some(Value::Object(block)) = event.get("content_block") else {
                    return Err("has no \"content_block\" object".into());
                };
                if block.get("type").and_then(Value::as_str) != Some("tool_use") {
                    return Ok(());
                }
                let at = index(event, "index")?;
                self.bounds.room(&self.blocks, at)?;
                let mut head = Map::new();
                for field in ["id", "name"] {
                    head.insert(field.into(), json!(text(block, field)?));
                }
                for field in ["caller", "toolset_name"] {
                    if let Some(value) = block.get(field).filter(|value| !value.is_null()) {
                        head.insert(field.into(), value.clone());
                    }
                }
                let start_input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                self.blocks.insert(
                    at,
                    Block {
                        head,
                        start_input,
                        input: String::new(),
                        chars: 0,
                        done: false,
                    },
                );
            }
            "content_block_delta" => {
                let Some(Value::Object(delta)) = event.get("delta") else {
                    return Err("has no \"delta\" object".into());
                };
                if delta.get("type").and_then(Value::as_str) != Some("input_json_delta") {
                    return Ok(());
                }
                let piece = text(delta, "partial_json")?;
                let at = index(event, "index")?;
                let bounds = self.bounds;
                let block = self.blocks.get_mut(&at).ok_or_else(|| {
                    format!("has an input_json_delta for the block {at}, which is no tool_use")
                })?;
                bounds.append(&mut block.input, &mut block.chars, piece);
            }
            "content_block_stop" => {
                let at = index(event, "index")?;
                if let Some(block) = self.blocks.get_mut(&at) {
                    block.done = true;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The finished calls (those whose `content_block_stop` came), in the order of their
    /// `index`, each as the text of a `tool_use` block `{"type", "id", "name", "input"}`
    /// (with `caller` when the start had one). The input is the joined fragments as they
    /// came, so the call's strict read sees them as written (a repeated key is `INVALID`);
    /// input that is not JSON at all is given as a string, which the read refuses for not
    /// being an object, with the block's id to answer it by; no fragment at all is the
    /// start's `input`.
    pub fn calls(&self) -> Vec<String> {
        self.blocks
            .values()
            .filter(|block| block.done)
            .map(|block| {
                let head = Value::Object(block.head.clone()).to_string();
                let head = head.strip_suffix('}').unwrap_or(&head);
                let input = if block.input.trim().is_empty() {
                    block.start_input.to_string()
                } else if serde_json::from_str::<Value>(&block.input).is_ok() {
                    block.input.clone()
                } else {
                    json!(block.input).to_string()
                };
                // The input last, after the fields it cannot then repeat unseen.
                format!("{head},\"type\":\"tool_use\",\"input\":{input}}}")
            })
            .collect()
    }

    /// How many `tool_use` blocks were begun and not stopped (a stream cut short).
    pub fn pending(&self) -> usize {
        self.blocks.values().filter(|block| !block.done).count()
    }

    /// True when no `tool_use` block was begun yet.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

/// The tool calls of one streamed Gemini response (`streamGenerateContent`), gathered from
/// its chunks. Made by [`crate::Harness::gemini_chunks`], which gives it the harness's bounds.
///
/// ```
/// use toolwire::{CallShape, Harness, HarnessConfig, Status, ToolRegistry};
///
/// let harness = Harness::new(ToolRegistry::new(), HarnessConfig::default())?;
/// let mut chunks = harness.gemini_chunks();
/// for chunk in [
///     r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Checking."}]}}]}"#,
///     r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":
///         {"id":"fc_1","name":"get-time","args":{}}}]},"finishReason":"STOP"}]}"#,
/// ] {
///     chunks.push_chunk(chunk)?;
/// }
/// let replies = harness.handle_all(CallShape::Gemini, &chunks.calls());
/// assert_eq!(replies[0].call_id.as_deref(), Some("fc_1"));
/// assert_eq!(replies[0].outcome.status, Status::UnknownTool);
/// # Ok::<(), toolwire::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct GeminiChunks {
    calls: Vec<String>,
    bounds: StreamBounds,
}

impl GeminiChunks {
    pub(crate) fn new(bounds: StreamBounds) -> Self {
        GeminiChunks {
            calls: Vec::new(),
            bounds,
        }
    }

    /// Takes one chunk (a `GenerateContentResponse`, the `data:` of one server-sent event)
    /// and keeps the parts of its first candidate that hold a function call, as
    /// [`crate::Harness::handle_message`] reads a whole response. A chunk without candidates
    /// (usage only) changes nothing.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when the chunk is longer than the harness's
    /// `max_message_chars`, is not strict JSON or not an object, is not a response of the
    /// shape (as [`crate::Harness::handle_message`] says), or brings the stream past
    /// `max_calls_per_message` calls. The calls gathered so far are kept.
    pub fn push_chunk(&mut self, chunk: &str) -> Result<()> {
        let what = "a Gemini stream chunk";
        let object = self.bounds.read(chunk).map_err(|why| refuse(what, why))?;
        if !object.contains_key("candidates") {
            return Ok(());
        }
        let parts = calls_of(CallShape::Gemini, chunk).map_err(|why| refuse(what, why))?;
        if self.calls.len() + parts.len() > self.bounds.max_calls {
            return Err(refuse(
                what,
                format!(
                    "brings more than {} tool calls, the most handled at once",
                    self.bounds.max_calls
                ),
            ));
        }
        let limit = self.bounds.max_chars.saturating_add(1);
        self.calls.extend(
            parts
                .into_iter()
                .map(|part| part.chars().take(limit).collect()),
        );
        Ok(())
    }

    /// The calls gathered so far, in order, each as the text of its part.
    pub fn calls(&self) -> Vec<String> {
        self.calls.clone()
    }

    /// True when no call came yet.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(max_calls: usize, max_chars: usize) -> StreamBounds {
        StreamBounds {
            max_calls,
            max_chars,
            max_event_chars: 10_000,
        }
    }

    fn parsed(calls: Vec<String>) -> Vec<Value> {
        calls
            .iter()
            .map(|text| serde_json::from_str(text).unwrap())
            .collect()
    }

    #[test]
    fn responses_items_grow_by_their_deltas_and_finish_when_done() {
        let mut events = ResponsesEvents::new(bounds(4, 1000));
        let added = r#"{"type":"response.output_item.added","output_index":1,"item":
            {"type":"function_call","id":"fc","call_id":"c","name":"a","arguments":"","status":"in_progress"}}"#;
        events.push_event(added).unwrap();
        for piece in ["{\\\"x\\\"", ":1}"] {
            let delta = format!(
                r#"{{"type":"response.function_call_arguments.delta","output_index":1,"item_id":"fc","delta":"{piece}"}}"#
            );
            events.push_event(&delta).unwrap();
        }
        // Not finished yet: nothing to run, one pending.
        assert!(events.calls().is_empty());
        assert_eq!(events.pending(), 1);
        let done = r#"{"type":"response.output_item.done","output_index":1,"item":
            {"type":"function_call","id":"fc","call_id":"c","name":"a","arguments":"{\"x\":1}","status":"completed"}}"#;
        events.push_event(done).unwrap();
        events
            .push_event(r#"{"type":"response.output_text.delta","delta":"hi"}"#)
            .unwrap();
        assert_eq!(
            parsed(events.calls()),
            vec![
                json!({"type": "function_call", "id": "fc", "call_id": "c", "name": "a",
                        "arguments": "{\"x\":1}", "status": "completed"})
            ]
        );
        assert_eq!(events.pending(), 0);
        for (text, reason) in [
            (
                r#"{"type":"response.function_call_arguments.delta","output_index":7,"delta":"x"}"#,
                "which no response.output_item.added began",
            ),
            (r#"{"delta":"x"}"#, "\"type\" as missing"),
            (r#"[1]"#, "not an object"),
            (
                r#"{"type":"response.output_item.added","item":{"type":"function_call"}}"#,
                "\"output_index\"",
            ),
        ] {
            let error = events.push_event(text).unwrap_err().to_string();
            assert!(error.contains(reason), "{reason}: {error}");
        }
    }

    #[test]
    fn anthropic_fragments_are_joined_and_kept_as_written() {
        let mut events = AnthropicEvents::new(bounds(4, 1000));
        let start = |at: u64, id: &str| {
            format!(
                r#"{{"type":"content_block_start","index":{at},"content_block":{{"type":"tool_use","id":"{id}","name":"a","input":{{}}}}}}"#
            )
        };
        let delta = |at: u64, piece: &str| {
            json!({"type": "content_block_delta", "index": at,
                   "delta": {"type": "input_json_delta", "partial_json": piece}})
            .to_string()
        };
        let stop = |at: u64| format!(r#"{{"type":"content_block_stop","index":{at}}}"#);
        for event in [
            start(0, "t0"),
            delta(0, "{\"k\":1,"),
            delta(0, "\"k\":2}"),
            stop(0),
            start(1, "t1"),
            stop(1),
            start(2, "t2"),
            delta(2, "{\"k\":"),
            stop(2),
            start(3, "t3"),
        ] {
            events.push_event(&event).unwrap();
        }
        let calls = events.calls();
        assert_eq!(calls.len(), 3);
        // The repeated key stays in the text, for the strict read to refuse.
        assert!(
            calls[0].ends_with(r#""input":{"k":1,"k":2}}"#),
            "{}",
            calls[0]
        );
        let calls = parsed(calls);
        assert_eq!(
            calls[1],
            json!({"type": "tool_use", "id": "t1", "name": "a", "input": {}})
        );
        assert_eq!(calls[2]["input"], "{\"k\":");
        assert_eq!(events.pending(), 1);
        let error = events.push_event(&delta(9, "{}")).unwrap_err().to_string();
        assert!(error.contains("which is no tool_use"), "{error}");
        let error = events.push_event(&start(4, "t4")).unwrap_err().to_string();
        assert!(error.contains("more than 4 tool calls"), "{error}");
    }

    #[test]
    fn gemini_chunks_gather_their_calls_in_order() {
        let mut chunks = GeminiChunks::new(bounds(2, 1000));
        let chunk = |parts: Value| {
            json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]})
                .to_string()
        };
        chunks
            .push_chunk(&chunk(
                json!([{"text": "x"}, {"functionCall": {"name": "a"}}]),
            ))
            .unwrap();
        chunks
            .push_chunk(r#"{"usageMetadata":{"totalTokenCount":3}}"#)
            .unwrap();
        chunks
            .push_chunk(&chunk(json!([{"functionCall": {"name": "b"}}])))
            .unwrap();
        assert_eq!(
            parsed(chunks.calls()),
            vec![
                json!({"functionCall": {"name": "a"}}),
                json!({"functionCall": {"name": "b"}})
            ]
        );
        let error = chunks
            .push_chunk(&chunk(json!([{"functionCall": {"name": "c"}}])))
            .unwrap_err()
            .to_string();
        assert!(error.contains("more than 2 tool calls"), "{error}");
        let error = chunks
            .push_chunk(r#"{"candidates":[],"candidates":[]}"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("duplicate key"), "{error}");
    }

    #[test]
    fn growth_is_bounded_by_the_harness_limits() {
        let small = StreamBounds {
            max_calls: 4,
            max_chars: 10,
            max_event_chars: 300,
        };
        let mut anthropic = AnthropicEvents::new(small);
        anthropic
            .push_event(
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"a","input":{}}}"#,
            )
            .unwrap();
        for _ in 0..5 {
            let delta = json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "input_json_delta", "partial_json": "xxxxxxxx"}});
            anthropic.push_event(&delta.to_string()).unwrap();
        }
        // One character past the bound, and no more, is kept: the call is refused for its size.
        assert_eq!(anthropic.blocks[&0].input.len(), 11);
        let mut responses = ResponsesEvents::new(small);
        let error = responses
            .push_event(&format!(r#"{{"type":"x","pad":"{}"}}"#, "y".repeat(300)))
            .unwrap_err();
        assert!(
            error.to_string().contains("more than 300 characters"),
            "{error}"
        );
        let added = r#"{"type":"response.output_item.added","output_index":0,"item":
            {"type":"function_call","call_id":"c","name":"a","arguments":"0123456789abcdef"}}"#;
        responses.push_event(added).unwrap();
        assert_eq!(responses.items[&0].text, "0123456789a");
    }
}
