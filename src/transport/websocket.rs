//! JSON-RPC over WebSocket (RFC 6455, feature `websocket`): one JSON-RPC message (or batch)
//! per text frame, on `ws://` URLs (and `wss://` with the `rustls` feature), through
//! tungstenite, a synchronous WebSocket crate with no async runtime.
//!
//! # Threads
//!
//! One named thread per connection, `toolwire-ws`, owns the WebSocket: a WebSocket is one
//! state machine for both directions (a ping read must be answered by a pong written), so
//! the socket is non-blocking and the thread waits in `poll(2)` for the socket or for a wake
//! byte that [`Transport::send`] writes after queueing a frame (a bounded queue,
//! [`WebSocketConfig::writer_queue`]). No frame waits for a timer tick.
//!
//! # Bounds and close
//!
//! The opening handshake is bounded by [`WebSocketConfig::connect_timeout`]. A message over
//! [`WebSocketConfig::max_frame_bytes`] cannot be skipped (the stream cannot be resynchronised
//! inside a message), so it is reported and the connection is closed with 1009 (message too
//! big): every pending call fails at once saying so. When the peer closes, or the connection
//! breaks, every pending call fails at once. `close()` sends the close frame, waits for the
//! peer's at most [`WebSocketConfig::close_timeout`], then shuts the socket down and waits
//! for the thread at most [`WebSocketConfig::thread_join_grace`]. The URL is masked in every
//! message and header values never appear in one.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender, TryRecvError};
use parking_lot::Mutex;
use tungstenite::client::IntoClientRequest;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::{CloseFrame, WebSocket, WebSocketConfig as WsConfig};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::Message;

use super::{deliver, Connector, Inbound, Outgoing, Transport, TransportEvent};
use crate::error::{Closed, Error, Result};
use crate::mask::{mask_url, MaskedHeaders, Scrubber, Secrets};
use crate::sys::spawn_named;

/// How to reach and bound a WebSocket peer. [`WebSocketConfig::new`] sets every bound to its
/// default; each knob has a setter that says its default.
#[derive(Clone)]
pub struct WebSocketConfig {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) connect_timeout: Duration,
    pub(crate) max_frame_bytes: usize,
    pub(crate) writer_queue: usize,
    pub(crate) close_timeout: Duration,
    pub(crate) thread_join_grace: Duration,
}

impl std::fmt::Debug for WebSocketConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSocketConfig")
            .field("url", &mask_url(&self.url))
            .field("headers", &MaskedHeaders(&self.headers))
            .field("connect_timeout", &self.connect_timeout)
            .field("max_frame_bytes", &self.max_frame_bytes)
            .finish_non_exhaustive()
    }
}

impl WebSocketConfig {
    /// A config for `url` (`ws://…`, or `wss://…` with the `rustls` feature).
    pub fn new(url: impl Into<String>) -> WebSocketConfig {
        WebSocketConfig {
            url: url.into(),
            headers: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            max_frame_bytes: 16 * 1024 * 1024,
            writer_queue: 1024,
            close_timeout: Duration::from_secs(1),
            thread_join_grace: Duration::from_secs(1),
        }
    }

    /// The URL, as given (it may hold a password: show it with
    /// [`crate::transport::mask_url`]).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Adds a header to the opening handshake (e.g. `Authorization`). Defaults to none.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The longest the TCP connect plus the opening handshake may take. Defaults to 10 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The largest message (and frame) accepted; a larger one closes the connection with
    /// 1009. Defaults to 16 MiB.
    pub fn max_frame_bytes(mut self, bytes: usize) -> Self {
        self.max_frame_bytes = bytes;
        self
    }

    /// How many frames may wait to be written; past it a send waits for its deadline, then
    /// fails with [`Error::Busy`]. Defaults to 1,024.
    pub fn writer_queue(mut self, frames: usize) -> Self {
        self.writer_queue = frames;
        self
    }

    /// How long `close()` waits for the peer's close frame. Defaults to 1 s.
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// How long `close()` waits for the thread once the socket is shut down. Defaults to 1 s.
    pub fn thread_join_grace(mut self, grace: Duration) -> Self {
        self.thread_join_grace = grace;
        self
    }

    /// A connector that opens a fresh connection for every (re)connection.
    pub fn connector(self) -> Connector {
        Box::new(move || {
            Ok(Arc::new(WebSocketTransport::connect(self.clone())?) as Arc<dyn Transport>)
        })
    }
}

type Socket = WebSocket<MaybeTlsStream<TcpStream>>;

/// A JSON-RPC connection over a WebSocket. See the module documentation.
pub struct WebSocketTransport {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for WebSocketTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSocketTransport")
            .field("url", &self.shared.display_url)
            .finish_non_exhaustive()
    }
}

struct Shared {
    config: WebSocketConfig,
    display_url: String,
    /// The URL's password and the header values, to take out of what the server says.
    scrubber: Scrubber,
    /// A handle on the TCP socket (the same one the WebSocket reads), to shut it down.
    tcp: TcpStream,
    socket: Mutex<Option<Socket>>,
    writer: Mutex<Option<Sender<String>>>,
    frames: Mutex<Option<Receiver<String>>>,
    /// Written to (one byte) to wake the thread: a frame is queued, or the close began.
    wake_tx: UnixStream,
    wake_rx: UnixStream,
    inbound: Mutex<Option<Arc<dyn Inbound>>>,
    closing: AtomicBool,
    closed: AtomicBool,
    close_reason: Mutex<Option<Closed>>,
    reported: AtomicBool,
    thread_done: Receiver<()>,
    thread_done_tx: Mutex<Option<Sender<()>>>,
    thread_id: Mutex<Option<std::thread::ThreadId>>,
}

fn io_error(display_url: &str, what: &str, error: impl std::fmt::Display) -> Error {
    Error::Io(io::Error::other(format!("{what} {display_url}: {error}")))
}

impl WebSocketTransport {
    /// Connects and runs the opening handshake (within the connect timeout).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a URL that is not `ws://` (or `wss://` with the `rustls`
    /// feature) or a bad header; [`Error::Io`] when the connection or the handshake fails.
    pub fn connect(config: WebSocketConfig) -> Result<WebSocketTransport> {
        let display_url = mask_url(&config.url);
        let lower = config.url.to_ascii_lowercase();
        let tls = lower.starts_with("wss://");
        if !tls && !lower.starts_with("ws://") {
            return Err(Error::Config(format!(
                "`{display_url}` is not a ws:// or wss:// URL"
            )));
        }
        if tls && !cfg!(feature = "rustls") {
            return Err(Error::Config(format!(
                "`{display_url}` needs TLS: enable toolwire's `rustls` feature"
            )));
        }
        let mut request = config
            .url
            .as_str()
            .into_client_request()
            .map_err(|_| Error::Config(format!("`{display_url}` is not a valid URL")))?;
        for (name, value) in &config.headers {
            let name = tungstenite::http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| Error::Config(format!("`{name}` is not a valid header name")))?;
            let value = tungstenite::http::HeaderValue::from_str(value)
                .map_err(|_| Error::Config(format!("the value of header `{name}` is not valid")))?;
            request.headers_mut().append(name, value);
        }
        let host = request
            .uri()
            .host()
            .ok_or_else(|| Error::Config(format!("`{display_url}` has no host")))?
            .trim_matches(|c| c == '[' || c == ']')
            .to_owned();
        let port = request
            .uri()
            .port_u16()
            .unwrap_or(if tls { 443 } else { 80 });
        let started = Instant::now();
        let deadline = started + config.connect_timeout;
        let mut last = io::Error::new(io::ErrorKind::NotFound, "the host resolves to no address");
        let mut tcp = None;
        for address in (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|error| io_error(&display_url, "resolving", error))?
        {
            let left = deadline.saturating_duration_since(Instant::now());
            match TcpStream::connect_timeout(&address, left.max(Duration::from_millis(1))) {
                Ok(stream) => {
                    tcp = Some(stream);
                    break;
                }
                Err(error) => last = error,
            }
        }
        let tcp = tcp.ok_or_else(|| io_error(&display_url, "connecting to", last))?;
        let _ = tcp.set_nodelay(true);
        // The handshake blocks, within what is left of the connect timeout.
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        tcp.set_read_timeout(Some(left)).map_err(Error::Io)?;
        tcp.set_write_timeout(Some(left)).map_err(Error::Io)?;
        let handle = tcp.try_clone().map_err(Error::Io)?;
        let ws_config = WsConfig::default()
            .max_message_size(Some(config.max_frame_bytes))
            .max_frame_size(Some(config.max_frame_bytes));
        let socket = handshake(request, tcp, ws_config, tls)
            .map_err(|error| io_error(&display_url, "the WebSocket handshake with", error))?;
        handle.set_read_timeout(None).map_err(Error::Io)?;
        handle.set_write_timeout(None).map_err(Error::Io)?;
        handle.set_nonblocking(true).map_err(Error::Io)?;
        let (wake_tx, wake_rx) = UnixStream::pair().map_err(Error::Io)?;
        wake_tx.set_nonblocking(true).map_err(Error::Io)?;
        wake_rx.set_nonblocking(true).map_err(Error::Io)?;
        let (writer, frames) = bounded(config.writer_queue.max(1));
        let (done_tx, thread_done) = bounded(0);
        Ok(WebSocketTransport {
            shared: Arc::new(Shared {
                scrubber: Scrubber::new(Secrets::new(
                    &config.url,
                    config.headers.iter().map(|(_, value)| value.as_str()),
                )),
                config,
                display_url,
                tcp: handle,
                socket: Mutex::new(Some(socket)),
                writer: Mutex::new(Some(writer)),
                frames: Mutex::new(Some(frames)),
                wake_tx,
                wake_rx,
                inbound: Mutex::new(None),
                closing: AtomicBool::new(false),
                closed: AtomicBool::new(false),
                close_reason: Mutex::new(None),
                reported: AtomicBool::new(false),
                thread_done,
                thread_done_tx: Mutex::new(Some(done_tx)),
                thread_id: Mutex::new(None),
            }),
        })
    }
}

fn handshake(
    request: tungstenite::handshake::client::Request,
    tcp: TcpStream,
    config: WsConfig,
    tls: bool,
) -> std::result::Result<Socket, String> {
    if tls {
        #[cfg(feature = "rustls")]
        {
            return tungstenite::client_tls_with_config(request, tcp, Some(config), None)
                .map(|(socket, _)| socket)
                .map_err(|error| error.to_string());
        }
    }
    let _ = tls;
    tungstenite::client::client_with_config(request, MaybeTlsStream::Plain(tcp), Some(config))
        .map(|(socket, _)| socket)
        .map_err(|error| error.to_string())
}

impl Transport for WebSocketTransport {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        let shared = &self.shared;
        let (Some(socket), Some(frames)) =
            (shared.socket.lock().take(), shared.frames.lock().take())
        else {
            return Err(Error::Config(
                "the WebSocket transport was already started".into(),
            ));
        };
        *shared.inbound.lock() = Some(inbound);
        let done = shared.thread_done_tx.lock().clone();
        let runner = Arc::clone(shared);
        spawn_named("toolwire-ws", move || {
            let _done = done;
            *runner.thread_id.lock() = Some(std::thread::current().id());
            runner.run(socket, &frames);
        })?;
        Ok(())
    }

    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()> {
        self.send_borrowed(&message, deadline)
    }

    fn send_borrowed(&self, message: &Outgoing, deadline: Option<Instant>) -> Result<()> {
        let shared = &self.shared;
        let Some(tx) = shared.writer.lock().clone() else {
            return Err(shared.closed_error());
        };
        let limit = shared.config.writer_queue;
        super::enqueue(&tx, message.to_line(), deadline, limit, || {
            shared.closed_error()
        })?;
        shared.wake();
        Ok(())
    }

    fn close(&self) -> Result<()> {
        self.shared.close();
        Ok(())
    }

    fn describe(&self) -> String {
        self.shared.display_url.clone()
    }

    fn scrubber(&self) -> Scrubber {
        self.shared.scrubber.clone()
    }
}

impl Drop for WebSocketTransport {
    fn drop(&mut self) {
        self.shared.close();
    }
}

/// How a WebSocket read went, for the loop.
enum Got {
    Message,
    Empty,
    Over(String),
}

impl Shared {
    fn closed_error(&self) -> Error {
        Error::Closed(Box::new(self.close_reason.lock().clone().unwrap_or_else(
            || Closed::new(format!("the WebSocket {} is closed", self.display_url)),
        )))
    }

    fn wake(&self) {
        // A full wake socket means the thread is already due to wake.
        let _ = (&self.wake_tx).write(&[1]);
    }

    /// The connection is over: every pending call fails at once with `reason`.
    fn end(&self, reason: String) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            *self.close_reason.lock() = Some(Closed::new(reason.clone()));
            drop(self.writer.lock().take());
        }
        if self.reported.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(inbound) = self.inbound.lock().take() {
            inbound.closed(Closed::new(reason));
        }
    }

    fn close(&self) {
        let first = !self.closing.swap(true, Ordering::SeqCst);
        drop(self.writer.lock().take());
        self.wake();
        drop(self.thread_done_tx.lock().take());
        let ours = *self.thread_id.lock() == Some(std::thread::current().id());
        let started = self.thread_id.lock().is_some() || self.socket.lock().is_none();
        if first && !ours && started {
            // The thread sends the close frame and waits for the peer's; then the socket.
            let wait = self.config.close_timeout + self.config.thread_join_grace;
            if let Err(RecvTimeoutError::Timeout) = self.thread_done.recv_timeout(wait) {
                let _ = self.tcp.shutdown(Shutdown::Both);
                if let Err(RecvTimeoutError::Timeout) =
                    self.thread_done.recv_timeout(self.config.thread_join_grace)
                {
                    log::warn!(
                        "toolwire: the WebSocket thread for {} did not end; leaving it",
                        self.display_url
                    );
                }
            }
        }
        let _ = self.tcp.shutdown(Shutdown::Both);
        self.end("closed by the caller".into());
    }

    /// The connection's one thread: writes queued frames, reads messages, waits in poll.
    fn run(&self, mut socket: Socket, frames: &Receiver<String>) {
        let fd = self.tcp.as_raw_fd();
        let wake = self.wake_rx.as_raw_fd();
        let mut pending_flush = false;
        let mut close_deadline: Option<Instant> = None;
        loop {
            if self.closing.load(Ordering::SeqCst) && close_deadline.is_none() {
                close_deadline = Some(Instant::now() + self.config.close_timeout);
                let _ = socket.close(None);
                pending_flush = true;
            }
            if close_deadline.is_none() && !pending_flush {
                loop {
                    match frames.try_recv() {
                        Ok(frame) => {
                            if let Err(error) = socket.write(Message::text(frame)) {
                                return self.end(format!(
                                    "writing to the WebSocket {} failed: {error}",
                                    self.display_url
                                ));
                            }
                            pending_flush = true;
                        }
                        Err(TryRecvError::Empty) => break,
                        // Closed from our side: the close frame goes out above next.
                        Err(TryRecvError::Disconnected) => break,
                    }
                }
            }
            if pending_flush {
                match socket.flush() {
                    Ok(()) => pending_flush = false,
                    Err(tungstenite::Error::Io(error))
                        if error.kind() == io::ErrorKind::WouldBlock => {}
                    Err(tungstenite::Error::ConnectionClosed) => {
                        return self.end("the WebSocket was closed".into())
                    }
                    Err(error) => {
                        return self.end(format!(
                            "writing to the WebSocket {} failed: {error}",
                            self.display_url
                        ))
                    }
                }
            }
            loop {
                match self.read_one(&mut socket) {
                    Got::Message => {
                        // A ping's pong (or the close reply) may be waiting to go out.
                        pending_flush = true;
                    }
                    Got::Empty => break,
                    Got::Over(reason) => return self.end(reason),
                }
            }
            if close_deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return self.end("closed by the caller".into());
            }
            let tick = close_deadline.map_or(Duration::from_secs(1), |deadline| {
                deadline.saturating_duration_since(Instant::now())
            });
            if let Err(error) = crate::sys::wait_socket(fd, pending_flush, wake, tick) {
                return self.end(format!("waiting on the WebSocket failed: {error}"));
            }
            let mut sink = [0u8; 64];
            while matches!((&self.wake_rx).read(&mut sink), Ok(count) if count > 0) {}
        }
    }

    fn read_one(&self, socket: &mut Socket) -> Got {
        let inbound = self.inbound.lock().clone();
        match socket.read() {
            Ok(Message::Text(text)) => {
                if let Some(inbound) = inbound {
                    deliver(&*inbound, text.as_bytes());
                }
                Got::Message
            }
            Ok(Message::Binary(bytes)) => {
                // Text frames are the rule; a peer that sends JSON in binary frames is read
                // the same way.
                if let Some(inbound) = inbound {
                    deliver(&*inbound, &bytes);
                }
                Got::Message
            }
            Ok(_) => Got::Message,
            Err(tungstenite::Error::Io(error)) if error.kind() == io::ErrorKind::WouldBlock => {
                Got::Empty
            }
            Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                Got::Over(if self.closing.load(Ordering::SeqCst) {
                    "closed by the caller".into()
                } else {
                    format!("the peer at {} closed the WebSocket", self.display_url)
                })
            }
            Err(tungstenite::Error::Capacity(error)) => {
                let limit = self.config.max_frame_bytes;
                if let Some(inbound) = inbound {
                    inbound.event(TransportEvent::Oversized {
                        bytes: limit as u64 + 1,
                        limit,
                    });
                }
                let _ = socket.close(Some(CloseFrame {
                    code: CloseCode::Size,
                    reason: "message too big".into(),
                }));
                let _ = socket.flush();
                Got::Over(format!(
                    "the peer at {} sent a message over the limit of {limit} bytes \
                     (WebSocketConfig::max_frame_bytes): {error}; the connection was closed \
                     (1009)",
                    self.display_url
                ))
            }
            Err(error) => Got::Over(format!("the WebSocket {} broke: {error}", self.display_url)),
        }
    }
}
