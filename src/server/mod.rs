//! The other end of the link: a synchronous MCP server, over stdio and Streamable HTTP, on
//! the same JSON-RPC core, transports and timer wheel as the client.
//!
//! A [`Server`] holds what it offers (tools, a served [`ToolRegistry`], resources and
//! templates, prompts, completion, plain JSON-RPC methods; several changed at once, with one
//! list-change notification per kind, by [`Server::apply`]) and a bounded worker pool; it
//! serves any number of connections at once: the process's stdio ([`Server::serve_stdio`]),
//! any [`Transport`] ([`Server::connect`]), or Streamable HTTP (`HttpServer`, feature
//! `server`).
//!
//! ```
//! use serde_json::json;
//! use toolwire::harness::LocalTool;
//! use toolwire::server::{PeerTransport, Server, ServerConfig};
//! use toolwire::transport::MemoryTransport;
//! use toolwire::{CallToolResult, McpClient, McpConfig, ProtocolMode};
//!
//! let server = Server::new(ServerConfig::new("demo", "1.0"))?;
//! server.add_tool(LocalTool::with_context(
//!     "add",
//!     "Adds two integers.",
//!     json!({"type": "object", "required": ["a", "b"],
//!            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
//!     |_context, args| Ok(CallToolResult::from_text((args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap()).to_string())),
//! ))?;
//! let (client_end, server_end) = MemoryTransport::pair();
//! let connection = server.connect(PeerTransport::new(server_end))?;
//! let client = McpClient::connect(client_end, McpConfig::default().mode(ProtocolMode::Legacy))?;
//! assert_eq!(client.call_tool("add", json!({"a": 2, "b": 3}))?.text(), "5");
//! client.close()?;
//! connection.wait();
//! # Ok::<(), toolwire::Error>(())
//! ```
//!
//! # Both protocol eras
//!
//! The handshake era (`initialize`, 2024-11-05 … 2025-11-25) and the 2026-07-28 stateless
//! protocol (`server/discover`, every request carrying its `_meta`) are served side by side:
//! over stdio a request whose `_meta` names a protocol version is a 2026-07-28 one, any other
//! a handshake-era one; over HTTP the headers and the session decide. 2026-07-28 results
//! carry `resultType`, caching hints where the revision asks for them (`ttlMs`,
//! `cacheScope`) and the server's identity in `_meta`; the envelope's errors are the
//! revision's (-32602 for a missing `_meta` key, -32020, -32021, -32022, -32601). Over HTTP
//! the routing headers are checked against the body: `Mcp-Method`, `Mcp-Name`, and the
//! `Mcp-Param-{name}` header of each parameter a tool designates with `x-mcp-header`
//! (SEP-2243; `=?base64?…?=` decoded, anything else literal; missing, undecodable or different
//! is -32020 with HTTP 400, before the tool runs). A tool whose designation clients would
//! have to refuse is refused by [`Server::add_tool`]. List
//! changes and resource updates reach handshake-era clients on their connection, and
//! 2026-07-28 clients through `subscriptions/listen` (acknowledged first, filtered to what
//! each asked for, tagged with the subscription's id).
//!
//! # Tasks
//!
//! On the 2026-07-28 protocol a tool marked [`LocalTool::task`] is answered at once with a
//! task when the request declares the tasks extension (`io.modelcontextprotocol/tasks`,
//! SEP-2663, advertised by `server/discover`): its handler runs on the pool, `tasks/get`
//! reads its status and inlines its result or error, `tasks/update` answers the input
//! requests it waits on (holding no worker; once all are answered the handler runs again with
//! every answer), and `tasks/cancel` sets its cancel flag (an empty ack, also for a finished
//! task). [`LocalTool::before_task`] runs in the call itself, so input rounds can come before
//! the task exists. A task's handler must be ready to run more than once (as an input
//! round's retry is); it answers by returning, with no stream for progress or log messages
//! (they are dropped). Without the extension a [`TaskSupport::Required`] tool and the `tasks/*`
//! methods are [`MISSING_CAPABILITY`]; an unknown task id is -32602. A task belongs to the
//! server, not to a connection, and its id (128 random bits) is all it takes to read,
//! answer or cancel it; nothing ends it but its TTL ([`ServerConfig::task_ttl`],
//! counted from its creation; a result is readable until then and never after). The tasks
//! held ([`ServerConfig::max_tasks`], finished ones included), a kept result's size, the wait
//! for input and each run (the tool's own timeout) are bounded. The handshake era's tasks
//! (2025-11-25 `tasks/result`) are not served. Tasks live in the server's state store
//! ([`ServerConfig::state_store`]): with a shared one ([`store`]) any instance answers for a
//! task another created, and a task whose instance died fails once its lease passes.
//!
//! # Handlers
//!
//! Handlers are ordinary blocking functions that get a [`RequestContext`]: the request's
//! cancel flag, a progress reporter (only when the client sent a token), a logger, and
//! blocking requests back to the client (sampling, elicitation, roots) with deadlines. On the
//! 2026-07-28 protocol the same calls ([`RequestContext::elicit`], `sample`, `list_roots`)
//! read the retry's `inputResponses`, or return an [`InputRequired`] for `?` to pass on; the
//! state a handler gives with it is signed and checked on the retry.
//!
//! # Threads, bounds, and cancellation is not termination
//!
//! Requests run on a pool of [`ServerConfig::workers`] threads (`toolwire-server-N`) behind a
//! zero-capacity hand-off: when every worker is busy the client is answered at once with
//! [`BUSY`], and nothing is queued. Quick work can run inline on the reading thread
//! ([`LocalTool::inline`], [`Method::inline`]). Every request has a bound (a tool's own
//! [`crate::harness::ToolOptions::timeout`], else [`ServerConfig::request_timeout`]), kept by
//! the crate's timer thread: when it passes, the client is answered with an error (a tool error
//! for a tool call, [`REQUEST_TIMEOUT`] otherwise), the handler's cancel flag is set, and its
//! late answer is dropped. **Nothing stops a handler**: a cancelled or abandoned handler keeps
//! its worker until it returns, so one that ignores its flag makes the pool smaller until it
//! does. A client's `notifications/cancelled` (or, on 2026-07-28 HTTP, closing its response
//! stream) sets the flag the same way, and nothing more is sent for that request.
//!
//! When a connection ends (stdin reaches end of file, a socket closes) its requests are
//! given up: their flags are set, running handlers get [`ServerConfig::close_grace`] to
//! finish, and the connection's threads end.
//!
//! # Logging
//!
//! Through the `log` facade, under the target `toolwire::server`: refused requests at
//! debug, abandoned handlers and broken output schemas at warn.

use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};
use serde_json::{json, Map, Value};

use crate::error::{Error, RegistryErrorKind, Result};
use crate::harness::executor::Executor;
use crate::harness::{LocalTool, ToolRegistry};
use crate::timer::TimerWheel;
use crate::transport::Transport;
use crate::wire::Notification;

pub mod auth;
pub(crate) mod catalog;
mod change;
mod config;
pub(crate) mod conn;
pub(crate) mod context;
mod dispatch;
#[doc(hidden)]
pub(crate) mod fuzz;
pub(crate) mod http;
mod keys;
mod memory;
mod metered;
mod ready;
pub(crate) mod resources;
pub(crate) mod serve;
mod server_tool;
mod skill_tree;
mod skills;
mod state;
pub(crate) mod stateless;
mod stdio;
pub mod store;
mod subscriptions;
mod tasks;
mod tools;
mod traced;
mod types;
mod uri_template;

pub use crate::mcp::Era;
pub use auth::{Authorization, Caller, StaticTokens};
pub use catalog::{
    CompletionFn, CompletionRequest, Declared, Method, MethodFn, PromptFn, ReadFn, ServerPrompt,
    ServerResource, ServerResourceTemplate, TemplateFn, ToolAccess,
};
pub use change::{CatalogChange, CatalogKind, Refused};
pub use config::ServerConfig;
pub use context::{BackChannel, ConnectionState, ProgressReporter, RequestContext, Responder};
#[cfg(feature = "rustls")]
pub use http::ServerTls;
pub use http::{HttpServer, HttpServerConfig, MAX_INSTANCE_ID};
pub use keys::{
    StateKeys, MAX_STATE_KEYS, MAX_STATE_KEY_BYTES, MAX_STATE_KEY_FILE_BYTES, MIN_STATE_KEY_BYTES,
};
pub use memory::PeerTransport;
pub use ready::{MAX_READINESS_CHECKS, MAX_READINESS_NAME};
pub use serve::ServerConnection;
#[allow(deprecated)]
pub use server_tool::{BeforeTaskFn, ServerTool, ToolFn};
pub use skills::{SkillLimits, SkillSet};
pub use stdio::StdioServer;
pub use store::{open_state, Deliver, MemoryStore, StateStore, StoreCounter, StoreError};
#[cfg(feature = "redis")]
pub use store::{RedisConfig, RedisStore};
pub use tasks::TaskSupport;
pub use types::{
    content, HandlerError, InputRequired, LogLevel, PromptResult, BUSY, HEADER_MISMATCH,
    MISSING_CAPABILITY, REQUEST_TIMEOUT, UNSUPPORTED_VERSION,
};

pub use crate::mcp::{CallToolResult, Content};

/// The result of a tool call: the one [`CallToolResult`] a client reads too.
#[deprecated(
    note = "use `toolwire::mcp::CallToolResult` (re-exported as `server::CallToolResult`)"
)]
pub type ToolResult = CallToolResult;

use catalog::{Catalog, ToolEntry};
use conn::{Connection, EraPolicy};

/// The log target of the server's records.
pub const LOG_TARGET: &str = "toolwire::server";

/// Writes the text of a call to a tool that is not served (it runs while the catalog is read:
/// it must not touch the server).
pub(crate) type UnknownToolFn = Arc<dyn Fn(&str) -> String + Send + Sync>;
/// Waits until the catalog has settled or the deadline; whether it has
/// ([`Server::set_settling`]).
pub(crate) type SettlingFn = Arc<dyn Fn(std::time::Instant) -> bool + Send + Sync>;

/// A notification hook: sees every notification a client sends, on the thread that read it.
type NotificationHook = Arc<dyn Fn(&Notification) + Send + Sync>;

/// What every connection of a server shares.
pub(crate) struct Shared {
    pub(crate) config: ServerConfig,
    pub(crate) catalog: RwLock<Catalog>,
    pub(crate) pool: Executor,
    pub(crate) timer: TimerWheel,
    connections: Mutex<Vec<Weak<Connection>>>,
    hooks: RwLock<Vec<NotificationHook>>,
    pub(crate) listeners: subscriptions::Listeners,
    /// The 2026-07-28 tasks extension's tasks: the server's, not a connection's.
    pub(crate) tasks: tasks::Tasks,
    /// Extensions declared through [`Server::declare_extension`], with their settings.
    extensions: RwLock<Map<String, Value>>,
    /// The readiness checks of `/readyz` ([`Server::add_readiness_check`]).
    pub(crate) readiness: ready::Readiness,
    /// Where tasks live and events for other instances go ([`ServerConfig::state_store`]).
    pub(crate) store: Arc<dyn StateStore>,
    /// This instance's id in the store (64 random bits, in hex).
    pub(crate) instance: String,
}

impl Shared {
    /// `serverInfo`.
    pub(crate) fn server_info(&self) -> Value {
        let mut info = Map::new();
        info.insert("name".into(), Value::from(self.config.name.clone()));
        info.insert("version".into(), Value::from(self.config.version.clone()));
        if let Some(title) = &self.config.title {
            info.insert("title".into(), Value::from(title.clone()));
        }
        Value::Object(info)
    }

    /// What this server declares, for `initialize` or `server/discover`: list-change
    /// notifications and resource subscriptions in both eras (the handshake era's on its
    /// connections, 2026-07-28's through `subscriptions/listen`).
    pub(crate) fn capabilities(&self, era: crate::mcp::Era) -> Value {
        let catalog = self.catalog.read();
        let mut capabilities = Map::new();
        if catalog.offers_tools() {
            capabilities.insert("tools".into(), json!({"listChanged": true}));
        }
        if catalog.has_resources() {
            // A gateway subscribes only where its backends can.
            let subscribe = catalog.subscribe.is_none() || catalog.declared.subscribe;
            capabilities.insert(
                "resources".into(),
                json!({"subscribe": subscribe, "listChanged": true}),
            );
        }
        if catalog.offers_prompts() {
            capabilities.insert("prompts".into(), json!({"listChanged": true}));
        }
        if catalog.completion.is_some() {
            capabilities.insert("completions".into(), json!({}));
        }
        if self.config.logging {
            capabilities.insert("logging".into(), json!({}));
        }
        let mut extensions = self.extensions.read().clone();
        // The tasks extension is a 2026-07-28 one: the handshake era's tasks are not served.
        if era == crate::mcp::Era::Stateless && catalog.offers_tasks() {
            extensions.insert(crate::mcp::TASKS_EXTENSION.into(), json!({}));
        }
        if !extensions.is_empty() {
            capabilities.insert("extensions".into(), Value::Object(extensions));
        }
        Value::Object(capabilities)
    }

    pub(crate) fn register(&self, connection: &Arc<Connection>) {
        let mut connections = self.connections.lock();
        connections.retain(|known| known.strong_count() > 0);
        connections.push(Arc::downgrade(connection));
    }

    pub(crate) fn notification_hooks(&self, notification: &Notification) {
        for hook in self.hooks.read().iter() {
            crate::sys::guard("a server notification hook", || hook(notification));
        }
    }

    /// Tells this instance's clients subscribed to `uri` that it changed.
    pub(crate) fn resource_updated(&self, uri: &str) {
        self.broadcast(
            crate::mcp::methods::RESOURCES_UPDATED,
            json!({"uri": uri}),
            |connection| connection.subscriptions.lock().contains(uri),
        );
    }

    /// Sends a notification to every open handshake-era connection `only` picks, and to
    /// every 2026-07-28 subscription that asked for it.
    fn broadcast(&self, method: &str, params: Value, only: impl Fn(&Connection) -> bool) {
        self.listeners.broadcast(method, &params);
        let connections: Vec<Arc<Connection>> = self
            .connections
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for connection in connections {
            if connection.is_closed() || connection.policy == EraPolicy::Stateless {
                continue;
            }
            if !only(&connection) {
                continue;
            }
            if let Err(error) = connection.link.notify(None, method, params.clone()) {
                log::debug!(target: LOG_TARGET, "{method} was not sent to a client: {error}");
            }
        }
    }
}

/// An MCP server: what it offers, its settings and its worker pool. Cheap to clone; clones
/// share everything. See the module documentation.
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let catalog = self.shared.catalog.read();
        f.debug_struct("Server")
            .field("name", &self.shared.config.name)
            .field("tools", &catalog.tools.len())
            .field("resources", &catalog.resources.len())
            .field("prompts", &catalog.prompts.len())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server offering nothing yet; starts its worker pool.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a setting out of its bounds, [`Error::Io`] when a worker cannot
    /// be started.
    pub fn new(config: ServerConfig) -> Result<Server> {
        config.check()?;
        let pool = Executor::start_named(
            "server",
            config.workers,
            std::time::Duration::from_secs(1),
            config.close_grace,
        )?;
        let store = config
            .state_store
            .clone()
            .unwrap_or_else(|| Arc::new(MemoryStore::new()));
        let mut instance = [0u8; 8];
        getrandom::fill(&mut instance).map_err(|error| {
            Error::Config(format!("no random source for an instance id: {error}"))
        })?;
        let shared = Arc::new(Shared {
            config,
            catalog: RwLock::new(Catalog::default()),
            pool,
            timer: TimerWheel::global(),
            connections: Mutex::new(Vec::new()),
            hooks: RwLock::new(Vec::new()),
            listeners: subscriptions::Listeners::default(),
            tasks: tasks::Tasks::default(),
            extensions: RwLock::new(Map::new()),
            readiness: ready::Readiness::default(),
            store,
            instance: instance.iter().map(|byte| format!("{byte:02x}")).collect(),
        });
        if shared.store.shared() {
            tasks::listen(&shared)
                .and_then(|()| store::listen_events(&shared))
                .map_err(|error| Error::Config(error.to_string()))?;
        }
        Ok(Server { shared })
    }

    /// The settings.
    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    fn add_tool_entry(&self, entry: ToolEntry) -> Result<()> {
        let name = entry.name().to_owned();
        let added = self
            .shared
            .catalog
            .write()
            .tools
            .insert(name.clone(), entry);
        if !added {
            return Err(Error::registry_error(
                RegistryErrorKind::Duplicate,
                &name,
                format!("a tool named {name:?} is already served"),
            ));
        }
        self.tools_changed();
        Ok(())
    }

    /// Adds a tool; clients already connected are told the list changed. It is the one
    /// runnable tool type, [`LocalTool`], served as [`Server::add_registry`] serves a
    /// registry's: the same checks, options, result limit and failure wording as in a local
    /// harness, with this request's [`RequestContext`] as its
    /// [`crate::harness::ToolContext`] ([`RequestContext::of`] reaches what only a server has,
    /// e.g. [`RequestContext::defer`]), and its server-only options applied: tasks
    /// ([`LocalTool::task`], [`LocalTool::before_task`]), required client capabilities
    /// ([`LocalTool::requires`]) and inline handlers ([`LocalTool::inline`]). The deprecated
    /// [`ServerTool`] converts into one.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolwire::harness::LocalTool;
    /// use toolwire::server::{Server, ServerConfig};
    /// use toolwire::CallToolResult;
    ///
    /// let server = Server::new(ServerConfig::new("weather", "1.0"))?;
    /// server.add_tool(LocalTool::with_context(
    ///     "get_weather",
    ///     "The weather in a city.",
    ///     json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    ///     |_context, args| Ok(CallToolResult::from_text(format!("clear in {}", args["city"]))),
    /// ))?;
    /// # Ok::<(), toolwire::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Registry`] for a bad name, a name already served, or a schema that is not a
    /// compilable object schema; [`Error::Config`] for a timeout or other option out of its
    /// bounds.
    pub fn add_tool(&self, tool: impl Into<LocalTool>) -> Result<()> {
        self.add_tool_entry(ToolEntry::local(tool.into())?)
    }

    /// Serves every tool of a harness registry as it is: its names, descriptions, input and
    /// output schemas and annotations; each call passes the registry's own checks (the name,
    /// the input schema with its repair message as the tool error, the integer bound) before
    /// the tool runs, gets its bound, and its result is cut to its result limit. Tools
    /// imported from another MCP server are called there (a gateway).
    ///
    /// # Errors
    ///
    /// [`Error::Registry`] when a name is already served (nothing is added then).
    pub fn add_registry(&self, registry: &ToolRegistry) -> Result<()> {
        let shared = Arc::new(registry.clone());
        {
            let catalog = self.shared.catalog.read();
            for tool in shared.registered() {
                catalog::check_tool_name(&tool.name)?;
                if catalog.tools.get(&tool.name).is_some() {
                    return Err(Error::registry_error(
                        RegistryErrorKind::Duplicate,
                        &tool.name,
                        format!("a tool named {:?} is already served", tool.name),
                    ));
                }
            }
        }
        {
            let mut catalog = self.shared.catalog.write();
            for tool in shared.registered() {
                catalog.tools.insert(
                    tool.name.clone(),
                    ToolEntry::registry(Arc::clone(&shared), Arc::clone(tool)),
                );
            }
        }
        self.tools_changed();
        Ok(())
    }

    /// Answers a call of a tool that is not served with the tool error `text(name)` instead
    /// of `Unknown tool: NAME`, and declares the tools capability even while no tool is
    /// served (a proxy's tools come and go with its upstream servers). `text` runs while
    /// the catalog is read: it must not call this server. Defaults to the plain answer.
    pub fn set_unknown_tool(&self, text: impl Fn(&str) -> String + Send + Sync + 'static) {
        let text: UnknownToolFn = Arc::new(text);
        self.shared.catalog.write().unknown_tool = Some(text);
    }

    /// Decides, per authenticated caller ([`RequestContext::caller`]), which tools are
    /// listed to them and which they may call (see [`ToolAccess`]); `decide(name, caller)`
    /// runs while the catalog is read: it must not call this server. A request without a
    /// caller (stdio, or HTTP without [`Authorization`]) is not checked. Defaults to none:
    /// every caller sees and may call every tool.
    pub fn set_tool_access(
        &self,
        decide: impl Fn(&str, &Caller) -> ToolAccess + Send + Sync + 'static,
    ) {
        let decide: catalog::ToolAccessFn = Arc::new(decide);
        self.shared.catalog.write().access = Some(decide);
    }

    /// Holds the listings (`tools/list`, `resources/list`, `resources/templates/list`,
    /// `prompts/list`), and each `tools/call`, `prompts/get` or `resources/read` of a name or
    /// URI not served, while the catalog is still settling (a proxy whose upstream servers
    /// are starting): `settled(deadline)` waits until it has settled or `deadline` has
    /// passed, and says whether it has; given a deadline already past it must not wait. A
    /// held request waits on a worker, within its own bound, and is then answered as usual
    /// from the catalog as it is then. `initialize` and every other request are never held.
    /// Defaults to none: nothing is held.
    pub fn set_settling(
        &self,
        settled: impl Fn(std::time::Instant) -> bool + Send + Sync + 'static,
    ) {
        let settled: SettlingFn = Arc::new(settled);
        self.shared.catalog.write().settling = Some(settled);
    }

    /// Declares resources, resource subscriptions and prompts even while none are served (a
    /// proxy's come and go with its upstream servers), in `initialize` and
    /// `server/discover`. Defaults to declaring what is served.
    pub fn declare(&self, declared: Declared) {
        self.shared.catalog.write().declared = declared;
    }

    /// Runs `hook` on a worker for each `resources/subscribe` (`true`) and
    /// `resources/unsubscribe` (`false`) before it is recorded; its error is the client's
    /// answer, and nothing is recorded then (a proxy subscribes upstream first). Once set,
    /// resource subscriptions are declared only when [`Server::declare`] says so. Defaults
    /// to none: every subscription is recorded.
    pub fn set_subscribe(
        &self,
        hook: impl Fn(&RequestContext, &str, bool) -> std::result::Result<(), HandlerError>
            + Send
            + Sync
            + 'static,
    ) {
        let hook: catalog::SubscribeFn = Arc::new(hook);
        self.shared.catalog.write().subscribe = Some(hook);
    }

    /// Removes a tool; true when it was served. Clients are told the list changed.
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = self.shared.catalog.write().tools.remove(name);
        if removed {
            self.tools_changed();
        }
        removed
    }

    fn tools_changed(&self) {
        self.shared.broadcast(
            crate::mcp::methods::TOOLS_LIST_CHANGED,
            Value::Null,
            |connection| connection.handshake.lock().initialized,
        );
    }

    /// Adds a resource.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when its URI is already served.
    pub fn add_resource(&self, resource: ServerResource) -> Result<()> {
        let uri = resource.uri().to_owned();
        if !self
            .shared
            .catalog
            .write()
            .resources
            .insert(uri.clone(), resource)
        {
            return Err(Error::Config(format!(
                "the resource {uri:?} is already served"
            )));
        }
        self.list_changed(crate::mcp::methods::RESOURCES_LIST_CHANGED);
        Ok(())
    }

    /// Adds a resource template.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the template is already served.
    pub fn add_resource_template(&self, template: ServerResourceTemplate) -> Result<()> {
        let key = template.uri_template().to_owned();
        if !self
            .shared
            .catalog
            .write()
            .templates
            .insert(key.clone(), template)
        {
            return Err(Error::Config(format!(
                "the template {key:?} is already served"
            )));
        }
        self.list_changed(crate::mcp::methods::RESOURCES_LIST_CHANGED);
        Ok(())
    }

    /// Adds a prompt.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when its name is already served.
    pub fn add_prompt(&self, prompt: ServerPrompt) -> Result<()> {
        let name = prompt.name().to_owned();
        if !self
            .shared
            .catalog
            .write()
            .prompts
            .insert(name.clone(), prompt)
        {
            return Err(Error::Config(format!(
                "the prompt {name:?} is already served"
            )));
        }
        self.list_changed(crate::mcp::methods::PROMPTS_LIST_CHANGED);
        Ok(())
    }

    /// Removes a prompt; true when it was served.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let removed = self.shared.catalog.write().prompts.remove(name);
        if removed {
            self.list_changed(crate::mcp::methods::PROMPTS_LIST_CHANGED);
        }
        removed
    }

    pub(crate) fn list_changed(&self, method: &str) {
        self.shared.broadcast(method, Value::Null, |connection| {
            connection.handshake.lock().initialized
        });
    }

    /// Answers `completion/complete` (and declares the `completions` capability).
    pub fn set_completion(
        &self,
        handler: impl Fn(
                &RequestContext,
                &CompletionRequest,
            ) -> std::result::Result<Vec<String>, HandlerError>
            + Send
            + Sync
            + 'static,
    ) {
        self.shared.catalog.write().completion = Some(Arc::new(handler));
    }

    /// Adds a plain JSON-RPC method.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a name MCP uses, or one already served.
    pub fn add_method(&self, method: Method) -> Result<()> {
        if is_protocol_method(&method.name) {
            return Err(Error::Config(format!(
                "{:?} is an MCP method; the server answers it itself",
                method.name
            )));
        }
        if let Some(timeout) = method.timeout {
            crate::harness::check_bound("a method timeout", timeout)?;
        }
        let mut catalog = self.shared.catalog.write();
        if catalog.methods.contains_key(&method.name) {
            return Err(Error::Config(format!(
                "the method {:?} is already served",
                method.name
            )));
        }
        catalog
            .methods
            .insert(method.name.clone(), Arc::new(method));
        Ok(())
    }

    /// Declares an extension under `capabilities.extensions` in both eras, with its settings
    /// (`{}` when it has none); declaring it again replaces the settings. What the extension
    /// serves is added separately ([`Server::add_method`], resources); [`SkillSet::serve`]
    /// does both for the Skills extension.
    pub fn declare_extension(&self, name: impl Into<String>, settings: Value) {
        self.shared.extensions.write().insert(name.into(), settings);
    }

    /// Sees every notification clients send (after the server's own handling of
    /// cancellations), on the thread that read it: it must be quick.
    pub fn on_notification(&self, hook: impl Fn(&Notification) + Send + Sync + 'static) {
        self.shared.hooks.write().push(Arc::new(hook));
    }

    /// Tells the handshake-era clients subscribed to `uri` that it changed
    /// (`notifications/resources/updated`).
    ///
    /// With a shared [`ServerConfig::state_store`] the update is published there too, and
    /// every other instance sharing it tells its own subscribed clients.
    pub fn notify_resource_updated(&self, uri: &str) {
        self.shared.resource_updated(uri);
        store::publish_event(
            &self.shared,
            crate::mcp::methods::RESOURCES_UPDATED,
            &json!({"uri": uri}),
        );
    }

    /// Serves one client over `transport` until it ends, or [`ServerConnection::close`].
    /// Returns at once; the connection runs on the transport's threads and the pool.
    ///
    /// # Errors
    ///
    /// When the transport cannot start.
    pub fn connect(&self, transport: impl Transport) -> Result<ServerConnection> {
        serve::connect(
            &self.shared,
            Arc::new(transport),
            EraPolicy::Mixed,
            None,
            None,
        )
    }

    /// Serves the process's stdin and stdout (stderr is left for logs) until stdin reaches
    /// end of file; then gives up what is still running (see the module documentation) and
    /// returns.
    ///
    /// # Errors
    ///
    /// When the stdio threads cannot start.
    pub fn serve_stdio(&self) -> Result<()> {
        let transport = StdioServer::process()
            .max_line_bytes(self.shared.config.max_line_bytes)
            .writer_queue(self.shared.config.writer_queue);
        let connection = self.connect(transport)?;
        let closed = connection.wait();
        log::debug!(target: LOG_TARGET, "stdio connection ended: {closed}");
        Ok(())
    }

    /// How many tasks (2026-07-28 tasks extension) the server holds right now: running,
    /// waiting for input, or finished and kept until their TTL.
    pub fn tasks_held(&self) -> usize {
        self.shared.tasks.held(&self.shared.config)
    }

    /// How many workers are occupied right now (abandoned handlers still running included).
    pub fn busy_workers(&self) -> usize {
        self.shared.pool.occupied()
    }

    /// Waits until no worker is occupied, at most `limit`; true when idle.
    pub fn wait_idle(&self, limit: std::time::Duration) -> bool {
        self.shared.pool.wait_idle(limit)
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

/// The names MCP defines, which a plain method may not take.
fn is_protocol_method(name: &str) -> bool {
    use crate::mcp::methods::*;
    [
        INITIALIZE,
        SERVER_DISCOVER,
        PING,
        TOOLS_LIST,
        TOOLS_CALL,
        RESOURCES_LIST,
        RESOURCES_TEMPLATES_LIST,
        RESOURCES_READ,
        RESOURCES_SUBSCRIBE,
        RESOURCES_UNSUBSCRIBE,
        PROMPTS_LIST,
        PROMPTS_GET,
        COMPLETION_COMPLETE,
        LOGGING_SET_LEVEL,
        TASKS_GET,
        TASKS_UPDATE,
        TASKS_CANCEL,
    ]
    .contains(&name)
}
