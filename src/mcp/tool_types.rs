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
use crate::schema::{read_text, SchemaLimits};

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
///
/// Its schemas are read once when the tool is, within the depth and size bounds of
/// [`crate::schema::SchemaLimits`] (by default: 128 levels, 1 MiB): a schema that cannot be
/// read or is over a bound makes the tool unusable ([`Tool::schema_problem`] says why, naming
/// the tool and the bound), and [`Tool::input_schema`] and [`Tool::output_schema`] return
/// that reason instead of a schema, so no caller can take it for "no schema".
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
    /// Why `inputSchema` cannot be used, when it cannot (found when the tool was read).
    input_problem: Option<Arc<str>>,
    /// Why `outputSchema` cannot be used, when it cannot.
    output_problem: Option<Arc<str>>,
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

/// A tool's schemas as their text, borrowed from the tool's text (read without a depth
/// limit: the text is only sliced).
#[derive(Deserialize)]
struct SchemaTexts<'a> {
    #[serde(rename = "inputSchema", borrow)]
    input: Option<&'a RawValue>,
    #[serde(rename = "outputSchema", borrow)]
    output: Option<&'a RawValue>,
}

impl PartialEq for Tool {
    fn eq(&self, other: &Self) -> bool {
        self.raw.get() == other.raw.get()
    }
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
        // One read of each schema, its failure kept: the schemas are built again when asked
        // for (from the same text, by the same parser), never kept as trees of values.
        let problem = |key: &str, reason: String| -> Arc<str> {
            Arc::from(format!("tool `{name}`: its {key} cannot be used: {reason}"))
        };
        let texts = serde_json::from_str::<SchemaTexts<'_>>(raw.get()).map_err(|error| {
            Error::Protocol(format!(
                "tool `{name}`: its schemas cannot be read: {error}"
            ))
        })?;
        let input = texts
            .input
            .map(|text| read_text(text.get(), &SchemaLimits::default()))
            .transpose()
            .map_err(|reason| problem("inputSchema", reason));
        let output_problem = match texts.output {
            Some(text) if has_output_schema => read_text(text.get(), &SchemaLimits::default())
                .err()
                .map(|reason| problem("outputSchema", reason)),
            _ => None,
        };
        // Most tools designate nothing: their schema is not looked at for it.
        let headers = match &input {
            Ok(Some(schema)) if raw.get().contains("x-mcp-header") => {
                designations(schema).map(Arc::from)
            }
            _ => Ok(Arc::from(Vec::new())),
        };
        Ok(Tool {
            input_problem: input.err(),
            output_problem,
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

    /// The schemas' texts within the tool's text. The text was sliced this way when the tool
    /// was read, so it slices the same way again.
    fn texts(raw: &RawValue) -> SchemaTexts<'_> {
        serde_json::from_str::<SchemaTexts<'_>>(raw.get()).unwrap_or(SchemaTexts {
            input: None,
            output: None,
        })
    }

    /// The input schema's JSON text, byte for byte as the server sent it (keys in their
    /// order, `$ref`s and `$defs` untouched): what to hand a model, or echo back. For a tool
    /// whose schema is unusable ([`Tool::schema_problem`]) it is the text as sent, which no
    /// check here can apply.
    pub fn input_schema_json(&self) -> &str {
        Tool::texts(&self.raw).input.map_or("{}", RawValue::get)
    }

    /// Why the tool cannot be used, when it cannot: its `inputSchema` or `outputSchema`
    /// cannot be read or is over a bound of [`crate::schema::SchemaLimits`] (the reason names
    /// the tool and the bound). Such a tool is listed, so it can be shown as unusable, but
    /// its arguments cannot be checked and its results cannot be: the harness and the gateway
    /// leave it out, the command line refuses to call it, and a call through
    /// [`crate::McpClient`] whose output schema is unusable fails rather than pass an
    /// unchecked result.
    pub fn schema_problem(&self) -> Option<&str> {
        self.input_problem
            .as_deref()
            .or(self.output_problem.as_deref())
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

    /// Builds one of the tool's schemas from its text (read once already, without error).
    fn schema(&self, key: &str, text: Option<&RawValue>) -> Result<Option<Value>> {
        let Some(text) = text else {
            return Ok(None);
        };
        read_text(text.get(), &SchemaLimits::default())
            .map(Some)
            .map_err(|reason| {
                Error::Protocol(format!(
                    "tool `{}`: its {key} cannot be used: {reason}",
                    self.name
                ))
            })
    }

    /// The JSON Schema of its arguments, exactly as the server sent it.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] with [`Tool::schema_problem`]'s reason when the schema cannot be
    /// read or is over a bound: the tool is unusable, never "without a schema".
    pub fn input_schema(&self) -> Result<Value> {
        if let Some(problem) = &self.input_problem {
            return Err(Error::Protocol(problem.to_string()));
        }
        let schema = self.schema("inputSchema", Tool::texts(&self.raw).input)?;
        schema.ok_or_else(|| {
            Error::Protocol(format!("tool `{}` has no `inputSchema` object", self.name))
        })
    }

    /// The JSON Schema of its `structuredContent`, when declared, exactly as sent.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] with the reason when the declared schema cannot be read or is over
    /// a bound: results cannot be checked, which is not the same as not declaring one.
    pub fn output_schema(&self) -> Result<Option<Value>> {
        if !self.has_output_schema {
            return Ok(None);
        }
        if let Some(problem) = &self.output_problem {
            return Err(Error::Protocol(problem.to_string()));
        }
        self.schema("outputSchema", Tool::texts(&self.raw).output)
    }

    /// Whether it declares an `outputSchema`, without reading it.
    pub fn has_output_schema(&self) -> bool {
        self.has_output_schema
    }

    /// The whole object as the server sent it, as a `Value`.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when the text is nested too deep to be built as a `Value` (a
    /// schema near or over [`crate::schema::SchemaLimits::max_depth`]); [`Tool::raw_json`]
    /// always has it.
    pub fn raw(&self) -> Result<Value> {
        serde_json::from_str(self.raw.get()).map_err(|error| {
            Error::Protocol(format!(
                "tool `{}` cannot be built as a JSON value: {error}",
                self.name
            ))
        })
    }

    /// The whole object as the server sent it: its compact JSON text, byte for byte.
    pub fn raw_json(&self) -> &str {
        self.raw.get()
    }
}
