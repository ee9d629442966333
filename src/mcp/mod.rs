//! The MCP client: both protocol eras over any transport, tools with output validation,
//! progress, cancellation, server requests, and an opt-in restart of a dead server.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use crate::client::{CallHandle, CallOptions, Client, Progress, ProgressCallback};
use crate::error::{Error, Result, SchemaError};
use crate::schema::Schema;
use crate::transport::stdio::{StdioConfig, StdioTransport};
use crate::transport::Transport;
use crate::wire::{ErrorObject, Notification, Request};

mod config;
mod types;

pub use config::{
    ElicitationHandler, LogHandler, McpConfig, McpNotificationHandler, ProtocolMode, RestartPolicy,
    RootsHandler, SamplingHandler, HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, STATELESS_VERSION,
};
pub use types::{
    CallToolResult, Content, ElicitRequest, ElicitResult, Era, Implementation, LogMessage, Root,
    SessionInfo, Tool, ToolAnnotations,
};

/// The `_meta` key carrying the protocol version on every 2026-07-28 request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key carrying the client capabilities on every 2026-07-28 request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The `_meta` key carrying the client's name and version on 2026-07-28 requests.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The `_meta` key carrying the wanted log level on 2026-07-28 requests.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// Makes a fresh transport for a (re)connection.
pub type Connector = Box<dyn Fn() -> Result<Arc<dyn Transport>> + Send + Sync>;

/// An MCP client. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<McpInner>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let session = self.inner.session.lock().clone();
        f.debug_struct("McpClient")
            .field("session", &session.map(|session| session.info.clone()))
            .finish()
    }
}

struct McpInner {
    config: McpConfig,
    connector: Connector,
    session: Mutex<Option<Arc<Session>>>,
    /// Held while a session is opened, so concurrent callers restart a server once.
    reconnect: Mutex<RestartLedger>,
    shared: Arc<Shared>,
    closed_by_caller: AtomicBool,
    /// The level asked for with `set_logging_level`, stamped on 2026-07-28 requests.
    log_level: Mutex<Option<String>>,
}

struct Session {
    rpc: Client,
    info: SessionInfo,
    /// The `_meta` stamped on every request of a 2026-07-28 session.
    stamp: Option<Map<String, Value>>,
}

/// State the notification handler (on the dispatch thread) shares with the client.
#[derive(Default)]
struct Shared {
    tools_generation: AtomicU64,
    tools: Mutex<ToolsCache>,
}

#[derive(Default)]
struct ToolsCache {
    tools: Option<Arc<Vec<Tool>>>,
    schemas: HashMap<String, Arc<Schema>>,
}

impl Shared {
    /// The server's tool list changed: forget the list and the schemas learned from it, and
    /// tell a fetch in progress that its reply may be stale.
    fn tools_changed(&self) {
        let mut cache = self.tools.lock();
        self.tools_generation.fetch_add(1, Ordering::SeqCst);
        cache.tools = None;
        cache.schemas.clear();
    }
}

/// The method that invalidates the tool cache.
const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";

#[derive(Default)]
struct RestartLedger {
    restarts: VecDeque<Instant>,
    consecutive: u32,
}

/// A tool call in flight, from [`McpClient::start_tool`].
#[derive(Debug)]
pub struct ToolCall {
    client: McpClient,
    name: String,
    handle: CallHandle,
}

impl ToolCall {
    /// Waits for the result and checks it as [`McpClient::call_tool`] does.
    ///
    /// # Errors
    ///
    /// As [`McpClient::call_tool`], plus [`Error::Cancelled`] after a cancel.
    pub fn wait(self) -> Result<CallToolResult> {
        let value = self.handle.wait()?;
        self.client.finish_tool_result(&self.name, value)
    }

    /// Cancels the call: the server is sent `notifications/cancelled`; progress and a response
    /// that arrive later are ignored. Returns false when it had already completed.
    pub fn cancel(&self) -> bool {
        self.handle.cancel()
    }

    /// The underlying call handle, to poll or select over.
    pub fn handle(&mut self) -> &mut CallHandle {
        &mut self.handle
    }
}

impl McpClient {
    /// Starts a stdio server and connects to it.
    ///
    /// # Errors
    ///
    /// [`Error::Spawn`], or the lifecycle's failure (see [`McpClient::connect_with`]).
    pub fn connect_stdio(stdio: StdioConfig, config: McpConfig) -> Result<McpClient> {
        McpClient::connect_with(
            Box::new(move || {
                Ok(Arc::new(StdioTransport::spawn(stdio.clone())?) as Arc<dyn Transport>)
            }),
            config,
        )
    }

    /// Connects over a transport made by `connector`, which is called again for each restart.
    ///
    /// # Errors
    ///
    /// The connector's error, [`Error::Protocol`] when the server offers no protocol version
    /// this client speaks, or the failure of `initialize` / `server/discover`.
    pub fn connect_with(connector: Connector, config: McpConfig) -> Result<McpClient> {
        let client = McpClient {
            inner: Arc::new(McpInner {
                config,
                connector,
                session: Mutex::new(None),
                reconnect: Mutex::new(RestartLedger::default()),
                shared: Arc::new(Shared::default()),
                closed_by_caller: AtomicBool::new(false),
                log_level: Mutex::new(None),
            }),
        };
        let session = client.inner.open_session()?;
        *client.inner.session.lock() = Some(Arc::new(session));
        Ok(client)
    }

    /// Connects over one transport. Without a connector there is nothing to restart.
    ///
    /// # Errors
    ///
    /// As [`McpClient::connect_with`].
    pub fn connect(transport: impl Transport, config: McpConfig) -> Result<McpClient> {
        let slot = Mutex::new(Some(Arc::new(transport) as Arc<dyn Transport>));
        McpClient::connect_with(
            Box::new(move || {
                slot.lock().take().ok_or_else(|| {
                    Error::Config("this client was given one transport; it cannot reconnect".into())
                })
            }),
            config,
        )
    }

    /// What the client learned when it connected: era, version, server info, capabilities,
    /// instructions.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] when there is no live session and none can be started.
    pub fn session_info(&self) -> Result<SessionInfo> {
        Ok(self.inner.session()?.info.clone())
    }

    /// The underlying JSON-RPC client of the current session.
    ///
    /// # Errors
    ///
    /// As [`McpClient::session_info`].
    pub fn rpc(&self) -> Result<Client> {
        Ok(self.inner.session()?.rpc.clone())
    }

    /// Sends any request with the session's stamping and input rounds, returning the raw
    /// result.
    ///
    /// # Errors
    ///
    /// As [`crate::Client::call`], plus [`Error::Protocol`] for an unknown `resultType` or too
    /// many input rounds.
    pub fn request(&self, method: &str, params: Value, options: CallOptions) -> Result<Value> {
        self.inner.request(method, params, options)
    }

    /// `ping`.
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`].
    pub fn ping(&self) -> Result<()> {
        let session = self.inner.session()?;
        // 2026-07-28 removed `ping`; `server/discover` is the cheap request every server has.
        let method = match session.info.era {
            Era::Handshake => "ping",
            Era::Stateless => "server/discover",
        };
        self.request(method, Value::Null, CallOptions::new())
            .map(drop)
    }

    /// Every tool, following every page (at most [`McpConfig::max_pages`]). Cached until the
    /// server sends `notifications/tools/list_changed`.
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`], plus [`Error::Protocol`] for a malformed list, too many
    /// pages, or a repeated cursor.
    pub fn list_tools(&self) -> Result<Arc<Vec<Tool>>> {
        if let Some(tools) = self.inner.shared.tools.lock().tools.clone() {
            return Ok(tools);
        }
        self.refresh_tools()
    }

    /// Fetches the tool list again, ignoring the cache.
    ///
    /// # Errors
    ///
    /// As [`McpClient::list_tools`].
    pub fn refresh_tools(&self) -> Result<Arc<Vec<Tool>>> {
        let shared = &self.inner.shared;
        let generation = shared.tools_generation.load(Ordering::SeqCst);
        let tools = self
            .inner
            .list_all("tools/list", "tools")?
            .into_iter()
            .map(Tool::from_value)
            .collect::<Result<Vec<Tool>>>()?;
        let tools = Arc::new(tools);
        let mut cache = shared.tools.lock();
        // A list_changed that arrived while we fetched (even before the reply) means this list
        // may already be stale: hand it back, but do not cache it.
        if shared.tools_generation.load(Ordering::SeqCst) == generation {
            cache.tools = Some(Arc::clone(&tools));
            cache.schemas.clear();
        }
        Ok(tools)
    }

    /// Calls a tool and waits. A result with `isError` is returned as `Ok` with
    /// [`CallToolResult::is_error`] set: the tool's own failure, never confused with a
    /// transport or protocol error. When the tool declares an `outputSchema`, the
    /// `structuredContent` is validated against it.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] naming the failing path when the structured result breaks the
    /// tool's `outputSchema`; [`Error::Protocol`] for a malformed result; the errors of
    /// [`McpClient::request`].
    pub fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult> {
        let params = tool_params(name, arguments)?;
        let value = self.request("tools/call", params, options)?;
        self.finish_tool_result(name, value)
    }

    /// Starts a tool call and returns at once, to cancel or wait on it. Input rounds of
    /// 2026-07-28 servers are not followed on this path; use [`McpClient::call_tool`] for them.
    ///
    /// # Errors
    ///
    /// As [`crate::Client::start`].
    pub fn start_tool(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<ToolCall> {
        let session = self.inner.session()?;
        let level = self.inner.log_level.lock().clone();
        let params = session.stamp(tool_params(name, arguments)?, level.as_deref());
        let handle = session.rpc.start("tools/call", params, options)?;
        Ok(ToolCall {
            client: self.clone(),
            name: name.to_owned(),
            handle,
        })
    }

    /// Reads a raw `tools/call` result and checks it as [`McpClient::call_tool`] does (shape,
    /// then `structuredContent` against the tool's `outputSchema`); for results obtained
    /// through [`ToolCall::handle`] or [`McpClient::request`].
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] for a malformed result or a `resultType` other than complete;
    /// [`Error::Schema`] naming the failing path.
    pub fn check_tool_result(&self, name: &str, value: Value) -> Result<CallToolResult> {
        if !matches!(check_result_type(&value)?, ResultType::Complete) {
            return Err(Error::Protocol(format!(
                "the result of tool `{name}` asks for input (resultType input_required);                  McpClient::call_tool answers such requests, this path cannot"
            )));
        }
        self.finish_tool_result(name, value)
    }

    fn finish_tool_result(&self, name: &str, value: Value) -> Result<CallToolResult> {
        let result = CallToolResult::from_value(value)?;
        if self.inner.config.validate_output && !result.is_error {
            self.validate_output(name, &result)?;
        }
        Ok(result)
    }

    fn validate_output(&self, name: &str, result: &CallToolResult) -> Result<()> {
        let Some(schema) = self.output_schema(name) else {
            return Ok(());
        };
        let subject = format!("structuredContent of tool `{name}`");
        let Some(structured) = &result.structured_content else {
            return Err(Error::Schema(Box::new(SchemaError {
                subject,
                violations: vec![crate::schema::SchemaViolation {
                    path: String::new(),
                    message: "the tool declares an outputSchema but returned no structuredContent"
                        .into(),
                }],
            })));
        };
        schema.validate(structured).map_err(|violations| {
            Error::Schema(Box::new(SchemaError {
                subject,
                violations,
            }))
        })
    }

    /// The compiled output schema of a tool, from the tool list (fetched once if needed).
    fn output_schema(&self, name: &str) -> Option<Arc<Schema>> {
        if let Some(schema) = self.inner.shared.tools.lock().schemas.get(name) {
            return Some(Arc::clone(schema));
        }
        let tools = match self.list_tools() {
            Ok(tools) => tools,
            Err(error) => {
                log::debug!("toolwire: no tool list to validate `{name}` against: {error}");
                return None;
            }
        };
        let source = tools
            .iter()
            .find(|tool| tool.name == name)?
            .output_schema
            .clone()?;
        match Schema::compile(&source) {
            Ok(schema) => {
                let schema = Arc::new(schema);
                self.inner
                    .shared
                    .tools
                    .lock()
                    .schemas
                    .insert(name.to_owned(), Arc::clone(&schema));
                Some(schema)
            }
            Err(error) => {
                log::warn!(
                    "toolwire: tool `{name}` has an invalid outputSchema ({error}); not validating"
                );
                None
            }
        }
    }

    /// Every resource (all pages).
    ///
    /// # Errors
    ///
    /// As [`McpClient::list_tools`].
    pub fn list_resources(&self) -> Result<Vec<Value>> {
        self.inner.list_all("resources/list", "resources")
    }

    /// Every resource template (all pages).
    ///
    /// # Errors
    ///
    /// As [`McpClient::list_tools`].
    pub fn list_resource_templates(&self) -> Result<Vec<Value>> {
        self.inner
            .list_all("resources/templates/list", "resourceTemplates")
    }

    /// `resources/read`: the result with its `contents`.
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`]; a missing resource is usually [`Error::Rpc`] with -32002.
    pub fn read_resource(&self, uri: &str) -> Result<Value> {
        self.request("resources/read", json!({"uri": uri}), CallOptions::new())
    }

    /// `resources/subscribe`.
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`].
    pub fn subscribe_resource(&self, uri: &str) -> Result<()> {
        self.request(
            "resources/subscribe",
            json!({"uri": uri}),
            CallOptions::new(),
        )
        .map(drop)
    }

    /// `resources/unsubscribe`.
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`].
    pub fn unsubscribe_resource(&self, uri: &str) -> Result<()> {
        self.request(
            "resources/unsubscribe",
            json!({"uri": uri}),
            CallOptions::new(),
        )
        .map(drop)
    }

    /// Every prompt (all pages).
    ///
    /// # Errors
    ///
    /// As [`McpClient::list_tools`].
    pub fn list_prompts(&self) -> Result<Vec<Value>> {
        self.inner.list_all("prompts/list", "prompts")
    }

    /// `prompts/get` with string arguments.
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`].
    pub fn get_prompt(&self, name: &str, arguments: Value) -> Result<Value> {
        let mut params = json!({"name": name});
        if !arguments.is_null() {
            params["arguments"] = arguments;
        }
        self.request("prompts/get", params, CallOptions::new())
    }

    /// `completion/complete` for a prompt or resource-template argument.
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`].
    pub fn complete(&self, reference: Value, argument_name: &str, value: &str) -> Result<Value> {
        self.request(
            "completion/complete",
            json!({"ref": reference, "argument": {"name": argument_name, "value": value}}),
            CallOptions::new(),
        )
    }

    /// `logging/setLevel`.
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`].
    pub fn set_logging_level(&self, level: &str) -> Result<()> {
        *self.inner.log_level.lock() = Some(level.to_owned());
        let session = self.inner.session()?;
        match session.info.era {
            Era::Handshake => self
                .request(
                    "logging/setLevel",
                    json!({"level": level}),
                    CallOptions::new(),
                )
                .map(drop),
            // 2026-07-28 carries the level in every request's `_meta` instead.
            Era::Stateless => Ok(()),
        }
    }

    /// Tells the server the roots changed (`notifications/roots/list_changed`).
    ///
    /// # Errors
    ///
    /// As [`crate::Client::notify`].
    pub fn notify_roots_changed(&self) -> Result<()> {
        let session = self.inner.session()?;
        session
            .rpc
            .notify("notifications/roots/list_changed", Value::Null)
    }

    /// Closes the session and the server. Idempotent; no restart happens after it.
    ///
    /// # Errors
    ///
    /// As [`crate::Client::close`].
    pub fn close(&self) -> Result<()> {
        self.inner.closed_by_caller.store(true, Ordering::SeqCst);
        let session = self.inner.session.lock().clone();
        match session {
            Some(session) => session.rpc.close(),
            None => Ok(()),
        }
    }
}

fn tool_params(name: &str, arguments: Value) -> Result<Value> {
    let arguments = match arguments {
        Value::Null => json!({}),
        object @ Value::Object(_) => object,
        _ => {
            return Err(Error::Config(format!(
                "the arguments of tool `{name}` must be a JSON object"
            )))
        }
    };
    Ok(json!({"name": name, "arguments": arguments}))
}

impl Session {
    /// Adds the 2026-07-28 `_meta` entries to a request's params.
    fn stamp(&self, params: Value, log_level: Option<&str>) -> Value {
        let Some(stamp) = &self.stamp else {
            return params;
        };
        let mut params = match params {
            Value::Object(object) => object,
            _ => Map::new(),
        };
        let meta = params.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            for (key, value) in stamp {
                meta.insert(key.clone(), value.clone());
            }
            if let Some(level) = log_level {
                meta.insert(META_LOG_LEVEL.into(), json!(level));
            }
        }
        Value::Object(params)
    }
}

impl McpInner {
    /// The live session, restarting a dead server when the policy allows.
    fn session(&self) -> Result<Arc<Session>> {
        let current = self.session.lock().clone();
        if let Some(session) = &current {
            if !session.rpc.is_closed() {
                return Ok(Arc::clone(session));
            }
        }
        let dead_reason = current
            .as_ref()
            .and_then(|session| session.rpc.closed_reason());
        if self.closed_by_caller.load(Ordering::SeqCst) {
            return Err(Error::closed_because(
                "the MCP client was closed by the caller",
            ));
        }
        let Some(policy) = self.config.restart else {
            let mut closed = dead_reason.unwrap_or_else(|| crate::error::Closed {
                reason: "no session".into(),
                exit_status: None,
                stderr_tail: String::new(),
            });
            closed
                .reason
                .push_str("; no restart policy is set, so the client stays closed");
            return Err(Error::Closed(Box::new(closed)));
        };
        let mut ledger = self.reconnect.lock();
        // Another caller may have restarted it while we waited for the lock.
        if let Some(session) = self.session.lock().clone() {
            if !session.rpc.is_closed() {
                return Ok(session);
            }
            // Reap the dead one before starting another.
            let _ = session.rpc.close();
        }
        let now = Instant::now();
        while ledger
            .restarts
            .front()
            .is_some_and(|at| now.duration_since(*at) > policy.window)
        {
            ledger.restarts.pop_front();
        }
        if ledger.restarts.len() >= policy.max_restarts as usize {
            return Err(Error::closed_because(format!(
                "the server died {} times within {:?}; not restarting it again",
                ledger.restarts.len(),
                policy.window
            )));
        }
        let backoff = policy
            .initial_backoff
            .saturating_mul(1u32 << ledger.consecutive.min(16))
            .min(policy.max_backoff);
        log::warn!(
            "toolwire: the MCP server is gone ({}); restarting it in {backoff:?}",
            dead_reason.map_or_else(|| "no session".to_owned(), |closed| closed.to_string())
        );
        std::thread::sleep(backoff);
        ledger.restarts.push_back(Instant::now());
        ledger.consecutive += 1;
        let session = Arc::new(self.open_session()?);
        *self.session.lock() = Some(Arc::clone(&session));
        // A new process may offer other tools, or other output schemas.
        self.shared.tools_changed();
        Ok(session)
    }

    fn open_session(&self) -> Result<Session> {
        let rpc = Client::with_shared_transport((self.connector)()?, self.rpc_config())?;
        let opened = match self.config.mode {
            ProtocolMode::Legacy => self.handshake(&rpc),
            // Without a fallback, discover is the lifecycle itself: as patient as initialize.
            ProtocolMode::Modern => self.discover(&rpc, self.config.initialize_timeout),
            ProtocolMode::Auto => self
                .discover(&rpc, self.config.discover_timeout)
                .or_else(|error| {
                    log::debug!(
                        "toolwire: server/discover failed ({error}); falling back to initialize"
                    );
                    self.handshake(&rpc).or_else(|refused| {
                        // A server that started too slowly for the probe may answer it late
                        // and then serve only 2026-07-28, refusing the handshake with -32022
                        // and the versions it supports: probe again.
                        if refused_for_stateless(&refused) {
                            log::debug!(
                                "toolwire: initialize refused ({refused}); probing server/discover again"
                            );
                            self.discover(&rpc, self.config.initialize_timeout)
                        } else {
                            Err(refused)
                        }
                    })
                }),
        };
        match opened {
            Ok((info, stamp)) => {
                log::debug!(
                    "toolwire: connected to {} {} with protocol {} ({})",
                    info.server.name,
                    info.server.version,
                    info.protocol_version,
                    info.era
                );
                Ok(Session { rpc, info, stamp })
            }
            Err(error) => {
                let _ = rpc.close();
                Err(error)
            }
        }
    }

    fn stateless_stamp(&self) -> Map<String, Value> {
        let mut stamp = Map::new();
        stamp.insert(META_PROTOCOL_VERSION.into(), json!(STATELESS_VERSION));
        stamp.insert(
            META_CLIENT_CAPABILITIES.into(),
            self.config.client_capabilities(),
        );
        stamp.insert(
            META_CLIENT_INFO.into(),
            json!({"name": self.config.client_name, "version": self.config.client_version}),
        );
        stamp
    }

    fn discover(
        &self,
        rpc: &Client,
        timeout: std::time::Duration,
    ) -> Result<(SessionInfo, Option<Map<String, Value>>)> {
        let stamp = self.stateless_stamp();
        let result = rpc.call_with(
            "server/discover",
            json!({"_meta": Value::Object(stamp.clone())}),
            CallOptions::new().timeout(timeout),
        )?;
        check_result_type(&result)?;
        let supported: Vec<&str> = result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .map(|versions| versions.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !supported.contains(&STATELESS_VERSION) {
            return Err(Error::Protocol(format!(
                "server/discover offers {supported:?}, not {STATELESS_VERSION}"
            )));
        }
        let info = SessionInfo::from_result(Era::Stateless, STATELESS_VERSION.into(), &result);
        Ok((info, Some(stamp)))
    }

    fn handshake(&self, rpc: &Client) -> Result<(SessionInfo, Option<Map<String, Value>>)> {
        let params = json!({
            "protocolVersion": self.config.handshake_version,
            "capabilities": self.config.client_capabilities(),
            "clientInfo": {"name": self.config.client_name, "version": self.config.client_version},
        });
        let result = rpc.call_with(
            "initialize",
            params,
            CallOptions::new().timeout(self.config.initialize_timeout),
        )?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Error::Protocol("the initialize result has no protocolVersion".into())
            })?;
        if !HANDSHAKE_VERSIONS.contains(&version) {
            return Err(Error::Protocol(format!(
                "the server chose protocol version {version:?}, which this client does not speak \
                 (it speaks {HANDSHAKE_VERSIONS:?} and {STATELESS_VERSION})"
            )));
        }
        let info = SessionInfo::from_result(Era::Handshake, version.to_owned(), &result);
        rpc.notify("notifications/initialized", Value::Null)?;
        Ok((info, None))
    }

    /// The JSON-RPC settings with the MCP handlers for server requests and notifications.
    fn rpc_config(&self) -> crate::client::ClientConfig {
        let mut rpc = self.config.rpc.clone();
        let handlers = ServerRequests::from_config(&self.config);
        rpc.request_handler = Some(Arc::new(move |request: &Request| {
            handlers.answer(
                &request.method,
                request.params.as_ref().unwrap_or(&Value::Null),
            )
        }));
        // On the reader thread, before any later frame is handled: a `tools/list` reply that
        // follows the notification on the wire can then never be cached as fresh, however busy
        // the dispatch thread is.
        let shared = Arc::clone(&self.shared);
        rpc.notification_tap = Some(Arc::new(move |notification: &Notification| {
            if notification.method == TOOLS_LIST_CHANGED {
                shared.tools_changed();
            }
        }));
        let on_notification = self.config.on_notification.clone();
        let on_log = self.config.on_log.clone();
        rpc.notification_handler = Some(Arc::new(move |notification: &Notification| {
            if notification.method == "notifications/message" {
                let message = log_message(notification);
                forward_to_log(&message);
                if let Some(handler) = &on_log {
                    handler(&message);
                }
            }
            if let Some(handler) = &on_notification {
                handler(notification);
            }
        }));
        rpc
    }

    fn request(&self, method: &str, params: Value, mut options: CallOptions) -> Result<Value> {
        let session = self.session()?;
        let level = self.log_level.lock().clone();
        let mut round_params = session.stamp(params.clone(), level.as_deref());
        let shared_progress = share_progress(&mut options);
        let mut result = session.rpc.call_with(method, round_params, options)?;
        let handlers = ServerRequests::from_config(&self.config);
        for _round in 0..self.config.max_input_rounds {
            match check_result_type(&result)? {
                ResultType::Complete => return Ok(result),
                ResultType::InputRequired => {
                    let responses = handlers.answer_input_requests(&result)?;
                    let mut retry = match session.stamp(params.clone(), level.as_deref()) {
                        Value::Object(object) => object,
                        _ => Map::new(),
                    };
                    retry.insert("inputResponses".into(), responses);
                    if let Some(state) = result.get("requestState") {
                        retry.insert("requestState".into(), state.clone());
                    }
                    round_params = Value::Object(retry);
                    // A new request, so a new id, as the protocol requires.
                    result =
                        session
                            .rpc
                            .call_with(method, round_params, shared_progress.options())?;
                }
            }
        }
        match check_result_type(&result)? {
            ResultType::Complete => Ok(result),
            ResultType::InputRequired => Err(Error::Protocol(format!(
                "`{method}` still needs input after {} rounds",
                self.config.max_input_rounds
            ))),
        }
    }

    fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>> {
        let mut items = Vec::new();
        let mut cursor: Option<Value> = None;
        let mut seen_cursors: HashSet<String> = HashSet::new();
        for _page in 0..self.config.max_pages {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => Value::Null,
            };
            let result = self.request(method, params, CallOptions::new())?;
            let page = result.get(key).and_then(Value::as_array).ok_or_else(|| {
                Error::Protocol(format!("the {method} result has no `{key}` array"))
            })?;
            items.extend(page.iter().cloned());
            match result.get("nextCursor") {
                None | Some(Value::Null) => return Ok(items),
                Some(next) => {
                    let text = next.to_string();
                    if !seen_cursors.insert(text.clone()) {
                        return Err(Error::Protocol(format!(
                            "{method}: the server repeated the cursor {text}; stopping"
                        )));
                    }
                    cursor = Some(next.clone());
                }
            }
        }
        Err(Error::Protocol(format!(
            "{method}: more than {} pages; stopping (raise McpConfig::max_pages)",
            self.config.max_pages
        )))
    }
}

/// True for the -32022 "unsupported protocol version" refusal of a server that names
/// 2026-07-28 among the versions it supports.
fn refused_for_stateless(error: &Error) -> bool {
    error.rpc().is_some_and(|error| {
        error.code == crate::wire::ErrorCode(-32022)
            && error
                .data
                .as_ref()
                .and_then(|data| data.get("supported"))
                .and_then(Value::as_array)
                .is_some_and(|versions| versions.iter().any(|version| version == STATELESS_VERSION))
    })
}

/// Shares one progress callback across the rounds of a request.
struct SharedProgress {
    template: CallOptions,
    callback: Option<Arc<Mutex<ProgressCallback>>>,
}

fn share_progress(options: &mut CallOptions) -> SharedProgress {
    let callback = options
        .on_progress
        .take()
        .map(|callback| Arc::new(Mutex::new(callback)));
    let template = CallOptions {
        timeout: options.timeout,
        max_total: options.max_total,
        reset_on_progress: options.reset_on_progress,
        on_progress: None,
        want_progress: options.want_progress,
    };
    let shared = SharedProgress { template, callback };
    if shared.callback.is_some() {
        options.on_progress = shared.options().on_progress;
    }
    shared
}

impl SharedProgress {
    fn options(&self) -> CallOptions {
        let mut options = CallOptions {
            timeout: self.template.timeout,
            max_total: self.template.max_total,
            reset_on_progress: self.template.reset_on_progress,
            on_progress: None,
            want_progress: self.template.want_progress,
        };
        if let Some(callback) = &self.callback {
            let callback = Arc::clone(callback);
            options.on_progress = Some(Box::new(move |progress: &Progress| {
                (callback.lock())(progress)
            }));
        }
        options
    }
}

enum ResultType {
    Complete,
    InputRequired,
}

/// Reads `resultType`: absent or "complete" is complete; "input_required" asks for input;
/// anything else is invalid, as the protocol requires.
fn check_result_type(result: &Value) -> Result<ResultType> {
    match result.get("resultType") {
        None | Some(Value::Null) => Ok(ResultType::Complete),
        Some(Value::String(kind)) if kind == "complete" => Ok(ResultType::Complete),
        Some(Value::String(kind)) if kind == "input_required" => Ok(ResultType::InputRequired),
        Some(other) => Err(Error::Protocol(format!("unknown resultType {other}"))),
    }
}

/// The user's handlers for what a server may ask of the client.
#[derive(Clone)]
struct ServerRequests {
    roots: Option<RootsHandler>,
    sampling: Option<SamplingHandler>,
    elicitation: Option<ElicitationHandler>,
}

impl ServerRequests {
    fn from_config(config: &McpConfig) -> ServerRequests {
        ServerRequests {
            roots: config.roots.clone(),
            sampling: config.sampling.clone(),
            elicitation: config.elicitation.clone(),
        }
    }

    /// Answers one server request; methods without a handler get -32601 (ping always `{}`).
    fn answer(&self, method: &str, params: &Value) -> std::result::Result<Value, ErrorObject> {
        match method {
            "ping" => Ok(json!({})),
            "roots/list" if self.roots.is_some() => {
                let roots = (self.roots.as_ref().expect("checked"))();
                Ok(json!({"roots": roots.iter().map(Root::to_value).collect::<Vec<_>>()}))
            }
            "sampling/createMessage" if self.sampling.is_some() => {
                (self.sampling.as_ref().expect("checked"))(params)
            }
            "elicitation/create" if self.elicitation.is_some() => {
                let request = ElicitRequest {
                    message: params
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    requested_schema: params.get("requestedSchema").cloned(),
                    raw: params.clone(),
                };
                Ok((self.elicitation.as_ref().expect("checked"))(&request).to_value())
            }
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    /// Answers every entry of an `InputRequiredResult`'s `inputRequests`.
    fn answer_input_requests(&self, result: &Value) -> Result<Value> {
        let requests = result
            .get("inputRequests")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                Error::Protocol("an input_required result has no `inputRequests` object".into())
            })?;
        let mut responses = Map::new();
        for (key, request) in requests {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::Protocol(format!("input request `{key}` has no method")))?;
            let params = request.get("params").cloned().unwrap_or(Value::Null);
            match self.answer(method, &params) {
                Ok(answer) => {
                    responses.insert(key.clone(), answer);
                }
                Err(error) => {
                    return Err(Error::Protocol(format!(
                        "the server asked for `{method}` (input `{key}`), which this client cannot answer: {error}"
                    )))
                }
            }
        }
        Ok(Value::Object(responses))
    }
}

fn log_message(notification: &Notification) -> LogMessage {
    let params = notification.params.clone().unwrap_or(Value::Null);
    LogMessage {
        level: params
            .get("level")
            .and_then(Value::as_str)
            .unwrap_or("info")
            .to_owned(),
        logger: params
            .get("logger")
            .and_then(Value::as_str)
            .map(str::to_owned),
        data: params.get("data").cloned().unwrap_or(Value::Null),
    }
}

fn forward_to_log(message: &LogMessage) {
    let level = match message.level.as_str() {
        "debug" => log::Level::Debug,
        "info" | "notice" => log::Level::Info,
        "warning" => log::Level::Warn,
        _ if message.level.is_empty() => log::Level::Info,
        "error" | "critical" | "alert" | "emergency" => log::Level::Error,
        _ => log::Level::Info,
    };
    let logger = message.logger.as_deref().unwrap_or("server");
    log::log!(target: "toolwire::server", level, "[{logger}] {}", message.data);
}
