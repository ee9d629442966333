//! One call through the harness: checks, admission under the budget, the attempt on a
//! worker, retries, the result limit, and the audit trail.
//!
//! A call is opened ([`OpenCall`]: read, checked, ready or already decided), then completed
//! (its attempts, the result limit, the `finished` event). The two steps are apart so that
//! the calls of one message can be opened in their order, each admitted at once or refused
//! `BUSY`, and then completed side by side (`batch`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::answer::{answer, AnswerWait, Waited};
use super::attempt::AttemptJob;
use super::audit::{AuditEvent, AuditKind};
use super::budget::{Budget, Refusal};
use super::checks::check_call;
use super::imported::CallSettings;
use super::outcome::{limit_mcp_result, value_len, Limited, Outcome, Status};
use super::ran::{Ran, GENERIC_FAILURE, GENERIC_TRANSPORT};
use super::registry::{Backend, RegisteredTool};
use super::remote::{RemoteBinding, RemoteTimeoutSlot};
use super::shapes::{read_raw, CallShape, ToolReply};
use super::tool::CancelFlag;
use super::Inner;
use crate::mcp::CallToolResult;

/// How an attempt ended.
enum Attempt {
    Refused(Refusal),
    Ran(Attempted),
}

/// What an admitted attempt produced, and for an MCP tool the result its server sent (kept
/// to be passed on as it is, within the result limit).
pub(crate) struct Attempted {
    pub(super) ran: Ran,
    pub(super) mcp: Option<Box<CallToolResult>>,
}

impl From<Ran> for Attempted {
    fn from(ran: Ran) -> Attempted {
        Attempted { ran, mcp: None }
    }
}

/// An attempt admitted onto a worker, not yet answered.
pub(crate) struct Pending {
    reply: AnswerWait<Attempted>,
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
    pub(crate) started: Instant,
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
    /// The call's own budget scope, cancellation, progress and deadline.
    pub(crate) settings: CallSettings,
}

impl CallContext {
    /// True once the caller cancelled the call.
    pub(super) fn cancelled_by_caller(&self) -> bool {
        self.settings
            .cancel
            .as_ref()
            .is_some_and(CancelFlag::is_cancelled)
    }

    pub(super) fn event(&self, kind: AuditKind) -> AuditEvent {
        let mut event = AuditEvent::new(self.call, kind);
        event.tool = self.tool.clone();
        event.call_id = self.call_id.clone();
        event.scope = self
            .settings
            .budget
            .as_ref()
            .map(|scope| scope.key().to_owned());
        event
    }
}

impl Inner {
    pub(crate) fn handle(&self, shape: CallShape, raw: &str) -> ToolReply {
        let call = self.open_raw(shape, raw, &CallSettings::default());
        let context = call.context.clone();
        let outcome = self.complete(call, None, None);
        OpenCall::reply(&context, shape, outcome)
    }

    pub(crate) fn call(&self, name: &str, arguments: Value, settings: &CallSettings) -> Outcome {
        let context = self.open_call(settings, Some(name), || value_len(&arguments));
        let started = Instant::now();
        let stage = self.check(name, arguments);
        self.complete(
            OpenCall {
                context,
                started,
                stage,
            },
            settings.deadline,
            None,
        )
    }

    /// Reads a raw call and runs every check before the attempts.
    pub(crate) fn open_raw(
        &self,
        shape: CallShape,
        raw: &str,
        settings: &CallSettings,
    ) -> OpenCall {
        let mut context = self.open_call(settings, None, || raw.len());
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
        let mut call = call;
        let mut span = super::traced::start(&mut call);
        let outcome = match call.stage {
            Stage::Decided(outcome) => outcome,
            Stage::Ready { tool, arguments } => {
                let outcome = self.attempts(&call.context, &tool, &arguments, deadline, first);
                self.limit_result(&tool, outcome)
            }
        };
        if let Some(span) = &mut span {
            super::traced::finish(span, &outcome);
        }
        self.finish(&call.context, call.started, outcome)
    }

    /// Numbers a call and writes its `received` line (with the tool's name when it is known
    /// before the call is read).
    pub(crate) fn open_call(
        &self,
        settings: &CallSettings,
        tool: Option<&str>,
        size: impl FnOnce() -> usize,
    ) -> CallContext {
        let call = self.next_call.fetch_add(1, Ordering::Relaxed) + 1;
        let context = CallContext {
            call,
            tool: tool.map(str::to_owned),
            call_id: settings.call_id.clone(),
            settings: settings.clone(),
        };
        if self.audit.wanted() {
            let mut event = context.event(AuditKind::Received);
            // The size takes writing the arguments out: made only for whoever reads an
            // event's every field (the metrics count finished calls only; see `Audit::sees`).
            if self.audit.sees(event.level()) {
                event.size = Some(size());
            }
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
        // As the `received` event's: the result's size only for whoever reads it.
        if self.audit.sees(event.level()) {
            event.size = Some(if outcome.result.is_null() {
                0
            } else {
                value_len(&outcome.result)
            });
        }
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
                    let spent = self.budget_of(context).spent();
                    let detail = match &last {
                        None => format!("{spent}; nothing was run"),
                        Some((status, detail)) => format!(
                            "{spent}, so no further attempt was run; the last attempt ended \
                             with {status}: {detail}"
                        ),
                    };
                    (Outcome::new(Status::Budget, detail), false)
                }
                Attempt::Refused(Refusal::Unavailable(error)) => (
                    Outcome::new(
                        Status::Busy,
                        format!(
                            "the caller's budget could not be counted ({error}); nothing was \
                             run. Try again later"
                        ),
                    ),
                    false,
                ),
                Attempt::Refused(Refusal::Busy) => {
                    let detail = match admission_of(tool) {
                        Some(door) => format!(
                            "{} already has its {} calls in flight; nothing was run and \
                             nothing was queued. Try again when one has finished",
                            door.name(),
                            door.limit()
                        ),
                        None => {
                            let size = self.executor.size();
                            format!(
                                "no worker is free ({size} of {size} busy); nothing was run \
                                 and nothing was queued. Try again later"
                            )
                        }
                    };
                    let retry = policy.is_some_and(|policy| policy.on_busy);
                    (Outcome::new(Status::Busy, detail), retry)
                }
                Attempt::Ran(attempted) => {
                    admitted += 1;
                    let retry = match &attempted.ran {
                        Ran::Transport(_) => true,
                        Ran::Timeout {
                            caller_deadline: false,
                        } => policy.is_some_and(|policy| policy.after_timeout),
                        _ => false,
                    };
                    (self.outcome_of(context, tool, attempted), retry)
                }
            };
            // Nothing is tried again for a caller who cancelled the call.
            let retryable = retryable && !context.cancelled_by_caller();
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

    fn outcome_of(
        &self,
        context: &CallContext,
        tool: &RegisteredTool,
        attempted: Attempted,
    ) -> Outcome {
        let Attempted { ran, mcp } = attempted;
        let mut outcome = self.outcome_of_ran(context, tool, ran);
        outcome.mcp_result = mcp;
        outcome
    }

    fn outcome_of_ran(&self, context: &CallContext, tool: &RegisteredTool, ran: Ran) -> Outcome {
        match ran {
            Ran::Result(value) => {
                let mut outcome = Outcome::new(Status::Ok, "");
                outcome.result = value;
                outcome
            }
            Ran::NoResult => Outcome::new(Status::NotFound, "the tool ran and found no result"),
            // One leg of a call that goes on with the retry: its audit says so, and its
            // `finished` line is that leg's (the call id ties the legs together).
            ran @ Ran::InputRound(_) => Outcome::new(Status::Ok, ran.summary()),
            Ran::Failed { public, answer, .. } => {
                let mut outcome = Outcome::new(Status::ToolError, public);
                outcome.result = answer;
                outcome
            }
            Ran::Transport(_) => Outcome::new(Status::ToolError, GENERIC_TRANSPORT),
            Ran::Timeout { .. } if context.cancelled_by_caller() => Outcome::new(
                Status::Timeout,
                "the caller cancelled the call; its request was cancelled",
            ),
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
        if let Some(result) = outcome.mcp_result.take() {
            let declared = tool.output_schema.is_some();
            match limit_mcp_result(&tool.options.result_limit, *result, declared) {
                Limited::Within(result) => outcome.mcp_result = Some(Box::new(result)),
                Limited::Cut { result, text, note } => {
                    outcome.result = Value::String(text);
                    outcome.mcp_result = Some(Box::new(result));
                    if !outcome.detail.is_empty() {
                        outcome.detail.push_str("; ");
                    }
                    outcome.detail.push_str(&note);
                }
                Limited::Refused { result, reason } => {
                    outcome.status = Status::ToolError;
                    outcome.result = Value::Null;
                    outcome.detail = reason;
                    outcome.mcp_result = Some(Box::new(result));
                }
            }
            return outcome;
        }
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
        let (reply_tx, reply_rx) = answer::<Attempted>();
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
        let budget = self.budget_of(context);
        let continuing = context.settings.continuing;
        // The retry of an input round was counted with its first round.
        let count = |admit: &mut dyn FnMut() -> bool| {
            if continuing {
                if admit() {
                    Ok(())
                } else {
                    Err(Refusal::Busy)
                }
            } else {
                budget.admit_with(admit)
            }
        };
        let admitted = match admission_of(tool) {
            // Admitted by the tool's own handle, and run here, on the caller's thread.
            Some(door) => {
                let mut place = None;
                let admitted = count(&mut || {
                    place = door.try_enter();
                    place.is_some()
                });
                match (admitted, place) {
                    (Ok(()), Some(place)) => {
                        job.run(place, true);
                        Ok(())
                    }
                    (Ok(()), None) => Err(Refusal::Busy),
                    (Err(refusal), _) => Err(refusal),
                }
            }
            None => {
                let mut job = Some(job);
                count(&mut || {
                    job.take().is_some_and(|job| {
                        self.executor
                            .try_admit(Box::new(move |slot| job.run(slot, false)))
                    })
                })
            }
        };
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
    pub(crate) fn wait(&self, pending: Pending) -> Attempted {
        let timeout = Attempted::from(Ran::Timeout {
            caller_deadline: pending.by_caller,
        });
        // Who answers is settled once: the worker, or nobody because the caller gave up
        // first, so a result that comes exactly at the deadline is either used or reported
        // late, never lost.
        match pending.reply.wait_until(pending.until) {
            Waited::Answer(ran) => ran,
            Waited::Abandoned => {
                pending.cancel.cancel();
                timeout
            }
            Waited::Dropped => Attempted::from(Ran::Failed {
                public: GENERIC_FAILURE.into(),
                answer: Value::Null,
                internal: Some("the worker dropped the call without an answer".into()),
            }),
        }
    }

    /// The budget a call spends: its scope's, or the harness's own.
    fn budget_of<'a>(&'a self, context: &'a CallContext) -> &'a Budget {
        match &context.settings.budget {
            Some(scope) => &scope.budget,
            None => &self.budget,
        }
    }
}

/// The admission handle of an imported tool that has one.
fn admission_of(tool: &RegisteredTool) -> Option<&super::Admission> {
    match &tool.backend {
        Backend::Remote(binding) => binding.admission.as_ref(),
        Backend::Local(_) => None,
    }
}
