//! Client configuration and per-call options.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::timer::TimerWheel;
use crate::wire::{ErrorObject, Notification, Request};

/// Answers requests the peer sends to us. Runs on the client's dispatch thread, never on the
/// reader thread, one request at a time in arrival order.
pub type RequestHandler = Arc<dyn Fn(&Request) -> Result<Value, ErrorObject> + Send + Sync>;

/// Receives notifications from the peer that the client does not consume itself (everything
/// but `notifications/progress` for its own calls). Runs on the dispatch thread.
pub type NotificationHandler = Arc<dyn Fn(&Notification) + Send + Sync>;

/// A progress callback: runs on the thread that waits for the call, once per report, in order.
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

/// Settings for a [`crate::Client`]. Every bound is finite; `Default` spells out each value.
#[derive(Clone)]
#[non_exhaustive]
pub struct ClientConfig {
    /// How long a call waits for its response when the call does not say. Defaults to 60 s.
    pub request_timeout: Duration,
    /// The longest a call may run in all when its deadline is extended by progress.
    /// Defaults to 10 minutes.
    pub max_total_timeout: Duration,
    /// How far past its deadline a blocked caller waits on its own channel for the timer
    /// thread before releasing the call itself (whoever removes the pending entry first
    /// completes it, exactly once, with the same `notifications/cancelled`). Defaults to zero:
    /// a caller blocked in `call`, `wait` or `wait_timeout` wakes at its own deadline whatever
    /// else the shared timer thread has to do at that moment (thousands of other calls timing
    /// out together, a stall), and the timer thread serves the calls nobody is blocked on
    /// (handles polled, selected over, or left to run). A positive grace leaves the timeouts to
    /// the timer thread for that long.
    pub timer_grace: Duration,
    /// Whether a timed-out request is followed by `notifications/cancelled` to the peer (never
    /// for `initialize`). Defaults to true.
    pub cancel_on_timeout: bool,
    /// The most requests in flight at once; one more fails at once with
    /// [`crate::Error::Busy`]. Defaults to 65,536.
    pub max_in_flight: usize,
    /// How many inbound requests and notifications may wait for the dispatch thread; when
    /// full, an inbound request is answered with -32603 and a notification is dropped, both
    /// logged. Defaults to 1,024.
    pub inbound_queue: usize,
    /// How long `close()` waits for the dispatch thread (which may be inside a user handler)
    /// before leaving it behind with a warning. Defaults to 2 s.
    pub dispatch_join_grace: Duration,
    /// The timer wheel for deadlines. Defaults to the process-wide [`TimerWheel::global`].
    pub timer: Option<TimerWheel>,
    /// Answers the peer's requests. Defaults to answering `ping` with `{}` and everything else
    /// with -32601.
    pub request_handler: Option<RequestHandler>,
    /// Receives the peer's notifications. Defaults to none (they are logged at debug).
    pub notification_handler: Option<NotificationHandler>,
    /// Sees every notification on the reader thread, before the next frame is handled and
    /// before the dispatch thread gets it: for bookkeeping that must not lag behind the
    /// responses that follow (e.g. cache invalidation). It must be quick and never block.
    /// Defaults to none.
    pub notification_tap: Option<NotificationHandler>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            request_timeout: Duration::from_secs(60),
            max_total_timeout: Duration::from_secs(600),
            timer_grace: Duration::ZERO,
            cancel_on_timeout: true,
            max_in_flight: 65_536,
            inbound_queue: 1024,
            dispatch_join_grace: Duration::from_secs(2),
            timer: None,
            request_handler: None,
            notification_handler: None,
            notification_tap: None,
        }
    }
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("request_timeout", &self.request_timeout)
            .field("max_total_timeout", &self.max_total_timeout)
            .field("timer_grace", &self.timer_grace)
            .field("cancel_on_timeout", &self.cancel_on_timeout)
            .field("max_in_flight", &self.max_in_flight)
            .field("inbound_queue", &self.inbound_queue)
            .field("dispatch_join_grace", &self.dispatch_join_grace)
            .field("request_handler", &self.request_handler.is_some())
            .field("notification_handler", &self.notification_handler.is_some())
            .field("notification_tap", &self.notification_tap.is_some())
            .finish()
    }
}

impl ClientConfig {
    /// Sets [`ClientConfig::request_timeout`].
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets [`ClientConfig::request_handler`].
    pub fn on_request(
        mut self,
        handler: impl Fn(&Request) -> Result<Value, ErrorObject> + Send + Sync + 'static,
    ) -> Self {
        self.request_handler = Some(Arc::new(handler));
        self
    }

    /// Sets [`ClientConfig::notification_handler`].
    pub fn on_notification(
        mut self,
        handler: impl Fn(&Notification) + Send + Sync + 'static,
    ) -> Self {
        self.notification_handler = Some(Arc::new(handler));
        self
    }

    /// Sets [`ClientConfig::timer`].
    pub fn timer(mut self, timer: TimerWheel) -> Self {
        self.timer = Some(timer);
        self
    }
}

/// Options for one call. `Default` means: the client's timeout, no progress, no reset.
#[derive(Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// The deadline for the response (reset by progress when `reset_on_progress`). Defaults to
    /// the client's [`ClientConfig::request_timeout`].
    pub timeout: Option<Duration>,
    /// The hard limit on the whole call when progress extends the deadline. Defaults to the
    /// client's [`ClientConfig::max_total_timeout`].
    pub max_total: Option<Duration>,
    /// Whether each progress report restarts the `timeout` (bounded by `max_total`). Asking for
    /// it attaches a progress token. Defaults to false.
    pub reset_on_progress: bool,
    /// Called with each progress report, in order, on the thread that waits for the call.
    /// Setting it attaches a progress token. Defaults to none.
    pub on_progress: Option<ProgressCallback>,
    /// Attach a progress token even without a callback (reports then arrive through
    /// [`crate::CallHandle::receiver`]). Defaults to false.
    pub want_progress: bool,
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("max_total", &self.max_total)
            .field("reset_on_progress", &self.reset_on_progress)
            .field("on_progress", &self.on_progress.is_some())
            .field("want_progress", &self.want_progress)
            .finish()
    }
}

impl CallOptions {
    /// Options with everything at its default.
    pub fn new() -> Self {
        CallOptions::default()
    }

    /// Sets [`CallOptions::timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets [`CallOptions::max_total`].
    pub fn max_total(mut self, max_total: Duration) -> Self {
        self.max_total = Some(max_total);
        self
    }

    /// Sets [`CallOptions::reset_on_progress`].
    pub fn reset_on_progress(mut self, reset: bool) -> Self {
        self.reset_on_progress = reset;
        self
    }

    /// Sets [`CallOptions::on_progress`].
    pub fn on_progress(mut self, callback: impl FnMut(&Progress) + Send + 'static) -> Self {
        self.on_progress = Some(Box::new(callback));
        self
    }

    /// Sets [`CallOptions::want_progress`].
    pub fn want_progress(mut self, want: bool) -> Self {
        self.want_progress = want;
        self
    }

    pub(crate) fn attaches_progress_token(&self) -> bool {
        self.reset_on_progress || self.on_progress.is_some() || self.want_progress
    }
}
