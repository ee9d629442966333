//! Importing an MCP client's tools: naming, the allow and deny lists, annotations, and what
//! a remote timeout does to the admission slot.

use std::collections::{BTreeMap, BTreeSet};

use super::parse::quote;
use super::registry::{Backend, OutputSchema, RegisteredTool, ToolRegistry, ToolSchema};
use super::remote::{RemoteBinding, RemoteErrorText, RemoteTimeoutSlot};
use super::tool::{check_bound, Served, ToolOptions};
use crate::error::{Error, RegistryErrorKind, Result};
use crate::mcp::{check_tool_name, McpClient};

/// How imported MCP tools are named in the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Namespace {
    /// `mcp__{server}__{tool}`.
    #[default]
    Prefixed,
    /// The server's own name (it must then follow the tool-name rule as it is,
    /// [`crate::mcp::TOOL_NAME_RULE`]).
    Bare,
}

/// How to import an MCP client's tools. `McpImport::new(server)` spells out every default.
#[derive(Debug, Clone, PartialEq)]
pub struct McpImport {
    pub(crate) server: String,
    pub(crate) namespace: Namespace,
    pub(crate) allow: Option<BTreeSet<String>>,
    pub(crate) deny: BTreeSet<String>,
    pub(crate) options: ToolOptions,
    pub(crate) tool_options: BTreeMap<String, ToolOptions>,
    pub(crate) trust_annotations: bool,
    pub(crate) timeout_slot: RemoteTimeoutSlot,
    pub(crate) error_text: RemoteErrorText,
}

impl McpImport {
    /// Imports every tool of the server named `server`, with the defaults.
    pub fn new(server: impl Into<String>) -> McpImport {
        McpImport {
            server: server.into(),
            namespace: Namespace::Prefixed,
            allow: None,
            deny: BTreeSet::new(),
            options: ToolOptions::default(),
            tool_options: BTreeMap::new(),
            trust_annotations: true,
            timeout_slot: RemoteTimeoutSlot::Release,
            error_text: RemoteErrorText::Pass,
        }
    }

    /// When set, only these tools (server names) are imported. Defaults to none: all.
    pub fn allow<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allow = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Adds names (the server's names) to the deny list: those tools are never imported.
    /// Defaults to none.
    pub fn deny<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.deny.extend(names.into_iter().map(Into::into));
        self
    }

    /// How tools are named. Defaults to [`Namespace::Prefixed`].
    pub fn namespace(mut self, namespace: Namespace) -> Self {
        self.namespace = namespace;
        self
    }

    /// The options of every imported tool. Defaults to [`ToolOptions::default`].
    pub fn options(mut self, options: ToolOptions) -> Self {
        self.options = options;
        self
    }

    /// Sets the options of one tool (by its server name).
    pub fn tool_options(mut self, tool: impl Into<String>, options: ToolOptions) -> Self {
        self.tool_options.insert(tool.into(), options);
        self
    }

    /// Whether `idempotentHint: true` or `readOnlyHint: true` marks a tool idempotent (they are
    /// the server's hints, not guarantees). Defaults to true.
    pub fn trust_annotations(mut self, trust: bool) -> Self {
        self.trust_annotations = trust;
        self
    }

    /// What a timeout does to the admission slot. Defaults to [`RemoteTimeoutSlot::Release`].
    pub fn timeout_slot(mut self, policy: RemoteTimeoutSlot) -> Self {
        self.timeout_slot = policy;
        self
    }

    /// What the model sees of `isError` results. Defaults to [`RemoteErrorText::Pass`].
    pub fn error_text(mut self, policy: RemoteErrorText) -> Self {
        self.error_text = policy;
        self
    }

    fn registry_name(&self, tool: &str) -> String {
        match self.namespace {
            Namespace::Prefixed => format!("mcp__{}__{tool}", self.server),
            Namespace::Bare => tool.to_owned(),
        }
    }
}

/// A tool the server listed but the import left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedTool {
    /// The server's name for it.
    pub name: String,
    /// Why it was left out.
    pub reason: String,
}

/// What [`ToolRegistry::import_mcp`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// The registry names of the imported tools.
    pub imported: Vec<String>,
    /// The tools left out: denied, not allowed, a name outside the pattern, a bad schema.
    pub skipped: Vec<SkippedTool>,
    /// Names on the allow list that the server does not offer.
    pub missing: Vec<String>,
}

impl ToolRegistry {
    /// Imports the tools of an MCP client's `tools/list`, filtered and named as `import`
    /// says. A tool whose name does not follow the tool-name rule, or whose input schema is not an object
    /// schema, is skipped and reported (and logged at warn); nothing is registered unless
    /// the whole import succeeds. Input schemas are compiled on each tool's first call, not
    /// here: a schema over the schema bounds ([`crate::schema::SchemaLimits`]) or that cannot
    /// be compiled makes that tool's calls `TOOL_ERROR` with the reason naming the tool, and
    /// the other tools work. The registry is a snapshot: import again (into a new
    /// harness) after the server's list changes.
    ///
    /// # Errors
    ///
    /// [`Error::Registry`] ([`RegistryErrorKind::BadName`]) for a server name outside
    /// `[a-z0-9-]+`, [`Error::Config`] for options out of their bounds, [`Error::Import`] when
    /// the list cannot be fetched, [`Error::Registry`] ([`RegistryErrorKind::Duplicate`]) when
    /// an imported name is already registered.
    pub fn import_mcp(&mut self, client: &McpClient, import: &McpImport) -> Result<ImportReport> {
        let server_ok = !import.server.is_empty()
            && import
                .server
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !server_ok {
            return Err(Error::registry_error(
                RegistryErrorKind::BadName,
                &import.server,
                format!(
                    "the MCP server name {} must match ^[a-z0-9-]+$",
                    quote(&import.server)
                ),
            ));
        }
        import.options.check()?;
        for options in import.tool_options.values() {
            options.check()?;
        }
        let listed = client.list_tools().map_err(|source| Error::Import {
            server: import.server.clone(),
            source: Box::new(source),
        })?;
        let mut report = ImportReport::default();
        let mut staged: Vec<RegisteredTool> = Vec::new();
        let mut skip = |name: &str, reason: String| {
            log::warn!(
                target: "toolwire::harness",
                "not importing tool {name:?} of MCP server {:?}: {reason}",
                import.server
            );
            report.skipped.push(SkippedTool {
                name: name.to_owned(),
                reason,
            });
        };
        for tool in listed.iter() {
            if import.deny.contains(&tool.name) {
                skip(&tool.name, "it is on the deny list".into());
                continue;
            }
            if let Some(allow) = &import.allow {
                if !allow.contains(&tool.name) {
                    skip(&tool.name, "it is not on the allow list".into());
                    continue;
                }
            }
            let name = import.registry_name(&tool.name);
            if let Err(reason) = check_tool_name(&name) {
                skip(&tool.name, reason);
                continue;
            }
            let options = *import
                .tool_options
                .get(&tool.name)
                .unwrap_or(&import.options);
            if let RemoteTimeoutSlot::HoldUntilAnswered { limit } = import.timeout_slot {
                check_bound("a hold limit", limit)?;
                if limit < options.timeout.duration() {
                    return Err(Error::Config(format!(
                        "the hold limit {limit:?} is shorter than the timeout of tool {:?}",
                        tool.name
                    )));
                }
            }
            // Compiled on the tool's first call: a long list costs nothing until used, and a
            // schema too costly to check makes only its own tool unusable.
            // A schema that cannot be read or is over a bound makes the tool unusable, for
            // that reason: never imported as if it declared none, nor run unchecked.
            let (input, output) = match (tool.input_schema(), tool.output_schema()) {
                (Ok(input), Ok(output)) => (input, output),
                (Err(error), _) | (_, Err(error)) => {
                    let reason = tool.schema_problem().map(str::to_owned);
                    skip(&tool.name, reason.unwrap_or_else(|| error.to_string()));
                    continue;
                }
            };
            let schema = match ToolSchema::lazy(&name, input) {
                Ok(schema) => schema,
                Err(error) => {
                    skip(&tool.name, error.to_string());
                    continue;
                }
            };
            let hinted = import.trust_annotations
                && (tool.annotations.idempotent_hint == Some(true)
                    || tool.annotations.read_only_hint == Some(true));
            staged.push(RegisteredTool {
                name,
                description: tool
                    .description
                    .clone()
                    .or_else(|| tool.title.clone())
                    .unwrap_or_default(),
                schema,
                options,
                idempotent: options.idempotent || hinted,
                backend: Backend::Remote(RemoteBinding {
                    client: client.clone(),
                    remote_name: tool.name.clone(),
                    slot: import.timeout_slot,
                    error_text: import.error_text,
                    admission: None,
                }),
                served: Served {
                    title: tool.title.clone(),
                    annotations: tool.annotations,
                    output_schema: None,
                    ..Served::default()
                },
                output_schema: output.map(OutputSchema::Remote),
            });
        }
        if let Some(allow) = &import.allow {
            for wanted in allow {
                if !listed.iter().any(|tool| &tool.name == wanted) {
                    log::warn!(
                        target: "toolwire::harness",
                        "MCP server {:?} offers no tool {wanted:?} from the allow list",
                        import.server
                    );
                    report.missing.push(wanted.clone());
                }
            }
        }
        for tool in &staged {
            if self.contains(&tool.name) {
                return Err(Error::registry_error(
                    RegistryErrorKind::Duplicate,
                    &tool.name,
                    format!("a tool named {:?} is already registered", tool.name),
                ));
            }
        }
        for tool in staged {
            report.imported.push(tool.name.clone());
            self.insert(tool);
        }
        Ok(report)
    }
}
