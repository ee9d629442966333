//! The conventions a protocol adds on top of JSON-RPC 2.0, which the client applies without
//! knowing the protocol: how a request asks for progress and how progress is reported, how a
//! request is cancelled, and what the peer's requests get when the user set no handler.
//!
//! JSON-RPC itself has none of these. MCP's live in `toolwire::mcp::McpDialect`; a client for
//! another protocol (LSP, say) brings its own.

use serde_json::Value;

use super::config::Progress;
use crate::error::{Error, Result};
use crate::wire::{ErrorObject, Notification, Request, RequestId};

/// A protocol's conventions above JSON-RPC. Every method has a default that does nothing, so
/// a dialect names only what its protocol defines. Methods run on the caller's, the reader's
/// or the timer thread: they must be quick and must not block.
pub trait Dialect: Send + Sync + 'static {
    /// A short name for logs and `Debug`.
    fn name(&self) -> &'static str;

    /// Marks a request's params so that the peer reports progress under `token` (the
    /// request's own id).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the params cannot carry a token, or the dialect has no
    /// progress (the default).
    fn attach_progress(&self, params: &mut Option<Value>, token: &RequestId) -> Result<()> {
        let _ = (params, token);
        Err(Error::Config(format!(
            "the {} dialect has no progress reports; give the client a dialect that does \
             (e.g. toolwire::mcp::McpDialect)",
            self.name()
        )))
    }

    /// Reads a progress report: the token it is for and the report, when `notification` is
    /// one with a usable token. Such a notification is the client's (routed to the waiting
    /// call, or dropped when that call is over); anything else goes to the user's handler.
    /// Defaults to none.
    fn read_progress(&self, notification: &Notification) -> Option<(RequestId, Progress)> {
        let _ = notification;
        None
    }

    /// The notification that tells the peer the request `id` was given up, when the
    /// protocol has one. Defaults to none.
    fn cancel_notice(&self, id: &RequestId, reason: &str) -> Option<Notification> {
        let _ = (id, reason);
        None
    }

    /// The answer to a peer's request when the user set no request handler; `None` answers
    /// -32601 (method not found). Defaults to none.
    fn default_answer(&self, request: &Request) -> Option<std::result::Result<Value, ErrorObject>> {
        let _ = request;
        None
    }
}

/// Plain JSON-RPC 2.0: no progress, no cancellation notice, every peer request answered
/// -32601 unless a handler is set. The [`crate::ClientConfig`] default.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainJsonRpc;

impl Dialect for PlainJsonRpc {
    fn name(&self) -> &'static str {
        "plain JSON-RPC"
    }
}
