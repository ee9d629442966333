//! The transport seam: how frames leave and arrive.
//!
//! A transport moves whole frames. It hands every inbound frame, event and its final close to
//! an [`Inbound`] sink (the client), on its own threads, and accepts outbound frames through
//! [`Transport::send`], which never blocks past the caller's deadline.

use std::sync::Arc;
use std::time::Instant;

use crate::error::{Closed, Result};
use crate::wire::RequestId;

#[cfg(feature = "http")]
pub mod http;
pub(crate) mod lines;
pub mod memory;
#[cfg(feature = "http")]
pub(crate) mod sse;
pub mod stdio;

/// Where a transport delivers what it reads. Implemented by the client.
pub trait Inbound: Send + Sync {
    /// One complete frame (a line of stdio, an HTTP body, an SSE `data`), not yet parsed.
    fn frame(&self, bytes: &[u8]);
    /// Something the transport noticed that is not a frame.
    fn event(&self, event: TransportEvent);
    /// The connection ended. Called at most once; nothing arrives after it.
    fn closed(&self, closed: Closed);
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

/// What kind of message an outbound frame carries; transports that route by method or id
/// (HTTP) read it, line transports ignore it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutgoingKind {
    /// A request expecting a response with this id.
    Request {
        /// The request id.
        id: RequestId,
        /// The method name.
        method: String,
    },
    /// A notification.
    Notification {
        /// The method name.
        method: String,
    },
    /// A response to the peer's request.
    Response,
    /// A batch (a JSON array).
    Batch,
}

/// One outbound frame, serialized on one line without the newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The compact JSON text.
    pub line: String,
    /// What the frame carries.
    pub kind: OutgoingKind,
}

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
    /// [`crate::Error::Closed`] when the connection is gone, [`crate::Error::Timeout`]-like
    /// failures are reported by the caller; a full queue past `deadline` is
    /// [`crate::Error::Busy`].
    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()>;

    /// Tells the transport that a request was given up (timeout, cancel). Returns true when the
    /// transport itself signals the cancellation to the peer (e.g. by closing an HTTP response
    /// stream), so the client must not also send `notifications/cancelled`. Defaults to false.
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
}
