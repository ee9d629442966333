//! Call handles: wait, poll, cancel, or select over a call in flight.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use serde_json::Value;

use super::config::{Progress, SharedProgress};
use super::slot::{CallSlot, Waited};
use super::{Inner, Owner};
use crate::error::{Error, Result};
use crate::sys;
use crate::wire::RequestId;

/// What a call's waiter receives: progress reports, then exactly one outcome.
#[derive(Debug)]
pub enum CallEvent {
    /// A progress report (only for calls that asked for progress).
    Progress(Progress),
    /// The outcome; nothing follows it.
    Done(Result<Value>),
}

/// The deadlines of one call, as its waiter sees them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    pub(crate) deadline: Instant,
    pub(crate) timeout: Duration,
    /// Set when progress resets the deadline: the limit it can never pass.
    pub(crate) hard_deadline: Option<Instant>,
}

/// A request in flight, returned by [`crate::Client::start`].
///
/// Wait for it ([`CallHandle::wait`], [`CallHandle::wait_timeout`]), poll it
/// ([`CallHandle::try_result`]), cancel it ([`CallHandle::cancel`]), or select over many with
/// [`CallHandle::receiver`] and [`CallHandle::on_event`]. Dropping an unfinished handle cancels
/// the request (the peer is told).
pub struct CallHandle {
    /// Keeps the connection open while the handle lives, even if every client clone is gone.
    /// Declared first so it drops first, while `inner` is still alive.
    _owner: Arc<Owner>,
    inner: Arc<Inner>,
    id: RequestId,
    method: Arc<str>,
    /// Where the call's events wait; the handle parks on it.
    slot: Arc<CallSlot>,
    /// Made only when [`CallHandle::receiver`] is asked for (boxed: few calls ask); from then
    /// on the events go there.
    rx: OnceLock<Box<Receiver<CallEvent>>>,
    timing: Timing,
    on_progress: Option<SharedProgress>,
    finished: bool,
}

impl std::fmt::Debug for CallHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallHandle")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("finished", &self.finished)
            .finish()
    }
}

impl CallHandle {
    pub(crate) fn new(
        inner: Arc<Inner>,
        owner: Arc<Owner>,
        id: RequestId,
        method: Arc<str>,
        slot: Arc<CallSlot>,
        timing: Timing,
        on_progress: Option<SharedProgress>,
    ) -> CallHandle {
        CallHandle {
            _owner: owner,
            inner,
            id,
            method,
            slot,
            rx: OnceLock::new(),
            timing,
            on_progress,
            finished: false,
        }
    }

    /// The request's id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The request's method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The call's timeout and hard deadline, as the client resolved them.
    pub(crate) fn timing(&self) -> &Timing {
        &self.timing
    }

    /// The current deadline (it moves when progress resets it).
    pub fn deadline(&self) -> Instant {
        self.timing.deadline
    }

    /// The channel of this call's events, to use with `crossbeam_channel::select!`. Pass what
    /// it yields to [`CallHandle::on_event`].
    ///
    /// A call has no channel until this is first asked for (a call is completed in place,
    /// without one): the channel is made then, the events already waiting move into it in
    /// order, and every later event goes to it. The handle's own waits read from it from then
    /// on, so mixing the two is fine.
    pub fn receiver(&self) -> &Receiver<CallEvent> {
        self.rx
            .get_or_init(|| Box::new(self.slot.open_channel(&self.method)))
    }

    /// Takes in one event from [`CallHandle::receiver`]: runs the progress callback and moves
    /// the deadline for progress, and returns the outcome for `Done`.
    pub fn on_event(&mut self, event: CallEvent) -> Option<Result<Value>> {
        match event {
            CallEvent::Progress(progress) => {
                self.timing.on_progress();
                run_progress_callback(self.on_progress.as_ref(), &progress, &self.method);
                None
            }
            CallEvent::Done(outcome) => {
                self.finished = true;
                Some(outcome)
            }
        }
    }

    /// Blocks until the outcome. Never blocks past the deadline plus the client's timer grace
    /// (zero by default: see [`crate::ClientConfig::timer_grace`]), even if the timer thread
    /// were stalled.
    ///
    /// # Errors
    ///
    /// As [`crate::Client::call`], plus [`Error::Cancelled`] after [`CallHandle::cancel`].
    pub fn wait(mut self) -> Result<Value> {
        loop {
            if let Some(outcome) = self.wait_until(None) {
                return outcome;
            }
        }
    }

    /// Waits at most `limit` for the outcome; `None` when the call is still running (it keeps
    /// running).
    pub fn wait_timeout(&mut self, limit: Duration) -> Option<Result<Value>> {
        self.wait_until(Some(Instant::now() + limit))
    }

    /// Waits for the outcome, or until one of `stops` fires (a message, or all its senders
    /// gone: a [`crate::harness::CancelFlag::signal`] fires so), whichever comes first; `None` when a
    /// stop fired first (the call keeps running: cancel it if it is no longer wanted). Waits
    /// on all of them at once, never looking at anything over and over, and never past the
    /// backstop of [`CallHandle::wait`].
    pub fn wait_or(&mut self, stops: &[&Receiver<()>]) -> Option<Result<Value>> {
        if self.finished {
            return Some(Err(Error::Protocol(
                "the call's outcome was already taken".into(),
            )));
        }
        let events = self.receiver().clone();
        loop {
            let mut select = crossbeam_channel::Select::new();
            let answer = select.recv(&events);
            for stop in stops {
                select.recv(stop);
            }
            match select.select_deadline(self.backstop()) {
                Ok(operation) if operation.index() == answer => match operation.recv(&events) {
                    Ok(event) => {
                        if let Some(outcome) = self.on_event(event) {
                            return Some(outcome);
                        }
                    }
                    Err(_) => return Some(self.disconnected()),
                },
                Ok(operation) => {
                    let stop = stops[operation.index() - 1];
                    let _ = operation.recv(stop);
                    return None;
                }
                Err(_) => {
                    if Instant::now() >= self.backstop() {
                        return Some(self.expire_here());
                    }
                }
            }
        }
    }

    /// The outcome if it is there, without blocking.
    pub fn try_result(&mut self) -> Option<Result<Value>> {
        loop {
            if self.finished {
                return None;
            }
            match self.try_next() {
                Waited::Event(event) => {
                    if let Some(outcome) = self.on_event(event) {
                        return Some(outcome);
                    }
                }
                Waited::TimedOut => {
                    if Instant::now() >= self.backstop() {
                        return Some(self.expire_here());
                    }
                    return None;
                }
                Waited::Gone => return Some(self.disconnected()),
            }
        }
    }

    /// Cancels the call: the waiter gets [`Error::Cancelled`] and the peer is sent
    /// `notifications/cancelled` (never for `initialize`). Returns false when the call had
    /// already completed; its outcome is then still there to wait for.
    pub fn cancel(&self) -> bool {
        self.inner.cancel(&self.id, "cancelled by the caller")
    }

    fn backstop(&self) -> Instant {
        self.timing.deadline + self.inner.config.timer_grace
    }

    /// Waits until the outcome, `limit`, or the backstop, whichever comes first.
    fn wait_until(&mut self, limit: Option<Instant>) -> Option<Result<Value>> {
        if self.finished {
            return Some(Err(Error::Protocol(
                "the call's outcome was already taken".into(),
            )));
        }
        loop {
            let backstop = self.backstop();
            let until = limit.map_or(backstop, |limit| limit.min(backstop));
            match self.next_until(until) {
                Waited::Event(event) => {
                    if let Some(outcome) = self.on_event(event) {
                        return Some(outcome);
                    }
                }
                Waited::TimedOut => {
                    if Instant::now() >= self.backstop() {
                        return Some(self.expire_here());
                    }
                    if limit.is_some_and(|limit| Instant::now() >= limit) {
                        return None;
                    }
                }
                Waited::Gone => return Some(self.disconnected()),
            }
        }
    }

    /// The backstop passed: release the call here (remove-wins), then take whichever outcome
    /// won, ours or one that arrived at the same moment.
    fn expire_here(&mut self) -> Result<Value> {
        log::debug!(
            "toolwire: `{}` (id {}) passed its deadline without the timer; releasing it",
            self.method,
            self.id
        );
        self.inner.expire_one(&self.id);
        loop {
            // Whoever removed the entry completes it right after; this cannot wait long.
            let until = Instant::now() + self.inner.config.completion_grace;
            match self.next_until(until) {
                Waited::Event(event) => {
                    if let Some(outcome) = self.on_event(event) {
                        return outcome;
                    }
                }
                Waited::TimedOut | Waited::Gone => return self.disconnected(),
            }
        }
    }

    /// The next event, from the slot, or from the channel once one was handed out.
    fn next_until(&self, until: Instant) -> Waited<CallEvent> {
        match self.rx.get() {
            None => self.slot.wait_until(&self.method, until),
            Some(rx) => match rx.recv_deadline(until) {
                Ok(event) => Waited::Event(event),
                Err(RecvTimeoutError::Timeout) => Waited::TimedOut,
                Err(RecvTimeoutError::Disconnected) => Waited::Gone,
            },
        }
    }

    /// The next event if one is there.
    fn try_next(&self) -> Waited<CallEvent> {
        match self.rx.get() {
            None => self.slot.try_take(&self.method),
            Some(rx) => match rx.try_recv() {
                Ok(event) => Waited::Event(event),
                Err(TryRecvError::Empty) => Waited::TimedOut,
                Err(TryRecvError::Disconnected) => Waited::Gone,
            },
        }
    }

    fn disconnected(&mut self) -> Result<Value> {
        self.finished = true;
        Err(Error::closed_because(format!(
            "`{}` was released without an outcome",
            self.method
        )))
    }
}

impl Timing {
    /// A progress report arrived: a deadline that progress resets moves, never past its hard
    /// limit.
    pub(crate) fn on_progress(&mut self) {
        if let Some(hard) = self.hard_deadline {
            self.deadline = (Instant::now() + self.timeout).min(hard);
        }
    }
}

/// Runs a call's progress callback on the waiting thread; a panic in it is caught and logged,
/// and the call goes on.
pub(crate) fn run_progress_callback(
    callback: Option<&SharedProgress>,
    progress: &Progress,
    method: &str,
) {
    if let Some(callback) = callback {
        sys::guard(&format!("the progress callback of `{method}`"), || {
            (callback.lock())(progress)
        });
    }
}

impl Drop for CallHandle {
    fn drop(&mut self) {
        if !self.finished && self.inner.cancel(&self.id, "the caller stopped waiting") {
            log::debug!(
                "toolwire: `{}` (id {}) dropped before completion; cancelled",
                self.method,
                self.id
            );
        }
    }
}
