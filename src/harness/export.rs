//! Tool definitions for the model APIs, each checked against the tool names that API takes.
//!
//! A name the registry admits is not always one a provider takes: MCP allows `.` and 128
//! characters, OpenAI and Anthropic neither. A tool whose name the API would refuse is left
//! out of that API's definitions (never sent, so the request is not refused as a whole) and
//! reported with the reason. The rules, from each API's documentation and SDK:
//!
//! | shape | API field | characters | length |
//! |---|---|---|---|
//! | [`CallShape::OpenAi`] | Chat Completions `tools[].function.name` | `a-z A-Z 0-9 _ -` | 1–64 |
//! | [`CallShape::OpenAiResponses`] | Responses `tools[].name` | `a-z A-Z 0-9 _ -` | 1–64 |
//! | [`CallShape::Anthropic`] | Messages `tools[].name` | `a-z A-Z 0-9 _ -` | 1–64 |
//! | [`CallShape::Gemini`] | `FunctionDeclaration.name` | first `a-z A-Z _`, then `a-z A-Z 0-9 _ . : -` | 1–128 |
//! | [`CallShape::Plain`] | MCP `Tool.name` | `a-z A-Z 0-9 _ . -` | 1–128 |

use serde_json::{json, Value};

use super::audit::HARNESS_LOG_TARGET;
use super::registry::{ToolInfo, ToolRegistry};
use super::shapes::{
    anthropic_definition, gemini_definitions, openai_definition, responses_definition, CallShape,
};
use crate::json::quote;

/// A tool left out of a model API's definitions, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOutTool {
    /// The tool's name in the registry.
    pub name: String,
    /// Why the API cannot be offered it (its name rule, in words).
    pub reason: String,
}

/// The tool definitions for one model API ([`ToolRegistry::export`]): what to send as the
/// request's `tools`, and the tools that were not put in it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolExport {
    /// The shape (API) the definitions are for.
    pub shape: CallShape,
    /// The definitions, as the API's `tools` parameter takes them.
    pub tools: Value,
    /// The tools the API cannot be offered, in name order, each with its reason. Each was
    /// also logged at warn.
    pub left_out: Vec<LeftOutTool>,
}

impl ToolExport {
    /// The definitions of `tools` (held by the caller, e.g. described from
    /// [`super::ImportedTool`]s or another registry) for the API of `shape`, each name
    /// checked as [`CallShape::check_tool_name`] does.
    pub fn of<'a>(shape: CallShape, tools: impl IntoIterator<Item = &'a ToolInfo>) -> ToolExport {
        export(
            shape,
            tools.into_iter().map(|tool| {
                (
                    tool.name.as_str(),
                    tool.description.as_str(),
                    &tool.input_schema,
                )
            }),
        )
    }
}

impl CallShape {
    /// The tool names this shape's API takes, in words (see the table of
    /// [`ToolRegistry::export`]).
    pub fn tool_name_rule(self) -> &'static str {
        match self {
            CallShape::Gemini => {
                "1 to 128 characters, the first a letter or '_', the others letters, digits, \
                 '_', '.', ':' or '-'"
            }
            CallShape::Plain => "1 to 128 characters: letters, digits, '_', '.' or '-'",
            _ => "1 to 64 characters: letters, digits, '_' or '-'",
        }
    }

    /// Whether this shape's API takes `name` as a tool name; the reason when not.
    ///
    /// # Errors
    ///
    /// The reason, naming the API, the first character it refuses or the length, and the
    /// rule ([`CallShape::tool_name_rule`]).
    pub fn check_tool_name(self, name: &str) -> Result<(), String> {
        let (max, first_ok, rest_ok): (usize, CharRule, CharRule) = match self {
            CallShape::Gemini => (128, gemini_first, gemini_rest),
            CallShape::Plain => (128, mcp_char, mcp_char),
            _ => (64, provider_char, provider_char),
        };
        let api = api_name(self);
        let rule = self.tool_name_rule();
        let length = name.chars().count();
        if length == 0 || length > max {
            return Err(format!(
                "the tool name {} has {length} characters, and {api} takes {rule}",
                quote(name)
            ));
        }
        let refused = name.chars().enumerate().find(|&(index, c)| {
            if index == 0 {
                !first_ok(c)
            } else {
                !rest_ok(c)
            }
        });
        match refused {
            None => Ok(()),
            Some((index, c)) => Err(format!(
                "the tool name {} has {c:?} at position {}, and {api} takes {rule}",
                quote(name),
                index + 1
            )),
        }
    }
}

/// Whether a character may stand at a place of a tool name.
type CharRule = fn(char) -> bool;

fn provider_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn mcp_char(c: char) -> bool {
    provider_char(c) || c == '.'
}

fn gemini_first(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn gemini_rest(c: char) -> bool {
    mcp_char(c) || c == ':'
}

fn api_name(shape: CallShape) -> &'static str {
    match shape {
        CallShape::OpenAi => "the OpenAI Chat Completions API",
        CallShape::OpenAiResponses => "the OpenAI Responses API",
        CallShape::Anthropic => "the Anthropic Messages API",
        CallShape::Gemini => "the Gemini API",
        _ => "MCP",
    }
}

/// The definitions of `tools` (name, description, input schema) for `shape`'s API, leaving
/// out (and logging at warn) each tool whose name that API refuses.
fn export<'a>(
    shape: CallShape,
    tools: impl Iterator<Item = (&'a str, &'a str, &'a Value)>,
) -> ToolExport {
    let mut left_out = Vec::new();
    let offered: Vec<(&str, &str, &Value)> = tools
        .filter(|(name, _, _)| match shape.check_tool_name(name) {
            Ok(()) => true,
            Err(reason) => {
                log::warn!(
                    target: HARNESS_LOG_TARGET,
                    "tool {} is not offered to {}: {reason}",
                    quote(name),
                    api_name(shape)
                );
                left_out.push(LeftOutTool {
                    name: (*name).to_owned(),
                    reason,
                });
                false
            }
        })
        .collect();
    left_out.sort_by(|a, b| a.name.cmp(&b.name));
    let each = |definition: fn(&str, &str, &Value) -> Value| -> Value {
        offered
            .iter()
            .map(|(name, description, schema)| definition(name, description, schema))
            .collect()
    };
    let tools = match shape {
        CallShape::OpenAi => each(openai_definition),
        CallShape::OpenAiResponses => each(responses_definition),
        CallShape::Anthropic => each(anthropic_definition),
        CallShape::Gemini => gemini_definitions(offered.iter().copied()),
        _ => each(
            |name, description, schema| json!({"name": name, "description": description, "inputSchema": schema}),
        ),
    };
    ToolExport {
        shape,
        tools,
        left_out,
    }
}

impl ToolRegistry {
    /// The definitions of the registered tools for the API of `shape`, and the tools left
    /// out of them: a tool whose name that API refuses is never sent (the API would refuse
    /// the whole request) but listed in [`ToolExport::left_out`] with the reason, and logged
    /// at warn. The names each API takes (from its documentation and SDK):
    ///
    /// | shape | the definitions | names |
    /// |---|---|---|
    /// | [`CallShape::OpenAi`] | `[{"type": "function", "function": {"name", "description", "parameters"}}]` | `a-z A-Z 0-9 _ -`, 1–64 |
    /// | [`CallShape::OpenAiResponses`] | `[{"type": "function", "name", "description", "parameters", "strict": false}]` | as OpenAI |
    /// | [`CallShape::Anthropic`] | `[{"name", "description", "input_schema"}]` | as OpenAI |
    /// | [`CallShape::Gemini`] | `[{"functionDeclarations": [{"name", "description", "parametersJsonSchema"}]}]` | first `a-z A-Z _`, then `a-z A-Z 0-9 _ . : -`, 1–128 |
    /// | [`CallShape::Plain`] | MCP's `[{"name", "description", "inputSchema"}]` | `a-z A-Z 0-9 _ . -`, 1–128 |
    ///
    /// The Responses API's `strict` is off: its strict mode takes only a subset of JSON
    /// Schema, and the harness checks the arguments against the whole schema itself. Gemini
    /// gets the schema as JSON Schema (`parametersJsonSchema`), not the OpenAPI subset of
    /// `parameters`. Argument values keep their own checks whatever the names.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolwire::{CallShape, LocalTool, ToolRegistry};
    ///
    /// let mut registry = ToolRegistry::new();
    /// registry.register(LocalTool::new("find", "Finds.", json!({"type": "object"}),
    ///                                  |_args, _cancel| Ok(None)))?;
    /// let export = registry.export(CallShape::Anthropic);
    /// assert_eq!(export.tools[0]["name"], "find");
    /// assert!(export.left_out.is_empty());
    /// assert!(CallShape::Anthropic.check_tool_name("admin.tools.list").is_err());
    /// assert!(CallShape::Gemini.check_tool_name("admin.tools.list").is_ok());
    /// # Ok::<(), toolwire::Error>(())
    /// ```
    pub fn export(&self, shape: CallShape) -> ToolExport {
        export(
            shape,
            self.registered().map(|tool| {
                (
                    tool.name.as_str(),
                    tool.description.as_str(),
                    tool.schema.source(),
                )
            }),
        )
    }

    /// The OpenAI Chat Completions `tools`: [`ToolRegistry::export`]'s definitions for
    /// [`CallShape::OpenAi`] (a tool left out is only logged at warn; use `export` to see
    /// it).
    pub fn openai_tools(&self) -> Value {
        self.export(CallShape::OpenAi).tools
    }

    /// The Anthropic Messages `tools`, as [`ToolRegistry::openai_tools`] for
    /// [`CallShape::Anthropic`].
    pub fn anthropic_tools(&self) -> Value {
        self.export(CallShape::Anthropic).tools
    }

    /// The OpenAI Responses `tools`, as [`ToolRegistry::openai_tools`] for
    /// [`CallShape::OpenAiResponses`].
    pub fn responses_tools(&self) -> Value {
        self.export(CallShape::OpenAiResponses).tools
    }

    /// The Gemini `tools` (one tool holding every function declaration), as
    /// [`ToolRegistry::openai_tools`] for [`CallShape::Gemini`].
    pub fn gemini_tools(&self) -> Value {
        self.export(CallShape::Gemini).tools
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> ToolInfo {
        let mut registry = ToolRegistry::new();
        let schema = json!({"type": "object"});
        let tool = super::super::LocalTool::new("model", "", schema, |_, _| Ok(None));
        registry.register(tool).unwrap();
        let model = registry.tool("model").unwrap();
        ToolInfo {
            name: name.into(),
            ..model
        }
    }

    #[test]
    fn each_api_is_offered_only_the_names_it_takes() {
        let long = format!("a{}", "b".repeat(64));
        let tools = [
            tool("get_weather"),
            tool("admin.tools.list"),
            tool(&long),
            tool("ns:find"),
            tool("9lives"),
        ];
        let names = |export: &ToolExport| -> Vec<String> {
            export
                .left_out
                .iter()
                .map(|left| left.name.clone())
                .collect()
        };
        for shape in [
            CallShape::OpenAi,
            CallShape::OpenAiResponses,
            CallShape::Anthropic,
        ] {
            let export = ToolExport::of(shape, &tools);
            assert_eq!(export.tools.as_array().unwrap().len(), 2, "{shape:?}");
            let mut expected = vec![
                "admin.tools.list".to_owned(),
                long.clone(),
                "ns:find".into(),
            ];
            expected.sort();
            assert_eq!(names(&export), expected, "{shape:?}");
        }
        let gemini = ToolExport::of(CallShape::Gemini, &tools);
        assert_eq!(names(&gemini), ["9lives"]);
        let declared = &gemini.tools[0]["functionDeclarations"];
        assert_eq!(declared.as_array().unwrap().len(), 4);
        let plain = ToolExport::of(CallShape::Plain, &tools);
        assert_eq!(names(&plain), ["ns:find"]);
        assert_eq!(plain.tools[0]["inputSchema"], json!({"type": "object"}));
    }

    #[test]
    fn the_reason_names_the_api_the_character_and_the_rule() {
        let reason = CallShape::OpenAi
            .check_tool_name("admin.tools.list")
            .unwrap_err();
        assert!(reason.contains("OpenAI Chat Completions"), "{reason}");
        assert!(reason.contains("'.' at position 6"), "{reason}");
        assert!(reason.contains("1 to 64 characters"), "{reason}");
        let reason = CallShape::Gemini
            .check_tool_name(&"x".repeat(129))
            .unwrap_err();
        assert!(reason.contains("129 characters"), "{reason}");
        assert!(CallShape::Gemini.check_tool_name(&"x".repeat(128)).is_ok());
        assert!(CallShape::Anthropic.check_tool_name("").is_err());
        assert!(CallShape::Anthropic.check_tool_name("é").is_err());
    }
}
