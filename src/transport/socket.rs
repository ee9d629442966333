//! Newline-delimited JSON over a TCP or Unix-domain socket, for plain JSON-RPC peers (a
//! language server listening on a port, a local daemon's socket): the framing of stdio, over
//! a connection instead of a child's pipes.
//!
//! Two named threads per connection: `toolwire-socket-read` reads frames with the line cap
//! enforced while reading (an oversize line is skipped and reported, the stream goes on), and
//! `toolwire-socket-write` writes frames from a bounded queue (a peer that stops reading makes
//! sends fail by their deadline with [`Error::Busy`], never blocks them). When the peer
//! closes or the connection breaks, every pending call fails at once. `close()` shuts the
//! socket down both ways, which ends both threads, and waits for them at most
//! [`SocketConfig::thread_join_grace`].

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;

use super::lines::{read_lines_and_replies, LineEvent};
use super::{deliver, Connector, Inbound, Outgoing, Transport, TransportEvent};
use crate::error::{Closed, Error, Result};
use crate::sys::spawn_named;

/// Where a socket peer listens.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SocketAddress {
    /// `host:port`, resolved at connect time (every address is tried in turn).
    Tcp(String),
    /// A Unix-domain socket's path.
    Unix(PathBuf),
}

impl std::fmt::Display for SocketAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SocketAddress::Tcp(address) => write!(f, "tcp://{address}"),
            SocketAddress::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// How to reach and bound a socket peer. [`SocketConfig::tcp`] and [`SocketConfig::unix`]
/// set every bound to its default; each knob has a setter that says its default.
#[derive(Debug, Clone)]
pub struct SocketConfig {
    pub(crate) address: SocketAddress,
    pub(crate) connect_timeout: Duration,
    pub(crate) max_line_bytes: usize,
    pub(crate) writer_queue: usize,
    pub(crate) write_timeout: Duration,
    pub(crate) thread_join_grace: Duration,
}

impl SocketConfig {
    /// A TCP peer at `host:port`.
    pub fn tcp(address: impl Into<String>) -> SocketConfig {
        SocketConfig::new(SocketAddress::Tcp(address.into()))
    }

    /// A Unix-domain socket peer at `path`.
    pub fn unix(path: impl Into<PathBuf>) -> SocketConfig {
        SocketConfig::new(SocketAddress::Unix(path.into()))
    }

    fn new(address: SocketAddress) -> SocketConfig {
        SocketConfig {
            address,
            connect_timeout: Duration::from_secs(10),
            max_line_bytes: 16 * 1024 * 1024,
            writer_queue: 1024,
            write_timeout: Duration::from_secs(30),
            thread_join_grace: Duration::from_secs(1),
        }
    }

    /// The peer's address.
    pub fn address(&self) -> &SocketAddress {
        &self.address
    }

    /// The longest a TCP connect may take (for each address the name resolves to). Defaults
    /// to 10 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The longest line (frame) read; longer ones are skipped while they are read and
    /// reported, and the stream goes on. Defaults to 16 MiB.
    /// A skipped response whose id is read on the way fails its call at once with
    /// [`crate::Error::Protocol`] naming the size and this limit.
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }

    /// How many frames may wait for the writer; past it a send waits for its deadline, then
    /// fails with [`Error::Busy`]. Defaults to 1,024.
    pub fn writer_queue(mut self, frames: usize) -> Self {
        self.writer_queue = frames;
        self
    }

    /// The longest one write may block (a peer that stops reading); past it the connection
    /// is closed. Defaults to 30 s.
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.write_timeout = timeout;
        self
    }

    /// How long `close()` waits for the two threads after shutting the socket down. Defaults
    /// to 1 s.
    pub fn thread_join_grace(mut self, grace: Duration) -> Self {
        self.thread_join_grace = grace;
        self
    }

    /// A connector that opens a fresh connection for every (re)connection.
    pub fn connector(self) -> Connector {
        Box::new(
            move || Ok(Arc::new(SocketTransport::connect(self.clone())?) as Arc<dyn Transport>),
        )
    }
}

/// One connected socket of either kind.
enum Stream {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(UnixStream),
}

impl Stream {
    fn try_clone(&self) -> io::Result<Stream> {
        match self {
            Stream::Tcp(stream) => stream.try_clone().map(Stream::Tcp),
            #[cfg(unix)]
            Stream::Unix(stream) => stream.try_clone().map(Stream::Unix),
        }
    }

    fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(stream) => stream.shutdown(Shutdown::Both),
            #[cfg(unix)]
            Stream::Unix(stream) => stream.shutdown(Shutdown::Both),
        };
    }

    fn set_write_timeout(&self, timeout: Duration) -> io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.set_write_timeout(Some(timeout)),
            #[cfg(unix)]
            Stream::Unix(stream) => stream.set_write_timeout(Some(timeout)),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(stream) => stream.read(buf),
            #[cfg(unix)]
            Stream::Unix(stream) => stream.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(stream) => stream.write(buf),
            #[cfg(unix)]
            Stream::Unix(stream) => stream.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.flush(),
            #[cfg(unix)]
            Stream::Unix(stream) => stream.flush(),
        }
    }
}

/// A JSON-RPC connection over a TCP or Unix-domain socket. See the module documentation.
pub struct SocketTransport {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SocketTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocketTransport")
            .field("address", &self.shared.describe)
            .finish_non_exhaustive()
    }
}

struct Shared {
    config: SocketConfig,
    describe: String,
    stream: Stream,
    writer: Mutex<Option<Sender<String>>>,
    writer_rx: Mutex<Option<Receiver<String>>>,
    inbound: Mutex<Option<Arc<dyn Inbound>>>,
    threads_done: Receiver<()>,
    threads_done_tx: Mutex<Option<Sender<()>>>,
    thread_ids: Mutex<Vec<std::thread::ThreadId>>,
    closed: AtomicBool,
    close_reason: Mutex<Option<Closed>>,
    reported: AtomicBool,
}

impl SocketTransport {
    /// Connects to the peer; no frame is read until [`Transport::start`].
    ///
    /// # Errors
    ///
    /// [`Error::Io`] naming the address when no connection can be made (within the connect
    /// timeout, for TCP).
    pub fn connect(config: SocketConfig) -> Result<SocketTransport> {
        let describe = config.address.to_string();
        let failed = |error: io::Error| {
            Error::Io(io::Error::new(
                error.kind(),
                format!("connecting to {describe}: {error}"),
            ))
        };
        let stream = match &config.address {
            SocketAddress::Tcp(address) => {
                let mut last =
                    io::Error::new(io::ErrorKind::NotFound, "the name resolves to no address");
                let mut connected = None;
                for candidate in address.to_socket_addrs().map_err(failed)? {
                    match TcpStream::connect_timeout(&candidate, config.connect_timeout) {
                        Ok(stream) => {
                            connected = Some(stream);
                            break;
                        }
                        Err(error) => last = error,
                    }
                }
                let stream = connected.ok_or_else(|| failed(last))?;
                // Frames are written whole: do not hold them back for more.
                let _ = stream.set_nodelay(true);
                Stream::Tcp(stream)
            }
            #[cfg(unix)]
            SocketAddress::Unix(path) => Stream::Unix(UnixStream::connect(path).map_err(failed)?),
            #[cfg(not(unix))]
            SocketAddress::Unix(_) => {
                return Err(Error::Config(
                    "Unix-domain sockets need a Unix system".into(),
                ))
            }
        };
        stream
            .set_write_timeout(config.write_timeout)
            .map_err(failed)?;
        let (writer, writer_rx) = bounded(config.writer_queue.max(1));
        let (done_tx, threads_done) = bounded(0);
        Ok(SocketTransport {
            shared: Arc::new(Shared {
                config,
                describe,
                stream,
                writer: Mutex::new(Some(writer)),
                writer_rx: Mutex::new(Some(writer_rx)),
                inbound: Mutex::new(None),
                threads_done,
                threads_done_tx: Mutex::new(Some(done_tx)),
                thread_ids: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
                close_reason: Mutex::new(None),
                reported: AtomicBool::new(false),
            }),
        })
    }
}

impl Transport for SocketTransport {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        let shared = &self.shared;
        let Some(frames) = shared.writer_rx.lock().take() else {
            return Err(Error::Config(
                "the socket transport was already started".into(),
            ));
        };
        *shared.inbound.lock() = Some(inbound);
        let reader_stream = shared.stream.try_clone().map_err(Error::Io)?;
        let writer_stream = shared.stream.try_clone().map_err(Error::Io)?;
        let done = shared.threads_done_tx.lock().clone();
        {
            let shared = Arc::clone(shared);
            let done = done.clone();
            spawn_named("toolwire-socket-read", move || {
                let _done = done;
                shared.thread_ids.lock().push(std::thread::current().id());
                shared.read_loop(reader_stream);
            })?;
        }
        let shared_writer = Arc::clone(shared);
        spawn_named("toolwire-socket-write", move || {
            let _done = done;
            shared_writer
                .thread_ids
                .lock()
                .push(std::thread::current().id());
            shared_writer.write_loop(writer_stream, &frames);
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
        })
    }

    fn close(&self) -> Result<()> {
        self.shared.close("closed by the caller");
        Ok(())
    }

    fn describe(&self) -> String {
        self.shared.describe.clone()
    }
}

impl Drop for SocketTransport {
    fn drop(&mut self) {
        self.shared.close("the transport was dropped");
    }
}

impl Shared {
    fn closed_error(&self) -> Error {
        Error::Closed(Box::new(self.close_reason.lock().clone().unwrap_or_else(
            || Closed::new(format!("the connection to {} is closed", self.describe)),
        )))
    }

    /// The connection is over: every pending call fails at once with `reason`.
    fn end(&self, reason: String) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            *self.close_reason.lock() = Some(Closed::new(reason.clone()));
            drop(self.writer.lock().take());
            self.stream.shutdown();
        }
        if self.reported.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(inbound) = self.inbound.lock().take() {
            inbound.closed(Closed::new(reason));
        }
    }

    fn close(&self, reason: &str) {
        self.end(reason.to_owned());
        drop(self.threads_done_tx.lock().take());
        if self
            .thread_ids
            .lock()
            .contains(&std::thread::current().id())
        {
            return;
        }
        let grace = self.config.thread_join_grace;
        if let Err(RecvTimeoutError::Timeout) = self.threads_done.recv_timeout(grace) {
            log::warn!(
                "toolwire: socket threads for {} did not end within {grace:?}; leaving them",
                self.describe
            );
        }
    }

    fn read_loop(&self, stream: Stream) {
        let limit = self.config.max_line_bytes;
        let inbound = self.inbound.lock().clone();
        let Some(inbound) = inbound else { return };
        let result = read_lines_and_replies(
            stream,
            limit,
            |event| match event {
                LineEvent::Line(line) => deliver(&*inbound, line),
                LineEvent::Oversized(bytes) => {
                    inbound.event(TransportEvent::Oversized { bytes, limit })
                }
            },
            |id, bytes| {
                inbound.event(TransportEvent::OversizedResponse {
                    id,
                    bytes,
                    limit,
                    setting: "SocketConfig::max_line_bytes",
                })
            },
        );
        let how = match result {
            Ok(()) => "closed the connection".to_owned(),
            Err(error) => format!("broke the connection ({error})"),
        };
        self.end(format!("the peer at {} {how}", self.describe));
    }

    fn write_loop(&self, mut stream: Stream, frames: &Receiver<String>) {
        while let Ok(mut line) = frames.recv() {
            line.push('\n');
            if let Err(error) = stream
                .write_all(line.as_bytes())
                .and_then(|()| stream.flush())
            {
                self.end(format!("writing to {} failed: {error}", self.describe));
                return;
            }
        }
    }
}
