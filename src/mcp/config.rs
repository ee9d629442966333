//! MCP client settings: protocol mode, handlers for server requests, restart policy.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::types::{ElicitRequest, ElicitResult, LogMessage, Root};
use crate::client::ClientConfig;
use crate::wire::{ErrorObject, Notification};

/// The newest handshake-era version, offered in `initialize` by default.
pub const LATEST_HANDSHAKE_VERSION: &str = "2025-11-25";
/// Every handshake-era version the client accepts from a server.
pub const HANDSHAKE_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The stateless protocol version.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// Which lifecycle to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtocolMode {
    /// Only the `initialize` handshake.
    Legacy,
    /// Only 2026-07-28 (`server/discover`); fails against older servers.
    Modern,
    /// Probe with `server/discover` and fall back to `initialize` on any error or silence.
    #[default]
    Auto,
}

/// Answers the server's `roots/list`.
pub type RootsHandler = Arc<dyn Fn() -> Vec<Root> + Send + Sync>;
/// Answers the server's `sampling/createMessage` with a `CreateMessageResult`.
pub type SamplingHandler = Arc<dyn Fn(&Value) -> Result<Value, ErrorObject> + Send + Sync>;
/// Answers the server's `elicitation/create`.
pub type ElicitationHandler = Arc<dyn Fn(&ElicitRequest) -> ElicitResult + Send + Sync>;
/// Receives every notification from the server (after the client has used it).
pub type McpNotificationHandler = Arc<dyn Fn(&Notification) + Send + Sync>;
/// Receives the server's log messages.
pub type LogHandler = Arc<dyn Fn(&LogMessage) + Send + Sync>;

/// When and how often a dead stdio server is started again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RestartPolicy {
    /// At most this many restarts within `window`; past that the client stays closed.
    /// Defaults to 5.
    pub max_restarts: u32,
    /// The window over which restarts are counted. Defaults to 60 s.
    pub window: Duration,
    /// The wait before the first restart in a row. Defaults to 100 ms.
    pub initial_backoff: Duration,
    /// The longest wait between restarts (the wait doubles up to it). Defaults to 5 s.
    pub max_backoff: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            max_restarts: 5,
            window: Duration::from_secs(60),
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
        }
    }
}

/// Settings for an [`crate::McpClient`]. `Default` spells out every value.
#[derive(Clone)]
#[non_exhaustive]
pub struct McpConfig {
    /// Which lifecycle to use. Defaults to [`ProtocolMode::Auto`].
    pub mode: ProtocolMode,
    /// The handshake version offered in `initialize`. Defaults to
    /// [`LATEST_HANDSHAKE_VERSION`].
    pub handshake_version: String,
    /// The client's name in `clientInfo`. Defaults to "toolwire".
    pub client_name: String,
    /// The client's version in `clientInfo`. Defaults to this crate's version.
    pub client_version: String,
    /// How long Auto mode waits for `server/discover` before falling back. Defaults to 10 s.
    pub discover_timeout: Duration,
    /// How long `initialize` may take; also `server/discover` in Modern mode, where it is the
    /// lifecycle rather than a probe. Defaults to 30 s.
    pub initialize_timeout: Duration,
    /// The most pages a list call follows before it stops with an error. Defaults to 100.
    pub max_pages: usize,
    /// The most input rounds (2026-07-28 `InputRequiredResult`) one request may take.
    /// Defaults to 8.
    pub max_input_rounds: usize,
    /// Validate `structuredContent` against a tool's `outputSchema`. Defaults to true.
    pub validate_output: bool,
    /// Answers `roots/list`; declaring it declares the `roots` capability. Defaults to none.
    pub roots: Option<RootsHandler>,
    /// Answers `sampling/createMessage`; declares `sampling`. Defaults to none.
    pub sampling: Option<SamplingHandler>,
    /// Answers `elicitation/create`; declares `elicitation`. Defaults to none.
    pub elicitation: Option<ElicitationHandler>,
    /// Receives every server notification. Defaults to none.
    pub on_notification: Option<McpNotificationHandler>,
    /// Receives `notifications/message` (they also go to the `log` facade). Defaults to none.
    pub on_log: Option<LogHandler>,
    /// Restart a dead stdio server on the next call. Defaults to none: a dead server leaves the
    /// client closed.
    pub restart: Option<RestartPolicy>,
    /// The JSON-RPC client settings (timeouts, bounds, timer). Its handlers are replaced by the
    /// MCP client's own.
    pub rpc: ClientConfig,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            mode: ProtocolMode::Auto,
            handshake_version: LATEST_HANDSHAKE_VERSION.into(),
            client_name: "toolwire".into(),
            client_version: env!("CARGO_PKG_VERSION").into(),
            discover_timeout: Duration::from_secs(10),
            initialize_timeout: Duration::from_secs(30),
            max_pages: 100,
            max_input_rounds: 8,
            validate_output: true,
            roots: None,
            sampling: None,
            elicitation: None,
            on_notification: None,
            on_log: None,
            restart: None,
            rpc: ClientConfig::default(),
        }
    }
}

impl fmt::Debug for McpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpConfig")
            .field("mode", &self.mode)
            .field("handshake_version", &self.handshake_version)
            .field("client_name", &self.client_name)
            .field("discover_timeout", &self.discover_timeout)
            .field("initialize_timeout", &self.initialize_timeout)
            .field("max_pages", &self.max_pages)
            .field("max_input_rounds", &self.max_input_rounds)
            .field("validate_output", &self.validate_output)
            .field("roots", &self.roots.is_some())
            .field("sampling", &self.sampling.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .field("restart", &self.restart)
            .field("rpc", &self.rpc)
            .finish()
    }
}

impl McpConfig {
    /// Sets [`McpConfig::mode`].
    pub fn mode(mut self, mode: ProtocolMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets [`McpConfig::handshake_version`].
    pub fn handshake_version(mut self, version: impl Into<String>) -> Self {
        self.handshake_version = version.into();
        self
    }

    /// Sets [`McpConfig::roots`].
    pub fn roots(mut self, handler: impl Fn() -> Vec<Root> + Send + Sync + 'static) -> Self {
        self.roots = Some(Arc::new(handler));
        self
    }

    /// Sets [`McpConfig::sampling`].
    pub fn sampling(
        mut self,
        handler: impl Fn(&Value) -> Result<Value, ErrorObject> + Send + Sync + 'static,
    ) -> Self {
        self.sampling = Some(Arc::new(handler));
        self
    }

    /// Sets [`McpConfig::elicitation`].
    pub fn elicitation(
        mut self,
        handler: impl Fn(&ElicitRequest) -> ElicitResult + Send + Sync + 'static,
    ) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// Sets [`McpConfig::on_notification`].
    pub fn on_notification(
        mut self,
        handler: impl Fn(&Notification) + Send + Sync + 'static,
    ) -> Self {
        self.on_notification = Some(Arc::new(handler));
        self
    }

    /// Sets [`McpConfig::on_log`].
    pub fn on_log(mut self, handler: impl Fn(&LogMessage) + Send + Sync + 'static) -> Self {
        self.on_log = Some(Arc::new(handler));
        self
    }

    /// Sets [`McpConfig::restart`].
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.restart = Some(policy);
        self
    }

    /// The capabilities object for the handlers that are set, and only those.
    pub(crate) fn client_capabilities(&self) -> Value {
        let mut capabilities = serde_json::Map::new();
        if self.roots.is_some() {
            capabilities.insert("roots".into(), serde_json::json!({"listChanged": true}));
        }
        if self.sampling.is_some() {
            capabilities.insert("sampling".into(), serde_json::json!({}));
        }
        if self.elicitation.is_some() {
            capabilities.insert("elicitation".into(), serde_json::json!({"form": {}}));
        }
        Value::Object(capabilities)
    }
}
