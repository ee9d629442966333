//! A call's own settings ([`CallSettings`]: its budget scope, its caller's cancellation and
//! progress, its deadline) and an MCP server's tool held outside any registry
//! ([`ImportedTool`]), for a caller that finds its tools itself (a gateway, a proxy).

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};

use super::admission::Admission;
use super::budget::BudgetScope;
use super::checks::check_arguments;
use super::outcome::{value_len, Outcome};
use super::registry::{Backend, OutputSchema, RegisteredTool, ToolSchema};
use super::remote::{RemoteBinding, RemoteErrorText, RemoteTimeoutSlot};
use super::run::{OpenCall, Stage};
use super::tool::{CancelFlag, Served, ToolOptions};
use super::Harness;
use crate::error::Result;
use crate::mcp::{McpClient, Tool};

/// What a call's progress reports go to: `(progress, total, message)`.
pub type ProgressSink = Arc<dyn Fn(f64, Option<f64>, Option<&str>) + Send + Sync>;

/// The settings of one call through a harness, beside its name and arguments: which budget
/// it spends, what cancels it, where its progress goes, and its deadline. `CallSettings::new()`
/// (every setting off) is what [`Harness::call`] uses.
#[derive(Clone, Default)]
pub struct CallSettings {
    pub(crate) budget: Option<BudgetScope>,
    pub(crate) cancel: Option<CancelFlag>,
    pub(crate) progress: Option<ProgressSink>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) trace_parent: Option<crate::telemetry::SpanContext>,
    pub(crate) call_id: Option<String>,
    pub(crate) rounds: Option<Map<String, Value>>,
    pub(crate) continuing: bool,
    pub(crate) pass_errors: bool,
}

impl fmt::Debug for CallSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallSettings")
            .field("budget", &self.budget.as_ref().map(BudgetScope::key))
            .field("cancel", &self.cancel.is_some())
            .field("progress", &self.progress.is_some())
            .field("deadline", &self.deadline)
            .field("trace_parent", &self.trace_parent)
            .field("call_id", &self.call_id)
            .field("rounds", &self.rounds.is_some())
            .field("continuing", &self.continuing)
            .field("pass_errors", &self.pass_errors)
            .finish()
    }
}

impl CallSettings {
    /// Every setting off.
    pub fn new() -> CallSettings {
        CallSettings::default()
    }

    /// The budget the call's attempts spend, instead of the harness's own. Defaults to the
    /// harness's own.
    pub fn budget(mut self, scope: BudgetScope) -> Self {
        self.budget = Some(scope);
        self
    }

    /// The caller's cancellation: once raised, an MCP tool's request in flight is cancelled
    /// on the wire (its server is told) and waited for no more, and no retry starts; the call
    /// ends `TIMEOUT`. Waited on, never polled ([`CancelFlag::signal`]). Defaults to none.
    pub fn cancel(mut self, flag: CancelFlag) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// Where an MCP tool's progress reports go, as they come. Defaults to nowhere.
    pub fn on_progress(
        mut self,
        sink: impl Fn(f64, Option<f64>, Option<&str>) + Send + Sync + 'static,
    ) -> Self {
        self.progress = Some(Arc::new(sink));
        self
    }

    /// The trace context the call's `execute_tool` span is the child of (an MCP server's
    /// request span: [`crate::server::RequestContext::trace_context`]), when the process
    /// records traces ([`crate::telemetry`]). Defaults to this thread's current context
    /// ([`crate::telemetry::enter`]), if any.
    pub fn trace_parent(mut self, context: crate::telemetry::SpanContext) -> Self {
        self.trace_parent = Some(context);
        self
    }

    /// The caller's deadline, as [`Harness::handle_all_until`] takes it. Defaults to none.
    pub fn deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The call's id in the audit (every line of it carries `call_id`), as a model's tool
    /// call id is. Defaults to none.
    pub fn call_id(mut self, id: impl Into<String>) -> Self {
        self.call_id = Some(id.into());
        self
    }

    /// An MCP tool's 2026-07-28 input rounds are handed back rather than answered with the
    /// client's handlers: an `input_required` result is the outcome's
    /// [`Outcome::mcp_result`] (in its `raw`), for the caller to pass on to its own client
    /// (a gateway). `retry` holds the fields of the retry that answers one
    /// (`inputResponses`, the server's `requestState`), sent untouched; empty for a first
    /// request. Defaults to answering them ([`crate::mcp::McpClient::start_tool`]).
    pub fn pass_input_rounds(mut self, retry: Map<String, Value>) -> Self {
        self.rounds = Some(retry);
        self
    }

    /// An MCP tool's server's JSON-RPC error answer is handed back too, for the caller to
    /// pass on with its code, message and `data` (a gateway): the outcome is `TOOL_ERROR` as
    /// without it, and its [`Outcome::mcp_result`] holds the error
    /// ([`crate::mcp::CallToolResult::rpc_error`]). Defaults to off (the error goes to the audit only).
    pub fn pass_rpc_errors(mut self) -> Self {
        self.pass_errors = true;
        self
    }

    /// The call is the retry of an input round of a call already counted: its sendings
    /// spend no budget (an input round and its retry are one call; give the first round's
    /// [`CallSettings::call_id`] to tie their audit lines together). Defaults to off.
    pub fn continuing(mut self) -> Self {
        self.continuing = true;
        self
    }
}

/// A tool of an MCP server, held by the caller rather than a [`super::ToolRegistry`] (a
/// gateway serving a server's tools under names of its own, a proxy with a catalog per
/// user), and run by [`Harness::call_imported`] through the same pipeline as a registered
/// tool: the argument and integer checks, the budget, admission, retries of an idempotent
/// tool, the result limit and the audit. Cheap to clone.
#[derive(Clone)]
pub struct ImportedTool(pub(crate) Arc<RegisteredTool>);

impl fmt::Debug for ImportedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImportedTool")
            .field("name", &self.0.name)
            .field("remote_name", &self.remote_name())
            .field("idempotent", &self.0.idempotent)
            .finish_non_exhaustive()
    }
}

impl ImportedTool {
    /// The server's `tool` (as its client listed it) under `name`, called through `client`
    /// with `options` (its timeout, result limit, integer rule, retry policy, and whether it
    /// is idempotent: the caller decides whether the server's hints count). With an
    /// `admission`, its attempts run on the caller's thread, admitted by that handle
    /// (`BUSY` past its limit) instead of a harness worker; without one, on a worker.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Config`] for options out of their bounds; [`crate::Error::Registry`]
    /// when the input schema is not an object schema (it is compiled on the first call).
    pub fn new(
        name: impl Into<String>,
        tool: &Tool,
        client: &McpClient,
        options: ToolOptions,
        admission: Option<Admission>,
    ) -> Result<ImportedTool> {
        let name = name.into();
        options.check()?;
        let schema = ToolSchema::lazy(&name, tool.input_schema()?)?;
        Ok(ImportedTool(Arc::new(RegisteredTool {
            description: tool
                .description
                .clone()
                .or_else(|| tool.title.clone())
                .unwrap_or_default(),
            schema,
            options,
            idempotent: options.idempotent,
            backend: Backend::Remote(RemoteBinding {
                client: client.clone(),
                remote_name: tool.name.clone(),
                slot: RemoteTimeoutSlot::Release,
                error_text: RemoteErrorText::Pass,
                admission,
            }),
            served: Served {
                title: tool.title.clone(),
                annotations: tool.annotations,
                output_schema: None,
                ..Served::default()
            },
            output_schema: tool.output_schema()?.map(OutputSchema::Remote),
            name,
        })))
    }

    /// The name it is called by.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The server's own name for it.
    pub fn remote_name(&self) -> &str {
        match &self.0.backend {
            Backend::Remote(binding) => &binding.remote_name,
            Backend::Local(_) => &self.0.name,
        }
    }

    /// Whether a retry is safe.
    pub fn idempotent(&self) -> bool {
        self.0.idempotent
    }

    /// The options it runs with.
    pub fn options(&self) -> ToolOptions {
        self.0.options
    }
}

impl Harness {
    /// Calls `tool` with `arguments` through this harness's pipeline, as [`Harness::call`]
    /// calls a registered tool: the argument checks (the input schema, the integer bound),
    /// the budget ([`CallSettings::budget`], or the harness's), admission (the tool's
    /// [`Admission`], or a worker), the attempts and retries of an idempotent tool, the
    /// result limit and the audit. The outcome's [`Outcome::mcp_result`] is the server's
    /// result within the limit, to pass on as it is.
    pub fn call_imported(
        &self,
        tool: &ImportedTool,
        arguments: Value,
        settings: &CallSettings,
    ) -> Outcome {
        let inner = &self.inner;
        let context = inner.open_call(settings, Some(&tool.0.name), || value_len(&arguments));
        let started = Instant::now();
        let stage = match check_arguments(
            &tool.0.name,
            &tool.0.schema,
            tool.0.options.allow_large_integers,
            &arguments,
            inner.config.repair_schema_chars,
        ) {
            Ok(()) => Stage::Ready {
                tool: Arc::clone(&tool.0),
                arguments,
            },
            Err(outcome) => Stage::Decided(outcome),
        };
        inner.complete(
            OpenCall {
                context,
                started,
                stage,
            },
            settings.deadline,
            None,
        )
    }
}
