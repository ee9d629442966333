//! One call through the harness: checks, admission under the budget, the attempt on a
//! worker, retries, the result limit, and the audit trail.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{bounded, RecvTimeoutError, Sender};
use serde_json::Value;

use super::audit::{Audit, AuditEvent, AuditKind};
use super::budget::Refusal;
use super::executor::SlotGuard;
use super::outcome::{value_text, Outcome, Status};
use super::parse::{check_name, quote, MAX_SAFE_INTEGER};
use super::registry::{Backend, RegisteredTool, ToolRegistry};
use super::remote::{RemoteBinding, RemoteErrorText, RemoteTimeoutSlot};
use super::shapes::{read_raw, CallShape, ToolReply};
use super::tool::{CancelFlag, FailureKind, ToolHandler};
use super::{CancelTable, Inner};
use crate::client::CallOptions;
use crate::error::Error;
use crate::mcp::CallToolResult;

/// What the model reads for a failure whose real text stays internal.
const GENERIC_FAILURE: &str =
    "the tool failed; the details were logged for the operator and are not shown here";
/// What the model reads when the tool (or its server) could not be reached.
const GENERIC_TRANSPORT: &str = "the tool could not be reached (a transport failure); the \
                                 details were logged for the operator";
/// The most tool names listed in an `UNKNOWN_TOOL` detail.
const MAX_LISTED_NAMES: usize = 32;

/// What one admitted attempt produced.
#[derive(Debug)]
pub(crate) enum Ran {
    Result(Value),
    NoResult,
    /// The tool failed. `public` is for the model, `answer` the tool's own words for it (a
    /// safe message, an MCP `isError` text), `internal` for the operator only.
    Failed {
        public: String,
        answer: Value,
        internal: Option<String>,
    },
    /// The tool, or its server, could not be reached; retryable.
    Transport(String),
    Timeout,
}

impl Ran {
    /// For the operator: what the attempt produced, internal text included.
    fn summary(&self) -> String {
        match self {
            Ran::Result(value) => format!("a result of {} bytes", value_text(value).len()),
            Ran::NoResult => "no result".into(),
            Ran::Failed {
                internal: Some(internal),
                ..
            } => internal.clone(),
            Ran::Failed { answer, .. } => {
                format!("an error answer for the model: {}", value_text(answer))
            }
            Ran::Transport(reason) => reason.clone(),
            Ran::Timeout => "no answer in time".into(),
        }
    }

    /// The status this attempt amounts to, before retries and the result limit.
    fn status(&self) -> Status {
        match self {
            Ran::Result(_) => Status::Ok,
            Ran::NoResult => Status::NotFound,
            Ran::Failed { .. } | Ran::Transport(_) => Status::ToolError,
            Ran::Timeout => Status::Timeout,
        }
    }

    fn size(&self) -> Option<usize> {
        match self {
            Ran::Result(value) => Some(value_text(value).len()),
            _ => None,
        }
    }
}

/// How an attempt ended.
enum Attempt {
    Refused(Refusal),
    Ran(Ran),
}

/// Who answers a call: the worker, or nobody because the caller gave up first. Settled once,
/// so a result that comes exactly at the deadline is either used or reported late, never
/// lost.
const WAITING: u8 = 0;
const ANSWERED: u8 = 1;
const ABANDONED: u8 = 2;

/// The fields every event of one call shares.
#[derive(Debug, Clone)]
pub(crate) struct CallContext {
    pub(crate) call: u64,
    pub(crate) tool: Option<String>,
    pub(crate) call_id: Option<String>,
}

impl CallContext {
    fn event(&self, kind: AuditKind) -> AuditEvent {
        let mut event = AuditEvent::new(self.call, kind);
        event.tool = self.tool.clone();
        event.call_id = self.call_id.clone();
        event
    }
}

impl Inner {
    pub(crate) fn handle(&self, shape: CallShape, raw: &str) -> ToolReply {
        let mut context = self.open_call(raw.len());
        let started = Instant::now();
        let reply = |context: &CallContext, outcome: Outcome| ToolReply {
            shape,
            call_id: context.call_id.clone(),
            tool: context.tool.clone(),
            outcome,
        };
        let request = match read_raw(shape, raw, self.config.max_input_chars) {
            Ok(request) => request,
            Err(error) => {
                context.call_id = error.call_id;
                let outcome = Outcome::new(Status::Invalid, error.reason);
                return reply(&context, self.finish(&context, started, outcome));
            }
        };
        context.call_id = request.call_id;
        context.tool = Some(request.name.clone());
        let outcome = self.run(&context, &request.name, request.arguments);
        reply(&context, self.finish(&context, started, outcome))
    }

    pub(crate) fn call(&self, name: &str, arguments: Value) -> Outcome {
        let mut context = self.open_call(value_text(&arguments).len());
        context.tool = Some(name.to_owned());
        let started = Instant::now();
        let outcome = self.run(&context, name, arguments);
        self.finish(&context, started, outcome)
    }

    fn open_call(&self, size: usize) -> CallContext {
        let call = self.next_call.fetch_add(1, Ordering::Relaxed) + 1;
        let context = CallContext {
            call,
            tool: None,
            call_id: None,
        };
        let mut event = context.event(AuditKind::Received);
        event.size = Some(size);
        self.audit.emit(event);
        context
    }

    fn finish(&self, context: &CallContext, started: Instant, outcome: Outcome) -> Outcome {
        let mut event = context
            .event(AuditKind::Finished)
            .detail(outcome.detail.clone());
        event.status = Some(outcome.status);
        event.attempt = outcome.attempts;
        event.duration = Some(started.elapsed());
        event.size = Some(if outcome.result.is_null() {
            0
        } else {
            value_text(&outcome.result).len()
        });
        self.audit.emit(event);
        outcome
    }

    /// The checks that need the registry, then the attempts.
    fn run(&self, context: &CallContext, name: &str, arguments: Value) -> Outcome {
        let tool = match check_call(
            &self.registry,
            name,
            &arguments,
            self.config.repair_schema_chars,
        ) {
            Ok(tool) => tool,
            Err(refused) => return refused,
        };
        let outcome = self.attempts(context, tool, &arguments);
        self.limit_result(tool, outcome)
    }

    /// Runs attempts until one ends the call: the retry policy (if any, and only for an
    /// idempotent tool) decides whether a transport failure, `BUSY` or `TIMEOUT` is tried
    /// again.
    fn attempts(&self, context: &CallContext, tool: &Arc<RegisteredTool>, args: &Value) -> Outcome {
        if self.closed.load(Ordering::SeqCst) {
            return Outcome::new(Status::Busy, "the harness is closed; nothing was run");
        }
        let policy = tool.retry_policy();
        let mut rng = policy.map(|policy| policy.rng(context.call));
        let mut admitted = 0u32;
        let mut delays = Vec::new();
        let mut tries = 0u32;
        let mut last: Option<(Status, String)> = None;
        loop {
            tries += 1;
            let (outcome, retryable) = match self.attempt(context, tool, args, admitted + 1) {
                Attempt::Refused(Refusal::Budget) => {
                    let limit = self.budget.state().limit;
                    let detail = match &last {
                        None => format!("the attempt budget of {limit} is spent; nothing was run"),
                        Some((status, detail)) => format!(
                            "the attempt budget of {limit} is spent, so no further attempt was \
                             run; the last attempt ended with {status}: {detail}"
                        ),
                    };
                    (Outcome::new(Status::Budget, detail), false)
                }
                Attempt::Refused(Refusal::Busy) => {
                    let size = self.executor.size();
                    let detail = format!(
                        "no worker is free ({size} of {size} busy); nothing was run and \
                         nothing was queued. Try again later"
                    );
                    let retry = policy.is_some_and(|policy| policy.on_busy);
                    (Outcome::new(Status::Busy, detail), retry)
                }
                Attempt::Ran(ran) => {
                    admitted += 1;
                    let retry = match &ran {
                        Ran::Transport(_) => true,
                        Ran::Timeout => policy.is_some_and(|policy| policy.after_timeout),
                        _ => false,
                    };
                    (self.outcome_of(tool, ran), retry)
                }
            };
            let again = policy.filter(|policy| retryable && tries < policy.max_attempts);
            if admitted > 0 || outcome.status == Status::Busy {
                last = Some((outcome.status, outcome.detail.clone()));
            }
            if let (Some(policy), Some(rng)) = (again, rng.as_mut()) {
                let delay = policy.delay(tries, rng);
                let mut event = context.event(AuditKind::Retry).detail(format!(
                    "attempt {tries} ended with {}; retrying after {delay:?}",
                    outcome.status
                ));
                event.attempt = tries;
                event.duration = Some(delay);
                self.audit.emit(event);
                delays.push(delay);
                self.sleeper.sleep(delay);
                continue;
            }
            let mut outcome = outcome;
            outcome.attempts = admitted;
            outcome.retry_delays = delays;
            if tries > 1 && outcome.detail.is_empty() {
                outcome.detail = format!("after {tries} tries");
            } else if tries > 1 {
                outcome.detail.push_str(&format!(" (after {tries} tries)"));
            }
            return outcome;
        }
    }

    fn outcome_of(&self, tool: &RegisteredTool, ran: Ran) -> Outcome {
        match ran {
            Ran::Result(value) => {
                let mut outcome = Outcome::new(Status::Ok, "");
                outcome.result = value;
                outcome
            }
            Ran::NoResult => Outcome::new(Status::NotFound, "the tool ran and found no result"),
            Ran::Failed { public, answer, .. } => {
                let mut outcome = Outcome::new(Status::ToolError, public);
                outcome.result = answer;
                outcome
            }
            Ran::Transport(_) => Outcome::new(Status::ToolError, GENERIC_TRANSPORT),
            Ran::Timeout => {
                let bound = tool.timeout();
                let detail = match &tool.backend {
                    Backend::Remote(RemoteBinding {
                        slot: RemoteTimeoutSlot::Release,
                        ..
                    }) => format!(
                        "the tool did not answer within {bound:?}; the request was cancelled"
                    ),
                    _ => format!(
                        "the tool did not answer within {bound:?}; it may still be running, \
                         and a late result will be discarded"
                    ),
                };
                Outcome::new(Status::Timeout, detail)
            }
        }
    }

    /// Applies the tool's result limit to an `OK` result or a `TOOL_ERROR` answer.
    fn limit_result(&self, tool: &RegisteredTool, mut outcome: Outcome) -> Outcome {
        if outcome.result.is_null() {
            return outcome;
        }
        let result = std::mem::take(&mut outcome.result);
        match tool.options.result_limit.apply(result) {
            Ok((result, note)) => {
                outcome.result = result;
                if let Some(note) = note {
                    if !outcome.detail.is_empty() {
                        outcome.detail.push_str("; ");
                    }
                    outcome.detail.push_str(&note);
                }
            }
            Err(reason) => {
                outcome.status = Status::ToolError;
                outcome.detail = reason;
            }
        }
        outcome
    }

    /// One attempt: admission under the budget, then the wait for the worker's answer.
    fn attempt(
        &self,
        context: &CallContext,
        tool: &Arc<RegisteredTool>,
        args: &Value,
        attempt: u32,
    ) -> Attempt {
        let (reply_tx, reply_rx) = bounded::<Ran>(1);
        let cancel = CancelFlag::new();
        let state = Arc::new(AtomicU8::new(WAITING));
        let key = self.next_attempt.fetch_add(1, Ordering::Relaxed);
        self.cancels.lock().insert(key, cancel.clone());
        let job = AttemptJob {
            context: context.clone(),
            tool: Arc::clone(tool),
            arguments: args.clone(),
            attempt,
            cancel: cancel.clone(),
            state: Arc::clone(&state),
            reply: reply_tx,
            audit: Arc::clone(&self.audit),
            cancels: Arc::clone(&self.cancels),
            key,
        };
        let admitted = self
            .budget
            .admit_with(|| self.executor.try_admit(Box::new(move |slot| job.run(slot))));
        if let Err(refusal) = admitted {
            self.cancels.lock().remove(&key);
            if refusal == Refusal::Busy {
                let mut event = context.event(AuditKind::Busy);
                event.status = Some(Status::Busy);
                event.attempt = attempt;
                self.audit.emit(event);
            }
            return Attempt::Refused(refusal);
        }
        let wait = match &tool.backend {
            // The MCP client enforces the bound itself and frees the worker; wait for its
            // answer, with a backstop.
            Backend::Remote(RemoteBinding {
                slot: RemoteTimeoutSlot::Release,
                ..
            }) => tool.timeout() + self.config.remote_grace,
            _ => tool.timeout(),
        };
        match reply_rx.recv_timeout(wait) {
            Ok(ran) => Attempt::Ran(ran),
            Err(RecvTimeoutError::Timeout) => {
                if state
                    .compare_exchange(WAITING, ABANDONED, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    cancel.cancel();
                    return Attempt::Ran(Ran::Timeout);
                }
                // The worker settled first: its answer is on its way.
                Attempt::Ran(reply_rx.recv().unwrap_or(Ran::Timeout))
            }
            Err(RecvTimeoutError::Disconnected) => Attempt::Ran(Ran::Failed {
                public: GENERIC_FAILURE.into(),
                answer: Value::Null,
                internal: Some("the worker dropped the call without an answer".into()),
            }),
        }
    }
}

/// The checks a call passes before any tool code runs, in the order the harness documents:
/// the name pattern, the registry (`UNKNOWN_TOOL`), object arguments, the tool's input schema
/// (`INVALID` with the repair message; `TOOL_ERROR` when the schema itself cannot be used or
/// checked), and integers beyond ±(2^53 − 1). The MCP server runs a served registry's calls
/// through the same checks.
pub(crate) fn check_call<'a>(
    registry: &'a ToolRegistry,
    name: &str,
    arguments: &Value,
    repair_schema_chars: usize,
) -> Result<&'a Arc<RegisteredTool>, Outcome> {
    if let Err(reason) = check_name(name, registry.profile()) {
        return Err(Outcome::new(Status::Invalid, reason));
    }
    let Some(tool) = registry.get(name) else {
        return Err(Outcome::new(
            Status::UnknownTool,
            unknown_tool_detail(registry, name),
        ));
    };
    if !arguments.is_object() {
        let detail = format!(
            "the arguments of tool {} must be a JSON object, not {}",
            quote(name),
            super::parse::kind_of(arguments)
        );
        return Err(Outcome::new(Status::Invalid, detail));
    }
    let schema = match tool.schema.get() {
        Ok(schema) => schema,
        // The server's schema is refused (over the schema bounds, or not compilable): the
        // tool cannot be checked, so it cannot be called; the others work.
        Err(reason) => return Err(Outcome::new(Status::ToolError, reason)),
    };
    if let Err(violations) = schema.validate(arguments) {
        if let Some(budget) = violations.iter().find(|violation| violation.is_budget()) {
            // Too costly to check: the schema's fault, not the arguments'.
            let detail = format!(
                "the arguments of tool {} could not be checked against its schema ({}); \
                 nothing was run",
                quote(name),
                budget.message
            );
            return Err(Outcome::new(Status::ToolError, detail));
        }
        return Err(Outcome::new(
            Status::Invalid,
            schema.repair_message(&tool.name, &violations, repair_schema_chars),
        ));
    }
    if !tool.options.allow_large_integers {
        if let Some((path, number)) = super::parse::unsafe_integer(arguments) {
            let detail = format!(
                "the arguments of tool {} hold the integer {number} at {}, beyond \
                 ±{MAX_SAFE_INTEGER} (2^53 − 1): many JSON readers cannot hold it exactly, \
                 so nothing was run. Send a smaller number, or the value as a string if the \
                 schema allows one",
                quote(name),
                super::parse::show_pointer(&path)
            );
            return Err(Outcome::new(Status::Invalid, detail));
        }
    }
    Ok(tool)
}

fn unknown_tool_detail(registry: &ToolRegistry, name: &str) -> String {
    let names = registry.names();
    let mut listed = names
        .iter()
        .take(MAX_LISTED_NAMES)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > MAX_LISTED_NAMES {
        listed.push_str(&format!(" and {} more", names.len() - MAX_LISTED_NAMES));
    }
    if listed.is_empty() {
        listed.push_str("(none)");
    }
    format!(
        "there is no tool named {}; nothing was run. The available tools are: {listed}",
        quote(name)
    )
}

/// Everything a worker needs for one attempt.
struct AttemptJob {
    context: CallContext,
    tool: Arc<RegisteredTool>,
    arguments: Value,
    attempt: u32,
    cancel: CancelFlag,
    state: Arc<AtomicU8>,
    reply: Sender<Ran>,
    audit: Arc<Audit>,
    cancels: CancelTable,
    key: u64,
}

impl AttemptJob {
    fn run(self, slot: SlotGuard) {
        let mut event = self.context.event(AuditKind::Admitted);
        event.attempt = self.attempt;
        self.audit.emit(event);
        let started = Instant::now();
        let ran = match &self.tool.backend {
            Backend::Local(handler) => {
                let ran = run_local(handler, &self.arguments, &self.cancel);
                let mut event = self
                    .context
                    .event(AuditKind::Returned)
                    .detail(ran.summary());
                event.status = Some(ran.status());
                event.attempt = self.attempt;
                event.duration = Some(started.elapsed());
                event.size = ran.size();
                self.audit.emit(event);
                ran
            }
            Backend::Remote(binding) => self.run_remote(binding),
        };
        // Free the worker before answering, so the caller's next call finds it free.
        drop(slot);
        self.cancels.lock().remove(&self.key);
        let settled = self
            .state
            .compare_exchange(WAITING, ANSWERED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if settled {
            let _ = self.reply.send(ran);
        } else {
            let mut event = self.context.event(AuditKind::Late).detail(format!(
                "the work ended after the caller gave up, with {}; discarded",
                ran.summary()
            ));
            event.attempt = self.attempt;
            event.duration = Some(started.elapsed());
            self.audit.emit(event);
        }
    }

    fn run_remote(&self, binding: &RemoteBinding) -> Ran {
        let bound = match binding.slot {
            RemoteTimeoutSlot::Release => self.tool.timeout(),
            RemoteTimeoutSlot::HoldUntilAnswered { limit } => limit,
        };
        let mut request = self.context.event(AuditKind::Request).detail(format!(
            "tools/call {:?} with a deadline of {bound:?}",
            binding.remote_name
        ));
        request.attempt = self.attempt;
        request.size = Some(self.arguments.to_string().len());
        self.audit.emit(request);
        let started = Instant::now();
        let answer = binding.client.call_tool_with(
            &binding.remote_name,
            &self.arguments,
            CallOptions::new().timeout(bound),
        );
        let mut response = self.context.event(AuditKind::Response);
        response.attempt = self.attempt;
        response.duration = Some(started.elapsed());
        let ran = match answer {
            Ok(result) => {
                response.size = Some(result.raw.to_string().len());
                remote_result(result, binding.error_text)
            }
            Err(error) => remote_error(error),
        };
        response = response.detail(ran.summary());
        response.status = Some(ran.status());
        self.audit.emit(response);
        ran
    }
}

/// Runs a local tool, turning its failures and panics into what the model may see.
pub(crate) fn run_local(handler: &ToolHandler, arguments: &Value, cancel: &CancelFlag) -> Ran {
    match catch_unwind(AssertUnwindSafe(|| handler(arguments, cancel))) {
        Ok(Ok(Some(value))) => Ran::Result(value),
        Ok(Ok(None)) => Ran::NoResult,
        Ok(Err(failure)) => match failure.kind() {
            FailureKind::Safe => Ran::Failed {
                public: "the tool reported an error".into(),
                answer: Value::String(failure.message().to_owned()),
                internal: None,
            },
            FailureKind::Internal => Ran::Failed {
                public: GENERIC_FAILURE.into(),
                answer: Value::Null,
                internal: Some(format!("the tool failed: {}", failure.message())),
            },
            FailureKind::Transport => {
                Ran::Transport(format!("transport failure: {}", failure.message()))
            }
        },
        Err(panic) => {
            let message = crate::sys::panic_message(&*panic);
            Ran::Failed {
                public: GENERIC_FAILURE.into(),
                answer: Value::Null,
                internal: Some(format!("the tool panicked: {message}")),
            }
        }
    }
}

/// Maps an MCP tool result: `isError` is the tool's answer; an empty result is `NOT_FOUND`;
/// structured content is preferred to text, text to raw blocks.
pub(crate) fn remote_result(result: CallToolResult, error_text: RemoteErrorText) -> Ran {
    if result.is_error {
        let text = if result.content.iter().all(|block| block.as_text().is_some()) {
            Value::String(result.text())
        } else {
            result.raw.get("content").cloned().unwrap_or(Value::Null)
        };
        return match error_text {
            RemoteErrorText::Pass => Ran::Failed {
                public: "the tool reported an error".into(),
                answer: text,
                internal: None,
            },
            RemoteErrorText::Withhold => Ran::Failed {
                public: GENERIC_FAILURE.into(),
                answer: Value::Null,
                internal: Some(format!("the tool reported an error: {}", value_text(&text))),
            },
        };
    }
    if let Some(structured) = result.structured_content {
        return Ran::Result(structured);
    }
    if result.content.is_empty() {
        return Ran::NoResult;
    }
    if result.content.iter().all(|block| block.as_text().is_some()) {
        return Ran::Result(Value::String(result.text()));
    }
    Ran::Result(result.raw.get("content").cloned().unwrap_or(Value::Null))
}

/// Maps an MCP client error: a timeout is `TIMEOUT`; a dead or overloaded connection is a
/// transport failure (retryable); anything else is a `TOOL_ERROR` whose text stays internal.
pub(crate) fn remote_error(error: Error) -> Ran {
    match error {
        Error::Timeout { .. } => Ran::Timeout,
        Error::Closed(_) | Error::Io(_) | Error::Busy { .. } | Error::Spawn { .. } => {
            Ran::Transport(format!("transport failure: {error}"))
        }
        Error::Rpc(object) => Ran::Failed {
            public: format!(
                "the tool's server refused the call (JSON-RPC error {}); the details were \
                 logged for the operator",
                object.code.0
            ),
            answer: Value::Null,
            internal: Some(format!("the server answered with an error: {object}")),
        },
        Error::Schema(_) => Ran::Failed {
            public: "the tool's result does not match its declared output schema".into(),
            answer: Value::Null,
            internal: Some(error.to_string()),
        },
        other => Ran::Failed {
            public: GENERIC_FAILURE.into(),
            answer: Value::Null,
            internal: Some(other.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn tool_result(value: Value) -> CallToolResult {
        CallToolResult::from_value(value).unwrap()
    }

    #[test]
    fn remote_results_map_to_statuses() {
        let ok = remote_result(
            tool_result(json!({"content": [{"type": "text", "text": "hi"}]})),
            RemoteErrorText::Pass,
        );
        assert!(matches!(ok, Ran::Result(Value::String(text)) if text == "hi"));
        let structured = remote_result(
            tool_result(json!({"content": [], "structuredContent": {"sum": 3}})),
            RemoteErrorText::Pass,
        );
        assert!(matches!(structured, Ran::Result(value) if value == json!({"sum": 3})));
        let empty = remote_result(tool_result(json!({"content": []})), RemoteErrorText::Pass);
        assert!(matches!(empty, Ran::NoResult));
        let image = remote_result(
            tool_result(
                json!({"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
            ),
            RemoteErrorText::Pass,
        );
        assert!(matches!(image, Ran::Result(Value::Array(_))));
    }

    #[test]
    fn remote_error_text_is_passed_or_withheld() {
        let failed = json!({"content": [{"type": "text", "text": "bad city"}], "isError": true});
        let passed = remote_result(tool_result(failed.clone()), RemoteErrorText::Pass);
        assert!(
            matches!(&passed, Ran::Failed { answer: Value::String(text), .. } if text == "bad city")
        );
        let withheld = remote_result(tool_result(failed), RemoteErrorText::Withhold);
        match withheld {
            Ran::Failed {
                public,
                answer,
                internal,
            } => {
                assert!(!public.contains("bad city"));
                assert!(answer.is_null());
                assert!(internal.unwrap().contains("bad city"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn client_errors_map_to_timeout_transport_or_a_sanitized_failure() {
        let timeout = Error::Timeout {
            method: "tools/call".into(),
            after: Duration::from_millis(5),
        };
        assert!(matches!(remote_error(timeout), Ran::Timeout));
        let closed = Error::closed_because("the server's stdout ended");
        assert!(matches!(remote_error(closed), Ran::Transport(_)));
        let protocol = Error::Protocol("secret internals".into());
        match remote_error(protocol) {
            Ran::Failed { public, .. } => assert!(!public.contains("secret")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn local_panics_and_internal_failures_are_sanitized() {
        let handler: ToolHandler = Arc::new(|_, _| panic!("password=hunter2"));
        match run_local(&handler, &json!({}), &CancelFlag::new()) {
            Ran::Failed {
                public, internal, ..
            } => {
                assert!(!public.contains("hunter2"));
                assert!(internal.unwrap().contains("hunter2"));
            }
            other => panic!("{other:?}"),
        }
    }
}
