//! Server lists from the config files users already have, routed to a transport: a
//! `command` starts a stdio server, a `url` speaks Streamable HTTP.
//!
//! | format | file | key | variables |
//! |---|---|---|---|
//! | [`ConfigFormat::ClaudeDesktop`] | `claude_desktop_config.json` | `mcpServers` | none: values are literal |
//! | [`ConfigFormat::Cursor`] | `.cursor/mcp.json` | `mcpServers` | `${env:NAME}`, `${userHome}`, `${workspaceFolder}`, `${pathSeparator}` |
//! | [`ConfigFormat::ClaudeCode`] | `.mcp.json` | `mcpServers`, optional `type` | `${VAR}`, `${VAR:-default}` |
//! | [`ConfigFormat::VsCode`] | `.vscode/mcp.json` | `servers`, required `type`, `envFile` | `${env:NAME}`, `${input:id}`, `${workspaceFolder}`, `${userHome}`, `${pathSeparator}` |
//!
//! Variables are expanded in `command`, `args`, `env`, `cwd`, `envFile`, `url` and
//! `headers`. `${input:id}` (VS Code asks the user) is an error unless the value is supplied
//! with [`LoadOptions::input`]. An entry of type `sse` (the legacy HTTP+SSE transport) is an
//! error: it is not supported yet. A bad entry is an error naming the file, the server and
//! the field; a field this reader does not know is ignored with a `log` warning.
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
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::mcp::{Connector, McpClient, McpConfig};
use crate::transport::stdio::{StdioConfig, StdioTransport};
use crate::transport::Transport;

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

/// One server of a config file, routed to its transport.
#[derive(Debug, Clone)]
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
}

/// How to read a config file: its format, where variables come from.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LoadOptions {
    /// The format; detected from the file name and content when not given.
    pub format: Option<ConfigFormat>,
    /// Variables that take precedence over the process environment in expansions.
    pub vars: HashMap<String, String>,
    /// Read variables from the process environment too (after `vars`). Defaults to true.
    pub process_env: bool,
    /// Values for VS Code's `${input:id}`.
    pub inputs: HashMap<String, String>,
    /// `${workspaceFolder}`, and the base of relative `envFile` paths. Defaults to the folder
    /// holding `.vscode` / `.cursor`, or else the file's folder.
    pub workspace_folder: Option<PathBuf>,
}

impl LoadOptions {
    /// Detected format, the process environment, no inputs.
    pub fn new() -> LoadOptions {
        LoadOptions {
            process_env: true,
            ..LoadOptions::default()
        }
    }

    /// Sets the format instead of detecting it.
    pub fn format(mut self, format: ConfigFormat) -> Self {
        self.format = Some(format);
        self
    }

    /// Sets a variable for expansions, ahead of the process environment.
    pub fn var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// Whether the process environment is consulted (after [`LoadOptions::var`]s).
    pub fn process_env(mut self, use_it: bool) -> Self {
        self.process_env = use_it;
        self
    }

    /// Supplies the value of VS Code's `${input:id}`.
    pub fn input(mut self, id: impl Into<String>, value: impl Into<String>) -> Self {
        self.inputs.insert(id.into(), value.into());
        self
    }

    /// Sets `${workspaceFolder}`.
    pub fn workspace_folder(mut self, folder: impl Into<PathBuf>) -> Self {
        self.workspace_folder = Some(folder.into());
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
}

impl ServerConfigs {
    /// Reads a config file, detecting its format.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be read, [`Error::Config`] naming the server and field of
    /// the first bad entry.
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
        let text = std::fs::read_to_string(path).map_err(|error| {
            Error::Io(std::io::Error::new(
                error.kind(),
                format!("cannot read {}: {error}", path.display()),
            ))
        })?;
        if options.workspace_folder.is_none() {
            options.workspace_folder = Some(workspace_of(path));
        }
        let document: Value = serde_json::from_str(&text).map_err(|error| {
            Error::Config(format!("{}: not valid JSON: {error}", path.display()))
        })?;
        let format = options
            .format
            .unwrap_or_else(|| detect_format(Some(path), &document));
        ServerConfigs::read(path.display().to_string(), format, &document, &options)
    }

    /// Reads config text in a given format (relative paths resolve against
    /// [`LoadOptions::workspace_folder`] or the current directory).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for JSON that does not parse or a bad entry.
    pub fn parse(text: &str, options: &LoadOptions) -> Result<ServerConfigs> {
        let document: Value = serde_json::from_str(text)
            .map_err(|error| Error::Config(format!("config text: not valid JSON: {error}")))?;
        let format = options
            .format
            .unwrap_or_else(|| detect_format(None, &document));
        ServerConfigs::read("config text".into(), format, &document, options)
    }

    fn read(
        source: String,
        format: ConfigFormat,
        document: &Value,
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
        let servers = match object.get(key) {
            None => Map::new(),
            Some(Value::Object(servers)) => servers.clone(),
            Some(_) => {
                return Err(Error::Config(format!(
                    "{source}: `{key}` must be an object of servers"
                )))
            }
        };
        let mut entries = BTreeMap::new();
        for (name, entry) in &servers {
            let reader = EntryReader {
                source: &source,
                name,
                format,
                options,
            };
            entries.insert(name.clone(), reader.read(entry)?);
        }
        Ok(ServerConfigs {
            source,
            format,
            servers: entries,
        })
    }

    /// The format the file was read as.
    pub fn format(&self) -> ConfigFormat {
        self.format
    }

    /// The server names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// One server's entry.
    pub fn get(&self, name: &str) -> Option<&ServerEntry> {
        self.servers.get(name)
    }

    fn entry(&self, name: &str) -> Result<&ServerEntry> {
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
    /// session, so an [`McpConfig::restart`] policy can use it.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for an unknown name, or an HTTP server without the `http` feature.
    pub fn connector(&self, name: &str) -> Result<Connector> {
        match self.entry(name)? {
            ServerEntry::Stdio(stdio) => {
                let stdio = stdio.clone();
                Ok(Box::new(move || {
                    Ok(Arc::new(StdioTransport::spawn(stdio.clone())?) as Arc<dyn Transport>)
                }))
            }
            ServerEntry::Http { url, headers } => http_connector(url, headers),
        }
    }

    /// Connects to the server: starts it (stdio) or opens a session (HTTP), and runs the
    /// MCP lifecycle.
    ///
    /// # Errors
    ///
    /// As [`ServerConfigs::connector`] and [`McpClient::connect_with`].
    pub fn connect(&self, name: &str, config: McpConfig) -> Result<McpClient> {
        McpClient::connect_with(self.connector(name)?, config)
    }
}

#[cfg(feature = "http")]
fn http_connector(url: &str, headers: &[(String, String)]) -> Result<Connector> {
    let mut config = crate::transport::http::HttpConfig::new(url);
    config.headers = headers.to_vec();
    // Check the URL and headers now, not at the first connection.
    crate::transport::http::HttpTransport::new(config.clone())?;
    Ok(config.connector())
}

#[cfg(not(feature = "http"))]
fn http_connector(url: &str, _headers: &[(String, String)]) -> Result<Connector> {
    Err(Error::Config(format!(
        "`{url}` is an HTTP server: toolwire was built without its `http` feature"
    )))
}

/// The workspace a config file belongs to: the folder holding `.vscode` or `.cursor`, or
/// the file's own folder.
fn workspace_of(path: &Path) -> PathBuf {
    let folder = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match folder.file_name().and_then(|name| name.to_str()) {
        Some(".vscode" | ".cursor") => folder.parent().unwrap_or(Path::new(".")).to_path_buf(),
        _ => folder.to_path_buf(),
    }
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
    } else if file == "claude_desktop_config.json" {
        ConfigFormat::ClaudeDesktop
    } else {
        // `.mcp.json` and anything else with `mcpServers`: Claude Code's rules are a superset
        // of the desktop file's (an optional `type`, `${VAR}` expansion).
        ConfigFormat::ClaudeCode
    }
}

/// Reads one server entry, naming the server and field in every error.
struct EntryReader<'a> {
    source: &'a str,
    name: &'a str,
    format: ConfigFormat,
    options: &'a LoadOptions,
}

/// The fields each format defines; others are ignored with a warning.
const KNOWN_FIELDS: &[&str] = &[
    "type", "command", "args", "env", "cwd", "url", "headers", "envFile",
];

impl EntryReader<'_> {
    fn error(&self, field: &str, problem: impl fmt::Display) -> Error {
        Error::Config(format!(
            "{}: server `{}`, field `{field}`: {problem}",
            self.source, self.name
        ))
    }

    fn read(&self, entry: &Value) -> Result<ServerEntry> {
        let Some(object) = entry.as_object() else {
            let key = match self.format {
                ConfigFormat::VsCode => "servers",
                _ => "mcpServers",
            };
            return Err(self.error(
                &format!("{key}.{}", self.name),
                "the entry must be an object with `command` or `url`",
            ));
        };
        for key in object.keys() {
            let known = KNOWN_FIELDS.contains(&key.as_str())
                && (key != "envFile" || self.format == ConfigFormat::VsCode);
            if !known {
                log::warn!(
                    "toolwire: {}: server `{}`: ignoring the field `{key}`, which this reader does not know",
                    self.source,
                    self.name
                );
            }
        }
        let kind = match object.get("type") {
            None if self.format == ConfigFormat::VsCode => {
                return Err(self.error(
                    "type",
                    "missing: VS Code's mcp.json needs \"stdio\" or \"http\"",
                ))
            }
            None => None,
            Some(Value::String(kind)) => Some(kind.as_str()),
            Some(_) => return Err(self.error("type", "must be a string")),
        };
        let has_command = object.contains_key("command");
        let has_url = object.contains_key("url");
        match kind {
            Some("sse") => Err(self.error(
                "type",
                "\"sse\" is the legacy HTTP+SSE transport, which is not supported yet; \
                 use the server's Streamable HTTP endpoint with type \"http\"",
            )),
            Some("stdio") => self.stdio(object),
            Some("http" | "streamable-http" | "streamableHttp") => self.http(object),
            Some(other) => Err(self.error(
                "type",
                format!("{other:?} is not one of \"stdio\", \"http\", \"sse\""),
            )),
            None if has_command && has_url => Err(self.error(
                "command",
                "both `command` and `url` are set: one entry is either a stdio or an HTTP server",
            )),
            None if has_command => self.stdio(object),
            None if has_url => self.http(object),
            None => Err(self.error(
                "command",
                "missing: an entry needs `command` (stdio) or `url` (HTTP)",
            )),
        }
    }

    fn stdio(&self, object: &Map<String, Value>) -> Result<ServerEntry> {
        if object.contains_key("url") {
            return Err(self.error("url", "a stdio server has no `url`"));
        }
        let command = match object.get("command") {
            Some(Value::String(command)) if command.trim().is_empty() => {
                return Err(self.error("command", "must not be empty"))
            }
            Some(Value::String(command)) => {
                let expanded = self.expand(command, "command")?;
                // Checked again once expanded: `${VAR:-}` or an unset `${env:VAR}` can leave
                // nothing to run.
                if expanded.trim().is_empty() {
                    return Err(self.error(
                        "command",
                        format!("{command:?} expands to an empty command"),
                    ));
                }
                expanded
            }
            Some(_) => return Err(self.error("command", "must be a string")),
            None => return Err(self.error("command", "missing: a stdio server needs one")),
        };
        let mut config = StdioConfig::new(command);
        match object.get("args") {
            None | Some(Value::Null) => {}
            Some(Value::Array(args)) => {
                for (index, arg) in args.iter().enumerate() {
                    let field = format!("args[{index}]");
                    let Some(arg) = arg.as_str() else {
                        return Err(self.error(&field, "must be a string"));
                    };
                    config.args.push(OsString::from(self.expand(arg, &field)?));
                }
            }
            Some(_) => return Err(self.error("args", "must be an array of strings")),
        }
        if let Some(file) = object.get("envFile") {
            if self.format == ConfigFormat::VsCode {
                let Some(file) = file.as_str() else {
                    return Err(self.error("envFile", "must be a string"));
                };
                for (key, value) in self.env_file(&self.expand(file, "envFile")?)? {
                    config.env.insert(key.into(), value.into());
                }
            }
        }
        for (key, value) in self.string_map(object, "env")? {
            config.env.insert(key.into(), value.into());
        }
        match object.get("cwd") {
            None | Some(Value::Null) => {}
            Some(Value::String(cwd)) => {
                let cwd = PathBuf::from(self.expand(cwd, "cwd")?);
                config.cwd = Some(self.resolve(cwd));
            }
            Some(_) => return Err(self.error("cwd", "must be a string")),
        }
        if object.contains_key("headers") {
            return Err(self.error("headers", "a stdio server has no `headers`"));
        }
        Ok(ServerEntry::Stdio(config))
    }

    fn http(&self, object: &Map<String, Value>) -> Result<ServerEntry> {
        if object.contains_key("command") {
            return Err(self.error("command", "an HTTP server has no `command`"));
        }
        let url = match object.get("url") {
            Some(Value::String(url)) => self.expand(url, "url")?,
            Some(_) => return Err(self.error("url", "must be a string")),
            None => return Err(self.error("url", "missing: an HTTP server needs one")),
        };
        let lower = url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(self.error("url", format!("{url:?} is not an http:// or https:// URL")));
        }
        let headers = self.string_map(object, "headers")?;
        for field in ["args", "env", "envFile", "cwd"] {
            if object.contains_key(field) {
                log::warn!(
                    "toolwire: {}: server `{}`: `{field}` means nothing for an HTTP server; ignored",
                    self.source,
                    self.name
                );
            }
        }
        Ok(ServerEntry::Http { url, headers })
    }

    /// An object of strings (`env`, `headers`), expanded, in order.
    fn string_map(
        &self,
        object: &Map<String, Value>,
        field: &str,
    ) -> Result<Vec<(String, String)>> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(key, value)| {
                    let path = format!("{field}.{key}");
                    match value {
                        Value::String(text) => Ok((key.clone(), self.expand(text, &path)?)),
                        _ => Err(self.error(&path, "must be a string")),
                    }
                })
                .collect(),
            Some(_) => Err(self.error(field, "must be an object of strings")),
        }
    }

    fn resolve(&self, path: PathBuf) -> PathBuf {
        match (&self.options.workspace_folder, path.is_relative()) {
            (Some(base), true) => base.join(path),
            _ => path,
        }
    }

    /// Reads a dotenv file: `KEY=VALUE` lines, `#` comments, an optional `export `, quotes
    /// around the value removed.
    fn env_file(&self, file: &str) -> Result<Vec<(String, String)>> {
        let path = self.resolve(PathBuf::from(file));
        let text = std::fs::read_to_string(&path).map_err(|error| {
            self.error(
                "envFile",
                format!("cannot read {}: {error}", path.display()),
            )
        })?;
        let mut pairs = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let Some((key, value)) = line.split_once('=') else {
                return Err(self.error(
                    "envFile",
                    format!("{} line {}: expected KEY=VALUE", path.display(), number + 1),
                ));
            };
            let value = value.trim();
            let value = ['"', '\'']
                .iter()
                .find_map(|quote| {
                    value
                        .strip_prefix(*quote)
                        .and_then(|rest| rest.strip_suffix(*quote))
                })
                .unwrap_or(value);
            pairs.push((key.trim().to_owned(), value.to_owned()));
        }
        Ok(pairs)
    }

    /// Expands the format's variables in one value.
    fn expand(&self, text: &str, field: &str) -> Result<String> {
        if self.format == ConfigFormat::ClaudeDesktop || !text.contains("${") {
            return Ok(text.to_owned());
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                // No closing brace: not a variable.
                out.push_str(&rest[start..]);
                return Ok(out);
            };
            let body = &after[..end];
            out.push_str(&self.variable(body, field)?);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn variable(&self, body: &str, field: &str) -> Result<String> {
        let options = self.options;
        if self.format == ConfigFormat::ClaudeCode {
            let (name, default) = match body.split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (body, None),
            };
            if !is_var_name(name) {
                return Err(self.error(field, format!("`${{{body}}}` is not a variable reference")));
            }
            return match (options.lookup(name), default) {
                (Some(value), Some(default)) if value.is_empty() => Ok(default.to_owned()),
                (Some(value), _) => Ok(value),
                (None, Some(default)) => Ok(default.to_owned()),
                (None, None) => Err(self.error(
                    field,
                    format!("`${{{name}}}` is not set and has no default (write `${{{name}:-default}}`)"),
                )),
            };
        }
        // Cursor and VS Code: editor variables.
        if let Some(name) = body.strip_prefix("env:") {
            // An unset variable is empty, as the editors do it.
            return Ok(options.lookup(name).unwrap_or_default());
        }
        if let Some(id) = body.strip_prefix("input:") {
            return options.inputs.get(id).cloned().ok_or_else(|| {
                self.error(
                    field,
                    format!(
                        "`${{input:{id}}}` asks the editor to prompt for a value, which is not \
                         supported here; supply it with LoadOptions::input({id:?}, …)"
                    ),
                )
            });
        }
        match body {
            "workspaceFolder" => options
                .workspace_folder
                .as_ref()
                .map(|folder| folder.display().to_string())
                .ok_or_else(|| self.error(field, "`${workspaceFolder}` is not known here")),
            "userHome" => options
                .lookup("HOME")
                .ok_or_else(|| self.error(field, "`${userHome}`: HOME is not set")),
            "pathSeparator" | "/" => Ok(std::path::MAIN_SEPARATOR.to_string()),
            other => Err(self.error(
                field,
                format!(
                    "`${{{other}}}` is a {} variable that is not supported here",
                    self.format
                ),
            )),
        }
    }
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
