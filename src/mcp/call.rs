//! A tool call in flight: its first request (sent again once when a stateless server refuses
//! it for its version, or for its headers), the input rounds of 2026-07-28, and the task it
//! may become, polled to its end within the call's deadline.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use serde_json::Value;

use super::requests::{check_result_type, ResultType, Rounds};
use super::result::CallToolResult;
use super::session::refused_for_stateless;
use super::tasks::{created_task, Task, TaskDeadlines, TaskWait};
use super::{methods, McpClient, Session};
use crate::client::{CallHandle, CallOptions};
use crate::error::{Error, Result};
use crate::wire::{ErrorCode, RequestId};

/// -32020: a 2026-07-28 server found the routing headers inconsistent with the body.
const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);

/// What a call keeps to ask again (see `Rounds`): all of it in a 2026-07-28 session, boxed;
/// nothing in a handshake session, which never asks again and whose deadlines (which a task
/// the call may become follows) its handle keeps. A program holds a [`ToolCall`] per call in
/// flight (10,000 of them in the memory benchmark), so what is rarely needed stays out of
/// line: the call is under a third of the 880 bytes it took with everything inline.
#[derive(Debug)]
enum Again {
    Handshake,
    Rounds(Box<Rounds>),
}

impl Again {
    fn new(rounds: Rounds, stateless: bool) -> Again {
        if stateless {
            Again::Rounds(Box::new(rounds))
        } else {
            Again::Handshake
        }
    }
}

thread_local! {
    /// The tool name this thread's last call was made with, shared by its calls (as the
    /// JSON-RPC client shares a method name): a thread calling one tool over and over
    /// allocates its name once.
    static LAST_TOOL: std::cell::RefCell<Option<Arc<str>>> = const { std::cell::RefCell::new(None) };
}

/// `name` as an `Arc<str>`, the last one this thread used when it is the same.
fn shared_name(name: &str) -> Arc<str> {
    LAST_TOOL
        .try_with(|last| {
            let mut last = last.borrow_mut();
            match &*last {
                Some(known) if &**known == name => Arc::clone(known),
                _ => {
                    let fresh: Arc<str> = Arc::from(name);
                    *last = Some(Arc::clone(&fresh));
                    fresh
                }
            }
        })
        .unwrap_or_else(|_| Arc::from(name))
}

/// A tool call in flight, from [`McpClient::start_tool`]. Waiting on it follows what
/// [`McpClient::call_tool`] follows: 2026-07-28 input rounds, and a task the server runs the
/// call as (polled within the call's deadline, cancelled on the server when the deadline
/// passes or the call is cancelled).
#[derive(Debug)]
pub struct ToolCall {
    client: McpClient,
    name: Arc<str>,
    handle: CallHandle,
    session: Arc<Session>,
    again: Again,
    started: Instant,
    /// The first request was sent again after a version refusal / a header mismatch.
    resent_version: bool,
    resent_headers: bool,
    task: Option<Box<TaskWait>>,
    cancelled: AtomicBool,
    finished: bool,
    /// The call's client span, ended with its outcome.
    span: Option<Box<crate::telemetry::Span>>,
    /// An `input_required` result is the call's outcome (see [`McpClient::start_tool_passing`]).
    pub(super) pass_rounds: bool,
}

impl ToolCall {
    pub(super) fn start(
        client: &McpClient,
        name: &str,
        session: Arc<Session>,
        stamped: Value,
        options: CallOptions,
        rounds: Rounds,
    ) -> Result<ToolCall> {
        let started = Instant::now();
        let mut rounds = rounds;
        let mut span = rounds.span.take().map(Box::new);
        let stateless = session.is_stateless();
        let handle = if stateless {
            // The params as sent are kept for the input rounds and a refusal's second sending,
            // without a copy (see `Rounds`).
            let (handle, kept) =
                session
                    .rpc
                    .start_keeping(methods::TOOLS_CALL, stamped, options)?;
            rounds.params = Some(kept);
            handle
        } else {
            session.rpc.start(methods::TOOLS_CALL, stamped, options)?
        };
        if let Some(span) = &mut span {
            span.set(
                super::traced::REQUEST_ID,
                super::traced::request_id(handle.id()),
            );
        }
        Ok(ToolCall {
            client: client.clone(),
            name: shared_name(name),
            handle,
            session,
            again: Again::new(rounds, stateless),
            started,
            resent_version: false,
            resent_headers: false,
            task: None,
            cancelled: AtomicBool::new(false),
            finished: false,
            span,
            pass_rounds: false,
        })
    }

    /// Waits for the result, answers the server's input requests when it asks for any (each
    /// round a new request), follows the task the call may become, and checks the result as
    /// [`McpClient::call_tool`] does.
    ///
    /// # Errors
    ///
    /// As [`McpClient::call_tool`], plus [`Error::Cancelled`] after a cancel.
    pub fn wait(mut self) -> Result<CallToolResult> {
        loop {
            if let Some(outcome) = self.wait_timeout(Duration::from_secs(3600)) {
                return outcome;
            }
        }
    }

    /// Waits at most `limit` for the checked result; `None` while the call (or its task) is
    /// still running. Progress callbacks run on this thread meanwhile. Once a 2026-07-28
    /// server asks for input, the input rounds are followed to their end here, each within
    /// the call's own deadline, whatever `limit` says.
    pub fn wait_timeout(&mut self, limit: Duration) -> Option<Result<CallToolResult>> {
        let outcome = self.wait_timeout_untraced(limit);
        self.end_span(outcome.as_ref());
        outcome
    }

    /// Ends the call's span once its outcome is known.
    fn end_span(&mut self, outcome: Option<&Result<CallToolResult>>) {
        let Some(outcome) = outcome else { return };
        let Some(mut span) = self.span.take().map(|span| *span) else {
            return;
        };
        match outcome {
            Ok(result) if result.is_error => {
                span.fail(super::traced::TOOL_ERROR, "the tool reported an error");
            }
            Ok(_) => {}
            Err(error) => super::traced::fail(&mut span, error),
        }
    }

    fn wait_timeout_untraced(&mut self, limit: Duration) -> Option<Result<CallToolResult>> {
        let until = Instant::now() + limit;
        loop {
            if self.finished {
                return Some(Err(Error::Protocol(
                    "the call's outcome was already taken".into(),
                )));
            }
            if self.cancelled.load(Ordering::SeqCst) {
                self.finished = true;
                return Some(Err(Error::Cancelled {
                    method: methods::TOOLS_CALL.into(),
                }));
            }
            if let Some(task) = &mut self.task {
                let outcome = task.step(&self.session, until)?;
                let task_id = task.task().task_id.clone();
                self.finished = true;
                return Some(outcome.and_then(|value| {
                    let mut result = self.client.finish_tool_result(&self.name, value)?;
                    result.task_id = Some(task_id);
                    Ok(result)
                }));
            }
            let left = until.saturating_duration_since(Instant::now());
            let outcome = self.handle.wait_timeout(left)?;
            if let Some(done) = self.first_outcome(outcome) {
                self.finished = true;
                return Some(done);
            }
        }
    }

    /// Waits for the checked result, or until one of `stops` fires (see
    /// [`CallHandle::wait_or`]), whichever comes first: `None` when a stop fired (the call
    /// keeps running: [`ToolCall::cancel`] it if it is no longer wanted). As
    /// [`ToolCall::wait_timeout`] otherwise, and never past the call's deadline (plus the
    /// client's backstop); the stops are waited on together with the answer, and with a
    /// task's status notices when the call became a task.
    pub fn wait_or(&mut self, stops: &[&Receiver<()>]) -> Option<Result<CallToolResult>> {
        let outcome = self.wait_or_untraced(stops);
        self.end_span(outcome.as_ref());
        outcome
    }

    fn wait_or_untraced(&mut self, stops: &[&Receiver<()>]) -> Option<Result<CallToolResult>> {
        loop {
            if self.finished {
                return Some(Err(Error::Protocol(
                    "the call's outcome was already taken".into(),
                )));
            }
            if self.cancelled.load(Ordering::SeqCst) {
                self.finished = true;
                return Some(Err(Error::Cancelled {
                    method: methods::TOOLS_CALL.into(),
                }));
            }
            if let Some(task) = &mut self.task {
                let outcome = task.step_or(&self.session, None, stops)?;
                let task_id = task.task().task_id.clone();
                self.finished = true;
                return Some(outcome.and_then(|value| {
                    let mut result = self.client.finish_tool_result(&self.name, value)?;
                    result.task_id = Some(task_id);
                    Ok(result)
                }));
            }
            let outcome = self.handle.wait_or(stops)?;
            if let Some(done) = self.first_outcome(outcome) {
                self.finished = true;
                return Some(done);
            }
        }
    }

    /// What the first request's outcome means: the result, a task to follow (`None`), or a
    /// refusal to answer by sending it again (`None`).
    fn first_outcome(&mut self, outcome: Result<Value>) -> Option<Result<CallToolResult>> {
        let value = match outcome {
            Err(error) => return self.resend(error).err().map(Err),
            Ok(value) => value,
        };
        let value = match check_result_type(&value) {
            Err(error) => return Some(Err(error)),
            Ok(ResultType::InputRequired) if self.pass_rounds => {
                // Handed back as the server sent it: whoever passes rounds on answers them.
                return Some(Ok(CallToolResult {
                    raw: value,
                    ..CallToolResult::default()
                }));
            }
            Ok(ResultType::InputRequired) => {
                let (client, session) = (&self.client, &self.session);
                // A handshake session has nothing to ask again with: `follow_rounds` refuses
                // the result for its era.
                let none = Rounds {
                    params: None,
                    options: CallOptions::default(),
                    level: None,
                    span: None,
                };
                let rounds = match &self.again {
                    Again::Rounds(rounds) => rounds,
                    Again::Handshake => &none,
                };
                match client
                    .inner
                    .follow_rounds(session, methods::TOOLS_CALL, rounds, value)
                {
                    Ok(value) => value,
                    Err(error) => return Some(Err(error)),
                }
            }
            Ok(_) => value,
        };
        match created_task(self.session.info.era, &value) {
            Err(error) => Some(Err(error)),
            Ok(Some(task)) if self.pass_rounds && self.session.is_stateless() => {
                // Handed back as the server sent it: whoever passes rounds on passes the
                // task on too (its client follows it).
                Some(Ok(CallToolResult {
                    raw: value,
                    task_id: Some(task.task_id),
                    ..CallToolResult::default()
                }))
            }
            Ok(Some(task)) => {
                let deadlines = match &self.again {
                    Again::Rounds(rounds) => {
                        TaskDeadlines::from_options(&self.client, self.started, &rounds.options)
                    }
                    // The one request's own, as the client resolved them.
                    Again::Handshake => TaskDeadlines {
                        timeout: self.handle.timing().timeout,
                        hard: self.handle.timing().hard_deadline,
                    },
                };
                self.task = Some(Box::new(TaskWait::new(
                    &self.client,
                    task,
                    self.started,
                    deadlines,
                )));
                None
            }
            Ok(None) => Some(self.client.finish_tool_result(&self.name, value)),
        }
    }

    /// Sends the first request again, once, when a stateless server refused it for its
    /// version (naming it among those it supports) or for its `Mcp-Param-*` headers (after
    /// listing the tools again); any other error is the call's.
    fn resend(&mut self, error: Error) -> Result<()> {
        let Again::Rounds(rounds) = &mut self.again else {
            return Err(error);
        };
        let Some(original) = rounds.params.as_ref() else {
            return Err(error);
        };
        let mismatch = error.rpc().is_some_and(|rpc| rpc.code == HEADER_MISMATCH);
        let mut options = rounds.options.clone();
        if !self.resent_version && refused_for_stateless(&error) {
            self.resent_version = true;
        } else if !self.resent_headers && mismatch {
            self.resent_headers = true;
            log::debug!(
                "toolwire: `{}` was refused for its headers ({error}); listing the tools again",
                self.name
            );
            self.client.refresh_tools()?;
            options.meta.param_headers =
                self.client
                    .param_headers(&self.session, &self.name, original)?;
            rounds.options = options.clone();
        } else {
            return Err(error);
        }
        log::debug!(
            "toolwire: `{}` was refused ({error}); sending it again",
            self.name
        );
        // Sent again as it was sent (stamping is the same again), and kept again.
        let original = rounds.params.take().unwrap_or(Value::Null);
        let params = self
            .session
            .stamp(methods::TOOLS_CALL, original, rounds.level.as_deref());
        let (handle, kept) =
            self.session
                .rpc
                .start_keeping(methods::TOOLS_CALL, params, options)?;
        self.handle = handle;
        rounds.params = Some(kept);
        Ok(())
    }

    /// Cancels the call: the server is told (`notifications/cancelled` for the request, or
    /// `tasks/cancel` for the task it became; the task's work may go on, the server decides);
    /// progress and a response that arrive later are ignored. Returns false when it had
    /// already completed.
    pub fn cancel(&self) -> bool {
        if self.finished || self.cancelled.load(Ordering::SeqCst) {
            return false;
        }
        match &self.task {
            Some(task) => {
                self.cancelled.store(true, Ordering::SeqCst);
                task.cancel();
                true
            }
            None => {
                let told = self.handle.cancel();
                if told {
                    self.cancelled.store(true, Ordering::SeqCst);
                }
                told
            }
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The task the call runs as, as last seen, once the server has made it one.
    pub fn task(&self) -> Option<&Task> {
        self.task.as_deref().map(TaskWait::task)
    }

    /// The request's id (of the first round).
    pub fn id(&self) -> &RequestId {
        self.handle.id()
    }

    /// The call's current deadline (of the first round).
    pub fn deadline(&self) -> Instant {
        self.handle.deadline()
    }

    /// The underlying call handle of the first request, to poll or select over. A result
    /// obtained through it has not been checked (nor followed as a task): pass it to
    /// [`McpClient::check_tool_result`], or use [`ToolCall::wait_timeout`].
    pub fn handle(&mut self) -> &mut CallHandle {
        &mut self.handle
    }
}

impl Drop for ToolCall {
    fn drop(&mut self) {
        // A task left behind would run on unwatched: tell the server, as a dropped handle
        // does for a request.
        if !self.finished && !self.cancelled.load(Ordering::SeqCst) {
            if let Some(task) = &self.task {
                log::debug!(
                    "toolwire: the call of `{}` was dropped while its task ran; cancelling it",
                    self.name
                );
                task.cancel();
            }
        }
    }
}
