//! One attempt of a call on a worker: a local tool's code, or the forwarded call of an
//! imported one, with the audit events of the attempt.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::answer::Answerer;
use super::audit::{level_of, Audit, AuditKind};
use super::context::LocalContext;
use super::outcome::{json_len, Status};
use super::ran::{remote_error, remote_result, run_local, Ran};
use super::registry::{Backend, RegisteredTool};
use super::remote::{RemoteBinding, RemoteErrorText, RemoteTimeoutSlot};
use super::run::{Attempted, CallContext};
use super::tool::CancelFlag;
use super::CancelTable;
use crate::client::CallOptions;
use crate::mcp::CallToolResult;

/// Everything a worker needs for one attempt.
pub(super) struct AttemptJob {
    pub(super) context: CallContext,
    pub(super) tool: Arc<RegisteredTool>,
    pub(super) arguments: Value,
    pub(super) attempt: u32,
    /// The caller's deadline, which shortens a remote call's own timeout.
    pub(super) deadline: Option<Instant>,
    pub(super) cancel: CancelFlag,
    pub(super) reply: Answerer<Attempted>,
    pub(super) audit: Arc<Audit>,
    pub(super) cancels: CancelTable,
    pub(super) key: u64,
}

impl AttemptJob {
    /// Runs the attempt holding `place` (a worker's slot, or an admission handle's place when
    /// run `inline` on the caller's thread, where no `admitted` line is written: its request
    /// line follows at once).
    pub(super) fn run<P>(self, place: P, inline: bool) {
        let wanted = self.audit.wanted();
        if wanted && !inline {
            let mut event = self.context.event(AuditKind::Admitted);
            event.attempt = self.attempt;
            self.audit.emit(event);
        }
        let started = Instant::now();
        // A remote tool's request is the child of the call's `execute_tool` span.
        let _parent = (self.context.settings.trace_parent.is_some())
            .then(|| crate::telemetry::enter(self.context.settings.trace_parent.clone()));
        let attempted = match &self.tool.backend {
            Backend::Local(code) => {
                let context = LocalContext {
                    tool: &self.tool.name,
                    cancel: &self.cancel,
                    progress: self.context.settings.progress.as_ref(),
                };
                let (ran, mcp) = run_local(code, &self.arguments, &context);
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
                Attempted {
                    ran,
                    mcp: mcp.map(Box::new),
                }
            }
            Backend::Remote(binding) => self.run_remote(binding),
        };
        // Free the worker before answering, so the caller's next call finds it free.
        drop(place);
        self.cancels.lock().remove(&self.key);
        let AttemptJob {
            context,
            reply,
            audit,
            attempt,
            ..
        } = self;
        if let Err(attempted) = reply.answer(attempted) {
            let mut event = context.event(AuditKind::Late).detail(format!(
                "the work ended after the caller gave up, with {}; discarded",
                attempted.ran.summary()
            ));
            event.attempt = attempt;
            event.duration = Some(started.elapsed());
            audit.emit(event);
        }
    }

    fn run_remote(&self, binding: &RemoteBinding) -> Attempted {
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
        if let Some(count) = &self.audit.requests {
            count(self.context.tool.as_deref());
        }
        // The request and response events are made only for whoever would read them (see
        // `Audit::sees`): their sizes take writing the arguments and the result out.
        if self.audit.sees(level_of(AuditKind::Request, None)) {
            let mut request = self.context.event(AuditKind::Request).detail(format!(
                "tools/call {:?} with a deadline of {bound:?}",
                binding.remote_name
            ));
            request.attempt = self.attempt;
            request.size = Some(json_len(&self.arguments));
            self.audit.emit(request);
        }
        let started = Instant::now();
        let answer = self.call_remote(binding, bound);
        let waited = started.elapsed();
        let mut size = None;
        let mut mcp = None;
        let ran = match answer {
            Ok(result) => {
                // A tool error's response is a warning, any other a debug line.
                let status = result.is_error.then_some(Status::ToolError);
                if self.audit.sees(level_of(AuditKind::Response, status)) {
                    size = Some(json_len(&result.raw));
                }
                let ran = remote_result(&result, binding.error_text);
                // A withheld error text is not passed on either.
                let withheld = result.is_error && binding.error_text == RemoteErrorText::Withhold;
                if !withheld {
                    mcp = Some(Box::new(result));
                }
                ran
            }
            Err(crate::error::Error::Cancelled { .. }) if self.context.cancelled_by_caller() => {
                Ran::Timeout {
                    caller_deadline: true,
                }
            }
            Err(crate::error::Error::Rpc(object)) if self.context.settings.pass_errors => {
                let ran = remote_error(crate::error::Error::Rpc(object.clone()));
                mcp = Some(Box::new(CallToolResult::passing_rpc_error(*object)));
                ran
            }
            Err(error) => match remote_error(error) {
                Ran::Timeout { .. } => Ran::Timeout {
                    caller_deadline: cut,
                },
                ran => ran,
            },
        };
        let status = ran.status();
        if self.audit.sees(level_of(AuditKind::Response, Some(status))) {
            let mut response = self.context.event(AuditKind::Response);
            response.attempt = self.attempt;
            response.duration = Some(waited);
            response.size = size;
            response = response.detail(if self.context.cancelled_by_caller() {
                "the caller cancelled the call; the server was told".to_owned()
            } else {
                ran.summary()
            });
            response.status = Some(status);
            self.audit.emit(response);
        }
        Attempted { ran, mcp }
    }

    /// Sends the call and waits for its answer, with the attempt's and the caller's
    /// cancellation waited on beside it (either cancels the request on the wire), and the
    /// progress passed on to the caller's sink.
    fn call_remote(
        &self,
        binding: &RemoteBinding,
        bound: Duration,
    ) -> crate::error::Result<CallToolResult> {
        let settings = &self.context.settings;
        let mut options = CallOptions::new().timeout(bound);
        if let Some(sink) = settings.progress.clone() {
            options = options.on_progress(move |report: &crate::client::Progress| {
                sink(report.progress, report.total, report.message.as_deref());
            });
        }
        let mut call = match &settings.rounds {
            Some(retry) => binding.client.start_tool_passing(
                &binding.remote_name,
                &self.arguments,
                options,
                retry.clone(),
            )?,
            None => binding
                .client
                .start_tool(&binding.remote_name, &self.arguments, options)?,
        };
        // Held until answered, the request outlives the attempt's own flag (raised when the
        // caller stops waiting); only the caller's cancellation ends it early.
        let attempt = match binding.slot {
            RemoteTimeoutSlot::Release => Some(self.cancel.signal()),
            RemoteTimeoutSlot::HoldUntilAnswered { .. } => None,
        };
        let caller = settings.cancel.as_ref().map(CancelFlag::signal);
        let stops: Vec<_> = attempt.iter().chain(caller.iter()).collect();
        match call.wait_or(&stops) {
            Some(outcome) => outcome,
            None => {
                call.cancel();
                Err(crate::error::Error::Cancelled {
                    method: crate::mcp::methods::TOOLS_CALL.into(),
                })
            }
        }
    }
}
