//! toolwire carries an AI agent's tool calls to real tools: the Model Context Protocol and
//! JSON-RPC 2.0 over stdio child processes and Streamable HTTP, with deadlines that cannot hang
//! the caller, a harness that decides which calls may run, and no async runtime.
//!
//! An MCP server's tools, listed and called, with a deadline:
//!
//! ```no_run
//! use std::time::Duration;
//! use serde_json::json;
//! use toolwire::{CallOptions, McpClient, McpConfig, StdioConfig};
//!
//! # fn main() -> Result<(), toolwire::Error> {
//! let server = StdioConfig::new("npx").args(["-y", "@modelcontextprotocol/server-everything"]);
//! let client = McpClient::connect_stdio(server, McpConfig::default())?;
//! for tool in client.list_tools()?.iter() {
//!     println!("{}", tool.name);
//! }
//! let sum = client.call_tool("get-sum", json!({"a": 2, "b": 3}))?;
//! assert_eq!(sum.text(), "The sum of 2 and 3 is 5.");
//! let slow = client.call_tool_with(
//!     "trigger-long-running-operation",
//!     json!({"duration": 5, "steps": 5}),
//!     CallOptions::new()
//!         .timeout(Duration::from_secs(2))
//!         .reset_on_progress(true)
//!         .on_progress(|p| println!("progress {}", p.progress)),
//! )?;
//! client.close()?;
//! # let _ = slow; Ok(()) }
//! ```
//!
//! The same client over HTTP is `McpClient::connect_http("http://127.0.0.1:3001/mcp", …)`;
//! a host's config file (`.mcp.json`, `.vscode/mcp.json`, …) routes each entry for you with
//! [`ServerConfigs`].
//!
//! A runnable example, with an in-memory MCP server played by the test:
//!
//! ```
//! use std::time::Duration;
//! use serde_json::json;
//! use toolwire::jsonrpc::{Message, Response};
//! use toolwire::transport::MemoryTransport;
//! use toolwire::{McpClient, McpConfig, ProtocolMode};
//!
//! let (transport, peer) = MemoryTransport::pair();
//! let server = std::thread::spawn(move || {
//!     let wait = Duration::from_secs(5);
//!     while let Some(Message::Request(request)) = peer.recv_message(wait) {
//!         let result = match request.method.as_str() {
//!             "initialize" => json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
//!                                    "serverInfo": {"name": "demo", "version": "1"}}),
//!             "tools/call" => json!({"content": [{"type": "text", "text": "5"}]}),
//!             _ => json!({}),
//!         };
//!         peer.send(&Message::Response(Response::ok(request.id, result)));
//!         // `notifications/initialized` comes between the two requests.
//!         let _ = peer.recv_message(wait);
//!     }
//! });
//! let config = McpConfig::default().mode(ProtocolMode::Legacy);
//! let client = McpClient::connect(transport, config)?;
//! assert_eq!(client.session_info()?.server.name, "demo");
//! assert_eq!(client.call_tool("add", json!({"a": 2, "b": 3}))?.text(), "5");
//! client.close()?;
//! # server.join().unwrap();
//! # Ok::<(), toolwire::Error>(())
//! ```
//!
//! # Layers
//!
//! Each knows only the one below, and each is a module:
//!
//! - [`harness`]: which calls may run at all, for tool calls that come from a model: an
//!   allowlist [`ToolRegistry`], JSON Schema checks, zero-queue admission, an attempt budget,
//!   eight statuses.
//! - [`mcp`]: the Model Context Protocol client, both eras ([`McpClient`]).
//! - [`jsonrpc`]: the JSON-RPC 2.0 client ([`Client`]): ids, the pending table, deadlines on
//!   one timer wheel, call handles and call sets, the peer's requests.
//! - [`transport`]: stdio child processes, Streamable HTTP, the legacy HTTP+SSE transport,
//!   WebSocket (feature `websocket`), TCP and Unix sockets, an in-memory pair for tests; typed
//!   frames across the seam.
//! - [`config`]: the server lists of the config files hosts already have.
//! - `auth` (feature `oauth`): MCP authorization (OAuth 2.1) for the HTTP transport, beside
//!   it: the transport asks an [`HttpAuth`](transport::HttpAuth) for credentials and hands it
//!   every 401 and 403; `auth::OAuth` is the one this crate ships, with pluggable
//!   authorizers (the user's step) and token stores.
//!
//! Beside them, `server` (feature `server`, on by default) is the other end of the link: an
//! MCP server for tools, resources and prompts, over stdio and Streamable HTTP, on the same
//! JSON-RPC core and transports.
//!
//! The root holds what a first program needs; everything else is in its layer's module.
//!
//! # Threads and shutdown
//!
//! A [`Client`] is `Clone + Send + Sync`; clones share one connection. Each stdio transport owns
//! three named threads (`toolwire-stdout`, `toolwire-stdin`, `toolwire-stderr`), each client one
//! dispatch thread (`toolwire-dispatch`) that runs the peer's requests and notifications, and
//! the process shares one timer thread (`toolwire-timer`). [`Client::close`] is idempotent and
//! bounded: it fails every pending call at once, closes the child's stdin, waits, sends SIGTERM
//! to the child's process group, waits, sends SIGKILL, reaps the child and joins the threads.
//! Dropping the last clone does the same and logs. A panic in a user callback (a request or
//! notification handler, a progress callback, a timer task) is caught and logged; the library
//! thread goes on, and a peer's request whose handler panicked is answered with -32603.
//!
//! # Timeouts
//!
//! Every call has a deadline (the client's default is 60 s). When it passes, whoever gets there
//! first, the timer thread or the caller blocked on its own channel until that deadline,
//! removes the pending entry, sends the protocol's cancellation notice (never for MCP's
//! `initialize`) and completes the call with [`Error::Timeout`], exactly once. The child is not
//! stopped: a timeout releases the request, only `close()` ends the process. Progress can reset
//! the deadline, bounded by a hard total.
//!
//! # Errors
//!
//! One [`Error`] enum for the whole crate, so `?` works across layers. Local failures
//! ([`Error::Timeout`], [`Error::Closed`], [`Error::Busy`], [`Error::Cancelled`]) never carry a
//! JSON-RPC code; [`Error::Rpc`] holds the peer's error object. A closed error carries the
//! child's exit status and the tail of its stderr.
//!
//! # Logging
//!
//! Through the `log` facade: skipped frames and late responses at debug, discarded oversized
//! frames and forced kills at warn, the child's stderr lines at debug, a server's MCP log
//! messages under the target `toolwire::server`, harness decisions under `toolwire::harness`.
//!
//! No record, error or `Debug` of this crate shows a secret: header values, bearer tokens and
//! environment values show as `***`, a URL as [`transport::mask_url`] gives it
//! (`http://user:***@host/…`), and a server's error body has the connection's credentials
//! taken out. ureq, under the HTTP transport, logs under the targets `ureq` and `ureq_proto`:
//! redacted at debug, but at trace `ureq_proto` dumps the raw bytes of every request (its
//! headers too), and with trace enabled for it `ureq` prints whole query strings even in its
//! debug records; so keep those targets below trace wherever logs are kept (the `toolwire`
//! command never enables them at trace).
#![deny(missing_docs)]
#![deny(unsafe_code)]

#[cfg(feature = "oauth")]
pub mod auth;
#[cfg(feature = "server")]
mod civil;
pub mod config;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "gateway")]
pub mod gateway;
pub mod harness;
mod json;
pub mod jsonrpc;
// The JSON-RPC layer's private modules live under `jsonrpc/`, where the source tree mirrors the
// public module; the rest of the crate names them from the root as before.
use jsonrpc::{client, timer, wire};
mod mask;
pub mod mcp;
pub mod metrics;
pub mod schema;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "gateway")]
mod suggest;
mod sys;
pub mod telemetry;
pub mod transport;

pub use crate::client::{CallHandle, CallOptions, Client, ClientConfig};
pub use crate::config::ServerConfigs;
pub use crate::error::{Closed, Error, Result};
pub use crate::harness::{
    CallShape, Harness, HarnessConfig, LocalTool, McpImport, MessageReply, Outcome, Status,
    ToolOptions, ToolRegistry, ToolReply,
};
pub use crate::mcp::{CallToolResult, Content, McpClient, McpConfig, ProtocolMode, Tool, ToolCall};
#[cfg(feature = "http")]
pub use crate::transport::HttpConfig;
pub use crate::transport::StdioConfig;

/// The README's Rust examples, compiled by `cargo test --doc` so they cannot fall behind the
/// API (the ones that need a running server are `no_run`; the others run).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The Rust examples of the deeper docs (docs/*.md), compiled like the README's.
#[cfg(doctest)]
pub mod docs_doctests {
    /// docs/client.md
    #[doc = include_str!("../docs/client.md")]
    pub struct Client;
    /// docs/mcp.md
    #[doc = include_str!("../docs/mcp.md")]
    pub struct Mcp;
    /// docs/authorization.md
    #[doc = include_str!("../docs/authorization.md")]
    pub struct Authorization;
    /// docs/harness.md
    #[doc = include_str!("../docs/harness.md")]
    pub struct Harness;
    /// docs/server.md
    #[doc = include_str!("../docs/server.md")]
    pub struct Server;
    /// docs/cli.md
    #[doc = include_str!("../docs/cli.md")]
    pub struct Cli;
}
