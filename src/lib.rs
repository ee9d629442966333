//! toolwire carries an AI agent's tool calls to real tools: JSON-RPC 2.0 and the Model Context
//! Protocol over stdio child processes and Streamable HTTP, with deadlines that cannot hang the
//! caller, a harness that decides which calls may run, and no async runtime.
//!
//! A runnable example, with an in-memory peer standing in for the server:
//!
//! ```
//! use std::time::Duration;
//! use serde_json::json;
//! use toolwire::{CallOptions, Client, Error, Message, MemoryTransport, Response};
//!
//! let (transport, peer) = MemoryTransport::pair();
//! let client = Client::new(transport)?;
//! let server = std::thread::spawn(move || {
//!     // Answer the first request with its params; leave the second unanswered.
//!     let Some(Message::Request(request)) = peer.recv_message(Duration::from_secs(5)) else {
//!         panic!("expected a request");
//!     };
//!     peer.send(&Message::Response(Response::ok(request.id, request.params.unwrap())));
//!     let _second = peer.recv_message(Duration::from_secs(5));
//!     peer // kept alive: dropping it would close the connection
//! });
//! assert_eq!(client.call("echo", json!({"n": 1}))?, json!({"n": 1}));
//! let late = client.call_with("hang", json!({}), CallOptions::new().timeout(Duration::from_millis(50)));
//! assert!(matches!(late, Err(Error::Timeout { .. })));
//! assert_eq!(client.stats().in_flight, 0);
//! client.close()?;
//! # server.join().unwrap();
//! # Ok::<(), toolwire::Error>(())
//! ```
//!
//! The same against a real server:
//!
//! ```no_run
//! use std::time::Duration;
//! use serde_json::json;
//! use toolwire::{CallOptions, Client, StdioConfig, StdioTransport};
//!
//! # fn main() -> Result<(), toolwire::Error> {
//! let transport = StdioTransport::spawn(StdioConfig::new("my-tool-server"))?;
//! let client = Client::new(transport)?;
//! let sum = client.call("add", json!({"a": 2, "b": 3}))?;
//! let slow = client.call_with(
//!     "sleep",
//!     json!({"ms": 500}),
//!     CallOptions::new()
//!         .timeout(Duration::from_millis(200))
//!         .reset_on_progress(true)
//!         .on_progress(|p| println!("progress {}", p.progress)),
//! );
//! client.close()?;
//! # let _ = (sum, slow); Ok(()) }
//! ```
//!
//! Layers, each knowing only the one below: transports ([`StdioTransport`], `HttpTransport`,
//! [`MemoryTransport`]); the JSON-RPC [`Client`]; the MCP [`McpClient`]; the [`Harness`] with
//! its [`ToolRegistry`].
//!
//! # Threads and shutdown
//!
//! A [`Client`] is `Clone + Send + Sync`; clones share one connection. Each stdio transport owns
//! three named threads (`toolwire-stdout`, `toolwire-stdin`, `toolwire-stderr`), each client one
//! dispatch thread (`toolwire-dispatch`) that runs the peer's requests and notifications, and
//! the process shares one timer thread (`toolwire-timer`). [`Client::close`] is idempotent and
//! bounded: it fails every pending call at once, closes the child's stdin, waits, sends SIGTERM
//! to the child's process group, waits, sends SIGKILL, reaps the child and joins the threads.
//! Dropping the last clone does the same and logs.
//!
//! # Timeouts
//!
//! Every call has a deadline (the client's default is 60 s). When it passes, whoever gets there
//! first, the timer thread or the caller blocked on its own channel until that deadline,
//! removes the pending entry, sends `notifications/cancelled` (never for `initialize`) and
//! completes the call with [`Error::Timeout`], exactly once. The child is not stopped: a
//! timeout releases the request, only `close()` ends the process. Progress can reset the
//! deadline, bounded by a hard total. A blocked caller therefore never waits on the shared
//! timer thread, and a call nobody waits on is still released on time by it.
//!
//! # Errors
//!
//! One [`Error`] enum. Local failures ([`Error::Timeout`], [`Error::Closed`], [`Error::Busy`],
//! [`Error::Cancelled`]) never carry a JSON-RPC code; [`Error::Rpc`] holds the peer's error
//! object. A closed error carries the child's exit status and the tail of its stderr.
//!
//! # Logging
//!
//! Through the `log` facade: skipped frames and late responses at debug, discarded oversized
//! frames and forced kills at warn, the child's stderr lines at debug.
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod client;
mod config_file;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod harness;
mod mcp;
mod schema;
mod sys;
mod timer;
mod transport;
mod wire;

pub use crate::client::{
    BatchEntry, CallEvent, CallHandle, CallOptions, Client, ClientConfig, NotificationHandler,
    Progress, ProgressCallback, RequestHandler, Stats, CANCELLED_METHOD, PROGRESS_METHOD,
};
pub use crate::config_file::{ConfigFormat, LoadOptions, ServerConfigs, ServerEntry};
pub use crate::error::HttpError;
pub use crate::error::{Closed, Error, Result, SchemaError};
pub use crate::harness::{
    AuditEvent, AuditKind, AuditObserver, BudgetState, CallShape, CancelFlag, Harness,
    HarnessConfig, HarnessError, ImportReport, LocalTool, McpImport, NameProfile, Namespace,
    Outcome, Overflow, RemoteErrorText, RemoteTimeoutSlot, ResultLimit, RetryPolicy, SkippedTool,
    Sleeper, Status, ThreadSleeper, ToolFailure, ToolHandler, ToolInfo, ToolOptions, ToolRegistry,
    ToolReply, ToolTimeout, Transcript, HARNESS_LOG_TARGET,
};
pub use crate::mcp::{
    CallToolResult, Connector, Content, ElicitRequest, ElicitResult, ElicitationHandler, Era,
    Implementation, LogHandler, LogMessage, McpClient, McpConfig, McpNotificationHandler,
    ProtocolMode, RestartPolicy, Root, RootsHandler, SamplingHandler, SessionInfo, Tool,
    ToolAnnotations, ToolCall, HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION,
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION,
    STATELESS_VERSION,
};
pub use crate::schema::{Schema, SchemaViolation, MAX_VIOLATIONS};
pub use crate::timer::{TimerKey, TimerTask, TimerWheel};
#[cfg(feature = "http")]
pub use crate::transport::http::{HttpConfig, HttpTransport};
pub use crate::transport::memory::{MemoryPeer, MemoryTransport};
pub use crate::transport::stdio::{StdioConfig, StdioTransport, DEFAULT_INHERITED_ENV};
pub use crate::transport::{Inbound, Outgoing, OutgoingKind, Transport, TransportEvent};
pub use crate::wire::{
    batch_to_line, classify_frame, classify_message, parse_frame, ErrorCode, ErrorObject, Frame,
    Invalid, Message, Notification, ParseError, Request, RequestId, Response, JSONRPC_VERSION,
};
