//! How a registered tool reaches its MCP server, and the policies for a remote call's
//! timeout and error text.

use std::time::Duration;

use crate::mcp::McpClient;

/// What a timed-out remote call does to its admission slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RemoteTimeoutSlot {
    /// The request carries the tool's bound as its own deadline: when it passes, the MCP
    /// client sends `notifications/cancelled` to the server, the worker is freed at once and
    /// the caller gets `TIMEOUT`. Nothing local keeps running; whether the server stops is up
    /// to the server.
    #[default]
    Release,
    /// The caller gets `TIMEOUT` after the tool's bound, but the worker keeps waiting for the
    /// server's answer (which is then logged and discarded), at most `limit` in all, so the
    /// harness never runs more remote work at once than it has workers. The request is
    /// cancelled on the wire only when `limit` passes. `limit` is 1 ms to 1 hour and at least
    /// the tool's bound.
    HoldUntilAnswered {
        /// The longest the worker waits for the answer.
        limit: Duration,
    },
}

/// What the model sees of an MCP tool's `isError` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RemoteErrorText {
    /// The text is the tool's answer, written to be read (MCP servers report bad arguments
    /// and failures this way so the model can correct itself): it goes to the model in the
    /// outcome's `result`, within the result limit.
    #[default]
    Pass,
    /// The text goes to the log and the transcript only; the model reads a generic detail.
    Withhold,
}

/// A registered tool's MCP server and the tool's name there.
pub(crate) struct RemoteBinding {
    pub(crate) client: McpClient,
    pub(crate) remote_name: String,
    pub(crate) slot: RemoteTimeoutSlot,
    pub(crate) error_text: RemoteErrorText,
    /// Bounds its calls apart from the harness's workers: its attempts run on the caller's
    /// thread, admitted here.
    pub(crate) admission: Option<super::Admission>,
}
