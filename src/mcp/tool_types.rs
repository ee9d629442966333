//! Tools as `tools/list` describes them (what `tools/call` returns is in `result`).
//!
//! Each type keeps the fields a caller needs typed, and the whole object as `raw` where a
//! server may send more, so nothing a server says is dropped.

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use std::sync::Arc;

use super::headers::{designations, ParamHeader};
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
///
/// The tool is kept as the JSON text the server sent (compact, byte for byte, keys in their
/// order, `$ref`s and `$defs` untouched), beside the few fields a caller reads typed; its
/// schemas are read from that text when asked for. A `serde_json::Value` of a tool costs 15
/// to 20 times its text in memory, so a long list costs about its own size this way.
#[derive(Debug, Clone)]
pub struct Tool {
    /// The name to call it by.
    pub name: String,
    /// A display title.
    pub title: Option<String>,
    /// What it does.
    pub description: Option<String>,
    /// Behaviour hints.
    pub annotations: ToolAnnotations,
    /// The whole object as the server sent it.
    raw: Box<RawValue>,
    /// Whether `outputSchema` is declared (an object).
    has_output_schema: bool,
    /// The parameters its schema designates for `Mcp-Param-*` headers, or why the
    /// designation is invalid (such a tool is left out of the list).
    headers: std::result::Result<Arc<[ParamHeader]>, String>,
    /// `execution.taskSupport`, when declared.
    task_support: TaskSupport,
}

/// Whether a tool may run as a task (2025-11-25 `execution.taskSupport`; on the 2026-07-28
/// wire, the tasks extension). The server declares its tools' with the same type
/// (`toolwire::server::ServerTool::task`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never as a task (also when the tool says nothing).
    #[default]
    Forbidden,
    /// As a task or not, as the client prefers.
    Optional,
    /// Only as a task: a plain call fails.
    Required,
}

/// A tool's input schema as its text, borrowed from the tool's text.
#[derive(Deserialize)]
struct InputText<'a> {
    #[serde(rename = "inputSchema", borrow)]
    input: Option<&'a RawValue>,
}

impl PartialEq for Tool {
    fn eq(&self, other: &Self) -> bool {
        self.raw.get() == other.raw.get()
    }
}

/// The two schemas of a tool's text, read without building the rest.
#[derive(Deserialize)]
struct Schemas {
    #[serde(rename = "inputSchema")]
    input: Option<Value>,
    #[serde(rename = "outputSchema")]
    output: Option<Value>,
}

/// The typed fields of a tool's text, read without building its schemas.
#[derive(Deserialize)]
struct Head {
    name: Option<Value>,
    title: Option<Value>,
    description: Option<Value>,
    #[serde(rename = "inputSchema")]
    input_schema: Option<Shape>,
    #[serde(rename = "outputSchema")]
    output_schema: Option<Shape>,
    annotations: Option<Value>,
    execution: Option<Value>,
}

/// Only the JSON type of a member, its content skipped.
enum Shape {
    Object,
    Null,
    Other,
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        struct ShapeVisitor;
        impl<'de> serde::de::Visitor<'de> for ShapeVisitor {
            type Value = Shape;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Shape, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Shape::Object)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Shape, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Shape::Other)
            }
            fn visit_unit<E>(self) -> std::result::Result<Shape, E> {
                Ok(Shape::Null)
            }
            fn visit_bool<E>(self, _: bool) -> std::result::Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_i64<E>(self, _: i64) -> std::result::Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_u64<E>(self, _: u64) -> std::result::Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_f64<E>(self, _: f64) -> std::result::Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_str<E>(self, _: &str) -> std::result::Result<Shape, E> {
                Ok(Shape::Other)
            }
        }
        deserializer.deserialize_any(ShapeVisitor)
    }
}

impl Tool {
    /// Reads a tool definition.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when `name` is not a string or `inputSchema` is not an object.
    pub fn from_value(value: Value) -> Result<Tool> {
        let raw = serde_json::value::to_raw_value(&value).map_err(|error| {
            Error::Protocol(format!("a tool that cannot be written back: {error}"))
        })?;
        Tool::from_raw(raw)
    }

    /// Reads a tool definition from its JSON text, keeping the text as it is.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when the text is not an object, `name` is not a string, or
    /// `inputSchema` is not an object (or `outputSchema`, when present, not an object).
    pub fn from_raw(raw: Box<RawValue>) -> Result<Tool> {
        let head: Head = serde_json::from_str(raw.get()).map_err(|error| {
            Error::Protocol(format!("a tool that is not a JSON object: {error}"))
        })?;
        let text = |value: Option<Value>| match value {
            Some(Value::String(text)) => Some(text),
            _ => None,
        };
        let name = text(head.name)
            .ok_or_else(|| Error::Protocol("a tool without a string `name`".into()))?;
        if !matches!(head.input_schema, Some(Shape::Object)) {
            return Err(Error::Protocol(format!(
                "tool `{name}` has no `inputSchema` object"
            )));
        }
        let has_output_schema = match head.output_schema {
            None | Some(Shape::Null) => false,
            Some(Shape::Object) => true,
            Some(Shape::Other) => {
                return Err(Error::Protocol(format!(
                    "tool `{name}` has an `outputSchema` that is not an object"
                )))
            }
        };
        let annotations = head.annotations.unwrap_or(Value::Null);
        let hint = |key: &str| annotations.get(key).and_then(Value::as_bool);
        let task_support = match head
            .execution
            .as_ref()
            .and_then(|execution| execution.get("taskSupport"))
            .and_then(Value::as_str)
        {
            Some("required") => TaskSupport::Required,
            Some("optional") => TaskSupport::Optional,
            _ => TaskSupport::Forbidden,
        };
        // Most tools designate nothing: their schema is not read for it.
        let headers = if raw.get().contains("x-mcp-header") {
            let schema = Tool::input_of(&raw);
            designations(&schema).map(Arc::from)
        } else {
            Ok(Arc::from(Vec::new()))
        };
        Ok(Tool {
            headers,
            task_support,
            annotations: ToolAnnotations {
                read_only_hint: hint("readOnlyHint"),
                destructive_hint: hint("destructiveHint"),
                idempotent_hint: hint("idempotentHint"),
                open_world_hint: hint("openWorldHint"),
            },
            title: text(head.title),
            description: text(head.description),
            name,
            raw,
            has_output_schema,
        })
    }

    fn input_of(raw: &RawValue) -> Value {
        serde_json::from_str::<Schemas>(raw.get())
            .ok()
            .and_then(|schemas| schemas.input)
            .unwrap_or(Value::Null)
    }

    /// The input schema's JSON text, byte for byte as the server sent it (keys in their
    /// order, `$ref`s and `$defs` untouched): what to hand a model, or echo back.
    pub fn input_schema_json(&self) -> &str {
        serde_json::from_str::<InputText<'_>>(self.raw.get())
            .ok()
            .and_then(|text| text.input)
            .map_or("{}", RawValue::get)
    }

    /// Whether the tool may, or must, run as a task (`execution.taskSupport`).
    pub fn task_support(&self) -> TaskSupport {
        self.task_support
    }

    /// Why the tool's `x-mcp-header` designations are invalid, when they are: such a tool is
    /// left out of [`crate::McpClient::list_tools`] (see [`crate::McpClient::rejected_tools`]).
    pub fn header_problem(&self) -> Option<&str> {
        self.headers.as_ref().err().map(String::as_str)
    }

    /// The designated parameters (for `Mcp-Param-*` headers); none when invalid.
    pub(crate) fn param_headers(&self) -> &[ParamHeader] {
        match &self.headers {
            Ok(headers) => headers,
            Err(_) => &[],
        }
    }

    fn schemas(&self) -> Schemas {
        // The text was read once already: it parses.
        serde_json::from_str(self.raw.get()).unwrap_or(Schemas {
            input: None,
            output: None,
        })
    }

    /// The JSON Schema of its arguments, exactly as the server sent it.
    pub fn input_schema(&self) -> Value {
        self.schemas()
            .input
            .unwrap_or_else(|| Value::Object(Default::default()))
    }

    /// The JSON Schema of its `structuredContent`, when declared, exactly as sent.
    pub fn output_schema(&self) -> Option<Value> {
        if !self.has_output_schema {
            return None;
        }
        self.schemas().output
    }

    /// Whether it declares an `outputSchema`, without reading it.
    pub fn has_output_schema(&self) -> bool {
        self.has_output_schema
    }

    /// The whole object as the server sent it, as a `Value`.
    pub fn raw(&self) -> Value {
        serde_json::from_str(self.raw.get()).unwrap_or(Value::Null)
    }

    /// The whole object as the server sent it: its compact JSON text, byte for byte.
    pub fn raw_json(&self) -> &str {
        self.raw.get()
    }
}
