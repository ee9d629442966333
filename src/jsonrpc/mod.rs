//! The JSON-RPC 2.0 layer: the [`Client`] with its ids, pending table, deadlines, call
//! handles, call sets and inbound dispatch; the wire types and their strict parser; the timer
//! wheel; and [`Dialect`], the seam through which the protocol above adds progress,
//! cancellation and default answers.

pub(crate) mod client;
pub(crate) mod timer;
pub(crate) mod wire;

pub use client::{
    BatchEntry, CallEvent, CallHandle, CallOptions, CallSet, Client, ClientConfig, Dialect,
    NotificationHandler, PeerRequests, PlainJsonRpc, Progress, ProgressCallback, RequestHandler,
    RequestSink, Stats,
};
pub use timer::{TimerKey, TimerTask, TimerWheel};
pub use wire::{
    batch_to_line, classify_frame, classify_message, parse_frame, parse_incoming, ErrorCode,
    ErrorObject, Frame, Incoming, IncomingFrame, Invalid, Message, Notification, ParseError,
    RawResponse, Request, RequestId, Response, JSONRPC_VERSION,
};
