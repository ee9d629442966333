//! What a tool's code gets beside its arguments, wherever it runs: [`ToolContext`] (the
//! call's cancellation, progress, log messages, and input requests to the client), and the
//! one handler signature, [`ToolFunction`].
//!
//! A tool written once with [`super::LocalTool::with_context`] runs in a local harness (the
//! harness's own context: its cancel flag, the caller's progress sink, the `log` crate, and no
//! client to ask), and is served by `toolwire::server` (the request's context: progress and
//! log messages to the client, input requests to it, its cancellation).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::imported::ProgressSink;
use super::tool::{CancelFlag, ToolFailure};
use crate::mcp::CallToolResult;

/// The one handler signature: the request's context and the checked arguments (an object) in,
/// the one result type ([`CallToolResult`]: content blocks, `structuredContent`, `isError`)
/// or a [`ToolFailure`] out. A failure's internal text goes to the operator (the log, the
/// transcript), never to the model or the client.
pub type ToolFunction =
    Arc<dyn Fn(&dyn ToolContext, &Value) -> Result<CallToolResult, ToolFailure> + Send + Sync>;

/// The request context a tool's code gets, wherever it runs: a local harness, an MCP server
/// (`toolwire::server::RequestContext` implements it), or the gateway.
pub trait ToolContext {
    /// The call's cancel flag: raised when its time bound passes, the caller cancels it, or
    /// the harness or server closes. A tool may check it or wait on
    /// [`CancelFlag::signal`]; nothing forces it to stop.
    fn cancel_flag(&self) -> &CancelFlag;

    /// True once the call is cancelled.
    fn is_cancelled(&self) -> bool {
        self.cancel_flag().is_cancelled()
    }

    /// Reports progress (`done` of `total`, with a message). Goes to whoever asked for it (an
    /// MCP client that sent a progress token, a harness caller's
    /// [`super::CallSettings::on_progress`]); dropped when nobody did.
    fn report_progress(&self, done: f64, total: Option<f64>, message: Option<&str>);

    /// A log message about the call: to the MCP client (at its level, as a
    /// `notifications/message`) when served, to the `log` crate (target
    /// `toolwire::harness`) in a local harness. Never put a secret in it.
    fn log_message(&self, level: log::Level, message: &str);

    /// Asks the client for input: `method` is `elicitation/create` (ask the user),
    /// `sampling/createMessage` (ask the client's model) or `roots/list`, with its params;
    /// `key` names the request (2026-07-28 input rounds answer by key). Returns the client's
    /// answer.
    ///
    /// # Errors
    ///
    /// A failure to return from the handler with `?`: in a local harness there is no client,
    /// so every request fails with a safe failure saying so; a server answers the failure as
    /// it would its own (a 2026-07-28 first round becomes the `InputRequiredResult`, a client
    /// without the capability -32021).
    fn request_input(&self, key: &str, method: &str, params: Value) -> Result<Value, ToolFailure>;

    /// The concrete context, for code that knows where it runs: served by `toolwire::server`
    /// it is the request's `RequestContext` (reached with `RequestContext::of`: the
    /// connection's state, the client's identity, a deferred answer). Defaults to none (a
    /// local harness has nothing more to offer).
    fn as_any(&self) -> Option<&dyn Any> {
        None
    }
}

/// What the model reads when a tool asks for input in a local harness.
pub(crate) const NO_CLIENT: &str =
    "this tool asked the user for input, which is not available here: it runs in a local \
     harness, which has no MCP client to ask";

/// The context of a call run by a local harness.
pub(crate) struct LocalContext<'a> {
    pub(crate) tool: &'a str,
    pub(crate) cancel: &'a CancelFlag,
    pub(crate) progress: Option<&'a ProgressSink>,
}

impl fmt::Debug for LocalContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalContext")
            .field("tool", &self.tool)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl ToolContext for LocalContext<'_> {
    fn cancel_flag(&self) -> &CancelFlag {
        self.cancel
    }

    fn report_progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = self.progress {
            sink(done, total, message);
        }
    }

    fn log_message(&self, level: log::Level, message: &str) {
        log::log!(target: "toolwire::harness", level, "tool {:?}: {message}", self.tool);
    }

    fn request_input(
        &self,
        _key: &str,
        _method: &str,
        _params: Value,
    ) -> Result<Value, ToolFailure> {
        Err(ToolFailure::safe(NO_CLIENT))
    }
}
