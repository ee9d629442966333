//! The harness's side of [`crate::telemetry`]: one INTERNAL `execute_tool {tool}` span per
//! call (the GenAI conventions' span of a tool's run), under the caller's context, the
//! parent of a remote tool's client span. Its `error.type` is `tool_error` for a tool's own
//! failure and the status word (`BUSY`, `BUDGET`, `TIMEOUT`, …) for the rest.

use super::outcome::{Outcome, Status};
use super::run::{OpenCall, Stage};
use crate::mcp::traced::{OPERATION, TOOL, TOOL_ERROR};
use crate::telemetry::{self, Span, SpanKind};

/// Opens the call's span, when the process records traces, and makes it the parent of the
/// call's attempts. The tool is named only when the registry (or the caller) has it.
pub(super) fn start(call: &mut OpenCall) -> Option<Span> {
    let tracer = telemetry::tracer()?;
    let parent = call
        .context
        .settings
        .trace_parent
        .clone()
        .or_else(telemetry::current);
    let tool = match &call.stage {
        Stage::Ready { tool, .. } => Some(tool.name.clone()),
        Stage::Decided(_) => None,
    };
    let name = match &tool {
        Some(tool) => format!("execute_tool {tool}"),
        None => "execute_tool".to_owned(),
    };
    let mut span = tracer.start(name, SpanKind::Internal, parent.as_ref());
    span.set(OPERATION, "execute_tool");
    if let Some(tool) = tool {
        span.set(TOOL, tool);
    }
    call.context.settings.trace_parent = Some(span.context().clone());
    Some(span)
}

/// Marks the span by the call's outcome.
pub(super) fn finish(span: &mut Span, outcome: &Outcome) {
    match outcome.status {
        Status::Ok => {}
        Status::ToolError => span.fail(TOOL_ERROR, outcome.status.as_str()),
        other => span.fail(other.as_str(), other.as_str()),
    }
}
