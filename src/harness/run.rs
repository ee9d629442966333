//! One call through the harness: checks, admission under the budget, the attempt on a
//! worker, retries, the result limit, and the audit trail.
//!
//! A call is opened ([`OpenCall`]: read, checked, ready or already decided), then completed
//! (its attempts, the result limit, the `finished` event). The two steps are apart so that
//! the calls of one message can be opened in their order, each admitted at once or refused
//! `BUSY`, and then completed side by side (`batch`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::answer::{answer, AnswerWait, Answerer, Waited};
use super::audit::{Audit, AuditEvent, AuditKind};
use super::budget::Refusal;
use super::executor::SlotGuard;
use super::outcome::{value_text, Outcome, Status};
use super::parse::{check_name, quote, MAX_SAFE_INTEGER};
use super::ran::{remote_error, remote_result, run_local, Ran, GENERIC_FAILURE, GENERIC_TRANSPORT};
use super::registry::{Backend, RegisteredTool, ToolRegistry, ToolSchema};
use super::remote::{RemoteBinding, RemoteTimeoutSlot};
use super::shapes::{read_raw, CallShape, ToolReply};
use super::tool::CancelFlag;
use super::{CancelTable, Inner};
use crate::client::CallOptions;

/// The most tool names listed in an `UNKNOWN_TOOL` detail.
const MAX_LISTED_NAMES: usize = 32;

/// How an attempt ended.
enum Attempt {
    Refused(Refusal),
    Ran(Ran),
}

/// An attempt admitted onto a worker, not yet answered.
pub(crate) struct Pending {
    reply: AnswerWait<Ran>,
    cancel: CancelFlag,
    /// When the caller stops waiting: the tool's bound from admission, or the caller's
    /// deadline when that comes first (`by_caller`). Fixed at admission, so a call whose
    /// answer is collected late still timed out at the right moment.
    until: Instant,
    by_caller: bool,
}

/// The first attempt of a call, admitted (or refused) before the call is completed.
pub(crate) type FirstAttempt = Result<Pending, Refusal>;

/// A call read and checked: either decided already, or ready for its attempts.
pub(crate) struct OpenCall {
    pub(crate) context: CallContext,
    started: Instant,
    pub(crate) stage: Stage,
}

pub(crate) enum Stage {
    Decided(Outcome),
    Ready {
        tool: Arc<RegisteredTool>,
        arguments: Value,
    },
}

impl OpenCall {
    /// True when completing the call may take time: an attempt is running, or its tool may
    /// retry after a refusal.
    pub(crate) fn may_wait(&self, first: Option<&FirstAttempt>) -> bool {
        match (&self.stage, first) {
            (Stage::Decided(_), _) => false,
            (Stage::Ready { .. }, Some(Ok(_))) => true,
            (Stage::Ready { tool, .. }, _) => tool.retry_policy().is_some(),
        }
    }

    /// The reply in `shape` to a call that has its outcome.
    pub(crate) fn reply(context: &CallContext, shape: CallShape, outcome: Outcome) -> ToolReply {
        ToolReply {
            shape,
            call_id: context.call_id.clone(),
            tool: context.tool.clone(),
            outcome,
            custom: false,
        }
    }
}

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
        let call = self.open_raw(shape, raw);
        let context = call.context.clone();
        let outcome = self.complete(call, None, None);
        OpenCall::reply(&context, shape, outcome)
    }

    pub(crate) fn call(&self, name: &str, arguments: Value) -> Outcome {
        let mut context = self.open_call(|| value_text(&arguments).len());
        context.tool = Some(name.to_owned());
        let started = Instant::now();
        let stage = self.check(name, arguments);
        self.complete(
            OpenCall {
                context,
                started,
                stage,
            },
            None,
            None,
        )
    }

    /// Reads a raw call and runs every check before the attempts.
    pub(crate) fn open_raw(&self, shape: CallShape, raw: &str) -> OpenCall {
        let mut context = self.open_call(|| raw.len());
        let started = Instant::now();
        let stage = match read_raw(shape, raw, self.config.max_input_chars) {
            Ok(request) => {
                context.call_id = request.call_id;
                context.tool = Some(request.name.clone());
                self.check(&request.name, request.arguments)
            }
            Err(error) => {
                context.call_id = error.call_id;
                context.tool = error.name;
                Stage::Decided(Outcome::new(Status::Invalid, error.reason))
            }
        };
        OpenCall {
            context,
            started,
            stage,
        }
    }

    /// Runs the attempts of a ready call (the first one given, or admitted now), applies the
    /// result limit, and records the end of the call.
    pub(crate) fn complete(
        &self,
        call: OpenCall,
        deadline: Option<Instant>,
        first: Option<FirstAttempt>,
    ) -> Outcome {
        let outcome = match call.stage {
            Stage::Decided(outcome) => outcome,
            Stage::Ready { tool, arguments } => {
                let outcome = self.attempts(&call.context, &tool, &arguments, deadline, first);
                self.limit_result(&tool, outcome)
            }
        };
        self.finish(&call.context, call.started, outcome)
    }

    fn open_call(&self, size: impl FnOnce() -> usize) -> CallContext {
        let call = self.next_call.fetch_add(1, Ordering::Relaxed) + 1;
        let context = CallContext {
            call,
            tool: None,
            call_id: None,
        };
        if self.audit.wanted() {
            let mut event = context.event(AuditKind::Received);
            event.size = Some(size());
            self.audit.emit(event);
        }
        context
    }

    fn finish(&self, context: &CallContext, started: Instant, outcome: Outcome) -> Outcome {
        if !self.audit.wanted() {
            return outcome;
        }
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

    /// The checks that need the registry: a call that passes them is ready for its
    /// attempts.
    fn check(&self, name: &str, arguments: Value) -> Stage {
        match self.checked(name, &arguments) {
            Ok(tool) => Stage::Ready {
                tool: Arc::clone(tool),
                arguments,
            },
            Err(outcome) => Stage::Decided(outcome),
        }
    }

    fn checked(&self, name: &str, arguments: &Value) -> Result<&Arc<RegisteredTool>, Outcome> {
        check_call(
            &self.registry,
            name,
            arguments,
            self.config.repair_schema_chars,
        )
    }

    /// Runs attempts until one ends the call: the retry policy (if any, and only for an
    /// idempotent tool) decides whether a transport failure, `BUSY` or `TIMEOUT` is tried
    /// again.
    ///
    /// `first` is the first attempt when it was admitted already (the calls of a message);
    /// otherwise it is admitted here. No attempt starts after `deadline`, and none is waited
    /// for past it.
    fn attempts(
        &self,
        context: &CallContext,
        tool: &Arc<RegisteredTool>,
        args: &Value,
        deadline: Option<Instant>,
        mut first: Option<FirstAttempt>,
    ) -> Outcome {
        if first.is_none() {
            if let Some(outcome) = self.before_attempts(deadline) {
                return outcome;
            }
        }
        let policy = tool.retry_policy();
        let mut rng = policy.map(|policy| policy.rng(context.call));
        let mut admitted = 0u32;
        let mut delays = Vec::new();
        let mut tries = 0u32;
        let mut last: Option<(Status, String)> = None;
        loop {
            tries += 1;
            let attempt = match first.take() {
                Some(Ok(pending)) => Attempt::Ran(self.wait(pending)),
                Some(Err(refusal)) => Attempt::Refused(refusal),
                None => match self.admit(context, tool, args, admitted + 1, deadline) {
                    Ok(pending) => Attempt::Ran(self.wait(pending)),
                    Err(refusal) => Attempt::Refused(refusal),
                },
            };
            let (outcome, retryable) = match attempt {
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
                        Ran::Timeout {
                            caller_deadline: false,
                        } => policy.is_some_and(|policy| policy.after_timeout),
                        _ => false,
                    };
                    (self.outcome_of(tool, ran), retry)
                }
            };
            let again = policy.filter(|policy| retryable && tries < policy.max_attempts);
            if admitted > 0 || outcome.status == Status::Busy {
                last = Some((outcome.status, outcome.detail.clone()));
            }
            let mut outcome = outcome;
            if let (Some(policy), Some(rng)) = (again, rng.as_mut()) {
                let delay = policy.delay(tries, rng);
                // A retry that could not start before the caller's deadline is not begun.
                let late = deadline.is_some_and(|deadline| Instant::now() + delay >= deadline);
                if late {
                    outcome.detail.push_str(if outcome.detail.is_empty() {
                        "not retried: the caller's deadline would pass first"
                    } else {
                        " (not retried: the caller's deadline would pass first)"
                    });
                    outcome.attempts = admitted;
                    outcome.retry_delays = delays;
                    return outcome;
                }
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
            Ran::Timeout { caller_deadline } => {
                let bound = tool.timeout();
                let when = if caller_deadline {
                    "before the caller's deadline".to_owned()
                } else {
                    format!("within {bound:?}")
                };
                let detail = match &tool.backend {
                    Backend::Remote(RemoteBinding {
                        slot: RemoteTimeoutSlot::Release,
                        ..
                    }) => format!("the tool did not answer {when}; the request was cancelled"),
                    _ => format!(
                        "the tool did not answer {when}; it may still be running, and a late \
                         result will be discarded"
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

    /// What stops a call before its first attempt: a closed harness (`BUSY`), or a caller's
    /// deadline already past (`TIMEOUT`, with nothing run and no budget spent).
    pub(crate) fn before_attempts(&self, deadline: Option<Instant>) -> Option<Outcome> {
        if self.closed.load(Ordering::SeqCst) {
            return Some(Outcome::new(
                Status::Busy,
                "the harness is closed; nothing was run",
            ));
        }
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return Some(Outcome::new(
                Status::Timeout,
                "the caller's deadline had passed before the call could start; nothing was run",
            ));
        }
        None
    }

    /// Admits one attempt under the budget onto a free worker, or refuses it at once. Never
    /// waits for a worker beyond the executor's hand-off grace, and never queues.
    pub(crate) fn admit(
        &self,
        context: &CallContext,
        tool: &Arc<RegisteredTool>,
        args: &Value,
        attempt: u32,
        deadline: Option<Instant>,
    ) -> Result<Pending, Refusal> {
        let (reply_tx, reply_rx) = answer::<Ran>();
        let cancel = CancelFlag::new();
        let key = self.next_attempt.fetch_add(1, Ordering::Relaxed);
        self.cancels.lock().insert(key, cancel.clone());
        let job = AttemptJob {
            context: context.clone(),
            tool: Arc::clone(tool),
            arguments: args.clone(),
            attempt,
            deadline,
            cancel: cancel.clone(),
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
            return Err(refusal);
        }
        let bound = match &tool.backend {
            // The MCP client enforces the bound itself and frees the worker; wait for its
            // answer, with a backstop.
            Backend::Remote(RemoteBinding {
                slot: RemoteTimeoutSlot::Release,
                ..
            }) => tool.timeout() + self.config.remote_grace,
            _ => tool.timeout(),
        };
        let by_bound = Instant::now() + bound;
        let (until, by_caller) = match deadline {
            Some(deadline) if deadline < by_bound => (deadline, true),
            _ => (by_bound, false),
        };
        Ok(Pending {
            reply: reply_rx,
            cancel,
            until,
            by_caller,
        })
    }

    /// Waits for an admitted attempt's answer until its time is up; then the attempt is
    /// abandoned (its cancel flag raised) unless the worker settled first.
    pub(crate) fn wait(&self, pending: Pending) -> Ran {
        let timeout = Ran::Timeout {
            caller_deadline: pending.by_caller,
        };
        // Who answers is settled once: the worker, or nobody because the caller gave up
        // first, so a result that comes exactly at the deadline is either used or reported
        // late, never lost.
        match pending.reply.wait_until(pending.until) {
            Waited::Answer(ran) => ran,
            Waited::Abandoned => {
                pending.cancel.cancel();
                timeout
            }
            Waited::Dropped => Ran::Failed {
                public: GENERIC_FAILURE.into(),
                answer: Value::Null,
                internal: Some("the worker dropped the call without an answer".into()),
            },
        }
    }
}

/// The argument checks of [`check_call`], for a tool found by other means (the gateway looks
/// its front names up itself): object arguments, the input schema (`INVALID` with the repair
/// message; `TOOL_ERROR` when the schema cannot be used or checked), and integers beyond
/// ±(2^53 − 1) unless `allow_large_integers`.
pub(crate) fn check_arguments(
    name: &str,
    schema: &ToolSchema,
    allow_large_integers: bool,
    arguments: &Value,
    repair_schema_chars: usize,
) -> Result<(), Outcome> {
    if !arguments.is_object() {
        let detail = format!(
            "the arguments of tool {} must be a JSON object, not {}",
            quote(name),
            super::parse::kind_of(arguments)
        );
        return Err(Outcome::new(Status::Invalid, detail));
    }
    let compiled = match schema.get() {
        Ok(schema) => schema,
        // The server's schema is refused (over the schema bounds, or not compilable): the
        // tool cannot be checked, so it cannot be called; the others work.
        Err(reason) => return Err(Outcome::new(Status::ToolError, reason)),
    };
    if let Err(violations) = compiled.validate(arguments) {
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
            compiled.repair_message(name, &violations, repair_schema_chars),
        ));
    }
    if !allow_large_integers {
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
    Ok(())
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
    check_arguments(
        &tool.name,
        &tool.schema,
        tool.options.allow_large_integers,
        arguments,
        repair_schema_chars,
    )?;
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
    /// The caller's deadline, which shortens a remote call's own timeout.
    deadline: Option<Instant>,
    cancel: CancelFlag,
    reply: Answerer<Ran>,
    audit: Arc<Audit>,
    cancels: CancelTable,
    key: u64,
}

impl AttemptJob {
    fn run(self, slot: SlotGuard) {
        let wanted = self.audit.wanted();
        if wanted {
            let mut event = self.context.event(AuditKind::Admitted);
            event.attempt = self.attempt;
            self.audit.emit(event);
        }
        let started = Instant::now();
        let ran = match &self.tool.backend {
            Backend::Local(handler) => {
                let ran = run_local(handler, &self.arguments, &self.cancel);
                if wanted {
                    let mut event = self
                        .context
                        .event(AuditKind::Returned)
                        .detail(ran.summary());
                    event.status = Some(ran.status());
                    event.attempt = self.attempt;
                    event.duration = Some(started.elapsed());
                    event.size = ran.size();
                    self.audit.emit(event);
                }
                ran
            }
            Backend::Remote(binding) => self.run_remote(binding),
        };
        // Free the worker before answering, so the caller's next call finds it free.
        drop(slot);
        self.cancels.lock().remove(&self.key);
        let AttemptJob {
            context,
            reply,
            audit,
            attempt,
            ..
        } = self;
        if let Err(ran) = reply.answer(ran) {
            let mut event = context.event(AuditKind::Late).detail(format!(
                "the work ended after the caller gave up, with {}; discarded",
                ran.summary()
            ));
            event.attempt = attempt;
            event.duration = Some(started.elapsed());
            audit.emit(event);
        }
    }

    fn run_remote(&self, binding: &RemoteBinding) -> Ran {
        let (bound, cut) = match binding.slot {
            // The request is cancelled on the wire at the caller's deadline when that comes
            // before the tool's bound, so the worker is not held past it.
            RemoteTimeoutSlot::Release => {
                let bound = self.tool.timeout();
                match self.deadline {
                    Some(deadline) => {
                        let left = deadline
                            .saturating_duration_since(Instant::now())
                            .max(Duration::from_millis(1));
                        if left < bound {
                            (left, true)
                        } else {
                            (bound, false)
                        }
                    }
                    None => (bound, false),
                }
            }
            RemoteTimeoutSlot::HoldUntilAnswered { limit } => (limit, false),
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
            Err(error) => match remote_error(error) {
                Ran::Timeout { .. } => Ran::Timeout {
                    caller_deadline: cut,
                },
                ran => ran,
            },
        };
        response = response.detail(ran.summary());
        response.status = Some(ran.status());
        self.audit.emit(response);
        ran
    }
}
