//! Streamable HTTP for the server: both protocol eras at one endpoint, on std's sockets.
//!
//! The connection handling is ours, on httparse for the request head: it is where the bounds
//! live that a client could otherwise stretch (a head that must arrive within its deadline
//! from its first byte, a body within its own and its cap, a bounded number of connections,
//! writes that cannot block for long), and it needs what the synchronous server crates do not
//! give together: streaming responses written while a handler runs, with a look for a client
//! that hung up (on 2026-07-28 that is the cancellation), and sessions whose streams can be
//! resumed. One thread per connection (`toolwire-http-conn`), bounded by
//! [`HttpServerConfig::max_connections`] and, per address,
//! [`HttpServerConfig::max_connections_per_address`]; idle connections (no complete request
//! head) make room for newcomers, so only connections being served hold their slots. No
//! request takes a worker before its whole body is in.
//!
//! Files: `config`, `request` (reading a request), `response` (writing), `guard` (Host and
//! Origin, and what a trusted proxy's headers say), `route` (POST, GET, DELETE), `stream` (a
//! response stream), `session`, `slots` (who holds a connection slot), `socket` (a plain or
//! TLS connection), `tls` (the server's certificate and key, feature `rustls`). A metrics listener ([`HttpServer::bind_metrics`]) is the same
//! server with one route: `GET` at its path answers Prometheus text.

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;

use super::auth::Caller;
use super::Server;
use crate::error::Result;
use crate::sys::{self, spawn_named};

mod config;
mod guard;
mod health;
pub(crate) mod request;
mod response;
mod route;
mod session;
mod slots;
mod socket;
mod stream;
#[cfg(feature = "rustls")]
mod tls;

pub use config::{HttpServerConfig, MAX_INSTANCE_ID};
#[cfg(feature = "rustls")]
pub use tls::ServerTls;

use request::{framing, read_body, read_head, Buffer, Framing, Limits, ReadError};
use session::Session;
use slots::{Refusal, Slots};
use socket::Socket;

/// What the acceptor and the connection threads share.
pub(crate) struct HttpInner {
    pub(crate) server: Server,
    pub(crate) config: HttpServerConfig,
    pub(crate) sessions: Mutex<HashMap<String, Arc<Session>>>,
    pub(crate) stopping: AtomicBool,
    /// [`HttpServer::drain`] runs: nothing new is accepted, `/readyz` says `draining`.
    pub(crate) draining: AtomicBool,
    /// Set for a metrics listener ([`HttpServer::bind_metrics`]): it answers `GET` at its path
    /// with this recorder's text, and nothing else.
    metrics: Option<crate::metrics::Metrics>,
    /// The open connections: closing the server ends their reads at once, and idle ones make
    /// room for newcomers.
    slots: Slots,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl HttpInner {
    /// The session `id` when `caller` opened it.
    pub(crate) fn session(&self, id: &str, caller: Option<&Caller>) -> Option<Arc<Session>> {
        let sessions = self.sessions.lock();
        sessions.get(id).filter(|s| s.belongs_to(caller)).cloned()
    }

    /// Takes the session `id` out when `caller` opened it.
    pub(crate) fn remove_session(&self, id: &str, caller: Option<&Caller>) -> Option<Arc<Session>> {
        let mut sessions = self.sessions.lock();
        if !sessions.get(id)?.belongs_to(caller) {
            return None;
        }
        sessions.remove(id)
    }

    /// Closes the sessions idle past their limit.
    pub(crate) fn sweep_sessions(&self) {
        let limit = self.config.session_idle;
        let idle: Vec<Arc<Session>> = {
            let mut sessions = self.sessions.lock();
            let expired: Vec<String> = sessions
                .iter()
                .filter(|(_, session)| session.last_seen.lock().elapsed() >= limit)
                .map(|(id, _)| id.clone())
                .collect();
            expired
                .iter()
                .filter_map(|id| sessions.remove(id))
                .collect()
        };
        for session in idle {
            log::debug!(target: super::LOG_TARGET, "session {} idle; closed", session.id);
            let _ = session.connection.close();
        }
    }
}

/// A Streamable HTTP server for a [`Server`]: one endpoint serving the handshake era (with
/// sessions, JSON or SSE answers, the GET stream, resumption with `Last-Event-ID`, DELETE)
/// and the 2026-07-28 stateless protocol (its headers checked, closing a response stream
/// cancels the request). It listens on 127.0.0.1 unless told otherwise, and refuses any
/// `Host` or `Origin` that does not name it (DNS-rebinding protection).
///
/// Threads: `toolwire-http-accept`, `toolwire-http-janitor` (closes idle sessions), and one
/// `toolwire-http-conn` per connection. [`HttpServer::close`] (or dropping it) stops
/// accepting, closes every session and connection, and joins the threads within
/// [`HttpServerConfig::join_grace`].
pub struct HttpServer {
    inner: Arc<HttpInner>,
    addr: SocketAddr,
    acceptor: Mutex<Option<JoinHandle<()>>>,
    janitor: Mutex<Option<JoinHandle<()>>>,
    janitor_stop: Mutex<Option<Sender<()>>>,
    closed: (Sender<()>, Receiver<()>),
    done: AtomicBool,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.addr)
            .field("sessions", &self.sessions())
            .field("connections", &self.connections())
            .finish()
    }
}

impl HttpServer {
    /// Listens and serves in the background; returns at once.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Config`] for a setting out of its bounds, [`crate::Error::Io`] when the address
    /// cannot be bound or a thread cannot start.
    pub fn bind(server: &Server, config: HttpServerConfig) -> Result<HttpServer> {
        HttpServer::start(server, config, None)
    }

    /// Listens for Prometheus: `GET` at `config`'s path (give it `.path("/metrics")`, where
    /// Prometheus looks by default) answers the text of the recorder of
    /// [`crate::server::ServerConfig::metrics`]; any other path is 404, any other method 405.
    /// Everything else of `config` applies as it does to [`HttpServer::bind`]: loopback by
    /// default, the Host and Origin checks, the connection and head bounds and deadlines. It
    /// serves no MCP; the server's own endpoint is another [`HttpServer::bind`].
    ///
    /// # Errors
    ///
    /// [`crate::Error::Config`] when the server records no metrics or a setting is out of its
    /// bounds, [`crate::Error::Io`] when the address cannot be bound or a thread cannot start.
    pub fn bind_metrics(server: &Server, config: HttpServerConfig) -> Result<HttpServer> {
        let Some(metrics) = server.config().metrics.clone() else {
            return Err(crate::Error::Config(
                "a metrics listener needs a server that records metrics (ServerConfig::metrics)"
                    .into(),
            ));
        };
        HttpServer::start(server, config, Some(metrics))
    }

    fn start(
        server: &Server,
        config: HttpServerConfig,
        metrics: Option<crate::metrics::Metrics>,
    ) -> Result<HttpServer> {
        config.check()?;
        let listener = TcpListener::bind(config.addr)?;
        let addr = listener.local_addr()?;
        // A trusted proxy carries many clients' connections from one address.
        let exempt: Vec<IpAddr> = config
            .per_address_exempt
            .iter()
            .chain(&config.trusted_proxies)
            .copied()
            .collect();
        let slots = Slots::new(
            config.max_connections,
            config.max_connections_per_address,
            &exempt,
        );
        let inner = Arc::new(HttpInner {
            server: server.clone(),
            config,
            sessions: Mutex::new(HashMap::new()),
            stopping: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            metrics,
            slots,
            threads: Mutex::new(Vec::new()),
        });
        let accepting = Arc::clone(&inner);
        let acceptor = spawn_named("toolwire-http-accept", move || accept(&accepting, listener))?;
        let (stop_tx, stop_rx) = bounded::<()>(0);
        let sweeping = Arc::clone(&inner);
        let every = (inner.config.session_idle / 4)
            .clamp(Duration::from_millis(100), Duration::from_secs(30));
        let janitor = spawn_named("toolwire-http-janitor", move || {
            while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                stop_rx.recv_timeout(every)
            {
                sweeping.sweep_sessions();
            }
        })?;
        Ok(HttpServer {
            inner,
            addr,
            acceptor: Mutex::new(Some(acceptor)),
            janitor: Mutex::new(Some(janitor)),
            janitor_stop: Mutex::new(Some(stop_tx)),
            closed: bounded(0),
            done: AtomicBool::new(false),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint's URL, e.g. `http://127.0.0.1:39211/mcp` (`https://` with
    /// [`HttpServerConfig::tls`]).
    pub fn url(&self) -> String {
        let scheme = if self.inner.config.has_tls() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}{}", self.addr, self.inner.config.path)
    }

    /// Sessions open right now.
    pub fn sessions(&self) -> usize {
        self.inner.sessions.lock().len()
    }

    /// Connections open right now (serving a request or waiting for one).
    pub fn connections(&self) -> usize {
        self.inner.slots.len()
    }

    /// Blocks until [`HttpServer::close`] is called from another thread.
    pub fn wait(&self) {
        if !self.done.load(Ordering::SeqCst) {
            let _ = self.closed.1.recv();
        }
    }

    /// Drains the server for a graceful stop (SIGTERM behind a load balancer): `/readyz`
    /// answers 503 `draining`; the listener is closed, so new connections are refused; idle
    /// kept-alive connections and the sessions' GET streams are closed; requests being
    /// served go on, each connection closing once its answer is written. When they are all
    /// answered, or `grace` has passed, it [`HttpServer::close`]s (what still runs is given
    /// up as a closed connection's is). Returns how many connections were still open when
    /// `grace` passed (0: every request was answered).
    ///
    /// # Errors
    ///
    /// None today; the signature leaves room.
    pub fn drain(&self, grace: Duration) -> Result<usize> {
        let deadline = Instant::now() + grace;
        if !self.done.load(Ordering::SeqCst) && !self.inner.draining.swap(true, Ordering::SeqCst) {
            // Wake the acceptor from `accept` with a connection of our own.
            let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
            if let Some(acceptor) = self.acceptor.lock().take() {
                sys::join_reporting(acceptor);
            }
            let sessions: Vec<Arc<Session>> =
                self.inner.sessions.lock().values().cloned().collect();
            for session in sessions {
                session::end_standalone(&session.transport);
            }
            self.inner.slots.close_idle();
        }
        let left = self.inner.slots.wait_empty(deadline);
        if left > 0 {
            log::warn!(target: super::LOG_TARGET, "{left} HTTP connection(s) still serving when the drain's grace passed; closing them");
        }
        self.close()?;
        Ok(left)
    }

    /// Stops the server: no new connection; every session closed (its requests given up as
    /// a connection's are); every connection closed; the threads joined within the join
    /// grace (one stuck in a write to a client is left, logged). Idempotent.
    ///
    /// # Errors
    ///
    /// None today; the signature leaves room.
    pub fn close(&self) -> Result<()> {
        if self.done.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.inner.stopping.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.lock().take() {
            // Wake the acceptor from `accept` with a connection of our own.
            let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
            sys::join_reporting(acceptor);
        }
        drop(self.janitor_stop.lock().take());
        if let Some(janitor) = self.janitor.lock().take() {
            sys::join_reporting(janitor);
        }
        let sessions: Vec<Arc<Session>> =
            self.inner.sessions.lock().drain().map(|(_, s)| s).collect();
        for session in sessions {
            let _ = session.connection.close();
        }
        self.inner.slots.close_all();
        let deadline = Instant::now() + self.inner.config.join_grace;
        let threads = std::mem::take(&mut *self.inner.threads.lock());
        let mut left = 0;
        for thread in threads {
            while !thread.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
            if thread.is_finished() {
                sys::join_reporting(thread);
            } else {
                left += 1;
            }
        }
        if left > 0 {
            log::warn!(target: super::LOG_TARGET, "{left} HTTP connection thread(s) still busy after close; leaving them");
        }
        let _ = self.closed.0.try_send(());
        Ok(())
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Refuses a connection past a limit: a 503 written without waiting, then closed (a TLS
/// client could not read it before a handshake: it is only closed).
fn refuse_busy(mut socket: TcpStream, refusal: &Refusal, tls: bool) {
    if tls {
        let _ = socket.shutdown(std::net::Shutdown::Both);
        return;
    }
    let _ = socket.set_nonblocking(true);
    let message = match refusal {
        Refusal::Full(limit) => {
            format!("the server serves at most {limit} connections at once; try again later")
        }
        Refusal::AddressFull(limit) => format!(
            "the server serves at most {limit} connections from one address at once; \
             try again later"
        ),
    };
    let body = response::error_body(-32000, &message);
    let mut out = response::head(
        503,
        &[
            ("Content-Type", "application/json".into()),
            ("Content-Length", body.len().to_string()),
            ("Retry-After", "1".into()),
        ],
        false,
    );
    out.extend(body);
    let _ = socket.write_all(&out);
    let _ = socket.shutdown(std::net::Shutdown::Both);
}

fn accept(inner: &Arc<HttpInner>, listener: TcpListener) {
    for socket in listener.incoming() {
        if inner.stopping.load(Ordering::SeqCst) || inner.draining.load(Ordering::SeqCst) {
            // The listener is dropped: connections from now on are refused.
            return;
        }
        let socket = match socket {
            Ok(socket) => socket,
            Err(error) => {
                log::warn!(target: super::LOG_TARGET, "accept failed: {error}");
                // Out of descriptors, most likely: give the connections a moment to end.
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let Ok(peer) = socket.peer_addr() else {
            continue;
        };
        let key = match inner.slots.admit(&socket, peer.ip()) {
            Ok(key) => key,
            Err(refusal) => {
                log::debug!(target: super::LOG_TARGET, "refused a connection from {peer}: {refusal:?}");
                refuse_busy(socket, &refusal, inner.config.has_tls());
                continue;
            }
        };
        let serving = Arc::clone(inner);
        let spawned = spawn_named("toolwire-http-conn", move || {
            if let Some(socket) = open(&serving.config, socket, peer) {
                serve_connection(&serving, socket, key);
            }
            serving.slots.release(key);
        });
        match spawned {
            Ok(thread) => {
                let mut threads = inner.threads.lock();
                threads.retain(|thread| !thread.is_finished());
                threads.push(thread);
            }
            Err(error) => {
                log::warn!(target: super::LOG_TARGET, "no thread for a connection: {error}");
                inner.slots.release(key);
            }
        }
    }
}

/// Sets the socket's read timeout to what is left before `deadline`.
fn until(socket: &TcpStream, deadline: Instant) -> std::result::Result<(), ReadError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(ReadError::TimedOut);
    }
    socket
        .set_read_timeout(Some(left))
        .map_err(|error| ReadError::Broken(error.to_string()))
}

/// A connection made ready to serve: plain, or TLS with its handshake done within the head
/// deadline. `None` when it closed, stalled or spoke something else (answered and closed).
fn open(config: &HttpServerConfig, tcp: TcpStream, peer: SocketAddr) -> Option<Socket> {
    let _ = tcp.set_nodelay(true);
    let _ = tcp.set_write_timeout(Some(config.write_timeout));
    #[cfg(feature = "rustls")]
    if let Some(tls) = &config.tls {
        let deadline = Instant::now() + config.head_timeout;
        // A TLS connection starts with a handshake record (22); a plain HTTP request on the
        // TLS port is told so, in plain HTTP, rather than met with a TLS alert.
        let _ = tcp.set_read_timeout(Some(config.head_timeout));
        let mut first = [0u8; 1];
        match tcp.peek(&mut first) {
            Ok(1) if first[0] == 22 => {}
            Ok(1) => {
                log::debug!(target: super::LOG_TARGET, "plain HTTP from {peer} at the TLS port; refused");
                let body = response::error_body(
                    -32600,
                    "this server speaks HTTPS only: use an https:// URL",
                );
                let mut tcp = tcp;
                let _ = response::write_full(
                    &mut tcp,
                    400,
                    Some("application/json"),
                    &[],
                    &body,
                    false,
                );
                let _ = tcp.shutdown(std::net::Shutdown::Both);
                return None;
            }
            _ => return None,
        }
        let connection = tls.accept().ok()?;
        let mut socket = Socket::tls(tcp, peer, connection);
        if let Err(error) = socket.handshake(deadline) {
            log::debug!(target: super::LOG_TARGET, "TLS handshake with {peer} failed: {error}");
            socket.shutdown();
            return None;
        }
        return Some(socket);
    }
    Some(Socket::plain(tcp, peer))
}

/// Serves the requests of one connection, one after another, until it closes, idles past its
/// limit, breaks a rule, or the server stops.
fn serve_connection(inner: &Arc<HttpInner>, mut socket: Socket, key: u64) {
    let config = &inner.config;
    let Ok(timer) = socket.tcp().try_clone() else {
        return;
    };
    let limits = Limits {
        max_head_bytes: config.max_head_bytes,
        max_headers: config.max_headers,
        max_body_bytes: config.max_body_bytes,
    };
    let mut buffer = Buffer::default();
    let mut first = true;
    loop {
        if inner.stopping.load(Ordering::SeqCst) || inner.draining.load(Ordering::SeqCst) {
            return;
        }
        if buffer.is_empty() {
            // The first request's first byte must come within the head deadline (a client
            // that connects and sends nothing holds its place no longer than a slow head);
            // between requests, a kept-alive connection waits up to the idle limit.
            let wait = if first {
                config.head_timeout
            } else {
                config.idle_timeout
            };
            first = false;
            if !socket.has_buffered() {
                let _ = timer.set_read_timeout(Some(wait));
                match timer.peek(&mut [0u8; 1]) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        }
        let head_deadline = Instant::now() + config.head_timeout;
        socket.deadline = Some(head_deadline);
        let head = read_head(&mut socket, &mut buffer, &limits, &mut || {
            until(&timer, head_deadline)
        });
        let head = match head {
            Ok(head) => head,
            Err(error) => return refuse_read(&mut socket, error),
        };
        // From here the connection holds its slot; one taken back for a newcomer meanwhile
        // is closed, its request not served.
        if !inner.slots.serving(key) {
            return;
        }
        let framing = match framing(&head, &limits) {
            Ok(framing) => framing,
            Err(error) => return refuse_read(&mut socket, error),
        };
        if framing != Framing::None
            && head
                .header("expect")
                .is_some_and(|expect| expect.eq_ignore_ascii_case("100-continue"))
        {
            let _ = socket.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        let body_deadline = Instant::now() + config.body_timeout;
        socket.deadline = Some(body_deadline);
        let body = read_body(&mut socket, &mut buffer, framing, &limits, &mut || {
            until(&timer, body_deadline)
        });
        let body = match body {
            Ok(body) => body,
            Err(error) => return refuse_read(&mut socket, error),
        };
        // No read timeout while a request is served: the stream loop looks for a hang-up
        // itself.
        let _ = timer.set_read_timeout(None);
        socket.deadline = None;
        match handle(inner, &head, &body, &mut socket) {
            Ok(true) if head.keep_alive() => inner.slots.waiting(key),
            Ok(_) => return,
            Err(error) => {
                log::debug!(target: super::LOG_TARGET, "a client connection broke: {error}");
                return;
            }
        }
    }
}

/// Answers a request that could not be read, then the connection closes.
fn refuse_read(socket: &mut Socket, error: ReadError) {
    let (status, message) = match error {
        ReadError::Idle | ReadError::Broken(_) => return,
        ReadError::TimedOut => (408, "the request did not arrive in time".to_owned()),
        ReadError::Refused(status, message) => (status, message),
    };
    log::debug!(target: super::LOG_TARGET, "refused a request with {status}: {message}");
    let body = response::error_body(-32600, &message);
    let _ = response::write_full(socket, status, Some("application/json"), &[], &body, false);
    socket.shutdown();
}

/// Routes one request. Returns whether the connection may serve another.
fn handle(
    inner: &Arc<HttpInner>,
    head: &request::Head,
    body: &[u8],
    socket: &mut Socket,
) -> io::Result<bool> {
    let path = head.target.split('?').next().unwrap_or("");
    if inner.metrics.is_none() {
        if let Some(again) = health::route(inner, head, path, socket)? {
            return Ok(again);
        }
    }
    let authorization = inner.config.authorization.as_ref();
    if let Some(authorization) = authorization.filter(|a| path == a.metadata_path()) {
        return metadata(authorization, head, socket);
    }
    if path != inner.config.path {
        let body = response::error_body(-32600, "Not Found");
        response::write_full(socket, 404, Some("application/json"), &[], &body, true)?;
        return Ok(true);
    }
    let via = guard::via(head, socket.peer, socket.is_tls(), &inner.config);
    socket.client = via.client;
    if let Err((status, message)) = guard::check(via.host, head.header("origin"), &inner.config) {
        log::debug!(target: super::LOG_TARGET, "refused by the rebinding check: {message}");
        let body = response::error_body(-32600, &message);
        response::write_full(socket, status, Some("application/json"), &[], &body, false)?;
        return Ok(false);
    }
    // Every request at the endpoint is authorized before it is routed: no handler runs for
    // a request without a good token.
    let token = head.header("authorization");
    let caller = match authorization.map(|a| {
        if token.is_some() && !guard::token_may_come(&via, &inner.config) {
            // The token crossed a network in clear: refused unread, and never logged.
            log::info!(target: super::LOG_TARGET, "refused a bearer token sent in clear from {}", via.client);
            return Err(a.refused_in_clear());
        }
        a.authorize(token)
    }) {
        None => None,
        Some(Ok(caller)) => Some(Arc::new(caller)),
        Some(Err(refusal)) => {
            // A 503 (the token could not be checked now) has no challenge.
            let challenge = [("WWW-Authenticate", refusal.challenge)];
            let headers = if challenge[0].1.is_empty() {
                &challenge[..0]
            } else {
                &challenge[..]
            };
            response::write_full(
                socket,
                refusal.status,
                Some("application/json"),
                headers,
                &refusal.body,
                true,
            )?;
            return Ok(true);
        }
    };
    if let Some(metrics) = &inner.metrics {
        return metrics_route(metrics, head, socket);
    }
    match head.method.as_str() {
        "POST" => route::post(inner, head, body, socket, caller),
        "GET" => route::get(inner, head, socket, caller.as_deref()),
        "DELETE" => route::delete(inner, head, socket, caller.as_deref()),
        _ => {
            let allow = [("Allow", "GET, POST, DELETE".to_owned())];
            let body = response::error_body(-32600, "Method Not Allowed");
            response::write_full(socket, 405, Some("application/json"), &allow, &body, true)?;
            Ok(true)
        }
    }
}

/// A request to a metrics listener: `GET` answers the recorder's text, anything else 405.
fn metrics_route(
    metrics: &crate::metrics::Metrics,
    head: &request::Head,
    socket: &mut Socket,
) -> io::Result<bool> {
    if head.method != "GET" {
        let allow = [("Allow", "GET".to_owned())];
        let body = b"Method Not Allowed\n";
        response::write_full(socket, 405, Some("text/plain"), &allow, body, true)?;
        return Ok(true);
    }
    let text = metrics.render();
    let content_type = Some(crate::metrics::CONTENT_TYPE);
    response::write_full(socket, 200, content_type, &[], text.as_bytes(), true)?;
    Ok(true)
}

/// The protected resource metadata (RFC 9728): to any origin, for GET and HEAD.
fn metadata(
    authorization: &crate::server::auth::Authorization,
    head: &request::Head,
    socket: &mut Socket,
) -> io::Result<bool> {
    let cors = ("Access-Control-Allow-Origin", "*".to_owned());
    match head.method.as_str() {
        "GET" | "HEAD" => {
            let document = authorization.metadata_document();
            let body = if head.method == "HEAD" {
                Vec::new()
            } else {
                document
            };
            response::write_full(socket, 200, Some("application/json"), &[cors], &body, true)?;
        }
        "OPTIONS" => {
            let headers = [
                cors,
                (
                    "Access-Control-Allow-Methods",
                    "GET, HEAD, OPTIONS".to_owned(),
                ),
                ("Access-Control-Allow-Headers", "*".to_owned()),
            ];
            response::write_full(socket, 204, None, &headers, b"", true)?;
        }
        _ => {
            let allow = [("Allow", "GET, HEAD, OPTIONS".to_owned())];
            response::write_full(socket, 405, None, &allow, b"", true)?;
        }
    }
    Ok(true)
}
