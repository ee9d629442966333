//! The server's former tool type, kept one release as a thin adapter: it builds the one
//! runnable tool type, [`LocalTool`], whose options it sets.
#![allow(deprecated)]

use std::time::Duration;

use serde_json::Value;

use super::context::RequestContext;
use super::tasks::TaskSupport;
use super::types::HandlerError;
use crate::harness::{LocalTool, ResultLimit, ToolFailure, ToolTimeout, MAX_RESULT_CHARS};
use crate::mcp::{CallToolResult, ToolAnnotations};

/// A tool's code as [`ServerTool`] took it: the validated arguments (an object; `{}` when
/// the client sent none) and the request's context.
#[deprecated(
    note = "write the tool as a `harness::LocalTool::with_context` (the one handler signature), \
            reaching server-only things with `RequestContext::of`"
)]
pub type ToolFn = std::sync::Arc<
    dyn Fn(&RequestContext, &Value) -> std::result::Result<CallToolResult, HandlerError>
        + Send
        + Sync,
>;

/// What may run in a task-capable tool's `tools/call` before its task is created, as
/// [`ServerTool::before_task`] took it.
#[deprecated(note = "use `harness::BeforeTask` (`LocalTool::before_task`)")]
pub type BeforeTaskFn = std::sync::Arc<
    dyn Fn(&RequestContext, &Value) -> std::result::Result<Value, HandlerError> + Send + Sync,
>;

/// A tool the server runs itself, with a [`RequestContext`]: now a [`LocalTool`] built with
/// [`LocalTool::with_context`], whose handler reaches the request's context with
/// [`RequestContext::of`]. A [`HandlerError`] the handler returns is answered as before (a
/// JSON-RPC error, or an input round); the result is held to no limit beyond the largest
/// ([`ResultLimit`] of 16 MiB) and integers beyond ±(2^53 − 1) pass, as before.
#[deprecated(
    note = "use `harness::LocalTool::with_context` (the one runnable tool type); its builder has \
            the same options (`inline`, `requires`, `task`, `before_task`, `check_schemas`, \
            timeouts through `ToolOptions`)"
)]
pub struct ServerTool {
    tool: LocalTool,
}

impl std::fmt::Debug for ServerTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ServerTool").field(&self.tool).finish()
    }
}

/// A [`ServerTool`] is the [`LocalTool`] it built.
impl From<ServerTool> for LocalTool {
    fn from(tool: ServerTool) -> LocalTool {
        tool.tool
    }
}

impl ServerTool {
    /// A tool named `name`, described for the model, with the JSON Schema of its arguments
    /// and its code (see [`LocalTool::with_context`]).
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: impl Fn(&RequestContext, &Value) -> std::result::Result<CallToolResult, HandlerError>
            + Send
            + Sync
            + 'static,
    ) -> ServerTool {
        let mut tool = LocalTool::with_context(
            name,
            description,
            input_schema,
            move |context, arguments| {
                let Some(context) = RequestContext::of(context) else {
                    return Err(ToolFailure::safe(
                        "this tool runs only when served by toolwire::server",
                    ));
                };
                handler(context, arguments).map_err(HandlerError::into_failure)
            },
        );
        tool.options = tool
            .options
            .allow_large_integers(true)
            .result_limit(ResultLimit::new(
                MAX_RESULT_CHARS,
                ResultLimit::default().overflow,
            ));
        ServerTool { tool }
    }

    /// See [`LocalTool::check_schemas`]. Defaults to true.
    pub fn check_schemas(self, check: bool) -> Self {
        self.map(|tool| tool.check_schemas(check))
    }

    /// See [`LocalTool::title`]. Defaults to none.
    pub fn title(self, title: impl Into<String>) -> Self {
        self.map(|tool| tool.title(title))
    }

    /// See [`LocalTool::output_schema`]. Defaults to none.
    pub fn output_schema(self, schema: Value) -> Self {
        self.map(|tool| tool.output_schema(schema))
    }

    /// See [`LocalTool::annotations`]. Defaults to none.
    pub fn annotations(self, annotations: ToolAnnotations) -> Self {
        self.map(|tool| tool.annotations(annotations))
    }

    /// The longest a call may run (1 ms to 1 hour, checked when the tool is added): the
    /// tool's [`crate::harness::ToolOptions::timeout`]. Defaults to 60 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.tool.options = self.tool.options.timeout(ToolTimeout::Custom(timeout));
        self
    }

    /// See [`LocalTool::inline`]. Defaults to false.
    pub fn inline(self, inline: bool) -> Self {
        self.map(|tool| tool.inline(inline))
    }

    /// See [`LocalTool::task`]. Defaults to [`TaskSupport::Forbidden`].
    pub fn task(self, support: TaskSupport) -> Self {
        self.map(|tool| tool.task(support))
    }

    /// See [`LocalTool::before_task`]. Defaults to none.
    pub fn before_task(
        self,
        step: impl Fn(&RequestContext, &Value) -> std::result::Result<Value, HandlerError>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.map(|tool| {
            tool.before_task(
                move |context, arguments| match RequestContext::of(context) {
                    Some(context) => step(context, arguments).map_err(HandlerError::into_failure),
                    None => Ok(arguments.clone()),
                },
            )
        })
    }

    /// See [`LocalTool::requires`]. Defaults to none.
    pub fn requires(self, capability: impl Into<String>) -> Self {
        self.map(|tool| tool.requires(capability))
    }

    fn map(self, change: impl FnOnce(LocalTool) -> LocalTool) -> Self {
        ServerTool {
            tool: change(self.tool),
        }
    }
}
