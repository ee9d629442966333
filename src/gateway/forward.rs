//! One front call of a backend's tool: the policy's checks in the harness's order (the
//! arguments against the backend's schema and the integer bound, the session budget, the
//! backend's concurrency limit), then the call forwarded with its progress and cancellation,
//! and its answer within the result limit. Every refusal is a tool error whose text is the
//! harness's status word and repair message.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::backend::Backend;
use super::Core;
use crate::client::{CallOptions, Progress};
use crate::error::Error;
use crate::harness::{
    check_arguments, remote_error, value_text, AuditEvent, AuditKind, Overflow, Ran, Status,
    ToolOptions, ToolSchema,
};
use crate::mcp::CallToolResult;
use crate::mcp::Era;
use crate::server::RequestContext;

/// How many characters of a tool's schema a repair message quotes.
const REPAIR_SCHEMA_CHARS: usize = 4_000;
/// How often a forwarded call looks at its front request's cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// The tool calls admitted on one front connection: its per-session budget.
#[derive(Default)]
struct SessionCalls(AtomicU32);

/// A backend's tool as the gateway serves it.
pub(crate) struct FrontTool {
    /// The name the front client calls.
    pub(crate) front: String,
    /// The backend's own name.
    pub(crate) remote: String,
    pub(crate) schema: ToolSchema,
    pub(crate) options: ToolOptions,
    /// Set by the policy, or hinted by the tool (`idempotentHint`, `readOnlyHint`).
    pub(crate) idempotent: bool,
}

/// How a call ended: its status (`None` when the front client cancelled it), what the front
/// client reads, and what only the operator reads.
struct Ending {
    status: Option<Status>,
    result: CallToolResult,
    operator: String,
}

impl Ending {
    fn refused(status: Status, detail: String) -> Ending {
        Ending {
            status: Some(status),
            result: CallToolResult::error(format!("{status}: {detail}")),
            operator: detail,
        }
    }
}

/// Runs one front call.
pub(crate) fn call(
    core: &Core,
    backend: &Arc<Backend>,
    tool: &FrontTool,
    context: &RequestContext,
    arguments: &Value,
) -> CallToolResult {
    let number = core.next_call();
    let started = Instant::now();
    let mut received = AuditEvent::new(number, AuditKind::Received);
    received.tool = Some(tool.front.clone());
    received.size = Some(arguments.to_string().len());
    core.emit(received);
    let ending = decide(core, number, backend, tool, context, arguments);
    match ending.status {
        Some(status) => core.stats.status(&backend.name, status),
        None => core.stats.cancelled(&backend.name),
    }
    let mut finished = AuditEvent::new(number, AuditKind::Finished).detail(ending.operator);
    finished.tool = Some(tool.front.clone());
    finished.status = ending.status;
    finished.duration = Some(started.elapsed());
    finished.size = Some(ending.result.to_value().to_string().len());
    core.emit(finished);
    ending.result
}

fn decide(
    core: &Core,
    number: u64,
    backend: &Arc<Backend>,
    tool: &FrontTool,
    context: &RequestContext,
    arguments: &Value,
) -> Ending {
    if let Err(outcome) = check_arguments(
        &tool.front,
        &tool.schema,
        tool.options.allow_large_integers,
        arguments,
        REPAIR_SCHEMA_CHARS,
    ) {
        return Ending::refused(outcome.status, outcome.detail);
    }
    // 2026-07-28 has no session: its calls share the gateway's one budget.
    let session = context.connection_state().get::<SessionCalls>();
    let budget: &AtomicU32 = match context.era() {
        Era::Stateless => &core.stateless_calls,
        Era::Handshake => &session.0,
    };
    let limit = core.policy.session_budget();
    let reserved = budget.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
        (used < limit).then_some(used + 1)
    });
    if reserved.is_err() {
        return Ending::refused(
            Status::Budget,
            format!(
                "this session's budget of {limit} tool calls through the gateway is spent; \
                 nothing was run. Start a new session to make more calls"
            ),
        );
    }
    let Some(slot) = backend.admit(context.back_channel()) else {
        // Only admitted calls consume the budget.
        budget.fetch_sub(1, Ordering::SeqCst);
        let mut busy = AuditEvent::new(number, AuditKind::Busy);
        busy.tool = Some(tool.front.clone());
        busy.status = Some(Status::Busy);
        core.emit(busy);
        return Ending::refused(
            Status::Busy,
            format!(
                "the server {:?} already has its {} calls in flight (the gateway's limit); \
                 nothing was queued or run. Try again when one has finished",
                backend.name,
                backend.limit()
            ),
        );
    };
    let Some(client) = backend.client() else {
        return Ending::refused(
            Status::ToolError,
            format!("the server {:?} is not connected", backend.name),
        );
    };
    let attempts = if tool.idempotent { 2 } else { 1 };
    let mut attempt = 1;
    let ending = loop {
        let mut request = AuditEvent::new(number, AuditKind::Request);
        request.tool = Some(tool.front.clone());
        request.attempt = attempt;
        request.size = Some(arguments.to_string().len());
        core.emit(request);
        core.stats.forwarded(&backend.name);
        let sent = Instant::now();
        let answer = forward_once(client, tool, context, arguments);
        let mut response = AuditEvent::new(number, AuditKind::Response);
        response.tool = Some(tool.front.clone());
        response.attempt = attempt;
        response.duration = Some(sent.elapsed());
        match answer {
            Answer::Cancelled => {
                core.emit(response.detail("the client cancelled the call; the server was told"));
                break Ending {
                    status: None,
                    result: CallToolResult::error("cancelled"),
                    operator: "cancelled by the client".into(),
                };
            }
            Answer::Done(Ok(result)) => {
                let status = if result.is_error {
                    Status::ToolError
                } else {
                    Status::Ok
                };
                response.status = Some(status);
                response.size = Some(result.raw.to_string().len());
                core.emit(response);
                break within_limit(result, &tool.options);
            }
            Answer::Done(Err(error)) => {
                let operator = crate::mask::mask_urls_in(&error.to_string()).into_owned();
                let retryable = matches!(error, Error::Closed(_) | Error::Io(_));
                let ran = remote_error(error);
                response.status = Some(ran.status());
                core.emit(response.detail(operator.clone()));
                if retryable && attempt < attempts {
                    // An idempotent tool is sent once more: its client starts the server
                    // again (the restart policy) for this second attempt.
                    attempt += 1;
                    let mut retry = AuditEvent::new(number, AuditKind::Retry);
                    retry.tool = Some(tool.front.clone());
                    retry.attempt = attempt;
                    core.emit(retry);
                    continue;
                }
                break failed(ran, &tool.options, operator);
            }
        }
    };
    drop(slot);
    ending
}

enum Answer {
    Done(crate::error::Result<CallToolResult>),
    Cancelled,
}

/// Sends the call and waits for it, passing progress on to the front client (only when it
/// asked for it) and the front client's cancellation on to the backend.
fn forward_once(
    client: &crate::mcp::McpClient,
    tool: &FrontTool,
    context: &RequestContext,
    arguments: &Value,
) -> Answer {
    let mut options = CallOptions::new().timeout(tool.options.timeout.duration());
    if let Some(progress) = context.progress().cloned() {
        options = options.on_progress(move |report: &Progress| {
            progress.report(report.progress, report.total, report.message.as_deref());
        });
    }
    let mut call = match client.start_tool(&tool.remote, arguments, options) {
        Ok(call) => call,
        Err(error) => return Answer::Done(Err(error)),
    };
    loop {
        if let Some(outcome) = call.wait_timeout(CANCEL_POLL) {
            return Answer::Done(outcome);
        }
        if context.is_cancelled() {
            call.cancel();
            return Answer::Cancelled;
        }
    }
}

/// A backend's failure as the front client reads it: the harness's words for the model, the
/// real text for the operator.
fn failed(ran: Ran, options: &ToolOptions, operator: String) -> Ending {
    let status = ran.status();
    let detail = match ran {
        Ran::Timeout { .. } => format!(
            "the tool did not answer within {:?}; it was told to stop, and may still be running",
            options.timeout.duration()
        ),
        Ran::Failed { public, .. } => public,
        Ran::Transport(_) => crate::harness::GENERIC_TRANSPORT.to_owned(),
        Ran::Result(_) | Ran::NoResult => "the tool failed".to_owned(),
    };
    Ending {
        status: Some(status),
        result: CallToolResult::error(format!("{status}: {detail}")),
        operator,
    }
}

/// The backend's result as it sent it, unless its text is over the tool's result limit: then
/// cut to it with the harness's marker (and without structured content), or refused.
fn within_limit(result: CallToolResult, options: &ToolOptions) -> Ending {
    let status = if result.is_error {
        Status::ToolError
    } else {
        Status::Ok
    };
    let all_text = result.content.iter().all(|block| block.as_text().is_some());
    let measured = if all_text {
        Value::String(result.text())
    } else {
        Value::String(value_text(&result.raw))
    };
    let limit = options.result_limit;
    match limit.apply(measured) {
        Ok((_, None)) => Ending {
            status: Some(status),
            result: passed_on(&result),
            operator: String::new(),
        },
        Ok((_, Some(note))) => {
            // Cut the text the model reads; blocks that are not text cannot be cut and go.
            let text = match limit.apply(Value::String(result.text())) {
                Ok((shown, _)) => value_text(&shown),
                Err(reason) => reason,
            };
            Ending {
                status: Some(status),
                result: CallToolResult::from_text(text).with_error(result.is_error),
                operator: note,
            }
        }
        Err(reason) => {
            debug_assert_eq!(limit.overflow, Overflow::Reject);
            Ending::refused(Status::ToolError, reason)
        }
    }
}

/// A backend's result, block for block (each as the backend sent it), without the rest of it.
fn passed_on(result: &CallToolResult) -> CallToolResult {
    let mut passed = CallToolResult::new(result.content.clone()).with_error(result.is_error);
    passed.structured_content = result.structured_content.clone();
    if let Some(blocks) = result.raw.get("content") {
        passed.raw = serde_json::json!({ "content": blocks });
    }
    passed
}
