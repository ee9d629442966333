//! Which server to talk to (a config entry, a URL, a command) and connecting to it.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use toolwire::config::ServerEntry;
use toolwire::transport::{
    mask_url, Connector, HttpTransport, LegacySseTransport, StdioTransport, Transport,
};
use toolwire::{HttpConfig, McpClient, McpConfig, ServerConfigs, StdioConfig};

use crate::cli::TargetOptions;
use crate::transcript::{Tapped, Transcript};
use crate::Failure;

/// A server to connect to.
pub enum Target {
    /// An entry of a config file.
    Config {
        path: PathBuf,
        configs: ServerConfigs,
        server: String,
        /// `--inherit-env`: a stdio entry gets the whole environment.
        inherit_env: bool,
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
    if options.ca_cert.is_some() && options.url.is_none() {
        return Err(Failure::usage("--ca-cert applies to an https:// --url"));
    }
    if !options.env.is_empty() && command.is_empty() {
        return Err(Failure::usage(
            "--env applies to a server started with -- COMMAND (a config file's entry has its \
             own `env`)",
        ));
    }
    if let Some((program, args)) = command.split_first() {
        // The same environment policy as a config entry's: the child gets HOME, LOGNAME,
        // PATH, SHELL, TERM and USER, plus `--env`; `--inherit-env` gives it everything.
        let mut stdio = StdioConfig::new(program)
            .args(args)
            .inherit_env(options.inherit_env);
        for pair in &options.env {
            let (key, value) = split_pair(pair, '=')
                .ok_or_else(|| Failure::usage(format!("--env {pair:?}: expected KEY=VALUE")))?;
            stdio = stdio.env(key, value);
        }
        return Ok(Target::Command(stdio));
    }
    if let Some(url) = &options.url {
        if !url.contains("://") && !url.starts_with("unix:") {
            // `127.0.0.1:3911/mcp`: said here, before the authorization's URL checks see it.
            return Err(Failure::usage(format!(
                "--url `{}` has no scheme: did you mean {}? (a URL starts with http://, \
                 https://, ws://, wss://, tcp:// or unix:)",
                crate::terminal::shown_line(&mask_url(url)),
                crate::terminal::shown_line(&mask_url(&format!("http://{url}")))
            )));
        }
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
        if let Some(file) = &options.ca_cert {
            http = http.root_certificates_pem(read_ca_cert(file)?);
        }
        return Ok(Target::Url(http));
    }
    let loaded = crate::configs::load(options, options.server.as_deref())?;
    let file = loaded.describe();
    let configs = loaded.configs;
    let names: Vec<&str> = configs.names().collect();
    let rejected = |name: &str| {
        configs
            .rejected()
            .find(|(bad, _)| *bad == name)
            .map(|(_, reason)| reason.to_owned())
    };
    let server = match &options.server {
        Some(name) if configs.get(name).is_some() => name.clone(),
        Some(name) => {
            if let Some(reason) = rejected(name) {
                return Err(Failure::usage(format!(
                    "the server `{name}` of {file} cannot be used (it was skipped): {reason}"
                )));
            }
            return Err(Failure::usage(format!(
                "{file} has no server named `{name}` (it has: {})",
                list_or_none(&names)
            )));
        }
        None if names.len() == 1 => {
            for (bad, reason) in configs.rejected() {
                log::warn!("skipped the server `{bad}`: {reason}");
            }
            names[0].to_owned()
        }
        None if names.is_empty() => {
            let reasons: Vec<String> = configs
                .rejected()
                .map(|(_, reason)| format!("\n  {reason}"))
                .collect();
            return Err(Failure::usage(format!(
                "{file} has no usable server{}",
                if reasons.is_empty() {
                    String::new()
                } else {
                    format!(" (every entry was skipped):{}", reasons.concat())
                }
            )));
        }
        None => {
            return Err(Failure::usage(format!(
                "{file} has {} servers ({}): choose one with --server NAME",
                names.len(),
                list_or_none(&names)
            )))
        }
    };
    let path = loaded.path;
    Ok(Target::Config {
        path,
        configs,
        server,
        inherit_env: options.inherit_env,
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
pub fn split_pair(text: &str, separator: char) -> Option<(String, String)> {
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
            configs,
            server,
            inherit_env,
            ..
        } => match configs.get(server) {
            // A stdio entry follows the command's environment policy (see `resolve`).
            Some(ServerEntry::Stdio(stdio)) => {
                let stdio = stdio.clone().inherit_env(*inherit_env);
                Box::new(move || {
                    Ok(Arc::new(StdioTransport::spawn(stdio.clone())?) as Arc<dyn Transport>)
                })
            }
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
    // A stdio program is watched for lines that are not JSON-RPC, to tell a program that is
    // not an MCP server from a server that failed.
    let program = match target {
        Target::Command(stdio) => Some(stdio.command_line()),
        Target::Config {
            configs, server, ..
        } => match configs.get(server) {
            Some(ServerEntry::Stdio(stdio)) => Some(stdio.command_line()),
            _ => None,
        },
        _ => None,
    };
    let record = crate::sniff::Record::default();
    let connector = match &program {
        Some(_) => crate::sniff::wrap(connector, Arc::clone(&record)),
        None => connector,
    };
    let client = McpClient::connect_with(connector, config).map_err(|error| {
        let mut failure = Failure::from_error(&format!("connecting to {describe}"), &error);
        if let toolwire::Error::Timeout { method, after } = &error {
            // The whole --connect-timeout ran out: `after` is that bound, shown as written.
            failure.message = format!(
                "connecting to {describe}: `{method}` timed out after {}",
                crate::cli::show_bound(*after)
            );
        }
        if let Some(program) = &program {
            let printed = record.lock().lines > 0;
            let unknown = matches!(&error, toolwire::Error::Rpc(object) if object.code.0 == -32601);
            let silent = matches!(error, toolwire::Error::Timeout { .. });
            if printed || unknown || silent {
                failure.message.push('\n');
                failure
                    .message
                    .push_str(&crate::sniff::describe(&record, program, silent));
            }
        }
        failure
    })?;
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

/// The PEM of `--ca-cert FILE` (at most 1 MiB); whether it holds a certificate is checked
/// with the rest of the HTTP settings.
fn read_ca_cert(file: &std::path::Path) -> Result<Vec<u8>, Failure> {
    use std::io::Read;
    let shown = file.display();
    let mut pem = Vec::new();
    std::fs::File::open(file)
        .and_then(|opened| opened.take(1024 * 1024 + 1).read_to_end(&mut pem))
        .map_err(|error| Failure::usage(format!("--ca-cert {shown}: {error}")))?;
    if pem.len() > 1024 * 1024 {
        return Err(Failure::usage(format!(
            "--ca-cert {shown}: larger than 1 MiB"
        )));
    }
    Ok(pem)
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
