//! What `tools/call` returns, the one type a server's tool gives back and a client reads: its
//! content blocks, `structuredContent`, `isError` and `_meta`, with every field the type does
//! not know kept, so a result passed on (a proxy) is sent as it came.

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};

/// One block of a tool result's `content` (or of a prompt message).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64 in `data`.
    Image {
        /// Base64 data.
        data: String,
        /// The MIME type.
        mime_type: String,
    },
    /// Audio, base64 in `data`.
    Audio {
        /// Base64 data.
        data: String,
        /// The MIME type.
        mime_type: String,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// Its name.
        name: String,
        /// The whole block as sent (description, mimeType, size…).
        raw: Value,
    },
    /// An embedded resource with its contents.
    Resource {
        /// The resource URI.
        uri: String,
        /// The MIME type, when given.
        mime_type: Option<String>,
        /// Text contents, for a text resource.
        text: Option<String>,
        /// Base64 contents, for a binary resource.
        blob: Option<String>,
    },
    /// A kind this client does not know, kept as sent.
    Unknown(Value),
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Content {
        Content::Text { text: text.into() }
    }

    /// An image block: base64 `data` and its MIME type.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Content {
        Content::Image {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// An audio block: base64 `data` and its MIME type.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Content {
        Content::Audio {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// A link to a resource the client may read.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Content {
        let (uri, name) = (uri.into(), name.into());
        Content::ResourceLink {
            raw: json!({"type": "resource_link", "uri": uri, "name": name}),
            uri,
            name,
        }
    }

    /// An embedded resource whose contents are text.
    pub fn text_resource(
        uri: impl Into<String>,
        mime_type: Option<&str>,
        text: impl Into<String>,
    ) -> Content {
        Content::Resource {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            text: Some(text.into()),
            blob: None,
        }
    }

    /// An embedded resource whose contents are base64 bytes.
    pub fn blob_resource(
        uri: impl Into<String>,
        mime_type: Option<&str>,
        blob: impl Into<String>,
    ) -> Content {
        Content::Resource {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            text: None,
            blob: Some(blob.into()),
        }
    }

    /// Reads a content block; kinds it does not know, or blocks missing required fields, are
    /// kept as [`Content::Unknown`] rather than dropped.
    pub fn from_value(value: Value) -> Content {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        let typed = match kind {
            "text" => text("text").map(|text| Content::Text { text }),
            "image" | "audio" => match (text("data"), text("mimeType")) {
                (Some(data), Some(mime_type)) if kind == "image" => {
                    Some(Content::Image { data, mime_type })
                }
                (Some(data), Some(mime_type)) => Some(Content::Audio { data, mime_type }),
                _ => None,
            },
            "resource_link" => match (text("uri"), text("name")) {
                (Some(uri), Some(name)) => Some(Content::ResourceLink {
                    uri,
                    name,
                    raw: value.clone(),
                }),
                _ => None,
            },
            "resource" => value.get("resource").and_then(|resource| {
                let field =
                    |key: &str| resource.get(key).and_then(Value::as_str).map(str::to_owned);
                Some(Content::Resource {
                    uri: field("uri")?,
                    mime_type: field("mimeType"),
                    text: field("text"),
                    blob: field("blob"),
                })
            }),
            _ => None,
        };
        typed.unwrap_or(Content::Unknown(value))
    }

    /// The block as the wire carries it. A block read with [`Content::from_value`] and passed
    /// on inside its [`CallToolResult`] is sent as it came (its `annotations` and `_meta`
    /// too); this writes the typed fields only.
    pub fn to_value(&self) -> Value {
        match self {
            Content::Text { text } => json!({"type": "text", "text": text}),
            Content::Image { data, mime_type } => {
                json!({"type": "image", "data": data, "mimeType": mime_type})
            }
            Content::Audio { data, mime_type } => {
                json!({"type": "audio", "data": data, "mimeType": mime_type})
            }
            Content::ResourceLink { uri, name, raw } => {
                let mut object = match raw {
                    Value::Object(object) => object.clone(),
                    _ => Map::new(),
                };
                object.insert("type".into(), Value::from("resource_link"));
                object.insert("uri".into(), Value::from(uri.clone()));
                object.insert("name".into(), Value::from(name.clone()));
                Value::Object(object)
            }
            Content::Resource {
                uri,
                mime_type,
                text,
                blob,
            } => {
                let mut resource = Map::new();
                resource.insert("uri".into(), Value::from(uri.clone()));
                for (key, value) in [("mimeType", mime_type), ("text", text), ("blob", blob)] {
                    if let Some(value) = value {
                        resource.insert(key.into(), Value::from(value.clone()));
                    }
                }
                json!({"type": "resource", "resource": resource})
            }
            Content::Unknown(value) => value.clone(),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// The result of `tools/call`: what a server's tool returns and what a client receives.
///
/// A client reads one with [`CallToolResult::from_value`]; a tool builds one with
/// [`CallToolResult::from_text`], [`CallToolResult::error`], [`CallToolResult::structured`]
/// or [`CallToolResult::new`] and the `with_*` methods. [`CallToolResult::to_value`] is what
/// goes on the wire: the typed fields written over [`CallToolResult::raw`], so whatever a
/// result carried beyond them (`_meta`, fields of a later revision, a block's `annotations`)
/// is passed on untouched.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallToolResult {
    /// The content blocks, in order.
    pub content: Vec<Content>,
    /// The structured result, when the tool returns one.
    pub structured_content: Option<Value>,
    /// True when the tool itself failed (bad arguments, an exception, an unknown tool). This is
    /// the tool's answer, not a transport or protocol failure.
    pub is_error: bool,
    /// The whole result as the server sent it (`Value::Null` for one built here, until
    /// [`CallToolResult::with_meta`] adds to it): the fields beyond the typed ones come from
    /// here when it is sent on.
    pub raw: Value,
    /// The task the call ran as, when it ran as one.
    pub task_id: Option<String>,
}

/// The `resultType` of a [`CallToolResult`] that holds a server's JSON-RPC error (no server
/// sends it: a `resultType` the protocol does not name is refused when read).
const PASSED_ERROR: &str = "toolwire/rpc-error";

impl CallToolResult {
    /// The JSON-RPC error a server answered a call with, handed back in place of a result
    /// ([`crate::harness::CallSettings::pass_rpc_errors`]); `None` for a result.
    pub fn rpc_error(&self) -> Option<crate::wire::ErrorObject> {
        if self.raw.get("resultType").and_then(Value::as_str) != Some(PASSED_ERROR) {
            return None;
        }
        crate::wire::ErrorObject::from_value(self.raw.get("error")?).ok()
    }

    /// A server's JSON-RPC error as a result to hand back ([`CallToolResult::rpc_error`]).
    pub(crate) fn passing_rpc_error(error: crate::wire::ErrorObject) -> CallToolResult {
        CallToolResult {
            raw: json!({"resultType": PASSED_ERROR, "error": error}),
            is_error: true,
            ..CallToolResult::default()
        }
    }

    /// A result of these content blocks.
    pub fn new(content: Vec<Content>) -> CallToolResult {
        CallToolResult {
            content,
            ..CallToolResult::default()
        }
    }

    /// A result of one text block.
    pub fn from_text(text: impl Into<String>) -> CallToolResult {
        CallToolResult::new(vec![Content::text(text)])
    }

    /// A failure the model reads: one text block and `isError: true`.
    pub fn error(text: impl Into<String>) -> CallToolResult {
        CallToolResult::from_text(text).with_error(true)
    }

    /// A JSON value as `structuredContent`, with its compact text as the text block (for
    /// clients that read only text).
    pub fn structured(value: Value) -> CallToolResult {
        CallToolResult::from_text(value.to_string()).with_structured(value)
    }

    /// Adds a content block.
    pub fn with(mut self, block: Content) -> CallToolResult {
        self.content.push(block);
        self
    }

    /// Sets `structuredContent` (a server checks it against the tool's output schema when it
    /// has one).
    pub fn with_structured(mut self, value: Value) -> CallToolResult {
        self.structured_content = Some(value);
        self
    }

    /// Sets `isError`.
    pub fn with_error(mut self, is_error: bool) -> CallToolResult {
        self.is_error = is_error;
        self
    }

    /// Sets one key of the result's `_meta`.
    pub fn with_meta(mut self, key: impl Into<String>, value: Value) -> CallToolResult {
        if !self.raw.is_object() {
            self.raw = Value::Object(Map::new());
        }
        if let Value::Object(object) = &mut self.raw {
            let meta = object
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if !meta.is_object() {
                *meta = Value::Object(Map::new());
            }
            if let Value::Object(meta) = meta {
                meta.insert(key.into(), value);
            }
        }
        self
    }

    /// The result's `_meta`, when it has one.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        self.raw.get("_meta").and_then(Value::as_object)
    }

    /// Reads a `tools/call` result.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when the result is not an object, `content` is not an array, or
    /// `isError` is not a boolean.
    pub fn from_value(value: Value) -> Result<CallToolResult> {
        let object = value
            .as_object()
            .ok_or_else(|| Error::Protocol("a tools/call result must be an object".into()))?;
        let content = match object.get("content") {
            Some(Value::Array(blocks)) => blocks.iter().cloned().map(Content::from_value).collect(),
            // Results that carry only structured content are tolerated.
            None if object.contains_key("structuredContent") => Vec::new(),
            _ => {
                return Err(Error::Protocol(
                    "a tools/call result needs a `content` array".into(),
                ))
            }
        };
        let is_error = match object.get("isError") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(flag)) => *flag,
            Some(_) => return Err(Error::Protocol("`isError` must be a boolean".into())),
        };
        // A task's result names its task (2025-11-25 `tasks/result`).
        let task_id = object
            .get("_meta")
            .and_then(|meta| meta.get("io.modelcontextprotocol/related-task"))
            .and_then(|task| task.get("taskId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok(CallToolResult {
            task_id,
            content,
            structured_content: object.get("structuredContent").cloned(),
            is_error,
            raw: value,
        })
    }

    /// The result as the wire carries it: `content`, `structuredContent` when set, and
    /// `isError`, written over the fields [`CallToolResult::raw`] holds. A block that is still
    /// what was read is sent as it was read. A `raw` that is a 2026-07-28 `CreateTaskResult`
    /// (`resultType: "task"`, a task passed on by a proxy) is sent as it is.
    pub fn to_value(&self) -> Value {
        if self.raw.get("resultType").and_then(Value::as_str) == Some("task") {
            return self.raw.clone();
        }
        let object = match &self.raw {
            Value::Object(object) => object.clone(),
            _ => Map::new(),
        };
        wire_value(
            object,
            &self.content,
            self.structured_content.clone(),
            self.is_error,
        )
    }

    /// [`CallToolResult::to_value`] of a result no longer needed: its `raw` is written over
    /// in place rather than copied (a result a proxy passes on is serialized once, not
    /// copied first).
    pub fn into_value(self) -> Value {
        if self.raw.get("resultType").and_then(Value::as_str) == Some("task") {
            return self.raw;
        }
        let object = match self.raw {
            Value::Object(object) => object,
            _ => Map::new(),
        };
        wire_value(
            object,
            &self.content,
            self.structured_content,
            self.is_error,
        )
    }

    /// All text blocks joined by newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `object` (a result's `raw` fields) with `content`, `structuredContent` and `isError`
/// written over it: a block still what was read is kept as it was read.
fn wire_value(
    mut object: Map<String, Value>,
    content: &[Content],
    structured_content: Option<Value>,
    is_error: bool,
) -> Value {
    let read = match object.remove("content") {
        Some(Value::Array(blocks)) => blocks,
        _ => Vec::new(),
    };
    let mut read = read.into_iter();
    let blocks = content
        .iter()
        .map(|block| match read.next() {
            Some(sent) if Content::from_value(sent.clone()) == *block => sent,
            _ => block.to_value(),
        })
        .collect();
    object.insert("content".into(), Value::Array(blocks));
    match structured_content {
        Some(structured) => {
            object.insert("structuredContent".into(), structured);
        }
        None => {
            object.remove("structuredContent");
        }
    }
    object.insert("isError".into(), Value::Bool(is_error));
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_kinds_are_typed_and_unknown_ones_kept() {
        let blocks = [
            json!({"type": "text", "text": "hi"}),
            json!({"type": "image", "data": "AAA=", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "BBB=", "mimeType": "audio/wav"}),
            json!({"type": "resource_link", "uri": "file:///a", "name": "a", "size": 3}),
            json!({"type": "resource", "resource": {"uri": "file:///b", "text": "body"}}),
            json!({"type": "resource", "resource": {"uri": "file:///c", "blob": "Q0M=", "mimeType": "x/y"}}),
            json!({"type": "hologram", "frames": 3}),
            json!({"type": "image"}),
        ];
        let parsed: Vec<Content> = blocks.iter().cloned().map(Content::from_value).collect();
        assert_eq!(parsed[0].as_text(), Some("hi"));
        assert!(matches!(&parsed[1], Content::Image { mime_type, .. } if mime_type == "image/png"));
        assert!(matches!(&parsed[2], Content::Audio { data, .. } if data == "BBB="));
        assert!(matches!(&parsed[3], Content::ResourceLink { raw, .. } if raw["size"] == 3));
        assert!(matches!(&parsed[4], Content::Resource { text: Some(text), .. } if text == "body"));
        assert!(matches!(
            &parsed[5],
            Content::Resource {
                blob: Some(_),
                mime_type: Some(_),
                ..
            }
        ));
        assert_eq!(parsed[6], Content::Unknown(blocks[6].clone()));
        assert_eq!(parsed[7], Content::Unknown(blocks[7].clone()));
        // Every block is written back as it was read.
        for (block, sent) in parsed.iter().zip(&blocks) {
            assert_eq!(&block.to_value(), sent);
        }
    }

    #[test]
    fn malformed_tool_results_are_protocol_errors() {
        assert!(CallToolResult::from_value(json!([1])).is_err());
        assert!(CallToolResult::from_value(json!({"content": "x"})).is_err());
        assert!(CallToolResult::from_value(json!({"content": [], "isError": "yes"})).is_err());
        let ok = CallToolResult::from_value(json!({"content": [], "isError": true})).unwrap();
        assert!(ok.is_error);
    }

    #[test]
    fn built_results_have_their_wire_shape() {
        assert_eq!(
            CallToolResult::from_text("hi").to_value(),
            json!({"content": [{"type": "text", "text": "hi"}], "isError": false})
        );
        assert_eq!(
            CallToolResult::structured(json!({"sum": 3})).to_value(),
            json!({"content": [{"type": "text", "text": "{\"sum\":3}"}],
                   "structuredContent": {"sum": 3}, "isError": false})
        );
        assert_eq!(CallToolResult::error("no").to_value()["isError"], true);
        let with_meta = CallToolResult::from_text("x").with_meta("k", json!(1));
        assert_eq!(with_meta.to_value()["_meta"], json!({"k": 1}));
        assert_eq!(with_meta.meta().unwrap()["k"], 1);
    }

    #[test]
    fn a_result_read_is_passed_on_as_it_came_and_changes_win() {
        let sent = json!({
            "content": [{"type": "text", "text": "a", "annotations": {"priority": 1}}],
            "structuredContent": {"a": 1},
            "isError": false,
            "_meta": {"trace": "t"},
            "laterField": [1, 2],
        });
        let result = CallToolResult::from_value(sent.clone()).unwrap();
        assert_eq!(result.to_value(), sent);
        let mut changed = result.with(Content::text("b")).with_error(true);
        changed.structured_content = None;
        let value = changed.to_value();
        assert_eq!(value["content"][0], sent["content"][0]);
        assert_eq!(value["content"][1], json!({"type": "text", "text": "b"}));
        assert_eq!(value["isError"], true);
        assert!(value.get("structuredContent").is_none());
        assert_eq!(value["laterField"], json!([1, 2]));
    }
}
