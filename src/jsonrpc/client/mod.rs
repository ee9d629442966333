//! The JSON-RPC client: ids, the pending table, deadlines, and inbound dispatch.
//!
//! Files: `outbound` (registering, sending, completing and cancelling calls), `inbound`
//! (frames from the transport: responses, progress, the peer's requests), `pending` (the
//! table of calls in flight), `slot` (where a call's outcome waits for its caller), `handle`
//! (waiting on one call), `set` (waiting on many in completion order), `dispatch` (the thread
//! that runs the peer's requests), `dialect` (the protocol conventions above JSON-RPC),
//! `config`.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

use crate::error::{Closed, Error, Result};
use crate::timer::{TimerKey, TimerWheel};
use crate::transport::{FrameMeta, Inbound, OutFrame, Outgoing, Scrubber, Transport};
use crate::wire::{Message, Notification, Request, RequestId, Response};

mod config;
mod dialect;
mod dispatch;
mod handle;
mod inbound;
mod notices;
mod outbound;
mod pending;
mod set;
mod slot;

use pending::PendingTable;
use slot::{CallSlot, Mailbox};

pub use config::{
    CallOptions, ClientConfig, NotificationHandler, PeerRequests, Progress, ProgressCallback,
    RequestHandler, RequestSink,
};
pub use dialect::{Dialect, PlainJsonRpc};
pub use handle::{CallEvent, CallHandle};
pub use set::CallSet;

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

/// Held only by what the user holds (clients, call handles, call sets), never by our own
/// threads: when the last one goes, the connection closes on the user's thread, so dropping
/// the last clone has reaped the child by the time it returns.
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
#[non_exhaustive]
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
    /// The peer's notifications dropped because the inbound queue was full.
    pub dropped_notifications: u64,
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

/// Where a call's events go: its own slot, or the mailbox of a [`CallSet`] with the member's
/// key. Either is shared with the waiting side; nothing is allocated to complete a call.
enum Sink {
    Own(Arc<CallSlot>),
    Set { mailbox: Arc<Mailbox>, key: u64 },
}

impl Sink {
    fn send(&self, event: CallEvent) {
        match self {
            Sink::Own(slot) => slot.put(event),
            Sink::Set { mailbox, key } => mailbox.put(*key, event),
        }
    }

    /// Completes the call with `Error::Timeout`; a call's own slot builds the error on the
    /// caller's side.
    fn send_timeout(&self, method: &Arc<str>, after: Duration) {
        match self {
            Sink::Own(slot) => slot.put_timeout(method, after),
            Sink::Set { mailbox, key } => mailbox.put(
                *key,
                CallEvent::Done(Err(slot::timeout_error(method, after))),
            ),
        }
    }
}

impl Drop for Sink {
    /// An entry dropped without an outcome (it never reached the peer) tells a caller that is
    /// still waiting, as a dropped channel sender did.
    fn drop(&mut self) {
        if let Sink::Own(slot) = self {
            slot.release();
        }
    }
}

/// What the pending table holds for one request.
struct Pending {
    sink: Sink,
    method: Arc<str>,
    timer: Option<TimerKey>,
    /// When the request was entered: nanoseconds after the client's `epoch` (8 bytes where an
    /// `Instant` takes 16; the table holds an entry per request in flight). 584 years fit.
    started: u64,
    forward_progress: bool,
    /// Whether giving the call up sends the dialect's cancellation notice.
    notify_cancel: bool,
    /// What only some requests need (progress that resets the deadline, a batch), boxed so
    /// the common entry stays small: the pending table holds one per request in flight.
    rare: Option<Box<RareEntry>>,
    /// The caller takes the result as JSON text (a `Value::String` holding it).
    raw: bool,
    /// Whether the frame has been handed to the transport yet: see [`outbound::Handoff`].
    handoff: outbound::Handoff,
}

/// The parts of a [`Pending`] entry only some requests have.
#[derive(Default)]
struct RareEntry {
    /// The timeout and the hard deadline, when progress resets the deadline.
    reset: Option<(Duration, Instant)>,
    /// The ids of the batch this request was sent in, if any: a batch reply that leaves it
    /// out fails it at once.
    batch: Option<Arc<[RequestId]>>,
}

impl Pending {
    /// The timeout and the hard deadline, when progress resets the deadline.
    fn reset(&self) -> Option<(Duration, Instant)> {
        self.rare.as_ref().and_then(|rare| rare.reset)
    }

    /// The ids of the batch this request was sent in, if any.
    fn batch(&self) -> Option<&Arc<[RequestId]>> {
        self.rare.as_ref().and_then(|rare| rare.batch.as_ref())
    }
}

pub(crate) struct Inner {
    transport: Arc<dyn Transport>,
    /// The transport's secrets: taken out of every error the peer sends, once, as it arrives.
    scrubber: Scrubber,
    pending: Mutex<PendingTable<Pending>>,
    next_id: AtomicI64,
    timer: TimerWheel,
    config: ClientConfig,
    counters: Counters,
    closed: Mutex<Option<Closed>>,
    dispatch: dispatch::Dispatcher,
    /// Cancellation notices owed for calls that timed out, sent after their callers woke.
    owed: notices::OwedNotices,
    /// The instant the pending entries' start times count from.
    epoch: Instant,
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
            scrubber: transport.scrubber(),
            transport,
            pending: Mutex::new(PendingTable::default()),
            next_id: AtomicI64::new(1),
            timer,
            config,
            counters: Counters::default(),
            closed: Mutex::new(None),
            dispatch,
            owed: notices::OwedNotices::default(),
            epoch: Instant::now(),
            self_ref: self_ref.clone(),
        });
        inner.dispatch.attach(Arc::downgrade(&inner));
        let link: Arc<dyn Inbound> = Arc::new(inbound::Link(Arc::downgrade(&inner)));
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
    /// callback (run on this thread), frame metadata.
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
        self.start_inner(method, params, options, false)
            .map(|(handle, _)| handle)
    }

    /// [`Client::start`] that hands back the params as sent (`Value::Null` for none) without
    /// copying them first, where the transport can send a frame it does not own.
    pub(crate) fn start_keeping(
        &self,
        method: &str,
        params: Value,
        options: CallOptions,
    ) -> Result<(CallHandle, Value)> {
        self.start_inner(method, params, options, true)
            .map(|(handle, kept)| (handle, kept.unwrap_or(Value::Null)))
    }

    fn start_inner(
        &self,
        method: &str,
        params: Value,
        options: CallOptions,
        keep: bool,
    ) -> Result<(CallHandle, Option<Value>)> {
        let slot = Arc::new(CallSlot::new());
        let on_progress = options.on_progress.clone();
        let started =
            self.inner
                .begin(method, params, options, Sink::Own(Arc::clone(&slot)), keep)?;
        let handle = CallHandle::new(
            Arc::clone(&self.inner),
            Arc::clone(&self.owner),
            started.id.clone(),
            started.method,
            slot,
            started.timing,
            on_progress,
        );
        match started.outcome {
            Ok(()) => Ok((handle, started.kept)),
            // The queue stayed full, and the call's own deadline (or a close) completed it
            // before the send gave up: that outcome, already on its way to the handle, is
            // the call's.
            Err(error @ Error::Busy { .. }) => handle.wait().and(Err(error)),
            Err(error) => Err(error),
        }
    }

    /// [`Client::call_with`] returning the result as compact JSON text exactly as the peer sent
    /// it, never built into a `Value`: for large results a caller takes apart item by item
    /// (a `Value` tree costs 15 to 20 times its text in memory).
    ///
    /// # Errors
    ///
    /// As [`Client::call`].
    pub fn call_text(&self, method: &str, params: Value, options: CallOptions) -> Result<String> {
        let mut options = options;
        options.raw_result = true;
        match self.start(method, params, options)?.wait()? {
            Value::String(text) => Ok(text),
            other => Err(Error::Protocol(format!(
                "`{method}`: expected the result's text, got {other}"
            ))),
        }
    }

    /// Sends a notification (no response).
    ///
    /// # Errors
    ///
    /// [`Error::Closed`], [`Error::Config`] for bad params, or [`Error::Busy`] when the send
    /// queue stays full for the client's request timeout.
    pub fn notify(&self, method: &str, params: Value) -> Result<()> {
        self.notify_with(method, params, FrameMeta::default())
    }

    /// [`Client::notify`] with what the transport should know about the frame.
    ///
    /// # Errors
    ///
    /// As [`Client::notify`].
    pub fn notify_with(&self, method: &str, params: Value, meta: FrameMeta) -> Result<()> {
        self.inner.check_open()?;
        let params = outbound::prepare_params(params)?;
        let deadline = Instant::now() + self.inner.config.request_timeout;
        self.inner.send(
            Outgoing {
                frame: OutFrame::Single(Message::Notification(Notification {
                    method: method.to_owned(),
                    params,
                })),
                meta,
            },
            Some(deadline),
        )
    }

    /// Sends a batch in one frame and waits for every request's outcome. Results come back in
    /// the order of the batch's requests (notifications have none), whatever order the peer
    /// answers in. A request the peer's reply leaves out fails at once when the reply
    /// arrives.
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
        for entry in entries {
            let added = match entry {
                BatchEntry::Request { method, params } => outbound::prepare_params(params)
                    .and_then(|params| {
                        let entry_options = CallOptions {
                            timeout: options.timeout,
                            notify_cancel: options.notify_cancel,
                            ..CallOptions::default()
                        };
                        let slot = Arc::new(CallSlot::new());
                        let registered = inner.register(
                            &method,
                            &entry_options,
                            Sink::Own(Arc::clone(&slot)),
                        )?;
                        batch_deadline = batch_deadline.max(registered.timing.deadline);
                        messages.push(Message::Request(Request {
                            id: registered.id.clone(),
                            method,
                            params,
                        }));
                        handles.push(CallHandle::new(
                            Arc::clone(inner),
                            Arc::clone(&self.owner),
                            registered.id,
                            registered.method,
                            slot,
                            registered.timing,
                            None,
                        ));
                        Ok(())
                    }),
                BatchEntry::Notification { method, params } => outbound::prepare_params(params)
                    .map(|params| {
                        messages.push(Message::Notification(Notification { method, params }));
                    }),
            };
            if let Err(error) = added {
                inner.release_unsent(handles);
                return Err(error);
            }
        }
        let outgoing = Outgoing {
            frame: OutFrame::Batch(messages),
            meta: options.meta,
        };
        let group: Arc<[RequestId]> = handles.iter().map(|handle| handle.id().clone()).collect();
        inner.join_batch(&group);
        let sent = inner.send(outgoing, Some(batch_deadline));
        // Releases the requests when the batch was not sent, and times out those whose
        // deadline passed while it was.
        inner.after_batch_send(&group, sent.is_ok());
        sent?;
        Ok(handles.into_iter().map(CallHandle::wait).collect())
    }

    /// Waits until the handlers have seen every request and notification the peer sent before
    /// this call (they run on the dispatch thread, behind the replies), at most `timeout`;
    /// true when they have. A command that prints a server's log messages calls it before it
    /// exits, so a message sent before the last reply is never lost to a busy machine.
    pub fn settle(&self, timeout: Duration) -> bool {
        self.inner.dispatch.settle(Instant::now() + timeout)
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
            dropped_notifications: self.inner.dispatch.dropped(),
        }
    }

    /// The transport's description (e.g. the command line).
    pub fn describe(&self) -> String {
        self.inner.transport.describe()
    }

    /// The connection's secrets ([`Transport::scrubber`]). The client has already taken them
    /// out of every error object the peer sent ([`Error::Rpc`]'s message and data), of the
    /// message of its progress reports and of what it logs of the peer's frames; results are the caller's data and pass as sent, so
    /// a caller that shows or records text the peer sent in a result (a tool's `isError`
    /// text, say) takes it through this first.
    pub fn scrubber(&self) -> Scrubber {
        self.inner.scrubber.clone()
    }

    /// Answers one of the peer's requests (taken by a request sink,
    /// [`ClientConfig::request_sink`]), without blocking past the client's request timeout;
    /// a failure to send is logged, and the request stays unanswered.
    pub fn respond(&self, response: Response) {
        self.inner.reply(response);
    }

    /// Answers the requests of one of the peer's batches, as one array (see
    /// [`Client::respond`]).
    pub fn respond_batch(&self, responses: Vec<Response>) {
        self.inner.reply_batch(responses);
    }

    pub(crate) fn parts(&self) -> (&Arc<Inner>, &Arc<Owner>) {
        (&self.inner, &self.owner)
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
