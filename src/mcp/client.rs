//! The MCP client's public calls: connecting, tools, resources, prompts, completion,
//! logging, closing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::call::ToolCall;
use super::catalog::{
    Completion, GetPromptResult, Prompt, Resource, ResourceContents, ResourceTemplate,
};
use super::config::McpConfig;
use super::requests::{check_result_type, ResultType};
use super::result::CallToolResult;
use super::tool_types::Tool;
use super::types::{Era, SessionInfo};
use super::{methods, McpClient, McpInner, Shared};
use crate::client::{CallOptions, Client};
use crate::error::{Error, Result};
use crate::transport::{Connector, StdioConfig, Transport};

#[cfg(feature = "http")]
use crate::transport::HttpConfig;

impl McpClient {
    /// Starts a stdio server and connects to it. With a restart policy, a dead server is
    /// started again from the same config.
    ///
    /// # Errors
    ///
    /// [`Error::Spawn`], or the lifecycle's failure (see [`McpClient::connect_with`]).
    pub fn connect_stdio(stdio: StdioConfig, config: McpConfig) -> Result<McpClient> {
        McpClient::connect_with(stdio.connector(), config)
    }

    /// Connects to a Streamable HTTP endpoint: a URL, or an [`HttpConfig`] with headers and
    /// bounds. With a restart policy, a lost session is replaced by a new one.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a URL that cannot be used, or the lifecycle's failure (see
    /// [`McpClient::connect_with`]).
    #[cfg(feature = "http")]
    pub fn connect_http(http: impl Into<HttpConfig>, config: McpConfig) -> Result<McpClient> {
        McpClient::connect_with(http.into().connector(), config)
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
                reconnect: Mutex::new(Default::default()),
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

    /// Sends any request with the session's stamping, frame metadata and input rounds,
    /// returning the raw result.
    ///
    /// # Errors
    ///
    /// As [`crate::Client::call`], plus [`Error::Protocol`] for an unknown `resultType` or too
    /// many input rounds.
    pub fn request(&self, method: &str, params: Value, options: CallOptions) -> Result<Value> {
        self.inner.request(method, params, options)
    }

    /// Sends several requests together, each stamped for the session's era: as one JSON-RPC
    /// batch in a 2025-03-26 session (the only revision with batches), otherwise all in flight
    /// at once as separate requests. Results come back in the order of `requests`.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] without a session; each request's own failure is in its result.
    pub fn batch(
        &self,
        requests: Vec<(String, Value)>,
        options: CallOptions,
    ) -> Result<Vec<Result<Value>>> {
        self.inner.batch(requests, options)
    }

    /// `ping` (2026-07-28 has none: `server/discover` is the cheap request every server
    /// answers).
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`].
    pub fn ping(&self) -> Result<()> {
        let session = self.inner.session()?;
        let method = match session.info.era {
            Era::Handshake => methods::PING,
            Era::Stateless => methods::SERVER_DISCOVER,
        };
        self.inner
            .request(method, Value::Null, CallOptions::new())
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

    /// Calls a tool with the default options and waits. `arguments` is anything that
    /// serializes to a JSON object (`json!({..})`, a `&Value`, a struct of yours). See
    /// [`McpClient::call_tool_with`].
    ///
    /// # Errors
    ///
    /// As [`McpClient::call_tool_with`].
    pub fn call_tool(&self, name: &str, arguments: impl Serialize) -> Result<CallToolResult> {
        self.call_tool_with(name, arguments, CallOptions::new())
    }

    /// Calls a tool and waits. A result with `isError` is returned as `Ok` with
    /// [`CallToolResult::is_error`] set: the tool's own failure, never confused with a
    /// transport or protocol error. When the tool declares an `outputSchema`, the
    /// `structuredContent` is validated against it.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] naming the failing path when the structured result breaks the
    /// tool's `outputSchema`; [`Error::Protocol`] for a malformed result; [`Error::Config`]
    /// for arguments that are not a JSON object; the errors of [`McpClient::request`].
    pub fn call_tool_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: CallOptions,
    ) -> Result<CallToolResult> {
        self.start_tool_call(name, arguments, options)?.wait()
    }

    /// Starts a tool call and returns at once, to cancel or wait on it; waiting follows
    /// 2026-07-28 input rounds like [`McpClient::call_tool`].
    ///
    /// # Errors
    ///
    /// As [`crate::Client::start`].
    pub fn start_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: CallOptions,
    ) -> Result<ToolCall> {
        self.start_tool_call(name, arguments, options)
    }

    /// Starts a tool call whose 2026-07-28 input rounds are handed back rather than
    /// answered: waiting on it gives an `input_required` result as the server sent it (in
    /// [`CallToolResult::raw`], its other fields empty) for the caller to pass on, as a
    /// gateway passes a backend's rounds to its own client. `retry` holds the fields of the
    /// retry that answers one (`inputResponses`, the server's `requestState`), added to the
    /// request untouched; they are left out in a handshake session, which has no rounds. A
    /// task the call becomes is followed as [`McpClient::start_tool`] follows it.
    ///
    /// # Errors
    ///
    /// As [`McpClient::start_tool`].
    pub fn start_tool_passing(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: CallOptions,
        retry: Map<String, Value>,
    ) -> Result<ToolCall> {
        self.start_tool_rounds(name, arguments, options, Some(retry))
    }

    /// Sends one request (`prompts/get`, `resources/read`) and returns its result without
    /// answering a 2026-07-28 `input_required` one (handed back as the server sent it, for
    /// the caller to pass on); as [`McpClient::request`] otherwise.
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`].
    pub fn request_passing(
        &self,
        method: &str,
        params: Value,
        options: CallOptions,
    ) -> Result<Value> {
        self.inner.request_passing(method, params, options)
    }

    /// Starts one request stamped for the session's era and returns its handle at once,
    /// without following input rounds or a task: for a long-lived request such as
    /// 2026-07-28's `subscriptions/listen`, whose notifications reach
    /// [`McpConfig::on_notification`] while it is open. Dropping the handle cancels it.
    ///
    /// # Errors
    ///
    /// As [`crate::Client::start`].
    pub fn start_request(
        &self,
        method: &str,
        params: Value,
        options: CallOptions,
    ) -> Result<crate::client::CallHandle> {
        let session = self.inner.session()?;
        let (stamped, options, _rounds) =
            self.inner
                .prepare(&session, method, params, options, Vec::new());
        session.rpc.start(method, stamped, options)
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
        if matches!(check_result_type(&value)?, ResultType::Task) {
            return Err(Error::Protocol(format!(
                "the result of tool `{name}` is a task; wait on the ToolCall, or use \
                 McpClient::call_tool, to follow it"
            )));
        }
        if !matches!(check_result_type(&value)?, ResultType::Complete) {
            return Err(Error::Protocol(format!(
                "the result of tool `{name}` asks for input (resultType input_required); \
                 wait on the ToolCall, or use McpClient::call_tool, to answer it"
            )));
        }
        self.finish_tool_result(name, value)
    }

    /// Every resource (all pages).
    ///
    /// # Errors
    ///
    /// As [`McpClient::list_tools`].
    pub fn list_resources(&self) -> Result<Vec<Resource>> {
        self.inner
            .list_all(methods::RESOURCES_LIST, "resources")?
            .into_iter()
            .map(|raw| Resource::from_value(item_value(&raw)?))
            .collect()
    }

    /// Every resource template (all pages).
    ///
    /// # Errors
    ///
    /// As [`McpClient::list_tools`].
    pub fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        self.inner
            .list_all(methods::RESOURCES_TEMPLATES_LIST, "resourceTemplates")?
            .into_iter()
            .map(|raw| ResourceTemplate::from_value(item_value(&raw)?))
            .collect()
    }

    /// `resources/read`: the resource's contents (text or base64 bytes, one item or more).
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`]; a missing resource is usually [`Error::Rpc`] with -32002.
    pub fn read_resource(&self, uri: &str) -> Result<Vec<ResourceContents>> {
        let result = self.inner.request(
            methods::RESOURCES_READ,
            json!({"uri": uri}),
            CallOptions::new(),
        )?;
        ResourceContents::list_from_result(&result)
    }

    /// `resources/subscribe`.
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`].
    pub fn subscribe_resource(&self, uri: &str) -> Result<()> {
        self.inner
            .request(
                methods::RESOURCES_SUBSCRIBE,
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
        self.inner
            .request(
                methods::RESOURCES_UNSUBSCRIBE,
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
    pub fn list_prompts(&self) -> Result<Vec<Prompt>> {
        self.inner
            .list_all(methods::PROMPTS_LIST, "prompts")?
            .into_iter()
            .map(|raw| Prompt::from_value(item_value(&raw)?))
            .collect()
    }

    /// `prompts/get` with string arguments (`Value::Null` for none).
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`].
    pub fn get_prompt(&self, name: &str, arguments: Value) -> Result<GetPromptResult> {
        let mut params = json!({"name": name});
        if !arguments.is_null() {
            params["arguments"] = arguments;
        }
        let result = self
            .inner
            .request(methods::PROMPTS_GET, params, CallOptions::new())?;
        GetPromptResult::from_value(result)
    }

    /// `completion/complete` for an argument of a prompt (`{"type": "ref/prompt", "name":
    /// …}`) or a resource template (`{"type": "ref/resource", "uri": …}`).
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`].
    pub fn complete(
        &self,
        reference: Value,
        argument_name: &str,
        value: &str,
    ) -> Result<Completion> {
        let result = self.inner.request(
            methods::COMPLETION_COMPLETE,
            json!({"ref": reference, "argument": {"name": argument_name, "value": value}}),
            CallOptions::new(),
        )?;
        Completion::from_value(result)
    }

    /// `logging/setLevel` (2026-07-28 carries the level in every request's `_meta`
    /// instead).
    ///
    /// # Errors
    ///
    /// As [`McpClient::request`].
    pub fn set_logging_level(&self, level: &str) -> Result<()> {
        *self.inner.log_level.lock() = Some(level.to_owned());
        let session = self.inner.session()?;
        match session.info.era {
            Era::Handshake => self
                .inner
                .request(
                    methods::LOGGING_SET_LEVEL,
                    json!({"level": level}),
                    CallOptions::new(),
                )
                .map(drop),
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
        let meta = session.frame_meta(methods::ROOTS_LIST_CHANGED, &Value::Null);
        session
            .rpc
            .notify_with(methods::ROOTS_LIST_CHANGED, Value::Null, meta)
    }

    /// Waits until the handlers (`on_log`, `on_notification`, the server's requests) have seen
    /// everything the server sent before this call, at most `timeout`; true when they have
    /// (or there is no session). See [`crate::Client::settle`].
    pub fn settle(&self, timeout: Duration) -> bool {
        let session = self.inner.session.lock().clone();
        session.is_none_or(|session| session.rpc.settle(timeout))
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

/// One listed item's text as a `Value` (resources and prompts are small; tools stay text).
fn item_value(raw: &serde_json::value::RawValue) -> Result<Value> {
    serde_json::from_str(raw.get())
        .map_err(|error| Error::Protocol(format!("a listed item that cannot be read: {error}")))
}
