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
#[non_exhaustive]
pub enum ProtocolMode {
    /// Only the `initialize` handshake.
    Legacy,
    /// Only 2026-07-28 (`server/discover`); fails against older servers.
    Modern,
    /// Probe with `server/discover` and fall back to `initialize` on any error or silence.
    #[default]
    Auto,
}

/// When a tool call runs as a task (the 2025-11-25 tasks utility; with the 2026-07-28
/// extension the server decides, and the client only declares that it can follow one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TaskPolicy {
    /// Never: tools that require a task cannot be called, and the 2026-07-28 extension is not
    /// declared.
    Never,
    /// For tools that require it (`execution.taskSupport: "required"`), and whenever a
    /// 2026-07-28 server chooses to.
    #[default]
    WhenRequired,
    /// Also for tools that merely allow it (`"optional"`).
    WhenAllowed,
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
/// Told that a dead server was started again and a new session opened.
pub type RestartHandler = Arc<dyn Fn() + Send + Sync>;

/// When and how often a dead server is started again. `Default` spells out every value, and
/// each knob has a setter that says its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    pub(crate) max_restarts: u32,
    pub(crate) window: Duration,
    pub(crate) initial_backoff: Duration,
    pub(crate) max_backoff: Duration,
}

impl RestartPolicy {
    /// At most this many restarts within the window; past that the client stays closed.
    /// Defaults to 5.
    pub fn max_restarts(mut self, restarts: u32) -> Self {
        self.max_restarts = restarts;
        self
    }

    /// The window over which restarts are counted. Defaults to 60 s.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// The wait before the first restart in a row. Defaults to 100 ms.
    pub fn initial_backoff(mut self, backoff: Duration) -> Self {
        self.initial_backoff = backoff;
        self
    }

    /// The longest wait between restarts (the wait doubles up to it). Defaults to 5 s.
    pub fn max_backoff(mut self, backoff: Duration) -> Self {
        self.max_backoff = backoff;
        self
    }
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

/// Settings for an [`crate::McpClient`]. `Default` spells out every value, and each knob has
/// a setter that says its default.
#[derive(Clone)]
pub struct McpConfig {
    pub(crate) mode: ProtocolMode,
    pub(crate) handshake_version: String,
    pub(crate) client_name: String,
    pub(crate) client_version: String,
    pub(crate) discover_timeout: Duration,
    pub(crate) initialize_timeout: Duration,
    pub(crate) connect_timeout: Option<Duration>,
    pub(crate) max_pages: usize,
    pub(crate) max_list_bytes: usize,
    pub(crate) max_list_items: usize,
    pub(crate) max_input_rounds: usize,
    pub(crate) validate_output: bool,
    pub(crate) roots: Option<RootsHandler>,
    pub(crate) sampling: Option<SamplingHandler>,
    pub(crate) elicitation: Option<ElicitationHandler>,
    pub(crate) on_notification: Option<McpNotificationHandler>,
    pub(crate) on_log: Option<LogHandler>,
    /// [`McpConfig::on_log`] run on the reader thread, before any later frame (a call's
    /// response) is handled: for quick work that must be in order with the call it is
    /// about (a gateway passing a backend's log messages on to the front client).
    pub(crate) on_log_in_order: Option<LogHandler>,
    pub(crate) restart: Option<RestartPolicy>,
    pub(crate) on_restart: Option<RestartHandler>,
    pub(crate) rpc: ClientConfig,
    pub(crate) tasks: TaskPolicy,
    pub(crate) task_ttl: Duration,
    pub(crate) task_poll_interval: Duration,
    pub(crate) min_task_poll: Duration,
    pub(crate) max_task_poll: Duration,
    pub(crate) task_cancel_timeout: Duration,
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
            connect_timeout: None,
            max_pages: 100,
            max_list_bytes: 32 * 1024 * 1024,
            max_list_items: 10_000,
            max_input_rounds: 8,
            validate_output: true,
            roots: None,
            sampling: None,
            elicitation: None,
            on_notification: None,
            on_log: None,
            on_log_in_order: None,
            on_restart: None,
            restart: None,
            rpc: ClientConfig::default(),
            tasks: TaskPolicy::WhenRequired,
            task_ttl: Duration::from_secs(300),
            task_poll_interval: Duration::from_secs(1),
            min_task_poll: Duration::from_millis(100),
            max_task_poll: Duration::from_secs(30),
            task_cancel_timeout: Duration::from_secs(5),
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
            .field("tasks", &self.tasks)
            .field("rpc", &self.rpc)
            .finish()
    }
}

impl McpConfig {
    /// The lifecycle in use.
    pub fn get_mode(&self) -> ProtocolMode {
        self.mode
    }

    /// The probe's timeout in Auto mode.
    pub fn get_discover_timeout(&self) -> Duration {
        self.discover_timeout
    }

    /// Which lifecycle to use. Defaults to [`ProtocolMode::Auto`].
    pub fn mode(mut self, mode: ProtocolMode) -> Self {
        self.mode = mode;
        self
    }

    /// The handshake version offered in `initialize`. Defaults to
    /// [`LATEST_HANDSHAKE_VERSION`].
    pub fn handshake_version(mut self, version: impl Into<String>) -> Self {
        self.handshake_version = version.into();
        self
    }

    /// The client's name in `clientInfo`. Defaults to "toolwire".
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The client's version in `clientInfo`. Defaults to this crate's version.
    pub fn client_version(mut self, version: impl Into<String>) -> Self {
        self.client_version = version.into();
        self
    }

    /// How long Auto mode waits for `server/discover` before falling back to `initialize`.
    /// Defaults to 10 s.
    pub fn discover_timeout(mut self, timeout: Duration) -> Self {
        self.discover_timeout = timeout;
        self
    }

    /// How long `initialize` may take; also `server/discover` in Modern mode, where it is the
    /// lifecycle rather than a probe. Defaults to 30 s.
    pub fn initialize_timeout(mut self, timeout: Duration) -> Self {
        self.initialize_timeout = timeout;
        self
    }

    /// One budget for the whole connection: starting the server (or the transport), the
    /// `server/discover` probe and the `initialize` handshake together. Each step gets what
    /// is left of it (and never more than its own timeout above; Auto mode's probe at most
    /// half, so the fallback always has a turn), so Auto mode cannot spend it twice. When it
    /// runs out, the connection fails with [`crate::Error::Timeout`] for the step that was
    /// running, `after` the budget exactly as set (not that step's share of it). A restart
    /// gets a fresh budget. Defaults to none: each step has only its own timeout.
    pub fn connect_timeout(mut self, budget: Duration) -> Self {
        self.connect_timeout = Some(budget);
        self
    }

    /// The most pages a list call follows before it stops with an error. Defaults to 100.
    pub fn max_pages(mut self, pages: usize) -> Self {
        self.max_pages = pages;
        self
    }

    /// The most bytes of page text one listing (every page of `tools/list`, …) may take in
    /// all; past it the listing stops with an error. Items are kept as their text, so this
    /// bounds the listing's memory too. Defaults to 32 MiB.
    pub fn max_list_bytes(mut self, bytes: usize) -> Self {
        self.max_list_bytes = bytes;
        self
    }

    /// The most items one listing may have in all. Defaults to 10,000.
    pub fn max_list_items(mut self, items: usize) -> Self {
        self.max_list_items = items;
        self
    }

    /// The most input rounds (2026-07-28 `InputRequiredResult`) one request may take.
    /// Defaults to 8.
    pub fn max_input_rounds(mut self, rounds: usize) -> Self {
        self.max_input_rounds = rounds;
        self
    }

    /// Validate `structuredContent` against a tool's `outputSchema`. Defaults to true.
    pub fn validate_output(mut self, validate: bool) -> Self {
        self.validate_output = validate;
        self
    }

    /// Answers `roots/list`; setting it declares the `roots` capability. Runs on the dispatch
    /// thread (or, for 2026-07-28 input rounds, the caller's); a panic is caught and answered
    /// as an error. Defaults to none.
    pub fn roots(mut self, handler: impl Fn() -> Vec<Root> + Send + Sync + 'static) -> Self {
        self.roots = Some(Arc::new(handler));
        self
    }

    /// Answers `sampling/createMessage`; declares `sampling`. Runs like
    /// [`McpConfig::roots`]. Defaults to none.
    pub fn sampling(
        mut self,
        handler: impl Fn(&Value) -> Result<Value, ErrorObject> + Send + Sync + 'static,
    ) -> Self {
        self.sampling = Some(Arc::new(handler));
        self
    }

    /// Answers `elicitation/create`; declares `elicitation`. Runs like
    /// [`McpConfig::roots`]. Defaults to none.
    pub fn elicitation(
        mut self,
        handler: impl Fn(&ElicitRequest) -> ElicitResult + Send + Sync + 'static,
    ) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// Receives every server notification (after the client has used it), on the dispatch
    /// thread; a panic is caught and logged. Defaults to none.
    pub fn on_notification(
        mut self,
        handler: impl Fn(&Notification) + Send + Sync + 'static,
    ) -> Self {
        self.on_notification = Some(Arc::new(handler));
        self
    }

    /// Receives `notifications/message` (they also go to the `log` facade, target
    /// `toolwire::server`), on the dispatch thread. Defaults to none.
    pub fn on_log(mut self, handler: impl Fn(&LogMessage) + Send + Sync + 'static) -> Self {
        self.on_log = Some(Arc::new(handler));
        self
    }

    /// Receives `notifications/message` like [`McpConfig::on_log`], but on the reader thread
    /// before any later frame is handled, so a message a server sends during a call comes
    /// before that call's response: for quick work only (a proxy passing the server's log
    /// messages on to its own client in order). Defaults to none.
    pub fn on_log_in_order(
        mut self,
        handler: impl Fn(&LogMessage) + Send + Sync + 'static,
    ) -> Self {
        self.on_log_in_order = Some(Arc::new(handler));
        self
    }

    /// Restart a dead server on the next call. Defaults to none: a dead server leaves the
    /// client closed.
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.restart = Some(policy);
        self
    }

    /// Runs after a dead server was started again (under [`McpConfig::restart`]) and its new
    /// session is open, on the thread whose request found it dead, before that request is
    /// sent: quick work only (a panic is caught and logged). The new process may offer other
    /// tools, resources or prompts: the tool list cache is already cleared. Defaults to
    /// none.
    pub fn on_restart(mut self, handler: impl Fn() + Send + Sync + 'static) -> Self {
        self.on_restart = Some(Arc::new(handler));
        self
    }

    /// The JSON-RPC client settings (timeouts, bounds, timer). Its handlers and dialect are
    /// replaced by the MCP client's own. Defaults to [`ClientConfig::default`].
    pub fn rpc(mut self, rpc: ClientConfig) -> Self {
        self.rpc = rpc;
        self
    }

    /// The JSON-RPC client's default request timeout (a shortcut for the same setting of
    /// [`McpConfig::rpc`]). Defaults to 60 s.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.rpc = self.rpc.request_timeout(timeout);
        self
    }

    /// When tool calls run as tasks. A call that runs as one is waited for transparently,
    /// within the call's deadline, by polling the task; on timeout or cancel the task is
    /// cancelled on the server. Defaults to [`TaskPolicy::WhenRequired`].
    pub fn tasks(mut self, policy: TaskPolicy) -> Self {
        self.tasks = policy;
        self
    }

    /// The `ttl` asked for a task (2025-11-25): how long the server keeps it. Defaults to
    /// 5 minutes.
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.task_ttl = ttl;
        self
    }

    /// How often a task is polled when the server suggests no interval. Defaults to 1 s.
    pub fn task_poll_interval(mut self, interval: Duration) -> Self {
        self.task_poll_interval = interval;
        self
    }

    /// The shortest wait between two polls of a task, whatever the server suggests.
    /// Defaults to 100 ms.
    pub fn min_task_poll(mut self, floor: Duration) -> Self {
        self.min_task_poll = floor;
        self
    }

    /// The longest wait between two polls of a task, whatever the server suggests. Defaults
    /// to 30 s.
    pub fn max_task_poll(mut self, cap: Duration) -> Self {
        self.max_task_poll = cap;
        self
    }

    /// How long the `tasks/cancel` sent when a task's call times out or is cancelled may
    /// take. Defaults to 5 s.
    pub fn task_cancel_timeout(mut self, timeout: Duration) -> Self {
        self.task_cancel_timeout = timeout;
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
