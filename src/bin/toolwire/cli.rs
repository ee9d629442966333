//! The command line, as clap sees it.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

const ABOUT: &str = "List, call and ping any MCP server: from a config file, a URL or a command.";

const AFTER_HELP: &str = "\
Targets (one of):
  --config FILE --server NAME   a server of a config file (Claude Desktop, Claude Code's
                                .mcp.json, Cursor, VS Code's .vscode/mcp.json); --server may be
                                left out when the file has one server
  --url URL [--header 'K: V']   a Streamable HTTP endpoint
  -- COMMAND [ARGS...]          a stdio server started with that command (after the subcommand)
  With none of them, .mcp.json and then .vscode/mcp.json in the current folder are read.

Examples:
  toolwire servers
  toolwire --server github tools
  toolwire tools -- npx -y @modelcontextprotocol/server-everything
  toolwire --url http://127.0.0.1:8000/mcp call add a=2 b=3
  toolwire call sleep '{\"ms\": 2000}' --timeout 5s -- ./tool_server
  toolwire --url https://mcp.example.com/mcp login

Authorization: an HTTP server that answers 401 is logged in to (OAuth 2.1: discovery,
registration, the browser, PKCE) when stdin is a terminal, or with `login`; tokens are kept
in toolwire/tokens.json under the user's config folder (TOOLWIRE_TOKEN_FILE to choose),
mode 0600. `info` shows whether the session is authorized, as whom and until when.

Exit codes:
  0    ok
  1    the tool returned isError
  2    usage or config error (also: an unknown tool, arguments that break its input schema)
  3    timeout
  4    transport or protocol failure (the server could not be started or reached, broke the
       protocol, or answered with a JSON-RPC error)
  130  interrupted by Ctrl-C (a running call is cancelled and the server closed)";

/// `toolwire [OPTIONS] <COMMAND> [-- SERVER COMMAND...]`
#[derive(Debug, Parser)]
#[command(name = "toolwire", version, about = ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub target: TargetOptions,
    #[command(flatten)]
    pub options: Options,
    #[command(flatten)]
    pub auth: AuthOptions,
    #[command(subcommand)]
    pub command: Command,
}

/// Which server to talk to.
#[derive(Debug, Args)]
#[command(next_help_heading = "Target")]
pub struct TargetOptions {
    /// A config file (any of the supported formats).
    #[arg(long, short = 'c', value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// The server's name in the config file.
    #[arg(long, short = 's', value_name = "NAME", global = true)]
    pub server: Option<String>,
    /// A Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp.
    #[arg(long, value_name = "URL", global = true)]
    pub url: Option<String>,
    /// A header for --url, as 'Name: value' (repeatable).
    #[arg(long = "header", short = 'H', value_name = "K:V", global = true)]
    pub headers: Vec<String>,
    /// An environment variable for the `-- COMMAND` server, as KEY=VALUE (repeatable).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE", global = true)]
    pub env: Vec<String>,
    /// A value for VS Code's `${input:ID}` in the config file, as ID=VALUE (repeatable).
    #[arg(long = "input", value_name = "ID=VALUE", global = true)]
    pub inputs: Vec<String>,
}

/// Options for every command.
#[derive(Debug, Args)]
#[command(next_help_heading = "Settings")]
pub struct Options {
    /// How long each request may wait for its answer once connected (e.g. 30s, 500ms, 2m);
    /// progress reports restart it during a call.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration, global = true)]
    pub timeout: Duration,
    /// How long starting or reaching the server and its handshake may take.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, global = true)]
    pub connect_timeout: Duration,
    /// The longest a call may run in all while progress keeps restarting --timeout.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration, global = true)]
    pub max_total: Duration,
    /// Which MCP lifecycle to use.
    #[arg(long, value_enum, default_value_t = Protocol::Auto, global = true)]
    pub protocol: Protocol,
    /// What to log on stderr.
    #[arg(long, value_enum, default_value_t = LogLevel::Warn, global = true)]
    pub log_level: LogLevel,
    /// Write a JSONL transcript: one line per decision and per wire message.
    #[arg(long, value_name = "FILE", global = true)]
    pub transcript: Option<PathBuf>,
    /// No status lines or progress on stderr (errors and warnings are still shown).
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
}

/// Authorization (OAuth) for HTTP servers.
#[derive(Debug, Args, Default)]
#[command(next_help_heading = "Authorization")]
pub struct AuthOptions {
    /// A pre-registered OAuth client id (instead of registering one).
    #[arg(long, value_name = "ID", global = true)]
    pub client_id: Option<String>,
    /// The client's secret (also read from MCP_CLIENT_SECRET, which keeps it out of the
    /// process list).
    #[arg(long, value_name = "SECRET", global = true)]
    pub client_secret: Option<String>,
    /// A scope to ask for instead of the server's (repeatable, or space-separated).
    #[arg(long = "scope", value_name = "SCOPE", global = true)]
    pub scopes: Vec<String>,
    /// Never log in by itself when a server needs authorization (`login` still does).
    #[arg(long, global = true)]
    pub no_login: bool,
    /// Log in without a browser on this machine: print the address, then read the address
    /// the browser was sent to (or the code) from stdin.
    #[arg(long, global = true)]
    pub headless: bool,
    /// Do not open a browser when logging in; the address is printed either way.
    #[arg(long, global = true)]
    pub no_browser: bool,
}

/// The MCP lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Protocol {
    /// The `initialize` handshake only (2024-11-05 … 2025-11-25).
    Legacy,
    /// 2026-07-28 only (`server/discover`).
    Modern,
    /// Try `server/discover`, fall back to `initialize`.
    Auto,
}

/// The stderr log level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    Off,
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    /// As a `log` filter.
    pub fn filter(self) -> log::LevelFilter {
        match self {
            LogLevel::Off => log::LevelFilter::Off,
            LogLevel::Error => log::LevelFilter::Error,
            LogLevel::Warn => log::LevelFilter::Warn,
            LogLevel::Info => log::LevelFilter::Info,
            LogLevel::Debug => log::LevelFilter::Debug,
            LogLevel::Trace => log::LevelFilter::Trace,
        }
    }
}

/// The stdio server command, after `--`.
#[derive(Debug, Args)]
pub struct ServerCommand {
    /// The stdio server to start, after `--`: COMMAND [ARGS...].
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the servers of a config file.
    Servers {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show the server, the negotiated protocol version and era, and its capabilities.
    Info {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerCommand,
    },
    /// List every tool (all pages).
    Tools {
        /// Print the tool definitions as JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerCommand,
    },
    /// Call a tool and print its result.
    ///
    /// Arguments are one JSON object, or key=value pairs typed by the tool's input schema
    /// (key:=JSON passes a raw JSON value); `-` reads a JSON object from stdin. They are
    /// checked against the schema before anything is sent. Progress is drawn on stderr: a bar
    /// on a terminal, `progress N/TOTAL message` lines otherwise. Ctrl-C cancels the call.
    Call {
        /// The tool's name.
        tool: String,
        /// '{"k": v}' | key=value ... | key:=JSON ... | -
        #[arg(value_name = "ARGS")]
        args: Vec<String>,
        /// Print the whole result as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerCommand,
    },
    /// Send a ping and show how long the answer took.
    Ping {
        #[command(flatten)]
        server: ServerCommand,
    },
    /// Log in to an HTTP server (OAuth): discovery, registration, the browser, a token kept
    /// in the token file.
    Login,
    /// Forget the tokens kept for an HTTP server.
    Logout,
    /// Serve every server of the config file as one MCP server (stdio or HTTP), with the
    /// policy on every call.
    Serve(crate::serve::ServeArgs),
}

impl Command {
    /// The `-- COMMAND ARGS` of the subcommand, possibly empty.
    pub fn server_command(&self) -> &[String] {
        match self {
            Command::Servers { .. } | Command::Login | Command::Logout | Command::Serve(_) => &[],
            Command::Info { server, .. }
            | Command::Tools { server, .. }
            | Command::Call { server, .. }
            | Command::Ping { server } => &server.command,
        }
    }
}

/// Reads `30s`, `500ms`, `2m`, `1h`, `1.5s`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 30s, 500ms, 2m)"))?;
    let seconds = match unit.trim() {
        "" | "s" | "sec" | "secs" => value,
        "ms" => value / 1000.0,
        "us" | "µs" => value / 1_000_000.0,
        "m" | "min" | "mins" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "{other:?} is not a duration unit (use ms, s, m or h)"
            ))
        }
    };
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 7.0 * 24.0 * 3600.0) {
        return Err(format!(
            "{text:?} is out of range (more than zero, at most a week)"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
