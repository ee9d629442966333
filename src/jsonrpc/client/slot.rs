//! Where a call's outcome waits for its caller: a small slot shared by the pending entry and
//! the call's handle, not a channel per call.
//!
//! Whoever removes the pending entry (response, timer, cancel, close: remove-wins, so exactly
//! one of them) puts the outcome in the slot and wakes the caller parked on it. A slot is a
//! lock, a condition variable and the outcome inline, under 100 bytes where a channel takes
//! several hundred (benches/memory.rs measures both in one run), and nothing is allocated to
//! complete a call. Calls that follow progress queue their reports in it (boxed, as few calls
//! have any) before the outcome. A channel exists only when
//! the handle's owner asks for one ([`super::CallHandle::receiver`], for `select!`): the
//! slot's events move into it, in order, and every later event goes to it.
//!
//! A [`CallSet`](super::CallSet) has one [`Mailbox`] for all its members: each member's
//! events arrive tagged with its key, in completion order.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, Sender};
use parking_lot::{Condvar, Mutex};

use super::handle::CallEvent;
use super::Progress;
use crate::error::{Error, Result};
use serde_json::Value;

/// What a wait on a slot or mailbox ended with.
pub(super) enum Waited<T> {
    /// An event.
    Event(T),
    /// The instant passed first.
    TimedOut,
    /// The completing side went away without an outcome.
    Gone,
}

/// One call's completion state.
pub(crate) struct CallSlot {
    state: Mutex<SlotState>,
    ready: Condvar,
    /// The outcome is in: the completing side's drop needs no lock.
    done: AtomicBool,
}

#[derive(Default)]
struct SlotState {
    /// How the call ended, once it has: one field for the three ends, as only one happens
    /// (10,000 calls in flight are 10,000 slots: this keeps a slot's allocation at 96 bytes).
    end: Option<End>,
    /// What only some calls need, boxed so the common slot stays small.
    extra: Option<Box<Extra>>,
}

/// How a call ended.
enum End {
    /// Its outcome, waiting to be taken.
    Outcome(Result<Value>),
    /// A timeout after this long, made into its `Error` by the caller when it takes it, with
    /// the method its handle knows: the completing side (the timer thread, for many calls at
    /// once) then allocates nothing for it, and the slot keeps no name.
    TimedOut(Duration),
    /// The completing side was dropped without an outcome.
    Gone,
}

impl SlotState {
    fn gone(&self) -> bool {
        matches!(self.end, Some(End::Gone))
    }
}

#[derive(Default)]
struct Extra {
    /// Progress reports not taken yet, oldest first.
    progress: VecDeque<Progress>,
    /// Set once a receiver was handed out: events go there instead.
    channel: Option<Sender<CallEvent>>,
}

impl CallSlot {
    pub(super) fn new() -> CallSlot {
        CallSlot {
            state: Mutex::new(SlotState::default()),
            ready: Condvar::new(),
            done: AtomicBool::new(false),
        }
    }

    /// Hands the caller an event. The outcome must come once, last.
    pub(super) fn put(&self, event: CallEvent) {
        let mut state = self.state.lock();
        if let CallEvent::Done(_) = event {
            self.done.store(true, Ordering::Release);
        }
        if let Some(channel) = state
            .extra
            .as_ref()
            .and_then(|extra| extra.channel.as_ref())
        {
            // A receiver that is gone (a handle dropped mid-flight) wants nothing more.
            let _ = channel.send(event);
            return;
        }
        match event {
            CallEvent::Progress(progress) => state
                .extra
                .get_or_insert_with(Box::default)
                .progress
                .push_back(progress),
            CallEvent::Done(outcome) => state.end = Some(End::Outcome(outcome)),
        }
        drop(state);
        self.ready.notify_one();
    }

    /// Completes the call with a timeout (`Error::Timeout` for `method`, after `after`).
    pub(super) fn put_timeout(&self, method: &str, after: Duration) {
        let mut state = self.state.lock();
        self.done.store(true, Ordering::Release);
        if let Some(channel) = state
            .extra
            .as_ref()
            .and_then(|extra| extra.channel.as_ref())
        {
            let _ = channel.send(CallEvent::Done(Err(timeout_error(method, after))));
            return;
        }
        state.end = Some(End::TimedOut(after));
        drop(state);
        self.ready.notify_one();
    }

    /// The completing side is dropped: a caller still waiting learns there will be no outcome.
    pub(super) fn release(&self) {
        if self.done.load(Ordering::Acquire) {
            return;
        }
        let mut state = self.state.lock();
        // An outcome put since `done` was read stays to be taken.
        if state.end.is_none() {
            state.end = Some(End::Gone);
        }
        // Disconnects a receiver handed out.
        if let Some(extra) = &mut state.extra {
            extra.channel = None;
        }
        drop(state);
        self.ready.notify_one();
    }

    /// The next event without blocking (`method`: the call's, for a timeout's error).
    pub(super) fn try_take(&self, method: &str) -> Waited<CallEvent> {
        let mut state = self.state.lock();
        match Self::take(&mut state, method) {
            Some(event) => Waited::Event(event),
            None if state.gone() => Waited::Gone,
            None => Waited::TimedOut,
        }
    }

    /// The next event, waiting until `until` at most (`method`: the call's, for a timeout's
    /// error).
    pub(super) fn wait_until(&self, method: &str, until: Instant) -> Waited<CallEvent> {
        let mut state = self.state.lock();
        loop {
            if let Some(event) = Self::take(&mut state, method) {
                return Waited::Event(event);
            }
            if state.gone() {
                return Waited::Gone;
            }
            if self.ready.wait_until(&mut state, until).timed_out() {
                return match Self::take(&mut state, method) {
                    Some(event) => Waited::Event(event),
                    None if state.gone() => Waited::Gone,
                    None => Waited::TimedOut,
                };
            }
        }
    }

    /// Progress first (it was reported before the outcome), then the outcome.
    fn take(state: &mut SlotState, method: &str) -> Option<CallEvent> {
        if let Some(progress) = state
            .extra
            .as_mut()
            .and_then(|extra| extra.progress.pop_front())
        {
            return Some(CallEvent::Progress(progress));
        }
        match state.end.take() {
            Some(End::Outcome(outcome)) => Some(CallEvent::Done(outcome)),
            Some(End::TimedOut(after)) => Some(CallEvent::Done(Err(timeout_error(method, after)))),
            Some(End::Gone) => {
                state.end = Some(End::Gone);
                None
            }
            None => None,
        }
    }

    /// A channel that carries this call's events from now on, those waiting here first
    /// (`method`: the call's, for a timeout's error).
    pub(super) fn open_channel(&self, method: &str) -> Receiver<CallEvent> {
        let (tx, rx) = unbounded();
        let mut state = self.state.lock();
        while let Some(event) = Self::take(&mut state, method) {
            let _ = tx.send(event);
        }
        if !state.gone() {
            state.extra.get_or_insert_with(Box::default).channel = Some(tx);
        }
        rx
    }
}

pub(super) fn timeout_error(method: &str, after: Duration) -> Error {
    Error::Timeout {
        method: method.to_owned(),
        after,
    }
}

/// The events of many calls, tagged with their keys, in the order they happened.
pub(crate) struct Mailbox {
    events: Mutex<VecDeque<(u64, CallEvent)>>,
    ready: Condvar,
}

impl Mailbox {
    pub(super) fn new() -> Mailbox {
        Mailbox {
            events: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
        }
    }

    pub(super) fn put(&self, key: u64, event: CallEvent) {
        self.events.lock().push_back((key, event));
        self.ready.notify_one();
    }

    pub(super) fn try_take(&self) -> Option<(u64, CallEvent)> {
        self.events.lock().pop_front()
    }

    /// The next event, waiting until `until` at most (`None`: as long as it takes).
    pub(super) fn wait_until(&self, until: Option<Instant>) -> Waited<(u64, CallEvent)> {
        let mut events = self.events.lock();
        loop {
            if let Some(event) = events.pop_front() {
                return Waited::Event(event);
            }
            match until {
                Some(until) => {
                    if self.ready.wait_until(&mut events, until).timed_out() {
                        return match events.pop_front() {
                            Some(event) => Waited::Event(event),
                            None => Waited::TimedOut,
                        };
                    }
                }
                None => self.ready.wait(&mut events),
            }
        }
    }
}
