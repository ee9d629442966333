//! The Model Context Protocol client: both protocol eras over any transport, tools with output
//! validation, resources, prompts, completion, progress, cancellation, the server's requests,
//! and an opt-in restart of a dead server.
//!
//! Every MCP fact the crate knows lives here: the method names ([`methods`]), the lifecycle of
//! both eras, `_meta` stamping, the input rounds of 2026-07-28, and [`McpDialect`], the
//! conventions (progress tokens, cancellation notices, `ping`) the JSON-RPC client applies
//! without knowing them. The layers below see only typed frames and their
//! [`crate::transport::FrameMeta`].
//!
//! Files: `client` (the public calls), `session` (connecting, both eras, restarts), `requests`
//! (stamping, input rounds, paging, the server's requests), `tools` (the tool cache, output
//! validation, tool calls in flight), `names` (the one tool-name rule), `dialect`, `methods`, `connect` (config-file entries),
//! `config`, and the data shapes in `types`, `tool_types` and `catalog`; `skills` (the Skills
//! extension: entries, loading and verifying a skill's files) with `frontmatter` (the
//! `SKILL.md` frontmatter parser).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Map, Value};

use crate::client::Client;
use crate::schema::Schema;
use crate::transport::Connector;

mod call;
mod catalog;
mod client;
mod config;
mod connect;
mod dialect;
mod frontmatter;
pub(crate) mod headers;
pub mod methods;
mod names;
mod paging;
mod requests;
mod result;
mod session;
mod skills;
mod tasks;
mod tool_types;
mod tools;
pub(crate) mod traced;
mod types;

pub use call::ToolCall;
pub use catalog::{
    Completion, GetPromptResult, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents,
    ResourceTemplate,
};
pub use config::{
    ElicitationHandler, LogHandler, McpConfig, McpNotificationHandler, ProtocolMode,
    RestartHandler, RestartPolicy, RootsHandler, SamplingHandler, TaskPolicy, HANDSHAKE_VERSIONS,
    LATEST_HANDSHAKE_VERSION, STATELESS_VERSION,
};
pub use dialect::McpDialect;
pub use frontmatter::parse_frontmatter;
pub use names::{
    check_tool_name, is_callable_name, is_tool_name, MAX_TOOL_NAME_CHARS, TOOL_NAME_RULE,
};
pub use result::{CallToolResult, Content};
pub use skills::{
    skill_digest, verify_file, verify_frontmatter, LoadedSkill, SkillEntry, SkillFile,
    SkillResources, SKILLS_EXTENSION, SKILL_MD,
};
pub use tasks::{Task, TaskStatus, TASKS_EXTENSION};
pub use tool_types::{TaskSupport, Tool, ToolAnnotations};
pub use tools::merge_params;
pub use types::{ElicitRequest, ElicitResult, Era, Implementation, LogMessage, Root, SessionInfo};

/// The `_meta` key carrying the protocol version on every 2026-07-28 request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key carrying the client capabilities on every 2026-07-28 request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key carrying the client's name and version on 2026-07-28 requests.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The `_meta` key carrying the wanted log level on 2026-07-28 requests.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// An MCP client. Cheap to clone; clones share the connection.
///
/// ```no_run
/// use serde_json::json;
/// use toolwire::{McpClient, McpConfig, StdioConfig};
///
/// # fn main() -> Result<(), toolwire::Error> {
/// let client = McpClient::connect_stdio(StdioConfig::new("my-mcp-server"), McpConfig::default())?;
/// for tool in client.list_tools()?.iter() {
///     println!("{}: {}", tool.name, tool.description.as_deref().unwrap_or(""));
/// }
/// let result = client.call_tool("add", json!({"a": 2, "b": 3}))?;
/// println!("{}", result.text());
/// client.close()?;
/// # Ok(()) }
/// ```
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
    reconnect: Mutex<session::RestartLedger>,
    shared: Arc<Shared>,
    closed_by_caller: AtomicBool,
    /// The level asked for with `set_logging_level`, stamped on 2026-07-28 requests.
    log_level: Mutex<Option<String>>,
}

/// One connection to the server and what was negotiated on it.
struct Session {
    rpc: Client,
    /// The transport under `rpc`, asked for its session id only when a span records it.
    transport: Arc<dyn crate::transport::Transport>,
    info: SessionInfo,
    /// The negotiated version, declared on every frame after the opening request.
    version: Arc<str>,
    /// The `_meta` stamped on every request of a 2026-07-28 session.
    stamp: Option<Map<String, Value>>,
    /// Tool calls and `tasks/*` declare the tasks extension.
    tasks_extension: bool,
}

/// State the notification tap (on the reader thread) shares with the client.
#[derive(Default)]
struct Shared {
    tools_generation: AtomicU64,
    tools: Mutex<ToolsCache>,
    /// The waiters of tasks in flight, by task id, woken by the server's status notices.
    task_watchers: Mutex<HashMap<String, crossbeam_channel::Sender<Value>>>,
}

#[derive(Default)]
struct ToolsCache {
    tools: Option<Arc<Vec<Tool>>>,
    /// The tools of the last list left out for invalid `x-mcp-header` designations, with why.
    rejected: Vec<(String, String)>,
    /// Each called tool's compiled output schema: none, the schema, or why it is refused.
    schemas: HashMap<String, std::result::Result<Option<Arc<Schema>>, String>>,
}

impl Shared {
    /// A task's status notice (on the reader thread): hand it to the task's waiter, if any,
    /// without ever blocking (a waiter that has not taken the last one keeps that one).
    fn task_changed(&self, params: Option<&Value>) {
        let Some(params) = params else { return };
        let Some(id) = params.get("taskId").and_then(Value::as_str) else {
            return;
        };
        if let Some(watcher) = self.task_watchers.lock().get(id) {
            let _ = watcher.try_send(params.clone());
        }
    }

    /// The server's tool list changed: forget the list and the schemas learned from it, and
    /// tell a fetch in progress that its reply may be stale.
    fn tools_changed(&self) {
        let mut cache = self.tools.lock();
        self.tools_generation.fetch_add(1, Ordering::SeqCst);
        cache.tools = None;
        cache.schemas.clear();
    }
}
