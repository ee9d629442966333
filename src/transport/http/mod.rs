//! The Streamable HTTP transport (MCP 2025-03-26 … 2025-11-25 and 2026-07-28), on ureq,
//! with threads and no async runtime.
//!
//! Files: `config` (the settings), `pool` (exchange threads), `post` (one POST and its
//! reply), `stream` (event streams, their resumption, the GET stream), `session` (session
//! ids, renewal, DELETE), `conn` (abortable connections), `util` (header values, bounded
//! reads).
//!
//! # How a frame travels
//!
//! Every outbound frame is one POST to the endpoint, made on a pooled worker thread (at most
//! [`HttpConfig::max_concurrent_posts`] at once; one more waits for a place within its
//! deadline, then fails with [`Error::Busy`]).
//!
//! A frame holding requests is sent without waiting for the POST: [`Transport::send`] returns
//! once the POST is under way, and the caller waits on its call, which its deadline, a cancel
//! or an interrupt can end at any moment (the POST is then abandoned and its connection
//! closed). What the POST brings ends the calls of its requests:
//!
//! - an error status, a refused connection, or a reply that cannot carry the response fails
//!   exactly those calls at once, through [`Inbound::request_failed`], with the precise error
//!   ([`Error::Http`] with the status and a bounded body excerpt, [`Error::Io`],
//!   [`Error::Protocol`]), never an invented JSON-RPC error;
//! - an `application/json` reply is read whole (up to [`HttpConfig::max_body_bytes`]) and
//!   parsed once; a JSON reply that holds no response to the request fails it at once rather
//!   than at its deadline;
//! - a `text/event-stream` reply is read event by event (notifications, server requests, then
//!   the responses); the worker stops after the last response.
//!
//! A notification or a response (the client's answer to a server request) has no call to
//! tell: its sender waits, within its deadline, for the POST's status (202, or a 200 whose
//! body is ignored), and an error comes back from `send`. A `send` without a deadline (the
//! client's cancellation notice from its timer thread) does not wait at all; a failure is
//! logged.
//!
//! # What the transport reads of a frame
//!
//! Only the typed messages and their [`FrameMeta`]: the ids of the requests (to route their
//! responses), the method (for `Mcp-Method` and error messages), and the record's protocol
//! version, statelessness, target name and [`Lifecycle`]. It never parses its own outbound
//! text, and it parses every inbound body or event once, handing the parsed frame up.
//!
//! # Sessions
//!
//! The `Mcp-Session-Id` of the reply to the [`Lifecycle::Open`] request is sent on every later
//! request that is not stateless, with the protocol version the frames declare (or, for the
//! client's own replies and notices, the last one declared) as `MCP-Protocol-Version`. When a
//! request that carried a session id gets 404, the session expired: the transport replays the
//! opening request and notification it saw (their replies are not handed to the client),
//! then retries the request once. Some servers (server-everything) answer an unknown session
//! with 400 instead; with [`HttpConfig::session_expired_on_400`] (on by default) a 400 whose
//! body mentions a session is treated the same way. If the new session cannot be started, the
//! transport closes, so a restart policy can reconnect.
//!
//! After the [`Lifecycle::Opened`] notification, an optional GET stream carries
//! server-initiated messages; 400, 404 and 405 mean "not offered". Sending the notification
//! waits up to [`HttpConfig::standalone_stream_wait`] for that GET's status, so the stream is
//! there before the first request. An event stream that ends before the response is resumed
//! by GET with `Last-Event-ID` after the server's `retry:` interval (or
//! [`HttpConfig::default_retry`]), when the server gave event ids. `close()` sends DELETE with
//! the session id (405 is fine).
//!
//! # Stateless frames (2026-07-28)
//!
//! A frame whose meta is stateless gets the headers `MCP-Protocol-Version`, `Mcp-Method` and,
//! when it names a target, `Mcp-Name` (base64-wrapped when not plain ASCII), and no session
//! id. Giving up such a request closes its response stream ([`Transport::request_abandoned`]
//! returns true), instead of posting a cancellation notice. Session-era cancellations still
//! post the notice; their stream is closed as well, since nothing more is wanted from it.
//!
//! # Bounds
//!
//! Connect, write, per-read and response-header timeouts are explicit ([`HttpConfig`]); JSON
//! bodies and SSE events are capped (an SSE event over the cap is skipped and reported, the
//! stream goes on); error bodies are read only up to [`HttpConfig::error_body_bytes`]. Every
//! exchange can be aborted from another thread: `close()` shuts down the sockets of open
//! streams, so it returns promptly (see `conn.rs`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{bounded, RecvTimeoutError};
use parking_lot::Mutex;

use super::{Inbound, Outgoing, Transport, TransportEvent};
use crate::error::{Closed, Error, Result};
use crate::wire::{self, Incoming, IncomingFrame, Invalid, RequestId};

mod auth;
mod config;
pub(in crate::transport) mod conn;
mod pool;
mod post;
mod session;
mod stream;
pub(in crate::transport) mod util;

pub use auth::{AuthDecision, AuthRefusal, AuthTarget, Credentials, HttpAuth, MAX_AUTH_RETRIES};
pub use config::HttpConfig;

use conn::Slot;
use pool::{Gate, Workers};
use post::{Post, Reply};
use session::State;

/// A Streamable HTTP connection to one MCP endpoint. See the module documentation.
pub struct HttpTransport {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("url", &self.shared.display_url)
            .field("session", &self.session_id().map(|_| "<set>"))
            .finish()
    }
}

/// One POST and the request ids still waiting for their response on it.
pub(super) struct Exchange {
    slot: Arc<Slot>,
    stateless: bool,
    pending: Mutex<HashSet<RequestId>>,
}

impl Exchange {
    fn done(&self) -> bool {
        self.pending.lock().is_empty()
    }
}

pub(super) struct Shared {
    config: HttpConfig,
    /// The URL as every message shows it: masked once, here (see `crate::mask`).
    display_url: String,
    /// The connection's secrets (the configured ones and the credentials handed out by the
    /// config's [`HttpAuth`]), taken out of the server's and ureq's text before it goes into
    /// an error, and shared with the client (see [`Transport::scrubber`]).
    scrubber: crate::mask::Scrubber,
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
    /// The last request sent was stateless.
    stateless: AtomicBool,
    standalone_started: AtomicBool,
    closed: AtomicBool,
    close_reason: Mutex<Option<Closed>>,
    close_reported: AtomicBool,
    requests: AtomicU64,
}

impl HttpTransport {
    /// A transport for the config's URL. Nothing is sent until the first frame.
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
            .timeout_per_write(Some(config.write_timeout));
        #[cfg(feature = "rustls")]
        let agent_config = agent_config.tls_config(config.tls_config()?);
        let agent_config = agent_config.build();
        let agent = ureq::Agent::with_parts(
            agent_config,
            conn::AbortableConnector::default(),
            ureq::unversioned::resolver::DefaultResolver::default(),
        );
        let shared = Arc::new(Shared {
            display_url: config.display_url(),
            scrubber: crate::mask::Scrubber::new(config.secrets()),
            posts: Gate::new(config.max_concurrent_posts),
            threads: Gate::new(usize::MAX),
            workers: Workers::new(config.worker_idle),
            config,
            agent,
            inbound: Mutex::new(None),
            started: AtomicBool::new(false),
            state: Mutex::new(State::default()),
            inflight: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            renewing: Mutex::new(()),
            stateless: AtomicBool::new(false),
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

    /// The session id the server assigned, once the opening request was answered with one.
    pub fn session_id(&self) -> Option<String> {
        self.shared.state.lock().session_id.clone()
    }

    /// The protocol version the session's frames declared last.
    pub fn protocol_version(&self) -> Option<String> {
        self.shared
            .state
            .lock()
            .protocol_version
            .as_deref()
            .map(str::to_owned)
    }

    /// How many exchanges (POSTs with their reply streams, the GET stream, resumptions) are
    /// in progress right now.
    pub fn open_exchanges(&self) -> usize {
        self.shared.live.lock().len()
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
        self.shared.send(Post::read(message, deadline))
    }

    fn send_borrowed(&self, message: &Outgoing, deadline: Option<Instant>) -> Result<()> {
        let mut post = Post::lent(message, deadline);
        post.meta = message.meta.clone();
        self.shared.send(post)
    }

    fn request_abandoned(&self, id: &RequestId) -> bool {
        self.shared.abandon(id)
    }

    fn close(&self) -> Result<()> {
        self.shared.close();
        Ok(())
    }

    fn describe(&self) -> String {
        self.shared.display_url.clone()
    }

    fn scrubber(&self) -> crate::mask::Scrubber {
        self.shared.scrubber.clone()
    }

    fn session_id(&self) -> Option<String> {
        HttpTransport::session_id(self)
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        self.shared.close();
    }
}

/// An error as the calls of one batch each get it.
fn copy_error(error: &Error) -> Error {
    match error {
        Error::Http(http) => Error::Http(http.clone()),
        Error::Timeout { method, after } => Error::Timeout {
            method: method.clone(),
            after: *after,
        },
        Error::Closed(closed) => Error::Closed(closed.clone()),
        Error::Busy { limit } => Error::Busy { limit: *limit },
        Error::Protocol(text) => Error::Protocol(text.clone()),
        Error::Io(io) => Error::Io(std::io::Error::new(io.kind(), io.to_string())),
        Error::Auth(auth) => Error::Auth(auth.clone()),
        other => Error::Protocol(other.to_string()),
    }
}

/// The ids of the responses in a parsed frame.
fn response_ids(frame: &std::result::Result<IncomingFrame, Invalid>) -> Vec<RequestId> {
    let id_of = |message: &Incoming| match message {
        Incoming::Response(response) => response.id.clone(),
        _ => None,
    };
    match frame {
        Ok(IncomingFrame::Single(message)) => id_of(message).into_iter().collect(),
        Ok(IncomingFrame::Batch(elements)) => elements
            .iter()
            .filter_map(|element| element.as_ref().ok().and_then(id_of))
            .collect(),
        Err(_) => Vec::new(),
    }
}

impl Shared {
    /// Foreign text (a server's body, ureq's message) with every secret of the connection
    /// taken out: the configured ones and the credentials of its [`HttpAuth`].
    pub(super) fn scrub(&self, text: &str) -> String {
        self.scrubber.scrub(text)
    }

    /// The credential headers for one request, from the config's [`HttpAuth`] (none without
    /// one).
    pub(super) fn credentials(&self, method: &str) -> Result<Credentials> {
        let Some(auth) = &self.config.auth else {
            return Ok(Credentials::none());
        };
        let credentials = auth.credentials(&AuthTarget {
            method,
            url: &self.config.url,
        })?;
        self.scrubber.learn(
            credentials.generation,
            credentials.headers.iter().map(|(_, value)| value.as_str()),
        );
        Ok(credentials)
    }

    /// The credentials for a request whose failure to get them is only logged (a GET, the
    /// DELETE at close): the request then goes without, and its refusal says why.
    pub(super) fn credentials_or_none(&self, method: &str) -> Credentials {
        self.credentials(method).unwrap_or_else(|error| {
            log::debug!(
                "toolwire: no credentials for {method} {}: {error}",
                self.display_url
            );
            Credentials::none()
        })
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    fn closed_error(&self) -> Error {
        let closed = self
            .close_reason
            .lock()
            .clone()
            .unwrap_or_else(|| Closed::new("the HTTP transport is closed"));
        Error::Closed(Box::new(closed))
    }

    fn send(self: &Arc<Self>, post: Post) -> Result<()> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        if self.inbound.lock().is_none() {
            return Err(Error::Config("the HTTP transport was not started".into()));
        }
        let deadline = post.deadline;
        self.note_lifecycle(&post);
        if !post.ids.is_empty() {
            self.stateless.store(post.meta.stateless, Ordering::SeqCst);
        }
        if !self.posts.acquire(deadline) {
            return Err(Error::Busy {
                limit: self.config.max_concurrent_posts,
            });
        }
        let exchange = Arc::new(Exchange {
            slot: Slot::new(),
            stateless: post.meta.stateless,
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
        // A request's sender does not wait for the POST: its caller waits on its call (which
        // its deadline, a cancel or Ctrl-C can end at any moment), and a failed status reaches
        // exactly the calls of this POST, with the precise error. Notifications and responses
        // have no call to tell: their sender waits for the status, within its deadline.
        let asynchronous = !post.ids.is_empty();
        let reply = if asynchronous {
            Reply::to_calls(Arc::downgrade(self), post.ids.clone(), what.clone())
        } else {
            Reply::new(tx, what.clone())
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
        if let Err(error) = self.spawn(&exchange.slot, worker) {
            self.forget(&exchange);
            self.posts.release();
            return Err(error);
        }
        let Some(deadline) = deadline.filter(|_| !asynchronous) else {
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
                    // Nothing more is wanted from this stream: closing it is the stateless
                    // cancellation, and frees the thread in either era.
                    exchange.slot.abort();
                }
                exchange.stateless
            }
            None => self.stateless.load(Ordering::SeqCst),
        }
    }

    /// Parses a body or event once, notes the responses it carries, and hands it to the
    /// client.
    fn deliver(&self, bytes: &[u8]) {
        let frame = wire::parse_incoming(bytes);
        self.deliver_parsed(frame, bytes);
    }

    fn deliver_parsed(&self, frame: std::result::Result<IncomingFrame, Invalid>, bytes: &[u8]) {
        for id in response_ids(&frame) {
            self.answered(&id);
        }
        if self.is_closed() {
            return;
        }
        let inbound = self.inbound.lock().clone();
        if let Some(inbound) = inbound {
            inbound.frame(frame, bytes);
        }
    }

    /// The POST of these requests failed: each of their calls ends with the error (one call
    /// gets it as it is; the calls of a batch get copies).
    fn requests_failed(&self, ids: &[RequestId], error: Error) {
        let inbound = self.inbound.lock().clone();
        let Some(inbound) = inbound else {
            return;
        };
        for id in ids.iter().skip(1) {
            inbound.request_failed(id, copy_error(&error));
        }
        if let Some(first) = ids.first() {
            inbound.request_failed(first, error);
        }
    }

    fn event(&self, event: TransportEvent) {
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
        let closed = Closed::new(reason);
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
        let ours = self.workers.is_current();
        let grace = self.config.thread_join_grace;
        let deadline = Instant::now() + grace;
        let ended = ours || (self.threads.wait_idle(deadline) && self.workers.wait_ended(deadline));
        if !ended {
            log::warn!(
                "toolwire: HTTP threads for {} did not end within {grace:?}; leaving them",
                self.display_url
            );
        }
        if first {
            let closed = self
                .close_reason
                .lock()
                .clone()
                .unwrap_or_else(|| Closed::new("closed by the caller"));
            self.report_closed(closed);
        }
    }
}
