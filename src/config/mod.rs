//! Server lists from the config files users already have, routed to a transport: a
//! `command` starts a stdio server, a `url` speaks Streamable HTTP, a `url` of `type:
//! "sse"` the legacy HTTP+SSE transport of 2024-11-05, a `ws://`/`wss://` `url` WebSocket
//! (feature `websocket`), and a `tcp://host:port` or `unix:/path` `url` newline-delimited
//! JSON-RPC over a socket.
//!
//! | format | file | key | variables |
//! |---|---|---|---|
//! | [`ConfigFormat::ClaudeDesktop`] | `claude_desktop_config.json` | `mcpServers` | none: values are literal |
//! | [`ConfigFormat::Cursor`] | `.cursor/mcp.json` | `mcpServers` | `${env:NAME}`, `${userHome}`, `${workspaceFolder}`, `${pathSeparator}` |
//! | [`ConfigFormat::ClaudeCode`] | `.mcp.json` | `mcpServers`, optional `type` | `${VAR}`, `${VAR:-default}` |
//! | [`ConfigFormat::VsCode`] | `.vscode/mcp.json` | `servers`, required `type`, `envFile` | `${env:NAME}`, `${input:id}`, `${workspaceFolder}`, `${userHome}`, `${pathSeparator}` |
//!
//! Variables are expanded in `command`, `args`, `env`, `cwd`, `envFile`, `url` and
//! `headers`. `${workspaceFolder}` (and the base of a relative `envFile` or `cwd`) is the
//! folder holding `.vscode` / `.cursor`, or the file's own folder, as a real absolute path
//! even when the file was named relatively ([`LoadOptions::workspace_folder`]). `${input:id}` (VS Code asks the user) is an error unless the value is supplied
//! with [`LoadOptions::input`]. A bad entry is an error naming the file, the server and
//! the field (or, with [`LoadOptions::skip_bad_entries`], is left out and kept in
//! [`ServerConfigs::rejected`] while the others stay usable); a field this reader does not
//! know is ignored with a `log` warning. The
//! document is read strictly: a key written twice in any object (a server name, `command`
//! in one entry, anywhere) is an error naming the key, the object's JSON pointer, the line
//! and the column, never a silent last-wins; so is an integer outside 64 bits. An
//! environment variable (in `env` or `envFile`) whose name is empty or holds `=` or a NUL
//! byte, or whose value holds a NUL byte, is an error naming the server and the variable:
//! the OS could not pass it on as written.
//!
//! # Files are data
//!
//! A config file, and the `envFile` it names, is read only when it is a regular file (a
//! symlink to one is followed): a FIFO, a device such as `/dev/zero`, a socket or a directory
//! is an error naming the path and what it is ("is a FIFO, not a regular file"), and it
//! returns at once, because the opened file's own metadata is checked and the open does not
//! wait for a FIFO's writer. Each file has a size bound:
//!
//! | bound | default | setter |
//! |---|---|---|
//! | config file | 1 MiB | [`LoadOptions::max_config_bytes`] |
//! | `envFile` | 256 KiB | [`LoadOptions::max_env_file_bytes`] |
//!
//! This module knows only the transport layer's configs: [`ServerConfigs::connector`] gives
//! a [`Connector`]; connecting an MCP client to an entry is `ServerConfigs::connect`, defined
//! with the MCP client.
//!
//! ```no_run
//! use toolwire::{McpConfig, ServerConfigs};
//!
//! # fn main() -> Result<(), toolwire::Error> {
//! let client = ServerConfigs::load(".mcp.json")?.connect("github", McpConfig::default())?;
//! let tools = client.list_tools()?;
//! # let _ = tools; Ok(()) }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::json::Refusal;
use crate::mask::{mask_url, MaskedHeaders, MaskedValues};
use crate::transport::{Connector, StdioConfig};

mod entry;
mod file;
mod hosts;
mod oauth;

pub use hosts::{host_configs, HostConfig, HostScope};
pub use oauth::OAuthSettings;

use entry::EntryReader;
use file::{read_regular, ReadRefusal};

/// Which tool's file format (and so which variable syntax) a config follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigFormat {
    /// Claude Desktop's `claude_desktop_config.json`: `mcpServers`; values are literal.
    ClaudeDesktop,
    /// Cursor's `mcp.json`: `mcpServers`; `${env:NAME}` and a few editor variables.
    Cursor,
    /// Claude Code's `.mcp.json`: `mcpServers` with an optional `type`; `${VAR}` and
    /// `${VAR:-default}`.
    ClaudeCode,
    /// VS Code's `.vscode/mcp.json`: `servers` with a required `type`, `envFile`, `inputs`.
    VsCode,
}

impl fmt::Display for ConfigFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigFormat::ClaudeDesktop => "Claude Desktop",
            ConfigFormat::Cursor => "Cursor",
            ConfigFormat::ClaudeCode => "Claude Code",
            ConfigFormat::VsCode => "VS Code",
        })
    }
}

/// One server of a config file, routed to its transport. Its `Debug` shows header values,
/// environment values and a URL's password as `***`.
#[derive(Clone)]
#[non_exhaustive]
pub enum ServerEntry {
    /// A `command` to run, spoken to over stdio.
    Stdio(StdioConfig),
    /// A `url`, spoken to over Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: Vec<(String, String)>,
    },
    /// A `ws://` or `wss://` `url`: JSON-RPC over WebSocket (feature `websocket`).
    WebSocket {
        /// The WebSocket URL.
        url: String,
        /// Headers sent with the opening handshake.
        headers: Vec<(String, String)>,
    },
    /// A `tcp://host:port` or `unix:/path` `url`: newline-delimited JSON-RPC over a socket.
    Socket(crate::transport::SocketConfig),
    /// A `url` with `type: "sse"`: the legacy HTTP+SSE transport of 2024-11-05.
    Sse {
        /// The event stream's URL (e.g. `http://127.0.0.1:8000/sse`).
        url: String,
        /// Headers sent with every request.
        headers: Vec<(String, String)>,
    },
}

impl fmt::Debug for ServerEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerEntry::Stdio(stdio) => f.debug_tuple("Stdio").field(stdio).finish(),
            ServerEntry::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &mask_url(url))
                .field("headers", &MaskedHeaders(headers))
                .finish(),
            ServerEntry::WebSocket { url, headers } => f
                .debug_struct("WebSocket")
                .field("url", &mask_url(url))
                .field("headers", &MaskedHeaders(headers))
                .finish(),
            ServerEntry::Socket(socket) => f.debug_tuple("Socket").field(socket.address()).finish(),
            ServerEntry::Sse { url, headers } => f
                .debug_struct("Sse")
                .field("url", &mask_url(url))
                .field("headers", &MaskedHeaders(headers))
                .finish(),
        }
    }
}

/// How to read a config file: its format, where variables come from. `Default` (the same as
/// [`LoadOptions::new`]) spells out every value. Its `Debug` shows the names of variables
/// and inputs, not their values (an input is often a password).
#[derive(Clone)]
pub struct LoadOptions {
    pub(crate) format: Option<ConfigFormat>,
    pub(crate) vars: HashMap<String, String>,
    pub(crate) process_env: bool,
    pub(crate) inputs: HashMap<String, String>,
    pub(crate) workspace_folder: Option<PathBuf>,
    pub(crate) max_config_bytes: usize,
    pub(crate) max_env_file_bytes: usize,
    pub(crate) skip_bad_entries: bool,
    pub(crate) servers_at: Option<String>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            format: None,
            vars: HashMap::new(),
            process_env: true,
            inputs: HashMap::new(),
            workspace_folder: None,
            max_config_bytes: 1024 * 1024,
            max_env_file_bytes: 256 * 1024,
            skip_bad_entries: false,
            servers_at: None,
        }
    }
}

impl fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadOptions")
            .field("format", &self.format)
            .field("vars", &MaskedValues(self.vars.keys()))
            .field("process_env", &self.process_env)
            .field("inputs", &MaskedValues(self.inputs.keys()))
            .field("workspace_folder", &self.workspace_folder)
            .field("skip_bad_entries", &self.skip_bad_entries)
            .field("servers_at", &self.servers_at)
            .finish()
    }
}

impl LoadOptions {
    /// Detected format, the process environment, no inputs.
    pub fn new() -> LoadOptions {
        LoadOptions::default()
    }

    /// The format, instead of detecting it from the file's name and content. Defaults to
    /// detected.
    pub fn format(mut self, format: ConfigFormat) -> Self {
        self.format = Some(format);
        self
    }

    /// A variable for expansions, ahead of the process environment. Defaults to none.
    pub fn var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// Whether the process environment is consulted (after [`LoadOptions::var`]s). Defaults
    /// to true.
    pub fn process_env(mut self, use_it: bool) -> Self {
        self.process_env = use_it;
        self
    }

    /// Supplies the value of VS Code's `${input:id}`; an input without a value is an error.
    /// Defaults to none.
    pub fn input(mut self, id: impl Into<String>, value: impl Into<String>) -> Self {
        self.inputs.insert(id.into(), value.into());
        self
    }

    /// `${workspaceFolder}`, and the base of relative `envFile` and `cwd` paths. Defaults to
    /// the folder holding `.vscode` / `.cursor`, or else the file's folder, canonicalized
    /// against the current directory (so `.vscode/mcp.json` gives the current directory's
    /// real path); [`ServerConfigs::parse`] has no default.
    pub fn workspace_folder(mut self, folder: impl Into<PathBuf>) -> Self {
        self.workspace_folder = Some(folder.into());
        self
    }

    /// The largest config file [`ServerConfigs::load_with`] reads; a larger one is an error
    /// naming it. Defaults to 1 MiB: a hand-written server list is a few KiB, and this holds
    /// thousands of entries.
    pub fn max_config_bytes(mut self, bytes: usize) -> Self {
        self.max_config_bytes = bytes;
        self
    }

    /// The largest `envFile` read; a larger one is an error naming the server and the file.
    /// Defaults to 256 KiB: a quarter of the 1 MiB macOS allows for a child's arguments and
    /// whole environment together (Linux typically 2 MiB), past which the server could not
    /// be started anyway.
    pub fn max_env_file_bytes(mut self, bytes: usize) -> Self {
        self.max_env_file_bytes = bytes;
        self
    }

    /// What a bad entry does: with `false` the first one fails the whole file (an error
    /// naming the server and the field); with `true` it is left out, its error kept in
    /// [`ServerConfigs::rejected`], and every other entry stays usable. A document that is not
    /// JSON, holds a key twice or has no object of servers fails either way. Defaults to
    /// false.
    pub fn skip_bad_entries(mut self, skip: bool) -> Self {
        self.skip_bad_entries = skip;
        self
    }

    /// Where the object of servers is, as a JSON pointer (RFC 6901) into the document,
    /// instead of the format's key (`/mcpServers`, VS Code's `/servers`): Claude Code keeps a
    /// project's own servers at `/projects/<folder>/mcpServers` of `~/.claude.json` (see
    /// [`HostConfig`]). Nothing at the pointer means no servers. Defaults to the format's key.
    pub fn servers_at(mut self, pointer: impl Into<String>) -> Self {
        self.servers_at = Some(pointer.into());
        self
    }

    fn lookup(&self, name: &str) -> Option<String> {
        if let Some(value) = self.vars.get(name) {
            return Some(value.clone());
        }
        if self.process_env {
            return std::env::var(name).ok();
        }
        None
    }
}

/// The servers of one config file.
#[derive(Debug, Clone)]
pub struct ServerConfigs {
    source: String,
    format: ConfigFormat,
    servers: BTreeMap<String, ServerEntry>,
    /// The names of `servers` in the file's order.
    order: Vec<String>,
    /// The OAuth fields of HTTP entries that have them.
    oauth: BTreeMap<String, OAuthSettings>,
    /// The entries left out ([`LoadOptions::skip_bad_entries`]), with why.
    rejected: BTreeMap<String, String>,
}

impl ServerConfigs {
    /// Reads a config file, detecting its format.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be read; [`Error::Config`] naming the file when it is not
    /// a regular file (a FIFO, a device, a directory: see the module docs) or is larger than
    /// [`LoadOptions::max_config_bytes`], and naming the server and field of the first bad
    /// entry.
    pub fn load(path: impl AsRef<Path>) -> Result<ServerConfigs> {
        ServerConfigs::load_with(path, LoadOptions::new())
    }

    /// Reads a config file with options.
    ///
    /// # Errors
    ///
    /// As [`ServerConfigs::load`].
    pub fn load_with(path: impl AsRef<Path>, mut options: LoadOptions) -> Result<ServerConfigs> {
        let path = path.as_ref();
        let text = read_regular(path, options.max_config_bytes).map_err(|refusal| {
            let message = refusal.describe(path, "max_config_bytes");
            match refusal {
                ReadRefusal::Io(error) => Error::Io(std::io::Error::new(error.kind(), message)),
                _ => Error::Config(message),
            }
        })?;
        if options.workspace_folder.is_none() {
            options.workspace_folder = Some(workspace_of(path));
        }
        let (document, orders) = read_document(&path.display().to_string(), &text)?;
        let format = options
            .format
            .unwrap_or_else(|| detect_format(Some(path), &document));
        ServerConfigs::read(
            path.display().to_string(),
            format,
            (&document, &orders),
            &options,
        )
    }

    /// Reads config text in a given format (relative paths resolve against
    /// [`LoadOptions::workspace_folder`] or the current directory).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for JSON that does not parse or a bad entry.
    pub fn parse(text: &str, options: &LoadOptions) -> Result<ServerConfigs> {
        let (document, orders) = read_document("config text", text)?;
        let format = options
            .format
            .unwrap_or_else(|| detect_format(None, &document));
        ServerConfigs::read("config text".into(), format, (&document, &orders), options)
    }

    fn read(
        source: String,
        format: ConfigFormat,
        (document, orders): (&Value, &crate::json::KeyOrders),
        options: &LoadOptions,
    ) -> Result<ServerConfigs> {
        let key = match format {
            ConfigFormat::VsCode => "servers",
            _ => "mcpServers",
        };
        let Some(object) = document.as_object() else {
            return Err(Error::Config(format!(
                "{source}: the top level is not an object"
            )));
        };
        let (found, key) = match &options.servers_at {
            Some(pointer) => (document.pointer(pointer), pointer.as_str()),
            None => (object.get(key), key),
        };
        let pointer = match &options.servers_at {
            Some(pointer) => pointer.clone(),
            None => format!("/{key}"),
        };
        let file_order = orders.get(&pointer).cloned().unwrap_or_default();
        let servers = match found {
            None => Map::new(),
            Some(Value::Object(servers)) => servers.clone(),
            Some(_) => {
                return Err(Error::Config(format!(
                    "{source}: `{key}` must be an object of servers"
                )))
            }
        };
        let mut entries = BTreeMap::new();
        let mut oauth = BTreeMap::new();
        let mut rejected = BTreeMap::new();
        for (name, entry) in &servers {
            let reader = EntryReader {
                source: &source,
                name,
                format,
                options,
            };
            let read = reader.read(entry).and_then(|read| {
                let settings = match (&read, entry.as_object()) {
                    (ServerEntry::Http { .. }, Some(object)) => reader.oauth(object)?,
                    _ => None,
                };
                Ok((read, settings))
            });
            match read {
                Ok((read, settings)) => {
                    if let Some(settings) = settings {
                        oauth.insert(name.clone(), settings);
                    }
                    entries.insert(name.clone(), read);
                }
                Err(error) if options.skip_bad_entries => {
                    let reason = match error {
                        Error::Config(reason) => reason,
                        other => other.to_string(),
                    };
                    rejected.insert(name.clone(), reason);
                }
                Err(error) => return Err(error),
            }
        }
        let order = file_order
            .into_iter()
            .filter(|name| entries.contains_key(name))
            .collect();
        Ok(ServerConfigs {
            source,
            format,
            order,
            servers: entries,
            oauth,
            rejected,
        })
    }

    /// The format the file was read as.
    pub fn format(&self) -> ConfigFormat {
        self.format
    }

    /// The server names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// The server names in the order the file gives them (the gateway's order when two
    /// servers give the same tool name: the first serves it).
    pub fn names_in_file_order(&self) -> impl Iterator<Item = &str> {
        self.order.iter().map(String::as_str)
    }

    /// One server's entry.
    pub fn get(&self, name: &str) -> Option<&ServerEntry> {
        self.servers.get(name)
    }

    /// The OAuth fields of an HTTP server's entry (Claude Code's and VS Code's `oauth`,
    /// Cursor's `auth`), when it has them.
    pub fn oauth(&self, name: &str) -> Option<&OAuthSettings> {
        self.oauth.get(name)
    }

    /// The config's name for error messages: the file's path, or "config text".
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The entries left out because they are bad or unsupported (only with
    /// [`LoadOptions::skip_bad_entries`]), in name order, each with the error that names
    /// the file, the server and the field. They are not among [`ServerConfigs::names`].
    pub fn rejected(&self) -> impl Iterator<Item = (&str, &str)> {
        self.rejected
            .iter()
            .map(|(name, reason)| (name.as_str(), reason.as_str()))
    }

    pub(crate) fn entry(&self, name: &str) -> Result<&ServerEntry> {
        if let Some(reason) = self.rejected.get(name) {
            return Err(Error::Config(reason.clone()));
        }
        self.servers.get(name).ok_or_else(|| {
            let names: Vec<&str> = self.names().collect();
            Error::Config(format!(
                "{}: no server named `{name}` (it has: {})",
                self.source,
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ))
        })
    }

    /// A connector for the server: every call starts a new stdio process or a new HTTP
    /// session, so a restart policy can use it.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for an unknown name, a rejected entry (its error), or an HTTP
    /// server without the `http` feature.
    pub fn connector(&self, name: &str) -> Result<Connector> {
        self.entry(name)?.connector()
    }
}

impl ServerEntry {
    /// A connector for this entry: every call starts a new stdio process, a new HTTP session
    /// or a new connection, so a restart policy can use it.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a URL that cannot be used, or a transport whose feature is off.
    pub fn connector(&self) -> Result<Connector> {
        match self {
            ServerEntry::Stdio(stdio) => Ok(stdio.clone().connector()),
            ServerEntry::Http { url, headers } => http_connector(url, headers, false),
            ServerEntry::Sse { url, headers } => http_connector(url, headers, true),
            ServerEntry::WebSocket { url, headers } => websocket_connector(url, headers),
            ServerEntry::Socket(socket) => Ok(socket.clone().connector()),
        }
    }

    /// The entry's transport in one word: `stdio`, `http`, `sse`, `websocket` or `socket`.
    pub fn transport(&self) -> &'static str {
        match self {
            ServerEntry::Stdio(_) => "stdio",
            ServerEntry::Http { .. } => "http",
            ServerEntry::Sse { .. } => "sse",
            ServerEntry::WebSocket { .. } => "websocket",
            ServerEntry::Socket(_) => "socket",
        }
    }

    /// Reads a `url` the way a config entry's is routed: `ws://`/`wss://` is WebSocket,
    /// `tcp://host:port` and `unix:/path` a socket, anything else Streamable HTTP.
    pub fn from_url(url: &str) -> ServerEntry {
        let lower = url.to_ascii_lowercase();
        if lower.starts_with("ws://") || lower.starts_with("wss://") {
            ServerEntry::WebSocket {
                url: url.to_owned(),
                headers: Vec::new(),
            }
        } else if lower.starts_with("tcp://") {
            ServerEntry::Socket(crate::transport::SocketConfig::tcp(
                url[6..].trim_end_matches('/'),
            ))
        } else if let Some(path) = url
            .strip_prefix("unix://")
            .or_else(|| url.strip_prefix("unix:"))
        {
            ServerEntry::Socket(crate::transport::SocketConfig::unix(path))
        } else {
            ServerEntry::Http {
                url: url.to_owned(),
                headers: Vec::new(),
            }
        }
    }
}

#[cfg(all(feature = "websocket", unix))]
fn websocket_connector(url: &str, headers: &[(String, String)]) -> Result<Connector> {
    let mut config = crate::transport::WebSocketConfig::new(url);
    for (name, value) in headers {
        config = config.header(name.clone(), value.clone());
    }
    Ok(config.connector())
}

#[cfg(not(all(feature = "websocket", unix)))]
fn websocket_connector(url: &str, _headers: &[(String, String)]) -> Result<Connector> {
    Err(Error::Config(format!(
        "`{}` is a WebSocket server: toolwire was built without its `websocket` feature",
        mask_url(url)
    )))
}

#[cfg(feature = "http")]
fn http_connector(url: &str, headers: &[(String, String)], legacy: bool) -> Result<Connector> {
    let mut config = crate::transport::HttpConfig::new(url);
    for (name, value) in headers {
        config = config.header(name.clone(), value.clone());
    }
    // Check the URL and headers now, not at the first connection.
    crate::transport::HttpTransport::new(config.clone())?;
    Ok(if legacy {
        config.legacy_sse_connector()
    } else {
        config.connector()
    })
}

#[cfg(not(feature = "http"))]
fn http_connector(url: &str, _headers: &[(String, String)], _legacy: bool) -> Result<Connector> {
    Err(Error::Config(format!(
        "`{}` is an HTTP server: toolwire was built without its `http` feature",
        mask_url(url)
    )))
}

/// Reads the document strictly: serde_json alone would keep the last of two equal keys, so a
/// server written twice, or `command` twice in one entry, would silently be the second one.
fn read_document(source: &str, text: &str) -> Result<(Value, crate::json::KeyOrders)> {
    crate::json::parse_with_key_order(text).map_err(|refusal| {
        Error::Config(match refusal {
            Refusal::Syntax(message) => format!("{source}: not valid JSON: {message}"),
            Refusal::RepeatedKey(message) => format!("{source}: {message}"),
            wide @ Refusal::WideInteger { .. } => {
                format!("{source}: {wide}; a JSON reader would round it")
            }
        })
    })
}

/// The workspace a config file belongs to: the folder holding `.vscode` or `.cursor`, or
/// the file's own folder, as a real path.
///
/// The folder is found from the path as given (so a `.vscode` that is a symlink still marks
/// the workspace it sits in), then canonicalized against the current directory: for
/// `.vscode/mcp.json` the folder is the empty path, which `${workspaceFolder}` would expand
/// to nothing (`${workspaceFolder}/.env` becoming `/.env`), and any relative path would mean
/// something else in a server started in another directory.
fn workspace_of(path: &Path) -> PathBuf {
    let non_empty = |folder: &Path| !folder.as_os_str().is_empty();
    let folder = path.parent().filter(|parent| non_empty(parent));
    let workspace = match folder {
        Some(folder) => match folder.file_name().and_then(|name| name.to_str()) {
            Some(".vscode" | ".cursor") => folder.parent().filter(|parent| non_empty(parent)),
            _ => Some(folder),
        },
        None => None,
    }
    .unwrap_or(Path::new("."));
    // The config was just read from inside this folder, so it exists; should it vanish in
    // between, the absolute path is the next best thing.
    std::fs::canonicalize(workspace)
        .or_else(|_| std::path::absolute(workspace))
        .unwrap_or_else(|_| workspace.to_path_buf())
}

fn detect_format(path: Option<&Path>, document: &Value) -> ConfigFormat {
    let file = path
        .and_then(Path::file_name)
        .and_then(|name| name.to_str())
        .unwrap_or("");
    let folder = path
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .and_then(|name| name.to_str())
        .unwrap_or("");
    let has = |key: &str| document.get(key).is_some();
    if folder == ".vscode" || (has("servers") && !has("mcpServers")) {
        ConfigFormat::VsCode
    } else if folder == ".cursor" {
        ConfigFormat::Cursor
    } else if file == "claude_desktop_config.json"
        || (path.is_some()
            && !matches!(file, ".mcp.json" | ".claude.json")
            && desktop_style(document))
    {
        // A file under another name (a `servers.json` written for `toolwire serve`) that
        // uses nothing of Claude Code's: read the same either way, so named as what it is.
        ConfigFormat::ClaudeDesktop
    } else {
        // `.mcp.json` and anything else with `mcpServers`: Claude Code's rules are a superset
        // of the desktop file's (an optional `type`, `${VAR}` expansion).
        ConfigFormat::ClaudeCode
    }
}

/// Whether an `mcpServers` document is written the way Claude Desktop's file is: no entry
/// with a `type`, and no `${…}` anywhere (so Claude Code's rules would read it the same).
fn desktop_style(document: &Value) -> bool {
    let Some(servers) = document.get("mcpServers").and_then(Value::as_object) else {
        return false;
    };
    servers.values().all(|entry| {
        entry
            .as_object()
            .is_some_and(|entry| !entry.contains_key("type"))
    }) && !document.to_string().contains("${")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_desktop_style_file_under_another_name_is_named_claude_desktop() {
        let desktop =
            serde_json::json!({"mcpServers": {"files": {"command": "npx", "args": ["-y", "x"]}}});
        let named = |name: &str, document: &Value| detect_format(Some(Path::new(name)), document);
        assert_eq!(
            named("/etc/toolwire/servers.json", &desktop),
            ConfigFormat::ClaudeDesktop
        );
        assert_eq!(
            named("claude_desktop_config.json", &desktop),
            ConfigFormat::ClaudeDesktop
        );
        // Claude Code's own file, and anything using its `type` or `${VAR}`, stays Claude Code.
        assert_eq!(named("/p/.mcp.json", &desktop), ConfigFormat::ClaudeCode);
        let typed =
            serde_json::json!({"mcpServers": {"api": {"type": "http", "url": "http://h/mcp"}}});
        assert_eq!(named("servers.json", &typed), ConfigFormat::ClaudeCode);
        let expanded = serde_json::json!({"mcpServers": {"x": {"command": "${TOOL}"}}});
        assert_eq!(named("servers.json", &expanded), ConfigFormat::ClaudeCode);
        assert_eq!(detect_format(None, &desktop), ConfigFormat::ClaudeCode);
    }

    #[test]
    fn the_workspace_of_a_relative_path_is_absolute_and_real() {
        let here = std::fs::canonicalize(".").unwrap();
        assert_eq!(workspace_of(Path::new(".vscode/mcp.json")), here);
        assert_eq!(workspace_of(Path::new(".cursor/mcp.json")), here);
        assert_eq!(workspace_of(Path::new(".mcp.json")), here);
        assert_eq!(workspace_of(Path::new("./.mcp.json")), here);
        // A folder that does not exist (the file vanished after it was read) is made absolute.
        assert_eq!(
            workspace_of(Path::new("no-such-folder/.vscode/mcp.json")),
            std::path::absolute("no-such-folder").unwrap()
        );
    }
}
