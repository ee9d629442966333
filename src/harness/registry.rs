//! The registry: the only source of callable capabilities, local and remote.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::remote::RemoteBinding;
use super::retry::RetryPolicy;
use super::tool::{LocalCode, LocalTool, Served, ToolOptions};
use crate::error::{Error, RegistryErrorKind, Result};
use crate::mcp::{check_tool_name, ToolAnnotations};
use crate::schema::Schema;

/// A registered tool as the registry describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The name the model calls it by.
    pub name: String,
    /// The description given to the model.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    /// Whether a retry is safe.
    pub idempotent: bool,
    /// The time bound of one attempt.
    pub timeout: Duration,
    /// For an MCP tool, the server's name for it; `None` for a local tool.
    pub remote_name: Option<String>,
    /// The display title shown to MCP clients, when it has one.
    pub title: Option<String>,
    /// The behaviour hints shown to MCP clients.
    pub annotations: ToolAnnotations,
    /// The JSON Schema of its structured result, when it declares one.
    pub output_schema: Option<Value>,
}

/// Where a registered tool runs.
pub(crate) enum Backend {
    Local(LocalCode),
    Remote(RemoteBinding),
}

pub(crate) struct RegisteredTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) schema: ToolSchema,
    pub(crate) options: ToolOptions,
    pub(crate) idempotent: bool,
    pub(crate) backend: Backend,
    /// The title and hints shown when the registry is served.
    pub(crate) served: Served,
    /// The result's schema, compiled (a local tool's, at registration) or as the server sent
    /// it (an imported tool's, which its MCP client checks itself).
    pub(crate) output_schema: Option<OutputSchema>,
}

/// A tool's output schema.
pub(crate) enum OutputSchema {
    /// Compiled when the tool was registered; results are checked against it.
    Checked(Arc<Schema>),
    /// An imported tool's, passed on as the server sent it.
    Remote(Value),
}

impl OutputSchema {
    /// The schema as given.
    pub(crate) fn source(&self) -> &Value {
        match self {
            OutputSchema::Checked(schema) => schema.source(),
            OutputSchema::Remote(source) => source,
        }
    }
}

impl RegisteredTool {
    /// The retry policy in force: none unless the tool is idempotent.
    pub(crate) fn retry_policy(&self) -> Option<RetryPolicy> {
        self.options.retry.filter(|_| self.idempotent)
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.options.timeout.duration()
    }

    fn info(&self) -> ToolInfo {
        ToolInfo {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.schema.source().clone(),
            idempotent: self.idempotent,
            timeout: self.timeout(),
            remote_name: match &self.backend {
                Backend::Local(_) => None,
                Backend::Remote(binding) => Some(binding.remote_name.clone()),
            },
            title: self.served.title.clone(),
            annotations: self.served.annotations,
            output_schema: self
                .output_schema
                .as_ref()
                .map(|schema| schema.source().clone()),
        }
    }
}

/// A tool's input schema: its source as given, compiled at once (a local tool's) or on the
/// tool's first call (an imported one's: a server may list many tools, and a schema that is too
/// costly makes only its own tool unusable).
pub(crate) struct ToolSchema {
    name: String,
    source: Value,
    /// False for a tool whose code checks its own arguments ([`LocalTool::check_schemas`]).
    checked: bool,
    compiled: std::sync::OnceLock<std::result::Result<Schema, String>>,
}

impl ToolSchema {
    /// A schema compiled now.
    pub(crate) fn compiled(name: &str, schema: Schema) -> ToolSchema {
        let source = schema.source().clone();
        let compiled = std::sync::OnceLock::new();
        let _ = compiled.set(Ok(schema));
        ToolSchema {
            name: name.to_owned(),
            source,
            checked: true,
            compiled,
        }
    }

    /// A schema listed as given and never compiled or checked.
    pub(crate) fn unchecked(name: &str, source: Value) -> ToolSchema {
        ToolSchema {
            name: name.to_owned(),
            source,
            checked: false,
            compiled: std::sync::OnceLock::new(),
        }
    }

    /// False when arguments are not checked against the schema (nor the integer bound).
    pub(crate) fn is_checked(&self) -> bool {
        self.checked
    }

    /// A schema compiled on first use; its shape (an object schema) is checked now.
    pub(crate) fn lazy(name: &str, source: Value) -> Result<ToolSchema> {
        check_object_schema(name, &source)?;
        Ok(ToolSchema {
            name: name.to_owned(),
            source,
            checked: true,
            compiled: std::sync::OnceLock::new(),
        })
    }

    /// The schema as given.
    pub(crate) fn source(&self) -> &Value {
        &self.source
    }

    /// The compiled schema, compiling it the first time (within the schema bounds). A schema
    /// that cannot be compiled stays refused, with the reason naming the tool.
    pub(crate) fn get(&self) -> std::result::Result<&Schema, &str> {
        self.compiled
            .get_or_init(|| {
                Schema::compile(&self.source).map_err(|reason| {
                    log::warn!(
                        target: "toolwire::harness",
                        "the input schema of tool {:?} cannot be used: {reason}",
                        self.name
                    );
                    format!(
                        "the input schema of tool {:?} cannot be used, so the tool cannot be \
                         called: {reason}",
                        self.name
                    )
                })
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

fn check_object_schema(name: &str, schema: &Value) -> Result<()> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(Error::registry_error(
            RegistryErrorKind::BadSchema,
            name,
            format!(
                "the input schema of tool {name:?} is invalid: it must be a JSON object with \
                 \"type\": \"object\""
            ),
        ));
    }
    Ok(())
}

/// Compiles an input schema, which must be an object schema (`"type": "object"`), since
/// arguments are always a JSON object.
pub(crate) fn compile_input_schema(name: &str, schema: &Value) -> Result<Schema> {
    compile_object_schema(name, "input", schema)
}

/// Compiles a tool's input or output schema (`which`), an object schema.
fn compile_object_schema(name: &str, which: &str, schema: &Value) -> Result<Schema> {
    let bad = |reason: String| {
        Error::registry_error(
            RegistryErrorKind::BadSchema,
            name,
            format!("the {which} schema of tool {name:?} is invalid: {reason}"),
        )
    };
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(bad(
            "it must be a JSON object with \"type\": \"object\"".into()
        ));
    }
    Schema::compile(schema).map_err(bad)
}

/// The tools a harness may call, and nothing else: a name that is not here is
/// `UNKNOWN_TOOL`. Names follow the one tool-name rule ([`crate::mcp::TOOL_NAME_RULE`]: 1 to
/// 128 characters of `A-Z a-z 0-9 _ - .`), checked when a tool is registered. Nothing is
/// found by reflection or by path: a name is only a key.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<RegisteredTool>>,
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> ToolRegistry {
        ToolRegistry::default()
    }

    /// Registers a local tool.
    ///
    /// A retry policy on a tool that is not idempotent is kept but never used (and logged at
    /// warn): a non-idempotent tool is never retried.
    ///
    /// # Errors
    ///
    /// [`Error::Registry`] for a bad name, a duplicate or a bad input schema (the schema is
    /// compiled here, once, unless [`LocalTool::check_schemas`] says not to; its
    /// `x-mcp-header` designations are checked too), or [`Error::Config`] for options out of
    /// their bounds.
    pub fn register(&mut self, tool: LocalTool) -> Result<()> {
        self.check_new_name(&tool.name)?;
        tool.options.check()?;
        if tool.served.unchecked {
            let schema = ToolSchema::unchecked(&tool.name, tool.input_schema.clone());
            let output_schema = tool.served.output_schema.clone().map(OutputSchema::Remote);
            return self.add_local(schema, output_schema, tool);
        }
        let schema = ToolSchema::compiled(
            &tool.name,
            compile_input_schema(&tool.name, &tool.input_schema)?,
        );
        // A designation a client must refuse would make clients drop the tool (SEP-2243).
        crate::mcp::headers::designations(&tool.input_schema).map_err(|reason| {
            Error::registry_error(
                RegistryErrorKind::BadSchema,
                &tool.name,
                format!(
                    "the input schema of tool {:?} is invalid: {reason}",
                    tool.name
                ),
            )
        })?;
        if tool.options.retry.is_some() && !tool.options.idempotent {
            log::warn!(
                target: "toolwire::harness",
                "tool {:?} has a retry policy but is not idempotent; it will never be retried",
                tool.name
            );
        }
        let output_schema = match &tool.served.output_schema {
            Some(source) => Some(OutputSchema::Checked(Arc::new(compile_object_schema(
                &tool.name, "output", source,
            )?))),
            None => None,
        };
        self.add_local(schema, output_schema, tool)
    }

    fn add_local(
        &mut self,
        schema: ToolSchema,
        output_schema: Option<OutputSchema>,
        tool: LocalTool,
    ) -> Result<()> {
        let name = tool.name;
        let registered = RegisteredTool {
            name: name.clone(),
            description: tool.description,
            schema,
            options: tool.options,
            idempotent: tool.options.idempotent,
            backend: Backend::Local(tool.handler),
            served: tool.served,
            output_schema,
        };
        self.tools.insert(name, Arc::new(registered));
        Ok(())
    }

    fn check_new_name(&self, name: &str) -> Result<()> {
        check_tool_name(name)
            .map_err(|reason| Error::registry_error(RegistryErrorKind::BadName, name, reason))?;
        if self.tools.contains_key(name) {
            return Err(Error::registry_error(
                RegistryErrorKind::Duplicate,
                name,
                format!("a tool named {name:?} is already registered"),
            ));
        }
        Ok(())
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// True when `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// One tool's description.
    pub fn tool(&self, name: &str) -> Option<ToolInfo> {
        self.tools.get(name).map(|tool| tool.info())
    }

    /// Every tool's description, sorted by name.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.registered().map(|tool| tool.info()).collect()
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Arc<RegisteredTool>> {
        self.tools.get(name)
    }

    /// Every registered tool, sorted by name.
    pub(crate) fn registered(&self) -> impl Iterator<Item = &Arc<RegisteredTool>> {
        self.tools.values()
    }

    /// Adds a checked tool (its name must be new).
    pub(crate) fn insert(&mut self, tool: RegisteredTool) {
        self.tools.insert(tool.name.clone(), Arc::new(tool));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::tool::{CancelFlag, ToolFailure, ToolTimeout};
    use serde_json::json;

    fn nothing(_: &Value, _: &CancelFlag) -> Result<Option<Value>, ToolFailure> {
        Ok(None)
    }

    fn object() -> Value {
        json!({"type": "object"})
    }

    #[test]
    fn registration_checks_name_duplicates_schema_and_bounds() {
        let mut registry = ToolRegistry::new();
        registry
            .register(LocalTool::new("find", "Finds.", object(), nothing))
            .unwrap();
        let error = registry
            .register(LocalTool::new("find", "Again.", object(), nothing))
            .unwrap_err();
        let kind = |error: &Error| error.registry().map(|registry| registry.kind);
        assert_eq!(kind(&error), Some(RegistryErrorKind::Duplicate), "{error}");
        assert_eq!(error.registry().unwrap().tool, "find");
        let error = registry
            .register(LocalTool::new("../secret", "", object(), nothing))
            .unwrap_err();
        assert_eq!(kind(&error), Some(RegistryErrorKind::BadName), "{error}");
        let error = registry
            .register(LocalTool::new("bad", "", json!({"type": 5}), nothing))
            .unwrap_err();
        assert_eq!(kind(&error), Some(RegistryErrorKind::BadSchema), "{error}");
        let error = registry
            .register(LocalTool::new("arr", "", json!({"type": "array"}), nothing))
            .unwrap_err();
        assert!(
            error.to_string().contains("\"type\": \"object\""),
            "{error}"
        );
        let zero = ToolOptions::new().timeout(ToolTimeout::Custom(Duration::ZERO));
        let error = registry
            .register(LocalTool::new("zero", "", object(), nothing).options(zero))
            .unwrap_err();
        assert!(matches!(error, Error::Config(_)), "{error}");
        assert_eq!(registry.names(), ["find"]);
    }

    #[test]
    fn provider_style_and_dotted_names_register() {
        let mut registry = ToolRegistry::new();
        for name in [
            "get_weather",
            "test_simple_text",
            "a.b",
            "mcp__a__b",
            "Read-File",
        ] {
            registry
                .register(LocalTool::new(name, "", object(), nothing))
                .unwrap();
        }
        for bad in ["a/b", "a b", ""] {
            let error = registry
                .register(LocalTool::new(bad, "", object(), nothing))
                .unwrap_err();
            assert!(
                error.to_string().contains("is not a valid tool name"),
                "{error}"
            );
        }
    }

    #[test]
    fn definitions_are_exported_for_both_apis() {
        let mut registry = ToolRegistry::new();
        let schema = json!({"type": "object", "properties": {"q": {"type": "string"}}});
        registry
            .register(LocalTool::new("find", "Finds.", schema.clone(), nothing))
            .unwrap();
        assert_eq!(
            registry.openai_tools(),
            json!([{"type": "function",
                    "function": {"name": "find", "description": "Finds.", "parameters": schema}}])
        );
        assert_eq!(
            registry.anthropic_tools(),
            json!([{"name": "find", "description": "Finds.", "input_schema": schema}])
        );
    }
}
