//! Which server to talk to (a config entry, a URL, a command) and connecting to it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use toolwire::config::{LoadOptions, ServerEntry};
use toolwire::transport::{
    mask_url, Connector, HttpTransport, LegacySseTransport, StdioTransport, Transport,
};
use toolwire::{HttpConfig, McpClient, McpConfig, ServerConfigs, StdioConfig};

use crate::cli::TargetOptions;
use crate::transcript::{Tapped, Transcript};
use crate::Failure;

/// The config files looked for in the current folder when `--config` is not given, in order.
pub const DEFAULT_CONFIGS: [&str; 2] = [".mcp.json", ".vscode/mcp.json"];

/// A server to connect to.
pub enum Target {
    /// An entry of a config file.
    Config {
        path: PathBuf,
        configs: ServerConfigs,
        server: String,
    },
    /// A Streamable HTTP endpoint.
    Url(HttpConfig),
    /// A `--url` of another transport: `ws://`/`wss://`, `tcp://host:port`, `unix:/path`.
    Plain(ServerEntry, String),
    /// A stdio server started from the command line.
    Command(StdioConfig),
}

impl Target {
    /// A short description for messages.
    pub fn describe(&self) -> String {
        match self {
            Target::Config { path, server, .. } => {
                format!("server `{server}` of {}", path.display())
            }
            // The URL's password is a secret: messages and the transcript show it masked.
            Target::Url(http) => mask_url(http.url()),
            Target::Plain(_, url) => mask_url(url),
            Target::Command(stdio) => stdio.command_line(),
        }
    }
}

/// The config file to read: `--config`, or the first of [`DEFAULT_CONFIGS`] that exists.
pub fn config_path(options: &TargetOptions) -> Result<PathBuf, Failure> {
    if let Some(path) = &options.config {
        return Ok(path.clone());
    }
    DEFAULT_CONFIGS
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
        .ok_or_else(|| {
            Failure::usage(
                "no server given: use --config FILE --server NAME, --url URL, or -- COMMAND \
                 [ARGS...] (there is no .mcp.json or .vscode/mcp.json in the current folder)",
            )
        })
}

/// Reads the config file named by the options (or found in the current folder).
pub fn load_config(options: &TargetOptions) -> Result<(PathBuf, ServerConfigs), Failure> {
    if options.url.is_some() {
        return Err(Failure::usage(
            "`servers` lists the entries of a config file; --url names one server",
        ));
    }
    let path = config_path(options)?;
    let mut load = LoadOptions::new();
    for input in &options.inputs {
        // An input is often a password: a malformed one is not echoed.
        let (id, value) = split_pair(input, '=').ok_or_else(|| {
            Failure::usage("--input: expected ID=VALUE (an ID, then `=`, then the value)")
        })?;
        load = load.input(id, value);
    }
    let configs = ServerConfigs::load_with(&path, load)
        .map_err(|error| Failure::usage(config_error(&path, &error)))?;
    Ok((path, configs))
}

/// A config error's text without the library's "invalid configuration: " lead (the message
/// already names the file, the server and the field).
fn config_error(path: &Path, error: &toolwire::Error) -> String {
    match error {
        toolwire::Error::Config(text) => format!("bad config: {text}"),
        other => format!("cannot use the config {}: {other}", path.display()),
    }
}

/// Works out the one target the options name.
pub fn resolve(options: &TargetOptions, command: &[String]) -> Result<Target, Failure> {
    let from_config = options.config.is_some() || options.server.is_some();
    let named = [from_config, options.url.is_some(), !command.is_empty()]
        .iter()
        .filter(|named| **named)
        .count();
    if named > 1 {
        return Err(Failure::usage(
            "give one server: --config/--server, --url, or -- COMMAND, not several",
        ));
    }
    if !options.headers.is_empty() && options.url.is_none() {
        return Err(Failure::usage(
            "--header applies to --url (a config file's entry has its own `headers`)",
        ));
    }
    if !options.env.is_empty() && command.is_empty() {
        return Err(Failure::usage(
            "--env applies to a server started with -- COMMAND (a config file's entry has its \
             own `env`)",
        ));
    }
    if let Some((program, args)) = command.split_first() {
        let mut stdio = StdioConfig::new(program).args(args);
        // A command typed by hand runs as it would in the user's shell.
        stdio = stdio.inherit_env(true);
        for pair in &options.env {
            let (key, value) = split_pair(pair, '=')
                .ok_or_else(|| Failure::usage(format!("--env {pair:?}: expected KEY=VALUE")))?;
            stdio = stdio.env(key, value);
        }
        return Ok(Target::Command(stdio));
    }
    if let Some(url) = &options.url {
        let entry = ServerEntry::from_url(url);
        if !matches!(entry, ServerEntry::Http { .. }) {
            let entry = match entry {
                ServerEntry::WebSocket { url, .. } => {
                    let mut headers = Vec::new();
                    for header in &options.headers {
                        let (name, value) = split_pair(header, ':').ok_or_else(|| {
                            Failure::usage(
                                "--header: expected 'Name: value' (a name, then `:`, then the value)",
                            )
                        })?;
                        headers.push((name, value));
                    }
                    ServerEntry::WebSocket { url, headers }
                }
                other if !options.headers.is_empty() => {
                    return Err(Failure::usage(format!(
                        "--header applies to HTTP and WebSocket URLs, not to a {} URL",
                        other.transport()
                    )))
                }
                other => other,
            };
            return Ok(Target::Plain(entry, url.clone()));
        }
        let mut http = cli_http(url);
        for header in &options.headers {
            // A header's value is often a token: a malformed one is not echoed.
            let (name, value) = split_pair(header, ':').ok_or_else(|| {
                Failure::usage(
                    "--header: expected 'Name: value' (a name, then `:`, then the value)",
                )
            })?;
            http = http.header(name, value);
        }
        return Ok(Target::Url(http));
    }
    let (path, configs) = load_config(options)?;
    let names: Vec<&str> = configs.names().collect();
    let server = match &options.server {
        Some(name) if configs.get(name).is_some() => name.clone(),
        Some(name) => {
            return Err(Failure::usage(format!(
                "{} has no server named `{name}` (it has: {})",
                path.display(),
                list_or_none(&names)
            )))
        }
        None if names.len() == 1 => names[0].to_owned(),
        None => {
            return Err(Failure::usage(format!(
                "{} has {} servers ({}): choose one with --server NAME",
                path.display(),
                names.len(),
                list_or_none(&names)
            )))
        }
    };
    Ok(Target::Config {
        path,
        configs,
        server,
    })
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// `KEY<sep>VALUE` with a non-empty key; both sides trimmed for headers.
fn split_pair(text: &str, separator: char) -> Option<(String, String)> {
    let (key, value) = text.split_once(separator)?;
    let key = key.trim();
    if key.is_empty() {
        return None;
    }
    let value = if separator == ':' {
        value.trim()
    } else {
        value
    };
    Some((key.to_owned(), value.to_owned()))
}

/// Starts or reaches the server and runs the MCP lifecycle. With a transcript, every frame
/// in and out is written to it.
pub fn connect(
    target: &Target,
    config: McpConfig,
    transcript: Option<&Arc<Transcript>>,
    oauth: Option<Arc<toolwire::auth::OAuth>>,
) -> Result<McpClient, Failure> {
    let with_auth = |http: HttpConfig| match &oauth {
        Some(oauth) => http.auth(Arc::clone(oauth) as Arc<dyn toolwire::transport::HttpAuth>),
        None => http,
    };
    let describe = target.describe();
    let connector: Connector = match target {
        Target::Config {
            configs, server, ..
        } => match configs.get(server) {
            // An HTTP entry gets the command's close bounds, like `--url`.
            Some(ServerEntry::Http { url, headers, .. }) => {
                let mut http = with_auth(cli_http(url));
                for (name, value) in headers {
                    http = http.header(name.clone(), value.clone());
                }
                HttpTransport::new(http.clone()).map_err(|error| {
                    Failure::from_error(&format!("connecting to {describe}"), &error)
                })?;
                http.connector()
            }
            // The legacy HTTP+SSE transport, with the same close bounds.
            Some(ServerEntry::Sse { url, headers }) => {
                let mut http = cli_http(url);
                for (name, value) in headers {
                    http = http.header(name.clone(), value.clone());
                }
                LegacySseTransport::new(http.clone()).map_err(|error| {
                    Failure::from_error(&format!("connecting to {describe}"), &error)
                })?;
                http.legacy_sse_connector()
            }
            _ => configs.connector(server).map_err(|error| {
                Failure::from_error(&format!("connecting to {describe}"), &error)
            })?,
        },
        Target::Url(http) => {
            // Checks the URL and headers before anything is sent.
            HttpTransport::new(http.clone())
                .map_err(|error| Failure::from_error(&format!("--url {describe}"), &error))?;
            with_auth(http.clone()).connector()
        }
        Target::Plain(entry, _) => entry
            .connector()
            .map_err(|error| Failure::from_error(&format!("--url {describe}"), &error))?,
        Target::Command(stdio) => {
            let stdio = stdio.clone();
            Box::new(move || {
                Ok(Arc::new(StdioTransport::spawn(stdio.clone())?) as Arc<dyn Transport>)
            })
        }
    };
    let connector = match transcript {
        Some(transcript) => {
            let kind = match target {
                Target::Config {
                    configs, server, ..
                } => configs.get(server).map_or("stdio", ServerEntry::transport),
                Target::Url(_) => "http",
                Target::Plain(entry, _) => entry.transport(),
                Target::Command(_) => "stdio",
            };
            transcript.decision(
                "connect",
                json!({"target": describe, "transport": kind, "mode": format!("{:?}", config.get_mode())}),
            );
            Tapped::wrap(connector, Arc::clone(transcript))
        }
        None => connector,
    };
    let client = McpClient::connect_with(connector, config)
        .map_err(|error| Failure::from_error(&format!("connecting to {describe}"), &error))?;
    if let Ok(info) = client.session_info() {
        log::info!(
            "connected to {} {} with protocol {} ({})",
            info.server.name,
            info.server.version,
            info.protocol_version,
            info.era
        );
        if let Some(transcript) = transcript {
            transcript.decision(
                "connected",
                json!({"server": info.server.name, "version": info.server.version,
                       "protocol_version": info.protocol_version,
                       "era": crate::output::era_word(info.era)}),
            );
        }
    }
    Ok(client)
}

/// The HTTP settings of the command: the library's, with a short close. A command that is
/// ending (a timeout, Ctrl-C, its work done) does not wait the library's 2 s for a server that
/// is slow to answer the session's DELETE, nor 1 s for threads still inside a slow exchange.
pub fn cli_http(url: &str) -> HttpConfig {
    HttpConfig::new(url)
        .close_timeout(CLOSE_TIMEOUT)
        .thread_join_grace(CLOSE_JOIN_GRACE)
}

/// How long the command's close waits for the server to answer DELETE.
pub const CLOSE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(300);
/// How long the command's close waits for the HTTP threads.
pub const CLOSE_JOIN_GRACE: std::time::Duration = std::time::Duration::from_millis(200);
