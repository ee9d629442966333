//! The Streamable HTTP transport (MCP 2025-03-26 … 2025-11-25 and 2026-07-28), on ureq,
//! with threads and no async runtime.
//!
//! # How a frame travels
//!
//! Every outbound frame is one POST to the endpoint, made on a named worker thread
//! (`toolwire-http-post`, at most [`HttpConfig::max_concurrent_posts`] at once). The sender
//! waits, within its deadline, only for the *status* of that POST:
//!
//! - an error status, a refused connection, or a reply that cannot carry the response comes
//!   back from [`Transport::send`] as the error, so the caller's call fails at once with it
//!   ([`Error::Http`] with the status and a bounded body excerpt, [`Error::Io`],
//!   [`Error::Protocol`]) and never as an invented JSON-RPC error;
//! - an `application/json` reply is read whole (up to [`HttpConfig::max_body_bytes`]) and
//!   handed to the client before `send` returns, so a JSON reply that does not hold the
//!   response to the request is an error at once rather than a timeout later;
//! - a `text/event-stream` reply returns from `send` as soon as its headers arrive; the worker
//!   goes on reading events (notifications, server requests, then the response) and stops
//!   after the response;
//! - a notification or response gets 202 (or a 200 whose body is ignored).
//!
//! A `send` without a deadline (the client's `notifications/cancelled` from its timer thread)
//! does not wait at all; a failure is logged. A server that takes longer than the deadline to
//! answer the headers of a request gives the caller [`Error::Timeout`].
//!
//! Once the headers of an event stream were accepted, there is no channel left to fail that
//! one call early: if the stream breaks and cannot be resumed, the call ends at its deadline
//! (the transport logs a warning saying why).
//!
//! # Sessions (2025-xx)
//!
//! The `Mcp-Session-Id` of the `initialize` reply is sent on every later request, and the
//! `protocolVersion` of the `initialize` result as `MCP-Protocol-Version`; the transport reads
//! both as the reply passes through, so the MCP layer needs no hook. When a request that
//! carried a session id gets 404, the session expired: the transport replays the
//! `initialize` request and `notifications/initialized` it saw (their replies are not handed
//! to the client), then retries the request once. Some servers (server-everything) answer an
//! unknown session with 400 instead; with [`HttpConfig::session_expired_on_400`] (on by
//! default) a 400 whose body mentions a session is treated the same way. If the new session
//! cannot be started, the transport closes, so a restart policy can reconnect.
//!
//! After `notifications/initialized`, an optional GET stream (`toolwire-http-get`) carries
//! server-initiated messages; 400, 404 and 405 mean "not offered". Sending the notification
//! waits up to [`HttpConfig::standalone_stream_wait`] for that GET's status, so the stream
//! is there before the first request. An event stream that ends before the response is
//! resumed by GET with `Last-Event-ID` after the server's `retry:` interval (or
//! [`HttpConfig::default_retry`]), when the server gave event ids. `close()` sends DELETE
//! with the session id (405 is fine).
//!
//! # 2026-07-28
//!
//! A request whose `params._meta` carries a 2026-07-28 protocol version gets the headers
//! `MCP-Protocol-Version`, `Mcp-Method` and, for `tools/call`, `prompts/get` and
//! `resources/read`, `Mcp-Name` (base64-wrapped when not plain ASCII), and no session id.
//! Cancelling such a request closes its response stream ([`Transport::request_abandoned`]
//! returns true), instead of posting `notifications/cancelled`. Handshake-era cancellations
//! still post the notification; their stream is closed as well, since nothing more is
//! wanted from it.
//!
//! # Bounds
//!
//! Connect, write, per-read and response-header timeouts are explicit
//! ([`HttpConfig`]); JSON bodies and SSE events are capped (an SSE event over the cap is
//! skipped and reported, the stream goes on); error bodies are read only up to a small
//! excerpt. Every exchange can be aborted from another thread: `close()` shuts down the
//! sockets of open streams, so it returns promptly (see `conn.rs`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::{Condvar, Mutex};

use super::{Inbound, Outgoing, OutgoingKind, Transport};
use crate::client::spawn_named;
use crate::error::{Closed, Error, Result};
use crate::wire::RequestId;

mod conn;
mod exchange;
mod frames;

use conn::Slot;

/// How to reach and bound a Streamable HTTP server. `new` sets every bound to its default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The MCP endpoint, e.g. `http://127.0.0.1:8000/mcp`. `https://` needs the `rustls`
    /// feature.
    pub url: String,
    /// Extra headers sent with every request (POST, GET, DELETE).
    pub headers: Vec<(String, String)>,
    /// Sent as `Authorization: Bearer <token>`. Defaults to none.
    pub bearer_token: Option<String>,
    /// The longest a TCP (and TLS) connect may take. Defaults to 10 s.
    pub connect_timeout: Duration,
    /// How long the headers of a reply may take when the frame has no deadline of its own
    /// (a fire-and-forget notification, a session renewal, a GET). Requests use their call's
    /// deadline instead. Defaults to 60 s.
    pub response_timeout: Duration,
    /// The longest one read of a body may wait; a response stream silent for longer counts as
    /// dropped (and is resumed when it can be). Defaults to 5 minutes.
    pub read_timeout: Option<Duration>,
    /// The longest one write may take. Defaults to 30 s.
    pub write_timeout: Duration,
    /// The largest `application/json` reply accepted. Defaults to 16 MiB.
    pub max_body_bytes: usize,
    /// The largest SSE event accepted; larger ones are skipped. Defaults to 16 MiB.
    pub max_event_bytes: usize,
    /// How much of an error body is kept in [`crate::HttpError::body_excerpt`]. Defaults to
    /// 1 KiB.
    pub error_excerpt_bytes: usize,
    /// The most POSTs in flight at once; one more waits for its deadline, then fails with
    /// [`Error::Busy`]. Defaults to 64.
    pub max_concurrent_posts: usize,
    /// Open the GET stream for server-initiated messages after `notifications/initialized`.
    /// Defaults to true.
    pub standalone_stream: bool,
    /// How long sending `notifications/initialized` waits for the GET stream's status.
    /// Defaults to 2 s.
    pub standalone_stream_wait: Duration,
    /// The reconnection delay when the server sent no `retry:`. Defaults to 1 s.
    pub default_retry: Duration,
    /// How many reconnections in a row may bring nothing new before a stream is given up.
    /// Defaults to 5.
    pub max_reconnects: u32,
    /// Treat a 400 whose body mentions a session, on a request that carried a session id, as
    /// an expired session (what server-everything sends), like 404. Defaults to true.
    pub session_expired_on_400: bool,
    /// Send DELETE with the session id on close. Defaults to true.
    pub delete_on_close: bool,
    /// The bound on the DELETE at close. Defaults to 2 s.
    pub close_timeout: Duration,
}

impl HttpConfig {
    /// A config for `url` with every bound at its default.
    pub fn new(url: impl Into<String>) -> HttpConfig {
        HttpConfig {
            url: url.into(),
            headers: Vec::new(),
            bearer_token: None,
            connect_timeout: Duration::from_secs(10),
            response_timeout: Duration::from_secs(60),
            read_timeout: Some(Duration::from_secs(300)),
            write_timeout: Duration::from_secs(30),
            max_body_bytes: 16 * 1024 * 1024,
            max_event_bytes: 16 * 1024 * 1024,
            error_excerpt_bytes: 1024,
            max_concurrent_posts: 64,
            standalone_stream: true,
            standalone_stream_wait: Duration::from_secs(2),
            default_retry: Duration::from_secs(1),
            max_reconnects: 5,
            session_expired_on_400: true,
            delete_on_close: true,
            close_timeout: Duration::from_secs(2),
        }
    }

    /// Adds a header sent with every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the bearer token.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Sets [`HttpConfig::standalone_stream`].
    pub fn standalone_stream(mut self, open: bool) -> Self {
        self.standalone_stream = open;
        self
    }

    /// Sets [`HttpConfig::max_event_bytes`].
    pub fn max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event_bytes = bytes;
        self
    }

    /// Sets [`HttpConfig::default_retry`].
    pub fn default_retry(mut self, retry: Duration) -> Self {
        self.default_retry = retry;
        self
    }

    /// A connector for [`crate::McpClient::connect_with`] that makes a fresh transport (and
    /// so a fresh session) for every (re)connection.
    pub fn connector(self) -> crate::mcp::Connector {
        Box::new(move || Ok(Arc::new(HttpTransport::new(self.clone())?) as Arc<dyn Transport>))
    }

    fn check(&self) -> Result<()> {
        let lower = self.url.to_ascii_lowercase();
        if lower.starts_with("https://") {
            if !cfg!(feature = "rustls") {
                return Err(Error::Config(format!(
                    "`{}` needs TLS: enable toolwire's `rustls` feature",
                    self.url
                )));
            }
        } else if !lower.starts_with("http://") {
            return Err(Error::Config(format!(
                "`{}` is not an http:// or https:// URL",
                self.url
            )));
        }
        if self.url.parse::<ureq::http::Uri>().is_err() {
            return Err(Error::Config(format!("`{}` is not a valid URL", self.url)));
        }
        for (name, value) in &self.headers {
            if ureq::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(Error::Config(format!(
                    "`{name}` is not a valid header name"
                )));
            }
            if ureq::http::HeaderValue::from_str(value).is_err() {
                return Err(Error::Config(format!(
                    "the value of header `{name}` is not a valid header value"
                )));
            }
        }
        if let Some(token) = &self.bearer_token {
            if ureq::http::HeaderValue::from_str(&format!("Bearer {token}")).is_err() {
                return Err(Error::Config(
                    "the bearer token is not a valid header value".into(),
                ));
            }
        }
        Ok(())
    }
}

/// A Streamable HTTP connection to one MCP endpoint. See the module documentation.
pub struct HttpTransport {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("url", &self.shared.config.url)
            .field("session_id", &self.session_id())
            .finish()
    }
}

/// What the transport learned of the session.
#[derive(Debug, Default)]
struct State {
    session_id: Option<String>,
    /// Bumped whenever a session starts, so concurrent expiries renew it once.
    generation: u64,
    /// The version the `initialize` result named.
    protocol_version: Option<String>,
    /// The last `initialize` request seen, to replay when the session expires.
    initialize: Option<(RequestId, String)>,
    /// The last `notifications/initialized` seen.
    initialized: Option<String>,
}

/// One POST and the request ids still waiting for their response on it.
pub(super) struct Exchange {
    slot: Arc<Slot>,
    modern: bool,
    pending: Mutex<HashSet<RequestId>>,
}

impl Exchange {
    fn done(&self) -> bool {
        self.pending.lock().is_empty()
    }
}

/// A thread-count gate: bounded for POST workers, unbounded for counting every thread.
struct Gate {
    count: Mutex<usize>,
    changed: Condvar,
    limit: usize,
}

impl Gate {
    fn new(limit: usize) -> Gate {
        Gate {
            count: Mutex::new(0),
            changed: Condvar::new(),
            limit: limit.max(1),
        }
    }

    /// Takes a place, waiting until `deadline` (not at all without one).
    fn acquire(&self, deadline: Option<Instant>) -> bool {
        let mut count = self.count.lock();
        while *count >= self.limit {
            let Some(deadline) = deadline else {
                return false;
            };
            if self.changed.wait_until(&mut count, deadline).timed_out() && *count >= self.limit {
                return false;
            }
        }
        *count += 1;
        true
    }

    fn release(&self) {
        *self.count.lock() -= 1;
        self.changed.notify_all();
    }

    /// Waits until no place is taken, or `deadline`. Returns true when idle.
    fn wait_idle(&self, deadline: Instant) -> bool {
        let mut count = self.count.lock();
        while *count > 0 {
            if self.changed.wait_until(&mut count, deadline).timed_out() {
                return *count == 0;
            }
        }
        true
    }
}

/// Work for a pooled thread.
type Job = Box<dyn FnOnce() + Send + 'static>;

/// How long an idle pooled thread waits for work before it ends.
const WORKER_IDLE: Duration = Duration::from_secs(5);

/// Reusable threads for exchanges: starting a thread per POST put its creation and teardown
/// on every call's path (about a millisecond each on a busy 2-core machine). A job goes to an
/// idle thread when one is reserved for it, else to a new thread; idle threads end after
/// [`WORKER_IDLE`] or when the transport closes.
struct Workers {
    jobs: Mutex<Option<Sender<Job>>>,
    queue: Receiver<Job>,
    /// Threads waiting for a job and not yet reserved by a sender.
    idle: Arc<AtomicUsize>,
    /// Every pooled thread alive, busy or idle.
    alive: Arc<Gate>,
}

impl Workers {
    fn new() -> Workers {
        let (jobs, queue) = unbounded();
        Workers {
            jobs: Mutex::new(Some(jobs)),
            queue,
            idle: Arc::new(AtomicUsize::new(0)),
            alive: Arc::new(Gate::new(usize::MAX)),
        }
    }

    /// Runs `job` on an idle thread, or on a new one.
    fn run(&self, job: Job) -> Result<()> {
        let Some(jobs) = self.jobs.lock().clone() else {
            return Err(Error::closed_because("the HTTP transport is closed"));
        };
        // Reserve an idle thread: each reservation matches one job in the queue, so a queued
        // job never waits behind a long response stream.
        let mut idle = self.idle.load(Ordering::SeqCst);
        while idle > 0 {
            match self
                .idle
                .compare_exchange(idle, idle - 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    return jobs
                        .send(job)
                        .map_err(|_| Error::closed_because("the HTTP transport is closed"));
                }
                Err(now) => idle = now,
            }
        }
        let queue = self.queue.clone();
        let idle = Arc::clone(&self.idle);
        let alive = Arc::clone(&self.alive);
        alive.acquire(None);
        let thread_alive = Arc::clone(&alive);
        spawn_named("toolwire-http", move || {
            job();
            Workers::idle_loop(&queue, &idle);
            thread_alive.release();
        })
        .map(drop)
        .inspect_err(|_| alive.release())
    }

    fn idle_loop(queue: &Receiver<Job>, idle: &AtomicUsize) {
        loop {
            idle.fetch_add(1, Ordering::SeqCst);
            let job = loop {
                match queue.recv_timeout(WORKER_IDLE) {
                    Ok(job) => break Some(job),
                    Err(RecvTimeoutError::Disconnected) => break None,
                    Err(RecvTimeoutError::Timeout) => {
                        // Leave only if no sender has reserved this thread meanwhile.
                        let current = idle.load(Ordering::SeqCst);
                        if current > 0
                            && idle
                                .compare_exchange(
                                    current,
                                    current - 1,
                                    Ordering::SeqCst,
                                    Ordering::SeqCst,
                                )
                                .is_ok()
                        {
                            return;
                        }
                    }
                }
            };
            match job {
                Some(job) => job(),
                None => return,
            }
        }
    }

    /// Takes no more jobs: idle threads end.
    fn stop_taking(&self) {
        drop(self.jobs.lock().take());
    }

    /// Waits until every pooled thread has ended, or `deadline`.
    fn wait_ended(&self, deadline: Instant) -> bool {
        self.alive.wait_idle(deadline)
    }
}

pub(super) struct Shared {
    config: HttpConfig,
    workers: Workers,
    agent: ureq::Agent,
    inbound: Mutex<Option<Arc<dyn Inbound>>>,
    started: AtomicBool,
    state: Mutex<State>,
    /// Requests waiting for a response, by id.
    inflight: Mutex<HashMap<RequestId, Arc<Exchange>>>,
    /// Every exchange in progress, to abort on close.
    live: Mutex<HashMap<u64, Arc<Slot>>>,
    posts: Gate,
    threads: Gate,
    /// Serializes session renewals.
    renewing: Mutex<()>,
    /// The last request sent was stamped 2026-07-28.
    modern: AtomicBool,
    standalone_started: AtomicBool,
    closed: AtomicBool,
    close_reason: Mutex<Option<Closed>>,
    close_reported: AtomicBool,
    requests: AtomicU64,
}

impl HttpTransport {
    /// A transport for `config.url`. Nothing is sent until the first frame.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a URL that is not http(s), an `https://` URL without the
    /// `rustls` feature, or a header that is not valid.
    pub fn new(config: HttpConfig) -> Result<HttpTransport> {
        config.check()?;
        let agent_config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(format!("toolwire/{}", env!("CARGO_PKG_VERSION")))
            .timeout_connect(Some(config.connect_timeout))
            .timeout_per_read(config.read_timeout)
            .timeout_per_write(Some(config.write_timeout))
            .build();
        let agent = ureq::Agent::with_parts(
            agent_config,
            conn::AbortableConnector::default(),
            ureq::unversioned::resolver::DefaultResolver::default(),
        );
        let shared = Arc::new(Shared {
            posts: Gate::new(config.max_concurrent_posts),
            threads: Gate::new(usize::MAX),
            workers: Workers::new(),
            config,
            agent,
            inbound: Mutex::new(None),
            started: AtomicBool::new(false),
            state: Mutex::new(State::default()),
            inflight: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            renewing: Mutex::new(()),
            modern: AtomicBool::new(false),
            standalone_started: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            close_reason: Mutex::new(None),
            close_reported: AtomicBool::new(false),
            requests: AtomicU64::new(0),
        });
        Ok(HttpTransport { shared })
    }

    /// A transport for `url` with default settings.
    ///
    /// # Errors
    ///
    /// As [`HttpTransport::new`].
    pub fn connect(url: impl Into<String>) -> Result<HttpTransport> {
        HttpTransport::new(HttpConfig::new(url))
    }

    /// The session id the server assigned, once `initialize` was answered with one.
    pub fn session_id(&self) -> Option<String> {
        self.shared.state.lock().session_id.clone()
    }

    /// The protocol version the `initialize` result named.
    pub fn protocol_version(&self) -> Option<String> {
        self.shared.state.lock().protocol_version.clone()
    }

    /// How many POSTs were made (including retries and session renewals).
    pub fn posts_sent(&self) -> u64 {
        self.shared.requests.load(Ordering::Relaxed)
    }
}

impl Transport for HttpTransport {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        if self.shared.started.swap(true, Ordering::SeqCst) {
            return Err(Error::Config(
                "the HTTP transport was already started".into(),
            ));
        }
        *self.shared.inbound.lock() = Some(inbound);
        Ok(())
    }

    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()> {
        self.shared.send(message, deadline)
    }

    fn request_abandoned(&self, id: &RequestId) -> bool {
        self.shared.abandon(id)
    }

    fn close(&self) -> Result<()> {
        self.shared.close();
        Ok(())
    }

    fn describe(&self) -> String {
        self.shared.config.url.clone()
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        self.shared.close();
    }
}

/// One outbound frame, read for what the HTTP layer needs.
pub(super) struct Post {
    body: String,
    /// The JSON-RPC method, or "response" / "batch", for errors and logs.
    what: String,
    /// Requests in the frame that expect a response.
    ids: Vec<RequestId>,
    /// The 2026-07-28 version stamped in the request, when it has one.
    modern_version: Option<String>,
    /// The value of `Mcp-Name`.
    name: Option<String>,
    /// The id, when this is `initialize`.
    init_id: Option<RequestId>,
    is_initialized: bool,
    deadline: Option<Instant>,
    started: Instant,
}

impl Post {
    fn read(message: Outgoing, deadline: Option<Instant>) -> Post {
        let started = Instant::now();
        let mut post = Post {
            body: String::new(),
            what: String::new(),
            ids: Vec::new(),
            modern_version: None,
            name: None,
            init_id: None,
            is_initialized: false,
            deadline,
            started,
        };
        match message.kind {
            OutgoingKind::Request { id, method } => {
                let facts = frames::request_facts(&message.line, &method);
                post.modern_version = facts.modern_version;
                post.name = facts.name;
                if method == "initialize" {
                    post.init_id = Some(id.clone());
                }
                post.ids.push(id);
                post.what = method;
            }
            OutgoingKind::Notification { method } => {
                post.is_initialized = method == "notifications/initialized";
                post.what = method;
            }
            OutgoingKind::Response => post.what = "response".into(),
            OutgoingKind::Batch => {
                post.ids = frames::batch_request_ids(&message.line);
                post.what = "batch".into();
            }
        }
        post.body = message.line;
        post
    }
}

/// Hands the sender the outcome of its POST's status, once.
pub(super) struct Reply {
    tx: Option<Sender<Result<()>>>,
    what: String,
}

impl Reply {
    pub(super) fn send(&mut self, outcome: Result<()>) {
        let Some(tx) = self.tx.take() else {
            if let Err(error) = outcome {
                log::debug!("toolwire: HTTP `{}`: {error}", self.what);
            }
            return;
        };
        if let Err(unsent) = tx.send(outcome) {
            if let Err(error) = unsent.into_inner() {
                // Nobody waits (a fire-and-forget notification, or the sender's deadline
                // passed): the failure can only be logged.
                log::debug!("toolwire: HTTP `{}` failed: {error}", self.what);
            }
        }
    }
}

impl Shared {
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    fn closed_error(&self) -> Error {
        let closed = self.close_reason.lock().clone().unwrap_or_else(|| Closed {
            reason: "the HTTP transport is closed".into(),
            exit_status: None,
            stderr_tail: String::new(),
        });
        Error::Closed(Box::new(closed))
    }

    fn send(self: &Arc<Self>, message: Outgoing, deadline: Option<Instant>) -> Result<()> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        if self.inbound.lock().is_none() {
            return Err(Error::Config("the HTTP transport was not started".into()));
        }
        let post = Post::read(message, deadline);
        {
            let mut state = self.state.lock();
            if let Some(id) = &post.init_id {
                state.initialize = Some((id.clone(), post.body.clone()));
            }
            if post.is_initialized {
                state.initialized = Some(post.body.clone());
            }
        }
        if !post.ids.is_empty() {
            self.modern
                .store(post.modern_version.is_some(), Ordering::SeqCst);
        }
        if !self.posts.acquire(deadline) {
            return Err(Error::Busy {
                limit: self.config.max_concurrent_posts,
            });
        }
        let exchange = Arc::new(Exchange {
            slot: Slot::new(),
            modern: post.modern_version.is_some(),
            pending: Mutex::new(post.ids.iter().cloned().collect()),
        });
        {
            let mut inflight = self.inflight.lock();
            for id in &post.ids {
                inflight.insert(id.clone(), Arc::clone(&exchange));
            }
        }
        let (tx, rx) = bounded(1);
        let what = post.what.clone();
        let started = post.started;
        let reply = Reply {
            tx: Some(tx),
            what: what.clone(),
        };
        let worker = {
            let shared = Arc::clone(self);
            let exchange = Arc::clone(&exchange);
            move || {
                shared.run_post(post, &exchange, reply);
                shared.forget(&exchange);
                shared.posts.release();
            }
        };
        if let Err(error) = self.spawn("toolwire-http-post", &exchange.slot, worker) {
            self.forget(&exchange);
            self.posts.release();
            return Err(error);
        }
        let Some(deadline) = deadline else {
            return Ok(());
        };
        match rx.recv_deadline(deadline) {
            Ok(outcome) => outcome,
            Err(RecvTimeoutError::Timeout) => {
                // The reply's headers did not come in time: give the exchange up.
                exchange.slot.abort();
                Err(Error::Timeout {
                    method: what,
                    after: started.elapsed(),
                })
            }
            Err(RecvTimeoutError::Disconnected) => Err(if self.is_closed() {
                self.closed_error()
            } else {
                Error::Protocol(format!(
                    "the HTTP worker for `{what}` ended without an answer"
                ))
            }),
        }
    }

    /// Runs `body` under `slot` on a pooled thread, counted and registered for abort on
    /// close.
    fn spawn(
        self: &Arc<Self>,
        _name: &str,
        slot: &Arc<Slot>,
        body: impl FnOnce() + Send + 'static,
    ) -> Result<()> {
        self.live.lock().insert(slot.id(), Arc::clone(slot));
        self.threads.acquire(None);
        let shared = Arc::clone(self);
        let thread_slot = Arc::clone(slot);
        let ran = self.workers.run(Box::new(move || {
            thread_slot.enter(body);
            thread_slot.finish();
            shared.live.lock().remove(&thread_slot.id());
            shared.threads.release();
        }));
        if let Err(error) = ran {
            self.live.lock().remove(&slot.id());
            self.threads.release();
            return Err(error);
        }
        Ok(())
    }

    /// Drops the exchange's ids that are still registered.
    fn forget(&self, exchange: &Arc<Exchange>) {
        let ids: Vec<RequestId> = exchange.pending.lock().iter().cloned().collect();
        let mut inflight = self.inflight.lock();
        for id in ids {
            if inflight
                .get(&id)
                .is_some_and(|entry| Arc::ptr_eq(entry, exchange))
            {
                inflight.remove(&id);
            }
        }
    }

    /// A response for `id` arrived (on any stream).
    fn answered(&self, id: &RequestId) {
        let exchange = self.inflight.lock().remove(id);
        if let Some(exchange) = exchange {
            exchange.pending.lock().remove(id);
        }
    }

    fn abandon(&self, id: &RequestId) -> bool {
        let exchange = self.inflight.lock().remove(id);
        match exchange {
            Some(exchange) => {
                let empty = {
                    let mut pending = exchange.pending.lock();
                    pending.remove(id);
                    pending.is_empty()
                };
                if empty {
                    // Nothing more is wanted from this stream: closing it is the 2026-07-28
                    // cancellation, and frees the thread in either era.
                    exchange.slot.abort();
                }
                exchange.modern
            }
            None => self.modern.load(Ordering::SeqCst),
        }
    }

    /// Hands a frame to the client, noting the responses it carries first.
    fn deliver(&self, bytes: &[u8], init_id: Option<&RequestId>) {
        for id in frames::response_ids(bytes) {
            if init_id == Some(&id) {
                if let Some(Ok(Some(version))) = frames::initialize_outcome(bytes, &id) {
                    self.state.lock().protocol_version = Some(version);
                }
            }
            self.answered(&id);
        }
        if self.is_closed() {
            return;
        }
        let inbound = self.inbound.lock().clone();
        if let Some(inbound) = inbound {
            inbound.frame(bytes);
        }
    }

    fn event(&self, event: super::TransportEvent) {
        let inbound = self.inbound.lock().clone();
        if let Some(inbound) = inbound {
            inbound.event(event);
        }
    }

    fn report_closed(&self, closed: Closed) {
        if self.close_reported.swap(true, Ordering::SeqCst) {
            return;
        }
        let inbound = self.inbound.lock().take();
        if let Some(inbound) = inbound {
            inbound.closed(closed);
        }
    }

    /// The connection cannot go on (a session could not be renewed): close from a worker.
    fn fail(&self, reason: String) {
        let closed = Closed {
            reason,
            exit_status: None,
            stderr_tail: String::new(),
        };
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        *self.close_reason.lock() = Some(closed.clone());
        log::warn!("toolwire: {}", closed.reason);
        let slots: Vec<Arc<Slot>> = self.live.lock().values().cloned().collect();
        for slot in slots {
            slot.abort();
        }
        self.report_closed(closed);
    }

    fn close(&self) {
        let first = !self.closed.swap(true, Ordering::SeqCst);
        if first {
            let slots: Vec<Arc<Slot>> = self.live.lock().values().cloned().collect();
            for slot in slots {
                slot.abort();
            }
            self.delete_session();
            self.agent.clone().shutdown();
            // Idle pooled threads end now; busy ones after their (aborted) exchange.
            self.workers.stop_taking();
        }
        let ours = std::thread::current()
            .name()
            .is_some_and(|name| name.starts_with("toolwire-http"));
        let deadline = Instant::now() + Duration::from_secs(1);
        let ended = ours || (self.threads.wait_idle(deadline) && self.workers.wait_ended(deadline));
        if !ended {
            log::warn!(
                "toolwire: HTTP threads for {} did not end within 1 s; leaving them",
                self.config.url
            );
        }
        if first {
            let closed = self.close_reason.lock().clone().unwrap_or(Closed {
                reason: "closed by the caller".into(),
                exit_status: None,
                stderr_tail: String::new(),
            });
            self.report_closed(closed);
        }
    }
}
