//! Calls going out: registering a request with its deadline, sending it, and each way it can
//! end from our side (timeout, cancel, close). Whoever removes the pending entry first
//! completes the call, exactly once.
//!
//! A request is registered before its frame is handed to the transport, and the hand-off may
//! wait for room in a full send queue until the call's own deadline. The timer does not end a
//! call whose frame is still being handed over: it marks it overdue, and the caller, once the
//! transport has taken the frame or given up, ends it. So a call told it timed out is never
//! written afterwards, a frame the transport refused never gets a cancellation notice, and a
//! notice always follows its request (see [`Handoff`]).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::handle::Timing;
use super::notices::FLUSH_TOKEN;
use super::{bump, CallOptions, Inner, Pending, RareEntry, Sink};
use crate::error::{Closed, Error, Result};
use crate::timer::Expire;
use crate::transport::{OutFrame, Outgoing, Transport};
use crate::wire::{self, Message, Request, RequestId};

/// Where a request's frame is between its registration and the transport.
///
/// The queue may be full: the hand-off then waits until the call's deadline, and the timer
/// and the send giving up are due at the same instant. Had the timer ended the call, its
/// caller would have been told it timed out while the frame could still be queued after, and
/// the cancellation notice it owed could go out before the request it cancels, or for a
/// request the peer never saw. One side decides instead: the caller's, once the hand-off ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Handoff {
    /// The caller is handing the frame to the transport.
    Sending,
    /// As `Sending`, and the deadline passed meanwhile: the call times out when the hand-off
    /// ends, with its notice only if the transport took the frame.
    Overdue,
    /// The transport has the frame; the timer ends the call at its deadline.
    Done,
}

/// A request entered in the pending table.
pub(super) struct Registered {
    pub(super) id: RequestId,
    pub(super) method: Arc<str>,
    pub(super) timing: Timing,
}

/// A request registered and handed to the transport (or not: `outcome`).
pub(super) struct Started {
    pub(super) id: RequestId,
    pub(super) method: Arc<str>,
    pub(super) timing: Timing,
    pub(super) outcome: Result<()>,
    /// The params as sent (`Value::Null` for none), when asked to keep them.
    pub(super) kept: Option<Value>,
}

thread_local! {
    /// The method name this thread's last request was made with, shared by its calls: a
    /// thread calling one method over and over allocates its name once, not per call (the
    /// request's own `String` is the one allocation left).
    static LAST_METHOD: std::cell::RefCell<Option<Arc<str>>> = const { std::cell::RefCell::new(None) };
}

/// `method` as an `Arc<str>` for the pending entry and the handle.
fn shared_method(method: &str) -> Arc<str> {
    LAST_METHOD
        .try_with(|last| {
            let mut last = last.borrow_mut();
            match &*last {
                Some(known) if &**known == method => Arc::clone(known),
                _ => {
                    let fresh: Arc<str> = Arc::from(method);
                    *last = Some(Arc::clone(&fresh));
                    fresh
                }
            }
        })
        .unwrap_or_else(|_| Arc::from(method))
}

/// Checks that params are an object, an array, or absent (`Value::Null`).
pub(super) fn prepare_params(params: Value) -> Result<Option<Value>> {
    match params {
        Value::Null => Ok(None),
        Value::Object(_) | Value::Array(_) => Ok(Some(params)),
        other => Err(Error::Config(format!(
            "params must be an object or an array, not {}",
            wire::type_name(&other)
        ))),
    }
}

impl Expire for Inner {
    /// The timer thread's batch of deadlines: one lock of the pending table for the batch, then
    /// each call completed in the order it was due; the notices owed go out after (see
    /// `notices`).
    fn expire(&self, tokens: &[u64]) {
        let mut fired: Vec<(RequestId, Pending)> = Vec::with_capacity(tokens.len());
        let mut flush = false;
        {
            let mut pending = self.pending.lock();
            for &token in tokens {
                if token == FLUSH_TOKEN {
                    flush = true;
                    continue;
                }
                let id = RequestId::Number(token as i64);
                match pending.get_mut(&id) {
                    // Gone already: answered, cancelled or closed while the timer fired.
                    None => continue,
                    // Its caller is still handing the frame over and ends the call after.
                    Some(entry) if entry.handoff != Handoff::Done => {
                        entry.handoff = Handoff::Overdue;
                        entry.timer = None;
                        continue;
                    }
                    Some(_) => {}
                }
                if let Some(entry) = pending.remove(&id) {
                    fired.push((id, entry));
                }
            }
        }
        // The ids owed a notice are recorded before their callers wake, so that a caller that
        // sends or closes right after finds its notice owed and sends it first.
        self.owe_notices(fired.iter().map(|(id, pending)| (id, pending)), true);
        for (id, pending) in &fired {
            self.wake_timed_out(id, pending);
        }
        // The entries go only now, after every caller of the batch is awake.
        drop(fired);
        if flush {
            self.flush_notices();
        }
    }
}

impl Inner {
    pub(super) fn check_open(&self) -> Result<()> {
        match &*self.closed.lock() {
            Some(closed) => Err(Error::Closed(Box::new(closed.clone()))),
            None => Ok(()),
        }
    }

    fn take_id(&self) -> RequestId {
        RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Registers a request, then hands its frame to the transport; with `keep`, lent to it
    /// (see [`crate::transport::Transport::send_borrowed`]) and its params handed back.
    pub(super) fn begin(
        &self,
        method: &str,
        params: Value,
        options: CallOptions,
        sink: Sink,
        keep: bool,
    ) -> Result<Started> {
        self.check_open()?;
        let mut params = prepare_params(params)?;
        let id = self.take_id();
        if options.attaches_progress_token() {
            self.config.dialect.attach_progress(&mut params, &id)?;
        }
        let registered = self.register_id(id, method, &options, sink)?;
        let outgoing = Outgoing {
            frame: OutFrame::Single(Message::Request(Request {
                id: registered.id.clone(),
                method: method.to_owned(),
                params,
            })),
            meta: options.meta,
        };
        let deadline = registered.timing.deadline;
        let (outcome, kept) = if keep {
            let sent = self.send_borrowed(&outgoing, Some(deadline));
            let outcome = self.after_request_send(&registered.id, method, sent);
            let kept = match outgoing.frame {
                OutFrame::Single(Message::Request(request)) => request.params,
                _ => None,
            };
            (outcome, Some(kept.unwrap_or(Value::Null)))
        } else {
            let sent = self.send(outgoing, Some(deadline));
            (self.after_request_send(&registered.id, method, sent), None)
        };
        Ok(Started {
            id: registered.id,
            method: registered.method,
            timing: registered.timing,
            outcome,
            kept,
        })
    }

    /// Takes an id and enters a request in the pending table (for a batch entry).
    pub(super) fn register(
        &self,
        method: &str,
        options: &CallOptions,
        sink: Sink,
    ) -> Result<Registered> {
        let id = self.take_id();
        self.register_id(id, method, options, sink)
    }

    /// Enters a request in the pending table and schedules its deadline.
    fn register_id(
        &self,
        id: RequestId,
        method: &str,
        options: &CallOptions,
        sink: Sink,
    ) -> Result<Registered> {
        let started = Instant::now();
        let timeout = options.timeout.unwrap_or(self.config.request_timeout);
        let reset = options.reset_on_progress.then(|| {
            let max_total = options.max_total.unwrap_or(self.config.max_total_timeout);
            (timeout, started + max_total)
        });
        let deadline = match reset {
            Some((_, hard)) => (started + timeout).min(hard),
            None => started + timeout,
        };
        let method = shared_method(method);
        let token = match id {
            RequestId::Number(number) => number as u64,
            RequestId::String(_) => unreachable!("the client numbers its own requests"),
        };
        let target: Weak<dyn Expire> = self.self_ref.clone();
        let timer = self.timer.schedule_expiry(deadline, target, token);
        {
            let mut pending = self.pending.lock();
            if pending.len() >= self.config.max_in_flight {
                drop(pending);
                self.timer.cancel(timer);
                return Err(Error::Busy {
                    limit: self.config.max_in_flight,
                });
            }
            pending.insert(
                token as i64,
                Pending {
                    sink,
                    method: Arc::clone(&method),
                    timer: Some(timer),
                    started: u64::try_from(started.duration_since(self.epoch).as_nanos())
                        .unwrap_or(u64::MAX),
                    forward_progress: options.attaches_progress_token(),
                    notify_cancel: options.notify_cancel,
                    rare: reset.map(|reset| {
                        Box::new(RareEntry {
                            reset: Some(reset),
                            batch: None,
                        })
                    }),
                    raw: options.raw_result,
                    handoff: Handoff::Sending,
                },
            );
        }
        // A close between `check_open` and the insert would have missed this entry.
        if let Some(closed) = self.closed.lock().clone() {
            self.take_pending(&id);
            return Err(Error::Closed(Box::new(closed)));
        }
        Ok(Registered {
            id,
            method,
            timing: Timing {
                deadline,
                timeout,
                hard_deadline: reset.map(|(_, hard)| hard),
            },
        })
    }

    /// Marks the requests of one batch as a group, before the batch is sent.
    pub(super) fn join_batch(&self, group: &Arc<[RequestId]>) {
        let mut pending = self.pending.lock();
        for id in group.iter() {
            if let Some(entry) = pending.get_mut(id) {
                entry.rare.get_or_insert_with(Box::default).batch = Some(Arc::clone(group));
            }
        }
    }

    /// What a request's send means: on failure its pending entry is released; a call whose
    /// deadline passed while it was sent times out here.
    fn after_request_send(&self, id: &RequestId, method: &str, sent: Result<()>) -> Result<()> {
        let Some((entry, _)) = self.end_handoff(id, sent.is_ok()) else {
            // Sent in time, or completed meanwhile (answered, or the client closed).
            return sent;
        };
        match sent {
            Ok(()) => {
                self.time_out_sent(id, &entry);
                Ok(())
            }
            // The queue stayed full until the deadline: that is this call's timeout. The peer
            // never saw the request, so no notice is owed.
            Err(Error::Busy { .. }) => {
                bump(&self.counters.timeouts);
                Err(Error::Timeout {
                    method: method.to_owned(),
                    after: self.since(entry.started),
                })
            }
            Err(error) => Err(error),
        }
    }

    /// Ends the hand-off of a batch's requests: those whose deadline passed meanwhile time out
    /// now when the batch was sent; every entry is released when it was not (the batch fails
    /// as a whole, nothing counted).
    pub(super) fn after_batch_send(&self, ids: &[RequestId], sent: bool) {
        for id in ids {
            if let Some((entry, true)) = self.end_handoff(id, sent) {
                if sent {
                    self.time_out_sent(id, &entry);
                }
            }
        }
    }

    /// Ends a request's hand-off to the transport. Returns its entry, taken out of the table,
    /// when the call ends here: the send failed, or the deadline passed meanwhile (`true`).
    fn end_handoff(&self, id: &RequestId, sent: bool) -> Option<(Pending, bool)> {
        let entry = {
            let mut pending = self.pending.lock();
            let entry = pending.get_mut(id)?;
            let overdue = entry.handoff == Handoff::Overdue;
            entry.handoff = Handoff::Done;
            if sent && !overdue {
                return None;
            }
            (pending.remove(id)?, overdue)
        };
        if let Some(key) = entry.0.timer {
            self.timer.cancel(key);
        }
        Some(entry)
    }

    /// A request the transport took after its deadline passed: the peer has it, so the call
    /// times out now and its notice (if owed) goes out at once, after the frame.
    fn time_out_sent(&self, id: &RequestId, pending: &Pending) {
        self.owe_notices(std::iter::once((id, pending)), false);
        self.wake_timed_out(id, pending);
        self.flush_notices();
    }

    pub(super) fn send(&self, outgoing: Outgoing, deadline: Option<Instant>) -> Result<()> {
        self.counted_send(|transport| transport.send(outgoing, deadline))
    }

    /// [`Inner::send`] of a frame the caller keeps.
    fn send_borrowed(&self, outgoing: &Outgoing, deadline: Option<Instant>) -> Result<()> {
        self.counted_send(|transport| transport.send_borrowed(outgoing, deadline))
    }

    fn counted_send(&self, send: impl FnOnce(&dyn Transport) -> Result<()>) -> Result<()> {
        // The notices owed for calls that timed out go first, so that nothing a caller sends
        // after its timeout overtakes its notice.
        self.flush_notices();
        // Counted before the hand-off, so a peer that has already seen the frame (an in-memory
        // peer answers at once) never reads a count that leaves it out; taken back on failure.
        bump(&self.counters.sent);
        let sent = send(&*self.transport);
        if sent.is_err() {
            self.counters.sent.fetch_sub(1, Ordering::Relaxed);
        }
        sent
    }

    /// Releases requests that never reached the peer: the peer has nothing to cancel and the
    /// caller did not cancel, so unlike dropping the handles this sends nothing and counts
    /// nothing.
    pub(super) fn release_unsent(&self, handles: Vec<super::CallHandle>) {
        for handle in handles {
            self.take_pending(handle.id());
        }
    }

    /// Removes a pending entry and cancels its timer. Whoever gets `Some` completes the call.
    pub(super) fn take_pending(&self, id: &RequestId) -> Option<Pending> {
        let pending = self.pending.lock().remove(id)?;
        if let Some(key) = pending.timer {
            self.timer.cancel(key);
        }
        Some(pending)
    }

    /// The deadline passed without the timer (the caller's own backstop): release the call
    /// (remove-wins) and complete it with a timeout.
    pub(crate) fn expire_one(&self, id: &RequestId) {
        if let Some(pending) = self.take_pending(id) {
            // This runs on the caller's own thread (the timer was late or stalled): the
            // outcome goes in its slot, and the notice is sent right after, by the caller,
            // before it takes the outcome.
            self.owe_notices(std::iter::once((id, &pending)), false);
            self.wake_timed_out(id, &pending);
            self.flush_notices();
        }
    }

    /// How long ago a pending entry's `started` was.
    fn since(&self, started: u64) -> Duration {
        self.epoch
            .elapsed()
            .saturating_sub(Duration::from_nanos(started))
    }

    /// Counts a timeout and hands the caller its outcome (its notice, if any, already owed).
    fn wake_timed_out(&self, id: &RequestId, pending: &Pending) {
        bump(&self.counters.timeouts);
        let after = self.since(pending.started);
        log::debug!(
            "toolwire: `{}` (id {id}) timed out after {after:?}",
            pending.method
        );
        pending.sink.send_timeout(&pending.method, after);
    }

    /// The transport cannot deliver this request's response any more: fail its caller now.
    pub(super) fn fail_request(&self, id: &RequestId, error: Error) {
        let Some(pending) = self.take_pending(id) else {
            return;
        };
        log::debug!("toolwire: `{}` (id {id}) failed: {error}", pending.method);
        pending.sink.send(super::CallEvent::Done(Err(error)));
    }

    /// The caller gave up: complete it with `Cancelled` and tell the peer. Returns false when
    /// the call had already completed.
    pub(crate) fn cancel(&self, id: &RequestId, reason: &str) -> bool {
        let Some(pending) = self.take_pending(id) else {
            return false;
        };
        bump(&self.counters.cancels);
        self.cancel_on_wire(id, &pending, reason);
        pending
            .sink
            .send(super::CallEvent::Done(Err(Error::Cancelled {
                method: pending.method.to_string(),
            })));
        true
    }

    /// Tells the peer a request was given up: by the transport itself (a stream closed), or
    /// with the dialect's notice. Never for a call made with `notify_cancel` off.
    fn cancel_on_wire(&self, id: &RequestId, pending: &Pending, reason: &str) {
        if !pending.notify_cancel {
            return;
        }
        if self.transport.request_abandoned(id) || self.closed.lock().is_some() {
            return;
        }
        let Some(notice) = self.config.dialect.cancel_notice(id, reason) else {
            return;
        };
        let method = notice.method.clone();
        // Never block here: this runs on the timer thread. A full queue loses the notice.
        if let Err(error) = self.send(Outgoing::message(notice), None) {
            log::debug!("toolwire: could not send {method} for id {id}: {error}");
        }
    }

    /// Marks the client closed (once) and fails every pending call at once.
    pub(super) fn mark_closed(&self, closed: Closed) -> bool {
        {
            let mut state = self.closed.lock();
            if state.is_some() {
                return false;
            }
            *state = Some(closed.clone());
        }
        let drained: Vec<Pending> = self.pending.lock().drain();
        if !drained.is_empty() {
            log::debug!(
                "toolwire: failing {} pending call(s): {closed}",
                drained.len()
            );
        }
        for pending in drained {
            if let Some(key) = pending.timer {
                self.timer.cancel(key);
            }
            pending
                .sink
                .send(super::CallEvent::Done(Err(Error::Closed(Box::new(
                    closed.clone(),
                )))));
        }
        true
    }

    pub(super) fn close_with(&self, reason: &str) -> Result<()> {
        // The notices owed go out before the connection closes.
        self.flush_notices();
        self.mark_closed(Closed::new(reason));
        let result = self.transport.close();
        self.dispatch.stop(self.config.dispatch_join_grace);
        result
    }

    pub(super) fn shut_down(&self, reason: &str) {
        if let Err(error) = self.close_with(reason) {
            log::warn!("toolwire: error while closing: {error}");
        }
    }
}
