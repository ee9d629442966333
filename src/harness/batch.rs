//! The several tool calls of one assistant message (parallel tool calls), handled as one.
//!
//! The calls are opened in their order on the caller's thread: each is read and checked, and
//! its first attempt is admitted at once or refused. So the admission rules are those of
//! single calls, applied in the message's order: the first calls take the free workers, a
//! call that finds none is `BUSY` there and then (never queued behind the others), and each
//! admitted attempt spends one unit of the budget. Then the calls still running are waited
//! for side by side, on short-lived scoped threads (one per waiting call but the last, which
//! the caller's thread takes), so retries and back-off of one call never hold up another; all
//! of them are joined before the replies are returned, in the calls' order, one per call.
//! The threads are named `toolwire-batch` (which fits Linux's 15-character thread names).

use std::thread;
use std::time::Instant;

use parking_lot::Mutex;

use super::audit::HARNESS_LOG_TARGET;
use super::outcome::{Outcome, Status};
use super::run::{FirstAttempt, OpenCall, Stage};
use super::shapes::{calls_of, mark_custom, CallShape, MessageReply, ToolReply};
use super::{CallSettings, Inner};
use crate::error::{Error, Result};

/// One call of the batch between its opening and its reply.
type Slot = Mutex<Option<(OpenCall, Option<FirstAttempt>)>>;

impl Inner {
    pub(crate) fn handle_all(
        &self,
        shape: CallShape,
        calls: &[&str],
        deadline: Option<Instant>,
        settings: &CallSettings,
    ) -> Vec<ToolReply> {
        let limit = self.config.max_calls_per_message;
        let mut contexts = Vec::with_capacity(calls.len());
        let mut slots: Vec<Slot> = Vec::with_capacity(calls.len());
        let mut waiting = Vec::new();
        for (index, raw) in calls.iter().enumerate() {
            let mut call = self.open_raw(shape, raw, settings);
            if index >= limit {
                call.stage = Stage::Decided(Outcome::new(
                    Status::Invalid,
                    format!(
                        "the message holds {} tool calls, more than the {limit} handled at \
                         once; this one (number {}) was not run. Make at most {limit} calls \
                         at a time",
                        calls.len(),
                        index + 1
                    ),
                ));
            }
            let first = match &call.stage {
                Stage::Decided(_) => None,
                Stage::Ready { tool, arguments } => match self.before_attempts(deadline) {
                    Some(outcome) => {
                        call.stage = Stage::Decided(outcome);
                        None
                    }
                    None => Some(self.admit(&call.context, tool, arguments, 1, deadline)),
                },
            };
            if call.may_wait(first.as_ref()) {
                waiting.push(index);
            }
            contexts.push(call.context.clone());
            slots.push(Mutex::new(Some((call, first))));
        }
        let outcomes: Vec<Mutex<Option<Outcome>>> =
            slots.iter().map(|_| Mutex::new(None)).collect();
        let complete = |index: usize| {
            let taken = slots[index].lock().take();
            if let Some((call, first)) = taken {
                let outcome = self.complete(call, deadline, first);
                *outcomes[index].lock() = Some(outcome);
            }
        };
        thread::scope(|scope| {
            let mut on_threads = Vec::new();
            // The last waiting call is the caller's own; the others get a thread each.
            let others = waiting.len().saturating_sub(1);
            for &index in &waiting[..others] {
                let complete = &complete;
                let spawned = thread::Builder::new()
                    .name("toolwire-batch".into())
                    .spawn_scoped(scope, move || complete(index));
                match spawned {
                    Ok(handle) => on_threads.push((index, handle)),
                    // Its call stays in its slot, and the caller's thread completes it below.
                    Err(error) => log::warn!(
                        target: HARNESS_LOG_TARGET,
                        "no thread for call {} of a batch ({error}); the caller's thread \
                         completes it after the others",
                        index + 1
                    ),
                }
            }
            for index in 0..slots.len() {
                if !on_threads.iter().any(|(taken, _)| *taken == index) {
                    complete(index);
                }
            }
            // Joined one by one (the scope alone waits for the closures, not for the threads
            // to be gone), so no thread of the batch outlives the call.
            for (index, handle) in on_threads {
                if handle.join().is_err() {
                    log::error!(
                        target: HARNESS_LOG_TARGET,
                        "the thread of call {} of a batch panicked",
                        index + 1
                    );
                }
            }
        });
        contexts
            .iter()
            .zip(outcomes)
            .map(|(context, outcome)| {
                // Only a panic inside the harness itself leaves a call without its outcome;
                // it is answered all the same.
                let outcome = outcome.into_inner().unwrap_or_else(|| {
                    Outcome::new(
                        Status::ToolError,
                        "the call could not be completed; the details were logged for the \
                         operator",
                    )
                });
                OpenCall::reply(context, shape, outcome)
            })
            .collect()
    }

    pub(crate) fn handle_message(
        &self,
        shape: CallShape,
        message: &str,
        deadline: Option<Instant>,
        settings: &CallSettings,
    ) -> Result<MessageReply> {
        let max = self.config.max_message_chars;
        // Counted no further than one past the limit, as a single call's size is.
        if message.len() > max && message.chars().take(max.saturating_add(1)).count() > max {
            return Err(Error::Protocol(format!(
                "the assistant message is more than {max} characters long (the limit of \
                 HarnessConfig::max_message_chars); nothing was run"
            )));
        }
        let calls = calls_of(shape, message).map_err(Error::Protocol)?;
        let mut replies = self.handle_all(shape, &calls, deadline, settings);
        mark_custom(shape, &calls, &mut replies);
        Ok(MessageReply { shape, replies })
    }
}
