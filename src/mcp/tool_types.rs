//! Tools as `tools/list` describes them, and what `tools/call` returns.
//!
//! Each type keeps the fields a caller needs typed, and the whole object as `raw` where a
//! server may send more, so nothing a server says is dropped.

use serde_json::Value;

use crate::error::{Error, Result};

/// The hints a tool's author gives about its behaviour. Hints, not guarantees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolAnnotations {
    /// The tool does not change its environment.
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data.
    pub destructive_hint: Option<bool>,
    /// Calling it twice with the same arguments has no further effect.
    pub idempotent_hint: Option<bool>,
    /// The tool talks to the outside world.
    pub open_world_hint: Option<bool>,
}

/// A tool as listed by `tools/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// The name to call it by.
    pub name: String,
    /// A display title.
    pub title: Option<String>,
    /// What it does.
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    /// The JSON Schema of its `structuredContent`, when declared.
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    pub annotations: ToolAnnotations,
    /// The whole object as the server sent it.
    pub raw: Value,
}

impl Tool {
    /// Reads a tool definition.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when `name` is not a string or `inputSchema` is not an object.
    pub fn from_value(value: Value) -> Result<Tool> {
        let name = value
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::Protocol("a tool without a string `name`".into()))?
            .to_owned();
        let input_schema = match value.get("inputSchema") {
            Some(schema @ Value::Object(_)) => schema.clone(),
            _ => {
                return Err(Error::Protocol(format!(
                    "tool `{name}` has no `inputSchema` object"
                )))
            }
        };
        let output_schema = match value.get("outputSchema") {
            None | Some(Value::Null) => None,
            Some(schema @ Value::Object(_)) => Some(schema.clone()),
            Some(_) => {
                return Err(Error::Protocol(format!(
                    "tool `{name}` has an `outputSchema` that is not an object"
                )))
            }
        };
        let hint = |key: &str| {
            value
                .get("annotations")
                .and_then(|annotations| annotations.get(key))
                .and_then(Value::as_bool)
        };
        let annotations = ToolAnnotations {
            read_only_hint: hint("readOnlyHint"),
            destructive_hint: hint("destructiveHint"),
            idempotent_hint: hint("idempotentHint"),
            open_world_hint: hint("openWorldHint"),
        };
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        Ok(Tool {
            title: text("title"),
            description: text("description"),
            name,
            input_schema,
            output_schema,
            annotations,
            raw: value,
        })
    }
}

/// One block of a tool result's `content`.
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

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// The result of `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallToolResult {
    /// The content blocks, in order.
    pub content: Vec<Content>,
    /// The structured result, when the tool returns one.
    pub structured_content: Option<Value>,
    /// True when the tool itself failed (bad arguments, an exception, an unknown tool). This is
    /// the tool's answer, not a transport or protocol failure.
    pub is_error: bool,
    /// The whole result as the server sent it.
    pub raw: Value,
}

impl CallToolResult {
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
        Ok(CallToolResult {
            content,
            structured_content: object.get("structuredContent").cloned(),
            is_error,
            raw: value,
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    }

    #[test]
    fn malformed_tool_results_are_protocol_errors() {
        assert!(CallToolResult::from_value(json!([1])).is_err());
        assert!(CallToolResult::from_value(json!({"content": "x"})).is_err());
        assert!(CallToolResult::from_value(json!({"content": [], "isError": "yes"})).is_err());
        let ok = CallToolResult::from_value(json!({"content": [], "isError": true})).unwrap();
        assert!(ok.is_error);
    }
}
