//! The JSON-RPC client: ids, the pending table, deadlines, and inbound dispatch.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Sender};
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::error::{Closed, Error, Result};
use crate::timer::{Expire, TimerKey, TimerWheel};
use crate::transport::{Inbound, Outgoing, OutgoingKind, Transport, TransportEvent};
use crate::wire::{
    self, ErrorCode, ErrorObject, Frame, Invalid, Message, Notification, ParseError, Request,
    RequestId, Response,
};

mod config;
mod dispatch;
mod handle;
mod pending;

use pending::PendingTable;

pub use config::{
    CallOptions, ClientConfig, NotificationHandler, Progress, ProgressCallback, RequestHandler,
};
pub use handle::{CallEvent, CallHandle};

use handle::Timing;

/// The method of progress notifications, which the client routes to the waiting caller.
pub const PROGRESS_METHOD: &str = "notifications/progress";
/// The method of cancellation notifications, sent when a request is given up.
pub const CANCELLED_METHOD: &str = "notifications/cancelled";

/// A JSON-RPC 2.0 client over any [`Transport`].
///
/// Cheap to clone (an `Arc` inside); every clone shares the connection, so many threads can
/// call at once. See the crate documentation for threads, timeouts and errors.
#[derive(Clone)]
pub struct Client {
    // Declared first so it drops first, while `inner` is still alive.
    owner: Arc<Owner>,
    inner: Arc<Inner>,
}

/// Held only by what the user holds (clients and call handles), never by our own threads:
/// when the last one goes, the connection closes on the user's thread, so dropping the last
/// clone has reaped the child by the time it returns.
pub(crate) struct Owner(Weak<Inner>);

impl Drop for Owner {
    fn drop(&mut self) {
        if let Some(inner) = self.0.upgrade() {
            if inner.closed.lock().is_none() {
                log::debug!("toolwire: client dropped without close(); closing it now");
            }
            inner.shut_down("the client was dropped");
        }
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("transport", &self.inner.transport.describe())
            .field("stats", &self.stats())
            .finish()
    }
}

/// One entry of a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchEntry {
    /// A request; its outcome appears in the batch's results, in order.
    Request {
        /// The method.
        method: String,
        /// The params (`Value::Null` for none).
        params: Value,
    },
    /// A notification; it has no outcome.
    Notification {
        /// The method.
        method: String,
        /// The params (`Value::Null` for none).
        params: Value,
    },
}

/// A snapshot of a client's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages queued to the peer (requests, notifications, responses; a batch counts once).
    /// A message is counted before its hand-off to the transport (and taken back if the
    /// transport refuses it), so everything the peer has seen is already in the count.
    pub sent: u64,
    /// Frames received from the peer (a batch counts once).
    pub received: u64,
    /// Requests waiting for their response right now.
    pub in_flight: usize,
    /// Requests that hit their deadline.
    pub timeouts: u64,
    /// Requests cancelled by their caller (including handles dropped before completion).
    pub cancels: u64,
    /// Responses for an id that is unknown or already completed; counted and dropped.
    pub late_responses: u64,
    /// Frames that were not JSON or not a valid message; counted and dropped.
    pub skipped_lines: u64,
    /// Frames over the size limit, discarded by the transport.
    pub oversized_frames: u64,
}

#[derive(Default)]
struct Counters {
    sent: AtomicU64,
    received: AtomicU64,
    timeouts: AtomicU64,
    cancels: AtomicU64,
    late_responses: AtomicU64,
    skipped_lines: AtomicU64,
    oversized_frames: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// What the pending table holds for one request.
struct Pending {
    tx: Sender<CallEvent>,
    method: Arc<str>,
    timer: Option<TimerKey>,
    started: Instant,
    forward_progress: bool,
    /// The timeout and the hard deadline, when progress resets the deadline.
    reset: Option<(Duration, Instant)>,
}

pub(crate) struct Inner {
    transport: Arc<dyn Transport>,
    pending: Mutex<PendingTable<Pending>>,
    next_id: AtomicI64,
    timer: TimerWheel,
    config: ClientConfig,
    counters: Counters,
    closed: Mutex<Option<Closed>>,
    dispatch: dispatch::Dispatcher,
    self_ref: Weak<Inner>,
}

impl Client {
    /// Starts a client over `transport` with default settings.
    ///
    /// # Errors
    ///
    /// When the transport cannot start.
    pub fn new(transport: impl Transport) -> Result<Client> {
        Client::with_config(transport, ClientConfig::default())
    }

    /// Starts a client over `transport`.
    ///
    /// # Errors
    ///
    /// When the transport cannot start or a thread cannot be spawned.
    pub fn with_config(transport: impl Transport, config: ClientConfig) -> Result<Client> {
        Client::with_shared_transport(Arc::new(transport), config)
    }

    /// Starts a client over a transport the caller keeps a handle to.
    ///
    /// # Errors
    ///
    /// When the transport cannot start or a thread cannot be spawned.
    pub fn with_shared_transport(
        transport: Arc<dyn Transport>,
        config: ClientConfig,
    ) -> Result<Client> {
        let timer = config.timer.clone().unwrap_or_else(TimerWheel::global);
        let dispatch = dispatch::Dispatcher::start(&config)?;
        let inner = Arc::new_cyclic(|self_ref| Inner {
            transport,
            pending: Mutex::new(PendingTable::default()),
            next_id: AtomicI64::new(1),
            timer,
            config,
            counters: Counters::default(),
            closed: Mutex::new(None),
            dispatch,
            self_ref: self_ref.clone(),
        });
        inner.dispatch.attach(Arc::downgrade(&inner));
        let link: Arc<dyn Inbound> = Arc::new(Link(Arc::downgrade(&inner)));
        if let Err(error) = inner.transport.start(link) {
            inner.shut_down("the transport failed to start");
            return Err(error);
        }
        Ok(Client {
            owner: Arc::new(Owner(Arc::downgrade(&inner))),
            inner,
        })
    }

    /// Sends a request and blocks until its response, its deadline, or the connection's end.
    /// `params` of `Value::Null` sends no params.
    ///
    /// # Errors
    ///
    /// [`Error::Rpc`] when the peer answers with an error object, [`Error::Timeout`],
    /// [`Error::Closed`], [`Error::Busy`], or [`Error::Config`] for params that are neither an
    /// object nor an array.
    pub fn call(&self, method: &str, params: Value) -> Result<Value> {
        self.start(method, params, CallOptions::default())?.wait()
    }

    /// [`Client::call`] with options: timeout, max total, reset on progress, a progress
    /// callback (run on this thread).
    ///
    /// # Errors
    ///
    /// As [`Client::call`].
    pub fn call_with(&self, method: &str, params: Value, options: CallOptions) -> Result<Value> {
        self.start(method, params, options)?.wait()
    }

    /// Sends a request and returns at once with a handle to wait on, poll, cancel, or select
    /// over.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`], [`Error::Busy`], [`Error::Config`] for bad params, or a send that
    /// could not be queued before the call's deadline ([`Error::Timeout`]).
    pub fn start(&self, method: &str, params: Value, options: CallOptions) -> Result<CallHandle> {
        let inner = &self.inner;
        inner.check_open()?;
        let id = RequestId::Number(inner.next_id.fetch_add(1, Ordering::Relaxed));
        let wants_progress = options.attaches_progress_token();
        let params = prepare_params(params, wants_progress.then_some(&id))?;
        let request = Request {
            id: id.clone(),
            method: method.to_owned(),
            params,
        };
        let line = wire::to_line(&Message::Request(request));
        let (handle, deadline) = inner.register(&self.owner, id.clone(), method, options)?;
        let outgoing = Outgoing {
            line,
            kind: OutgoingKind::Request {
                id: id.clone(),
                method: method.to_owned(),
            },
        };
        match inner.send_for_request(&id, method, outgoing, deadline) {
            Ok(()) => Ok(handle),
            // The queue stayed full, and the call's own deadline (or a close) completed it
            // before the send gave up: that outcome, already on its way to the handle, is the
            // call's.
            Err(error @ Error::Busy { .. }) => handle.wait().and(Err(error)),
            Err(error) => Err(error),
        }
    }

    /// Sends a notification (no response).
    ///
    /// # Errors
    ///
    /// [`Error::Closed`], [`Error::Config`] for bad params, or [`Error::Busy`] when the send
    /// queue stays full for the client's request timeout.
    pub fn notify(&self, method: &str, params: Value) -> Result<()> {
        self.inner.check_open()?;
        let params = prepare_params(params, None)?;
        let line = wire::to_line(&Message::Notification(Notification {
            method: method.to_owned(),
            params,
        }));
        let deadline = Instant::now() + self.inner.config.request_timeout;
        self.inner.send(
            Outgoing {
                line,
                kind: OutgoingKind::Notification {
                    method: method.to_owned(),
                },
            },
            Some(deadline),
        )
    }

    /// Sends a batch in one frame and waits for every request's outcome. Results come back in
    /// the order of the batch's requests (notifications have none), whatever order the peer
    /// answers in.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for an empty batch or bad params; the connection errors of
    /// [`Client::start`]. Per-request failures are inside the returned vector.
    pub fn batch(
        &self,
        entries: Vec<BatchEntry>,
        options: CallOptions,
    ) -> Result<Vec<Result<Value>>> {
        let inner = &self.inner;
        if entries.is_empty() {
            return Err(Error::Config("a batch must not be empty".into()));
        }
        inner.check_open()?;
        let mut messages = Vec::with_capacity(entries.len());
        let mut handles = Vec::new();
        let mut batch_deadline = Instant::now();
        let timeout = options.timeout;
        for entry in entries {
            let added = match entry {
                BatchEntry::Request { method, params } => {
                    prepare_params(params, None).and_then(|params| {
                        let id = RequestId::Number(inner.next_id.fetch_add(1, Ordering::Relaxed));
                        let entry_options = CallOptions {
                            timeout,
                            ..CallOptions::default()
                        };
                        let (handle, deadline) =
                            inner.register(&self.owner, id.clone(), &method, entry_options)?;
                        batch_deadline = batch_deadline.max(deadline);
                        handles.push(handle);
                        messages.push(Message::Request(Request { id, method, params }));
                        Ok(())
                    })
                }
                BatchEntry::Notification { method, params } => {
                    prepare_params(params, None).map(|params| {
                        messages.push(Message::Notification(Notification { method, params }));
                    })
                }
            };
            if let Err(error) = added {
                inner.release_unsent(handles);
                return Err(error);
            }
        }
        let outgoing = Outgoing {
            line: wire::batch_to_line(&messages),
            kind: OutgoingKind::Batch,
        };
        if let Err(error) = inner.send(outgoing, Some(batch_deadline)) {
            inner.release_unsent(handles);
            return Err(error);
        }
        Ok(handles.into_iter().map(CallHandle::wait).collect())
    }

    /// Closes the connection: fails every pending call with [`Error::Closed`], closes the
    /// transport (for stdio: stdin closed, then SIGTERM, then SIGKILL, each after its grace),
    /// and stops the dispatch thread. Idempotent and bounded in time.
    ///
    /// # Errors
    ///
    /// When the transport reports a failure while closing; the client is closed regardless.
    pub fn close(&self) -> Result<()> {
        self.inner.close_with("closed by the caller")
    }

    /// True once the connection is closed, by either side.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.lock().is_some()
    }

    /// Why the connection closed, once it has.
    pub fn closed_reason(&self) -> Option<Closed> {
        self.inner.closed.lock().clone()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let counters = &self.inner.counters;
        Stats {
            sent: counters.sent.load(Ordering::Relaxed),
            received: counters.received.load(Ordering::Relaxed),
            in_flight: self.inner.pending.lock().len(),
            timeouts: counters.timeouts.load(Ordering::Relaxed),
            cancels: counters.cancels.load(Ordering::Relaxed),
            late_responses: counters.late_responses.load(Ordering::Relaxed),
            skipped_lines: counters.skipped_lines.load(Ordering::Relaxed),
            oversized_frames: counters.oversized_frames.load(Ordering::Relaxed),
        }
    }

    /// The transport's description (e.g. the command line).
    pub fn describe(&self) -> String {
        self.inner.transport.describe()
    }
}

/// Checks params and, when asked, stamps `_meta.progressToken` with the request id.
impl Expire for Inner {
    /// The timer thread's batch of deadlines: one lock of the pending table for the batch, then
    /// each call completed in the order it was due.
    fn expire(&self, tokens: &[u64]) {
        let mut fired: Vec<(RequestId, Pending)> = Vec::with_capacity(tokens.len());
        {
            let mut pending = self.pending.lock();
            for &token in tokens {
                let id = RequestId::Number(token as i64);
                // Gone already: answered, cancelled or closed while the timer fired.
                if let Some(entry) = pending.remove(&id) {
                    fired.push((id, entry));
                }
            }
        }
        // Every notice of the batch first, then every wake-up: a caller woken by the first
        // outcome then finds the next ones already there instead of sleeping again between
        // them, and the writer takes the notices in one run.
        if self.config.cancel_on_timeout {
            for (id, pending) in &fired {
                self.cancel_on_wire(id, &pending.method, "timed out");
            }
        }
        for (id, pending) in &fired {
            self.wake_timed_out(id, pending);
        }
        // The entries (and their senders) go only now, after every caller of the batch is awake.
        drop(fired);
    }
}

fn prepare_params(params: Value, progress_token: Option<&RequestId>) -> Result<Option<Value>> {
    let mut params = match params {
        Value::Null => None,
        Value::Object(_) | Value::Array(_) => Some(params),
        other => {
            return Err(Error::Config(format!(
                "params must be an object or an array, not {}",
                wire::type_name(&other)
            )))
        }
    };
    if let Some(token) = progress_token {
        let object = params
            .get_or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| {
                Error::Config("progress needs params that are an object, not an array".into())
            })?;
        let meta = object.entry("_meta").or_insert_with(|| json!({}));
        let meta = meta
            .as_object_mut()
            .ok_or_else(|| Error::Config("params `_meta` must be an object".into()))?;
        meta.insert("progressToken".into(), token.to_value());
    }
    Ok(params)
}

impl Inner {
    fn check_open(&self) -> Result<()> {
        match &*self.closed.lock() {
            Some(closed) => Err(Error::Closed(Box::new(closed.clone()))),
            None => Ok(()),
        }
    }

    /// Enters a request in the pending table and schedules its deadline.
    fn register(
        &self,
        owner: &Arc<Owner>,
        id: RequestId,
        method: &str,
        options: CallOptions,
    ) -> Result<(CallHandle, Instant)> {
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
        let forward_progress = options.attaches_progress_token();
        // Calls that follow progress may receive many events; the others receive exactly one.
        let (tx, rx) = if forward_progress {
            unbounded()
        } else {
            bounded(1)
        };
        let method: Arc<str> = Arc::from(method);
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
                    tx,
                    method: Arc::clone(&method),
                    timer: Some(timer),
                    started,
                    forward_progress,
                    reset,
                },
            );
        }
        // A close between `check_open` and the insert would have missed this entry.
        if let Some(closed) = self.closed.lock().clone() {
            self.take_pending(&id);
            return Err(Error::Closed(Box::new(closed)));
        }
        let timing = Timing {
            deadline,
            timeout,
            hard_deadline: reset.map(|(_, hard)| hard),
        };
        let handle = CallHandle::new(
            self.self_ref
                .upgrade()
                .expect("the client is alive while it is called"),
            Arc::clone(owner),
            id,
            method,
            rx,
            timing,
            options.on_progress,
        );
        Ok((handle, deadline))
    }

    /// Queues a request's frame; on failure releases its pending entry.
    fn send_for_request(
        &self,
        id: &RequestId,
        method: &str,
        outgoing: Outgoing,
        deadline: Instant,
    ) -> Result<()> {
        match self.send(outgoing, Some(deadline)) {
            Ok(()) => Ok(()),
            Err(error) => {
                let started = self.take_pending(id).map(|pending| pending.started);
                match (error, started) {
                    // The queue stayed full until the deadline: that is this call's timeout.
                    (Error::Busy { .. }, Some(started)) => {
                        bump(&self.counters.timeouts);
                        Err(Error::Timeout {
                            method: method.to_owned(),
                            after: started.elapsed(),
                        })
                    }
                    (error, _) => Err(error),
                }
            }
        }
    }

    fn send(&self, outgoing: Outgoing, deadline: Option<Instant>) -> Result<()> {
        // Counted before the hand-off, so a peer that has already seen the frame (an in-memory
        // peer answers at once) never reads a count that leaves it out; taken back on failure.
        bump(&self.counters.sent);
        let sent = self.transport.send(outgoing, deadline);
        if sent.is_err() {
            self.counters.sent.fetch_sub(1, Ordering::Relaxed);
        }
        sent
    }

    /// Releases requests that never reached the peer: the peer has nothing to cancel and the
    /// caller did not cancel, so unlike dropping the handles this sends nothing and counts
    /// nothing.
    fn release_unsent(&self, handles: Vec<CallHandle>) {
        for handle in handles {
            self.take_pending(handle.id());
        }
    }

    /// Removes a pending entry and cancels its timer. Whoever gets `Some` completes the call.
    fn take_pending(&self, id: &RequestId) -> Option<Pending> {
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
            self.complete_timeout(id, pending);
        }
    }

    /// Completes a call whose deadline passed: tells the peer, then wakes the caller.
    fn complete_timeout(&self, id: &RequestId, pending: Pending) {
        // Queue the notice before waking the caller: a caller that closes right after its
        // timeout must not be able to close the connection before the notice is on its way.
        if self.config.cancel_on_timeout {
            self.cancel_on_wire(id, &pending.method, "timed out");
        }
        self.wake_timed_out(id, &pending);
    }

    /// Counts a timeout and hands the caller its outcome (its notice, if any, already queued).
    fn wake_timed_out(&self, id: &RequestId, pending: &Pending) {
        bump(&self.counters.timeouts);
        let after = pending.started.elapsed();
        log::debug!(
            "toolwire: `{}` (id {id}) timed out after {after:?}",
            pending.method
        );
        let _ = pending.tx.send(CallEvent::Done(Err(Error::Timeout {
            method: pending.method.to_string(),
            after,
        })));
    }

    /// The transport cannot deliver this request's response any more: fail its caller now.
    fn fail_request(&self, id: &RequestId, reason: String) {
        let Some(pending) = self.take_pending(id) else {
            return;
        };
        log::debug!("toolwire: `{}` (id {id}) failed: {reason}", pending.method);
        let error = std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            format!("`{}`: {reason}", pending.method),
        );
        let _ = pending.tx.send(CallEvent::Done(Err(Error::Io(error))));
    }

    /// The caller gave up: complete it with `Cancelled` and tell the peer. Returns false when
    /// the call had already completed.
    pub(crate) fn cancel(&self, id: &RequestId, reason: &str) -> bool {
        let Some(pending) = self.take_pending(id) else {
            return false;
        };
        bump(&self.counters.cancels);
        self.cancel_on_wire(id, &pending.method, reason);
        let _ = pending.tx.send(CallEvent::Done(Err(Error::Cancelled {
            method: pending.method.to_string(),
        })));
        true
    }

    fn cancel_on_wire(&self, id: &RequestId, method: &str, reason: &str) {
        // `initialize` must never be cancelled, and the probe is answered or abandoned as a
        // whole by the lifecycle code.
        if method == "initialize" || method == "server/discover" {
            return;
        }
        if self.transport.request_abandoned(id) || self.closed.lock().is_some() {
            return;
        }
        let line = wire::to_line(&Message::Notification(Notification {
            method: CANCELLED_METHOD.into(),
            params: Some(json!({"requestId": id.to_value(), "reason": reason})),
        }));
        let outgoing = Outgoing {
            line,
            kind: OutgoingKind::Notification {
                method: CANCELLED_METHOD.into(),
            },
        };
        // Never block here: this runs on the timer thread. A full queue loses the notice.
        if let Err(error) = self.send(outgoing, None) {
            log::debug!("toolwire: could not send {CANCELLED_METHOD} for id {id}: {error}");
        }
    }

    /// Marks the client closed (once) and fails every pending call at once.
    fn mark_closed(&self, closed: Closed) -> bool {
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
            let _ = pending.tx.send(CallEvent::Done(Err(Error::Closed(Box::new(
                closed.clone(),
            )))));
        }
        true
    }

    fn close_with(&self, reason: &str) -> Result<()> {
        self.mark_closed(Closed {
            reason: reason.into(),
            exit_status: None,
            stderr_tail: String::new(),
        });
        let result = self.transport.close();
        self.dispatch.stop(self.config.dispatch_join_grace);
        result
    }

    fn shut_down(&self, reason: &str) {
        if let Err(error) = self.close_with(reason) {
            log::warn!("toolwire: error while closing: {error}");
        }
    }

    // ---- inbound ----

    fn on_frame(&self, bytes: &[u8]) {
        bump(&self.counters.received);
        match wire::parse_frame(bytes) {
            Ok(Frame::Single(message)) => self.on_message(message),
            Ok(Frame::Batch(elements)) => {
                for element in elements {
                    match element {
                        Ok(message) => self.on_message(message),
                        Err(invalid) => self.on_invalid(invalid, bytes),
                    }
                }
            }
            Err(invalid) => self.on_invalid(invalid, bytes),
        }
    }

    fn on_invalid(&self, invalid: Invalid, bytes: &[u8]) {
        bump(&self.counters.skipped_lines);
        let excerpt = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
        match (&invalid.error, &invalid.id) {
            (ParseError::NotJson(_), _) => {
                log::debug!("toolwire: skipped a frame that is not JSON: {excerpt:?}");
            }
            (_, Some(id)) if invalid.method_present => {
                log::debug!(
                    "toolwire: invalid request {id} from the peer: {}",
                    invalid.error
                );
                self.reply(Response::error(
                    Some(id.clone()),
                    ErrorObject::new(ErrorCode::INVALID_REQUEST, invalid.error.to_string()),
                ));
            }
            (_, Some(id)) => {
                // A malformed response to one of our requests: its caller learns why at once.
                match self.take_pending(id) {
                    Some(pending) => {
                        log::warn!(
                            "toolwire: malformed response to `{}` (id {id}): {}",
                            pending.method,
                            invalid.error
                        );
                        let _ = pending.tx.send(CallEvent::Done(Err(Error::Protocol(format!(
                            "malformed response to `{}`: {}",
                            pending.method, invalid.error
                        )))));
                    }
                    None => log::debug!("toolwire: skipped a malformed message: {}", invalid.error),
                }
            }
            (_, None) if invalid.method_present => {
                // A request whose id cannot be read: JSON-RPC answers it with a null id.
                log::debug!("toolwire: invalid request from the peer: {}", invalid.error);
                self.reply(Response::error(
                    None,
                    ErrorObject::new(ErrorCode::INVALID_REQUEST, invalid.error.to_string()),
                ));
            }
            (_, None) => {
                log::debug!(
                    "toolwire: skipped an invalid message ({}): {excerpt:?}",
                    invalid.error
                );
            }
        }
    }

    fn on_message(&self, message: Message) {
        match message {
            Message::Response(response) => self.on_response(response),
            Message::Request(request) => self.dispatch.request(request, self),
            Message::Notification(notification) => {
                if notification.method == PROGRESS_METHOD && self.on_progress(&notification) {
                    return;
                }
                if let Some(tap) = &self.config.notification_tap {
                    tap(&notification);
                }
                self.dispatch.notification(notification);
            }
        }
    }

    fn on_response(&self, response: Response) {
        let Some(id) = response.id else {
            bump(&self.counters.late_responses);
            match response.payload {
                Err(error) => {
                    log::warn!("toolwire: the peer reported an error without an id: {error}")
                }
                Ok(_) => log::debug!("toolwire: dropped a result without an id"),
            }
            return;
        };
        match self.take_pending(&id) {
            Some(pending) => {
                let _ = pending.tx.send(CallEvent::Done(
                    response
                        .payload
                        .map_err(|error| Error::Rpc(Box::new(error))),
                ));
            }
            None => {
                bump(&self.counters.late_responses);
                log::debug!("toolwire: dropped a response for unknown or completed id {id}");
            }
        }
    }

    /// Routes a progress report to its caller. Returns false when the notification carries no
    /// usable token (it then goes to the user's handler); progress for a token that is not, or
    /// no longer, in flight is dropped quietly, as the protocol allows.
    fn on_progress(&self, notification: &Notification) -> bool {
        let Some(params) = wire::params_object(&notification.params) else {
            return false;
        };
        let Some(id) = params
            .get("progressToken")
            .and_then(|token| RequestId::from_value(token).ok())
        else {
            return false;
        };
        let progress = Progress {
            progress: params
                .get("progress")
                .and_then(Value::as_f64)
                .unwrap_or(0.0),
            total: params.get("total").and_then(Value::as_f64),
            message: params
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        let pending = self.pending.lock();
        let Some(entry) = pending.get(&id) else {
            // Progress after completion or cancel: ignored, as the protocol allows.
            log::trace!("toolwire: progress for a finished request {id} ignored");
            return true;
        };
        if !entry.forward_progress {
            return true;
        }
        if let (Some((timeout, hard)), Some(key)) = (entry.reset, entry.timer) {
            let deadline = (Instant::now() + timeout).min(hard);
            self.timer.reset(key, deadline);
        }
        let _ = entry.tx.send(CallEvent::Progress(progress));
        true
    }

    fn reply(&self, response: Response) {
        let line = wire::to_line(&Message::Response(response));
        let deadline = Instant::now() + self.config.request_timeout;
        if let Err(error) = self.send(
            Outgoing {
                line,
                kind: OutgoingKind::Response,
            },
            Some(deadline),
        ) {
            log::debug!("toolwire: could not send a response: {error}");
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.closed.get_mut().is_none() {
            log::debug!("toolwire: client dropped without close(); closing it now");
            self.shut_down("the client was dropped");
        }
    }
}

/// The transport's view of the client. Weak, so transport threads never keep it alive.
struct Link(Weak<Inner>);

impl Inbound for Link {
    fn frame(&self, bytes: &[u8]) {
        if let Some(inner) = self.0.upgrade() {
            inner.on_frame(bytes);
        }
    }

    fn event(&self, event: TransportEvent) {
        let Some(inner) = self.0.upgrade() else {
            return;
        };
        match event {
            TransportEvent::Oversized { bytes, limit } => {
                bump(&inner.counters.oversized_frames);
                log::warn!("toolwire: discarded a frame of {bytes} bytes (limit {limit})");
            }
            TransportEvent::Note(note) => log::debug!("toolwire: {note}"),
            TransportEvent::RequestFailed { id, reason } => inner.fail_request(&id, reason),
        }
    }

    fn closed(&self, closed: Closed) {
        if let Some(inner) = self.0.upgrade() {
            log::debug!("toolwire: {closed}");
            inner.mark_closed(closed);
        }
    }
}

/// Spawns a named thread, mapping failure to an error.
pub(crate) fn spawn_named<F>(name: &str, body: F) -> Result<JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    thread::Builder::new()
        .name(name.to_owned())
        .spawn(body)
        .map_err(Error::Io)
}
