//! Client configuration and per-call options.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

use super::dialect::{Dialect, PlainJsonRpc};
use crate::timer::TimerWheel;
use crate::transport::FrameMeta;
use crate::wire::{ErrorObject, Notification, Request};

/// Answers requests the peer sends to us. Runs on the client's dispatch thread, never on the
/// reader thread, one request at a time in arrival order. A panic is caught: the peer gets
/// -32603 and the thread goes on.
pub type RequestHandler = Arc<dyn Fn(&Request) -> Result<Value, ErrorObject> + Send + Sync>;

/// Receives notifications from the peer that the client does not consume itself (everything
/// but the progress reports of its own calls). Runs on the dispatch thread; a panic is caught
/// and logged.
pub type NotificationHandler = Arc<dyn Fn(&Notification) + Send + Sync>;

/// The peer's requests, as a request sink ([`ClientConfig::request_sink`]) gets them.
#[derive(Debug, Clone, PartialEq)]
pub enum PeerRequests {
    /// One request.
    One(Request),
    /// The requests of one batch, with the error responses for its invalid elements: every
    /// answer of the batch goes back together as one array ([`super::Client::respond_batch`]).
    Batch(Vec<Request>, Vec<crate::wire::Response>),
}

/// Takes the peer's requests on the reader thread instead of the dispatch thread, for code
/// that runs them itself (an MCP server's worker pool) and answers through
/// [`super::Client::respond`]. It must not block: it hands the work on or answers at once.
pub type RequestSink = Arc<dyn Fn(PeerRequests) + Send + Sync>;

/// A progress callback: runs on the thread that waits for the call, once per report, in
/// order. A panic is caught and logged, and the call goes on.
pub type ProgressCallback = Box<dyn FnMut(&Progress) + Send>;

/// A progress report for a call, delivered on the caller's thread.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// The `progress` value (increases with every report).
    pub progress: f64,
    /// The `total`, when the peer knows it.
    pub total: Option<f64>,
    /// A human-readable message, when the peer sent one.
    pub message: Option<String>,
}

/// Settings for a [`crate::Client`]. Every bound is finite; `Default` spells out each value,
/// and each knob has a setter that says its default.
#[derive(Clone)]
pub struct ClientConfig {
    pub(crate) request_timeout: Duration,
    pub(crate) max_total_timeout: Duration,
    pub(crate) timer_grace: Duration,
    pub(crate) completion_grace: Duration,
    pub(crate) cancel_on_timeout: bool,
    pub(crate) max_in_flight: usize,
    pub(crate) inbound_queue: usize,
    pub(crate) dispatch_join_grace: Duration,
    pub(crate) timer: Option<TimerWheel>,
    pub(crate) request_handler: Option<RequestHandler>,
    pub(crate) notification_handler: Option<NotificationHandler>,
    /// Sees every notification on the reader thread, before the next frame is handled and
    /// before the dispatch thread gets it: for the layer above's bookkeeping that must not
    /// lag behind the responses that follow (cache invalidation). Not public: it runs on the
    /// reader thread, where nothing slow may run.
    pub(crate) notification_tap: Option<NotificationHandler>,
    /// Takes the peer's requests on the reader thread (see [`RequestSink`]). With it and no
    /// notification handler the client starts no dispatch thread; with it, text that is no
    /// JSON-RPC message at all is answered too (a `null` id), as a server answers it.
    pub(crate) request_sink: Option<RequestSink>,
    pub(crate) dialect: Arc<dyn Dialect>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            request_timeout: Duration::from_secs(60),
            max_total_timeout: Duration::from_secs(600),
            timer_grace: Duration::ZERO,
            completion_grace: Duration::from_secs(1),
            cancel_on_timeout: true,
            max_in_flight: 65_536,
            inbound_queue: 1024,
            dispatch_join_grace: Duration::from_secs(2),
            timer: None,
            request_handler: None,
            notification_handler: None,
            notification_tap: None,
            request_sink: None,
            dialect: Arc::new(PlainJsonRpc),
        }
    }
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("request_timeout", &self.request_timeout)
            .field("max_total_timeout", &self.max_total_timeout)
            .field("timer_grace", &self.timer_grace)
            .field("completion_grace", &self.completion_grace)
            .field("cancel_on_timeout", &self.cancel_on_timeout)
            .field("max_in_flight", &self.max_in_flight)
            .field("inbound_queue", &self.inbound_queue)
            .field("dispatch_join_grace", &self.dispatch_join_grace)
            .field("request_handler", &self.request_handler.is_some())
            .field("notification_handler", &self.notification_handler.is_some())
            .field("dialect", &self.dialect.name())
            .finish_non_exhaustive()
    }
}

impl ClientConfig {
    /// How long a call waits for its response when the call does not say. Defaults to 60 s.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The longest a call may run in all when its deadline is extended by progress. Defaults
    /// to 10 minutes.
    pub fn max_total_timeout(mut self, timeout: Duration) -> Self {
        self.max_total_timeout = timeout;
        self
    }

    /// How far past its deadline a blocked caller waits on its own channel for the timer
    /// thread before releasing the call itself (whoever removes the pending entry first
    /// completes it, exactly once, with the same cancellation notice). Defaults to zero: a
    /// caller blocked in `call`, `wait` or `wait_timeout` wakes at its own deadline whatever
    /// else the shared timer thread has to do at that moment (thousands of other calls timing
    /// out together, a stall), and the timer thread serves the calls nobody is blocked on
    /// (handles polled or left to run, call sets). A positive grace leaves the timeouts to the
    /// timer thread for that long.
    pub fn timer_grace(mut self, grace: Duration) -> Self {
        self.timer_grace = grace;
        self
    }

    /// How long a caller that released its own call at the deadline waits for the outcome
    /// the releasing side sends right after (a moment's work); past it the call ends as
    /// closed. Defaults to 1 s.
    pub fn completion_grace(mut self, grace: Duration) -> Self {
        self.completion_grace = grace;
        self
    }

    /// Whether a timed-out request is followed by the dialect's cancellation notice to the
    /// peer (never for calls made with [`CallOptions::notify_cancel`] false). Defaults to
    /// true.
    pub fn cancel_on_timeout(mut self, cancel: bool) -> Self {
        self.cancel_on_timeout = cancel;
        self
    }

    /// The most requests in flight at once; one more fails at once with
    /// [`crate::Error::Busy`]. Defaults to 65,536.
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = requests;
        self
    }

    /// How many inbound requests and notifications may wait for the dispatch thread; when
    /// full, an inbound request is answered with -32603 and a notification is dropped, both
    /// logged (the warning for dropped notifications at most once a second). Defaults to
    /// 1,024.
    pub fn inbound_queue(mut self, items: usize) -> Self {
        self.inbound_queue = items;
        self
    }

    /// How long `close()` waits for the dispatch thread (which may be inside a user handler)
    /// before leaving it behind with a warning. Defaults to 2 s.
    pub fn dispatch_join_grace(mut self, grace: Duration) -> Self {
        self.dispatch_join_grace = grace;
        self
    }

    /// The timer wheel for deadlines. Defaults to the process-wide [`TimerWheel::global`].
    pub fn timer(mut self, timer: TimerWheel) -> Self {
        self.timer = Some(timer);
        self
    }

    /// Answers the peer's requests. Defaults to the dialect's answers (the MCP dialect
    /// answers `ping`), and -32601 for everything else.
    pub fn on_request(
        mut self,
        handler: impl Fn(&Request) -> Result<Value, ErrorObject> + Send + Sync + 'static,
    ) -> Self {
        self.request_handler = Some(Arc::new(handler));
        self
    }

    /// Receives the peer's notifications. Defaults to none (they are logged at debug).
    pub fn on_notification(
        mut self,
        handler: impl Fn(&Notification) + Send + Sync + 'static,
    ) -> Self {
        self.notification_handler = Some(Arc::new(handler));
        self
    }

    /// The protocol conventions above JSON-RPC: how progress is asked for and reported, how
    /// a request is cancelled, what a request gets when no handler is set. Defaults to
    /// [`PlainJsonRpc`] (none of them); use `toolwire::mcp::McpDialect` for MCP peers.
    pub fn dialect(mut self, dialect: impl Dialect) -> Self {
        self.dialect = Arc::new(dialect);
        self
    }

    pub(crate) fn set_request_handler(&mut self, handler: RequestHandler) {
        self.request_handler = Some(handler);
    }

    pub(crate) fn set_notification_handler(&mut self, handler: NotificationHandler) {
        self.notification_handler = Some(handler);
    }

    pub(crate) fn set_notification_tap(&mut self, tap: NotificationHandler) {
        self.notification_tap = Some(tap);
    }

    /// Hands the peer's requests to `sink` on the reader thread, as they arrive, instead of
    /// to the request handler on the dispatch thread: for a server that runs them on its own
    /// pool and answers each with [`super::Client::respond`] (a batch's, together, with
    /// [`super::Client::respond_batch`]). The sink must not block: every later frame waits
    /// for it. With it and no notification handler the client starts no dispatch thread.
    /// Defaults to none.
    pub fn request_sink(mut self, sink: impl Fn(PeerRequests) + Send + Sync + 'static) -> Self {
        self.request_sink = Some(Arc::new(sink));
        self
    }

    pub(crate) fn set_dialect(&mut self, dialect: Arc<dyn Dialect>) {
        self.dialect = dialect;
    }
}

/// Options for one call. `Default` means: the client's timeout, no progress, no reset, a
/// cancellation notice when the call is given up, no frame metadata. Cheap to clone: a
/// progress callback is shared between clones (behind an `Arc`).
#[derive(Clone)]
pub struct CallOptions {
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_total: Option<Duration>,
    pub(crate) reset_on_progress: bool,
    pub(crate) on_progress: Option<SharedProgress>,
    pub(crate) want_progress: bool,
    pub(crate) notify_cancel: bool,
    pub(crate) meta: FrameMeta,
    /// Hand the result over as JSON text (see `Client::call_text`).
    pub(crate) raw_result: bool,
}

/// A progress callback shared by the clones of one [`CallOptions`].
pub(crate) type SharedProgress = Arc<Mutex<ProgressCallback>>;

impl Default for CallOptions {
    fn default() -> Self {
        CallOptions {
            timeout: None,
            max_total: None,
            reset_on_progress: false,
            on_progress: None,
            want_progress: false,
            notify_cancel: true,
            meta: FrameMeta::default(),
            raw_result: false,
        }
    }
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("max_total", &self.max_total)
            .field("reset_on_progress", &self.reset_on_progress)
            .field("on_progress", &self.on_progress.is_some())
            .field("want_progress", &self.want_progress)
            .field("notify_cancel", &self.notify_cancel)
            .field("meta", &self.meta)
            .finish()
    }
}

impl CallOptions {
    /// Options with everything at its default.
    pub fn new() -> Self {
        CallOptions::default()
    }

    /// The deadline for the response (reset by progress with
    /// [`CallOptions::reset_on_progress`]). Defaults to the client's
    /// [`ClientConfig::request_timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The hard limit on the whole call when progress extends the deadline. Defaults to the
    /// client's [`ClientConfig::max_total_timeout`].
    pub fn max_total(mut self, max_total: Duration) -> Self {
        self.max_total = Some(max_total);
        self
    }

    /// Whether each progress report restarts the timeout (bounded by the max total). Asking
    /// for it attaches a progress token. Defaults to false.
    pub fn reset_on_progress(mut self, reset: bool) -> Self {
        self.reset_on_progress = reset;
        self
    }

    /// Called with each progress report, in order, on the thread that waits for the call.
    /// Setting it attaches a progress token. Clones of these options share the callback.
    /// Defaults to none.
    pub fn on_progress(mut self, callback: impl FnMut(&Progress) + Send + 'static) -> Self {
        self.on_progress = Some(Arc::new(Mutex::new(Box::new(callback))));
        self
    }

    /// Attach a progress token even without a callback (reports then arrive through
    /// [`crate::jsonrpc::CallHandle::receiver`]). Defaults to false.
    pub fn want_progress(mut self, want: bool) -> Self {
        self.want_progress = want;
        self
    }

    /// Whether giving this call up (its timeout, a cancel, a dropped handle) sends the
    /// dialect's cancellation notice to the peer. The MCP client turns it off for
    /// `initialize`, which must never be cancelled. Defaults to true.
    pub fn notify_cancel(mut self, notify: bool) -> Self {
        self.notify_cancel = notify;
        self
    }

    /// What the transport should know about the request's frame (protocol version, routing
    /// target, lifecycle role). Defaults to none.
    pub fn frame_meta(mut self, meta: FrameMeta) -> Self {
        self.meta = meta;
        self
    }

    /// Only the deadlines of these options (timeout, max total, reset on progress) and
    /// whether to notify on cancel: no callback, no frame metadata, so nothing is cloned.
    pub(crate) fn deadlines(&self) -> CallOptions {
        CallOptions {
            timeout: self.timeout,
            max_total: self.max_total,
            reset_on_progress: self.reset_on_progress,
            notify_cancel: self.notify_cancel,
            ..CallOptions::default()
        }
    }

    pub(crate) fn attaches_progress_token(&self) -> bool {
        self.reset_on_progress || self.on_progress.is_some() || self.want_progress
    }
}
