//! The transport seam: how frames leave and arrive.
//!
//! A transport moves whole frames. Outbound, a frame arrives as typed messages with a small
//! [`FrameMeta`] record filled once by the layer that knows (the protocol version, whether it
//! opens a session, the name it targets); the transport serializes it once and reads the
//! record, never the text. Inbound, a transport parses each frame once and hands the parsed
//! [`IncomingFrame`] (or why it is invalid) to an [`Inbound`] sink (the client), on its own threads,
//! with every event and, last, its close. [`Transport::send`] never blocks past the caller's
//! deadline.
//!
//! This layer knows JSON-RPC messages and nothing above them: no method name of any protocol
//! appears here.

use std::sync::Arc;
use std::time::Instant;

use crate::error::{Closed, Error, Result};
use crate::wire::{self, IncomingFrame, Invalid, Message, RequestId};

#[cfg(feature = "http")]
pub(crate) mod http;
#[cfg(feature = "http")]
pub(crate) mod legacy_sse;
pub(crate) mod lines;
pub(crate) mod memory;
pub(crate) mod socket;
#[cfg(feature = "http")]
pub(crate) mod sse;
pub(crate) mod stdio;
#[cfg(all(feature = "websocket", unix))]
pub(crate) mod websocket;

pub use crate::mask::{mask_url, Scrubber};
#[cfg(feature = "http")]
pub use http::{
    AuthDecision, AuthRefusal, AuthTarget, Credentials, HttpAuth, HttpConfig, HttpTransport,
    MAX_AUTH_RETRIES,
};
#[cfg(feature = "http")]
pub use legacy_sse::LegacySseTransport;
pub use memory::{MemoryPeer, MemoryTransport};
pub use socket::{SocketAddress, SocketConfig, SocketTransport};
pub use stdio::{StdioConfig, StdioTransport, DEFAULT_INHERITED_ENV};
#[cfg(all(feature = "websocket", unix))]
pub use websocket::{WebSocketConfig, WebSocketTransport};

/// Where a transport delivers what it reads. Implemented by the client.
pub trait Inbound: Send + Sync {
    /// One complete frame (a line of stdio, an HTTP body, an SSE `data`), parsed once by the
    /// transport with [`crate::jsonrpc::parse_incoming`] (responses keep their result as
    /// text); `bytes` is the text it was parsed from, for logs.
    fn frame(&self, frame: std::result::Result<IncomingFrame, Invalid>, bytes: &[u8]);
    /// Something the transport noticed that is not a frame.
    fn event(&self, event: TransportEvent);
    /// The request `id` can no longer be answered, for this reason (an HTTP error status, a
    /// reply that holds no response to it, a connection refused): its call ends with `error`
    /// at once.
    fn request_failed(&self, id: &RequestId, error: crate::error::Error);
    /// The connection ended. Called at most once; nothing arrives after it.
    fn closed(&self, closed: Closed);
}

/// Parses raw frame bytes and hands them to `inbound`: the one place transports parse.
pub(crate) fn deliver(inbound: &dyn Inbound, bytes: &[u8]) {
    inbound.frame(wire::parse_incoming(bytes), bytes);
}

/// Puts `item` on a transport's bounded writer queue: with a deadline it waits for room until
/// then, without one it does not wait. A queue still full is [`Error::Busy`] with the queue's
/// `limit`; a queue whose writer has gone is the error `closed` makes.
pub(crate) fn enqueue<T>(
    queue: &crossbeam_channel::Sender<T>,
    item: T,
    deadline: Option<Instant>,
    limit: usize,
    closed: impl FnOnce() -> Error,
) -> Result<()> {
    let full = match deadline {
        Some(deadline) => queue
            .send_deadline(item, deadline)
            .map_err(|error| error.is_timeout()),
        None => queue.try_send(item).map_err(|error| error.is_full()),
    };
    match full {
        Ok(()) => Ok(()),
        Err(true) => Err(Error::Busy { limit }),
        Err(false) => Err(closed()),
    }
}

/// Something a transport noticed besides frames.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportEvent {
    /// A frame longer than the limit was discarded without being buffered; the stream went on.
    Oversized {
        /// How many bytes the frame had (counted while discarding).
        bytes: u64,
        /// The limit in force.
        limit: usize,
    },
    /// A response longer than the limit was discarded (reported as [`TransportEvent::Oversized`]
    /// too), and its id could be read while it was skipped: the request it answers is failed at
    /// once with [`crate::Error::Protocol`] naming the size and the limit, instead of waiting
    /// for its deadline. Sent by the newline-framed transports (stdio, TCP, Unix sockets).
    OversizedResponse {
        /// The request the discarded response answered.
        id: RequestId,
        /// How many bytes the frame had (counted while discarding).
        bytes: u64,
        /// The limit in force.
        limit: usize,
        /// The setting that sets the limit, e.g. `StdioConfig::max_line_bytes`.
        setting: &'static str,
    },
    /// Bytes that are not valid UTF-8 were replaced or a frame could not be read as text.
    Note(String),
    /// The transport lost the way a response to this request could arrive (e.g. an HTTP
    /// response stream that broke and cannot be resumed). The caller is failed at once with
    /// [`crate::Error::Io`] (kind `ConnectionAborted`) instead of waiting for its deadline.
    RequestFailed {
        /// The request whose response can no longer arrive.
        id: RequestId,
        /// What happened, in plain words.
        reason: String,
    },
}

/// What an outbound frame's role is in opening a session, for transports that keep one
/// (Streamable HTTP's `Mcp-Session-Id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Lifecycle {
    /// An ordinary frame.
    #[default]
    Ordinary,
    /// The request that opens a session: it carries no session id, its reply may assign one,
    /// and it is replayed when the server drops the session.
    Open,
    /// The notification that completes opening a session: replayed after [`Lifecycle::Open`]
    /// when a session is renewed; after it the transport may open its server stream.
    Opened,
}

/// What the layer above knows about an outbound frame, filled once where it is known, so
/// that no transport reads the frame's text to find it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FrameMeta {
    /// The protocol version the frame is sent under, for transports that declare it (HTTP's
    /// `MCP-Protocol-Version`). Frames without one (the client's own replies and notices) use
    /// the last version declared on the connection. Defaults to none.
    pub protocol_version: Option<Arc<str>>,
    /// The frame belongs to a stateless exchange: no session id is attached, the method and
    /// target travel as routing headers, and giving up the request closes its response
    /// stream. Defaults to false.
    pub stateless: bool,
    /// The name the request targets (a tool, a prompt, a resource URI), for routing headers
    /// (HTTP's `Mcp-Name`). Defaults to none.
    pub target: Option<String>,
    /// The frame's role in opening a session. Defaults to [`Lifecycle::Ordinary`].
    pub lifecycle: Lifecycle,
    /// Parameters of the request mirrored into headers for intermediaries (HTTP's
    /// `Mcp-Param-{name}` of a stateless frame), as (name, value) pairs: the value is the
    /// parameter's plain text, which the transport encodes for the header itself. Defaults to
    /// none.
    pub param_headers: Vec<(String, String)>,
    /// The peer's request this frame belongs to: a server's progress report, log message or
    /// request back to the client made while answering it. Transports that route frames by
    /// request (a Streamable HTTP server sends them on that request's response stream) read
    /// it; the others ignore it. Defaults to none.
    pub related: Option<RequestId>,
}

/// The messages of one outbound frame: one message, or a batch sent as one JSON array.
#[derive(Debug, Clone, PartialEq)]
pub enum OutFrame {
    /// A single message.
    Single(Message),
    /// A batch, in order.
    Batch(Vec<Message>),
}

/// One outbound frame: typed messages and what the layer above knows about them.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    /// What is sent.
    pub frame: OutFrame,
    /// What the transport may need to know about it.
    pub meta: FrameMeta,
}

impl Outgoing {
    /// A single message with no metadata.
    pub fn message(message: impl Into<Message>) -> Outgoing {
        Outgoing {
            frame: OutFrame::Single(message.into()),
            meta: FrameMeta::default(),
        }
    }

    /// The compact JSON text, on one line without the newline.
    pub fn to_line(&self) -> String {
        match &self.frame {
            OutFrame::Single(message) => wire::to_line(message),
            OutFrame::Batch(messages) => wire::to_line(messages),
        }
    }

    /// The compact JSON text followed by a newline, as bytes: a line for stream transports,
    /// serialized once.
    pub fn to_line_bytes(&self) -> Vec<u8> {
        let mut line = Vec::with_capacity(128);
        let written = match &self.frame {
            OutFrame::Single(message) => serde_json::to_writer(&mut line, message),
            OutFrame::Batch(messages) => serde_json::to_writer(&mut line, messages),
        };
        if let Err(error) = written {
            // Our own types always serialize (every map key is a string).
            log::error!("toolwire: could not serialize a message: {error}");
            line.clear();
            line.extend_from_slice(b"null");
        }
        line.push(b'\n');
        line
    }

    /// The messages of the frame, in order.
    pub fn messages(&self) -> &[Message] {
        match &self.frame {
            OutFrame::Single(message) => std::slice::from_ref(message),
            OutFrame::Batch(messages) => messages,
        }
    }

    /// The ids of the requests in the frame, which expect responses.
    pub fn request_ids(&self) -> impl Iterator<Item = &RequestId> {
        self.messages().iter().filter_map(|message| match message {
            Message::Request(request) => Some(&request.id),
            _ => None,
        })
    }

    /// What the frame is, for errors and logs: the method of a request or notification,
    /// "response" or "batch".
    pub fn describe(&self) -> &str {
        match &self.frame {
            OutFrame::Single(Message::Request(request)) => &request.method,
            OutFrame::Single(Message::Notification(notification)) => &notification.method,
            OutFrame::Single(Message::Response(_)) => "response",
            OutFrame::Batch(_) => "batch",
        }
    }
}

/// Makes a fresh transport for a (re)connection, e.g. a new child process.
pub type Connector = Box<dyn Fn() -> Result<Arc<dyn Transport>> + Send + Sync>;

/// A way to exchange frames with a peer.
///
/// Implementations own their threads and must make [`Transport::close`] idempotent and bounded
/// in time. [`Transport::send`] must not block beyond `deadline` (a `None` deadline means "do
/// not block at all": enqueue or fail).
pub trait Transport: Send + Sync + 'static {
    /// Starts delivering inbound frames to `inbound`. Called once, before any `send`.
    ///
    /// # Errors
    ///
    /// When the transport cannot start (e.g. it was already started or closed).
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()>;

    /// Queues one frame for the peer.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Closed`] when the connection is gone; a full queue past `deadline` is
    /// [`crate::Error::Busy`]; transports that send synchronously may fail with their own
    /// errors ([`crate::Error::Http`], [`crate::Error::Timeout`], …), which become the
    /// caller's.
    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()>;

    /// [`Transport::send`] of a frame the caller keeps. Transports that serialize a frame as
    /// they take it implement it, so the caller need not copy the frame to keep it (the MCP
    /// client keeps a 2026-07-28 request's params for its input rounds). Defaults to sending
    /// a clone.
    ///
    /// # Errors
    ///
    /// As [`Transport::send`].
    fn send_borrowed(&self, message: &Outgoing, deadline: Option<Instant>) -> Result<()> {
        self.send(message.clone(), deadline)
    }

    /// Tells the transport that a request was given up (timeout, cancel). Returns true when the
    /// transport itself signals the cancellation to the peer (e.g. by closing an HTTP response
    /// stream), so the client must not also send a cancellation notice. Defaults to false.
    fn request_abandoned(&self, _id: &RequestId) -> bool {
        false
    }

    /// Ends the connection and releases every resource: idempotent, bounded in time. After it
    /// returns, [`Inbound::closed`] has been called (or will never be).
    ///
    /// # Errors
    ///
    /// When cleaning up failed in a way worth reporting; the transport is closed regardless.
    fn close(&self) -> Result<()>;

    /// A short description for logs and errors, e.g. the command line.
    fn describe(&self) -> String;

    /// The connection's secrets, to take out of whatever the peer sends before it is shown
    /// or recorded (see [`Scrubber`]): a child's `env` values, an HTTP connection's header
    /// values, URL password and the credentials of its [`HttpAuth`]. A wrapper returns the
    /// scrubber of the transport it wraps. Defaults to one without secrets (it still masks
    /// URLs).
    fn scrubber(&self) -> Scrubber {
        Scrubber::default()
    }

    /// The session id the server assigned to this connection, when its protocol has one (a
    /// Streamable HTTP session's `Mcp-Session-Id`): what traces record as the session.
    /// Defaults to none.
    fn session_id(&self) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_full_queue_is_busy_with_its_limit_and_a_gone_writer_is_closed() {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let closed = || Error::closed_because("gone");
        enqueue(&tx, 1, None, 1, closed).expect("room for one");
        assert!(matches!(
            enqueue(&tx, 2, None, 1, closed),
            Err(Error::Busy { limit: 1 })
        ));
        let soon = Instant::now() + Duration::from_millis(20);
        let started = Instant::now();
        assert!(matches!(
            enqueue(&tx, 3, Some(soon), 1, closed),
            Err(Error::Busy { limit: 1 })
        ));
        // It waited for room until its deadline before giving up.
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert_eq!(rx.recv().ok(), Some(1));
        enqueue(&tx, 4, Some(soon), 1, closed).expect("room again");
        drop(rx);
        assert!(matches!(
            enqueue(&tx, 5, None, 1, closed),
            Err(Error::Closed(_))
        ));
    }
}
