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
  With none of them, the hosts' places are searched, in order: .mcp.json, .cursor/mcp.json,
  .vscode/mcp.json in the current folder, then Claude Code's ~/.claude.json (this folder's
  entries, then the user's), ~/.cursor/mcp.json, VS Code's user mcp.json and Claude
  Desktop's claude_desktop_config.json; the first with servers is read (with --server, the
  first with that server). `servers` says which file it read.
  A bad or unsupported entry is skipped (`servers` marks it); the others stay usable.

Environment: a stdio server (-- COMMAND or a config entry) gets HOME, LOGNAME, PATH, SHELL,
TERM and USER, plus its own variables (--env, the entry's env and envFile); --inherit-env
gives it the whole environment instead.

Examples:
  toolwire servers
  toolwire --server github tools
  toolwire tools -- npx -y @modelcontextprotocol/server-everything
  toolwire --url http://127.0.0.1:8000/mcp call add a=2 b=3
  toolwire call sleep '{\"ms\": 2000}' --timeout 5s -- ./tool_server
  toolwire --url https://mcp.example.com/mcp login
  toolwire doctor --config ~/.cursor/mcp.json
  toolwire resources -- ./tool_server --catalog
  toolwire call trigger-sampling-request prompt=hi --sampling-command 'my-llm-cli' -- SERVER
  toolwire shell -- npx -y @modelcontextprotocol/server-everything
  toolwire completions bash > ~/.local/share/bash-completion/completions/toolwire

Authorization: an HTTP server that answers 401 is logged in to (OAuth 2.1: discovery,
registration, the browser, PKCE) when stdin is a terminal, or with `login`; tokens are kept
in toolwire/tokens.json under the user's config folder (TOOLWIRE_TOKEN_FILE to choose),
mode 0600. `info` shows whether the session is authorized, as whom and until when.

Exit codes:
  0    ok
  1    the tool returned isError
  2    usage or config error (also: an unknown tool or prompt, arguments that break its
       input schema)
  3    timeout
  4    transport or protocol failure (the server could not be started or reached, broke the
       protocol, answered with a JSON-RPC error, or lacks the capability asked for); doctor:
       a server not ready
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
    #[command(flatten)]
    pub client: ClientOptions,
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
    /// For an https:// --url: trust the certificates of FILE (PEM) instead of the built-in web
    /// roots, for a server with a private CA or a self-signed certificate.
    #[arg(long, value_name = "FILE", global = true)]
    pub ca_cert: Option<PathBuf>,
    /// An environment variable for the `-- COMMAND` server, as KEY=VALUE (repeatable).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE", global = true)]
    pub env: Vec<String>,
    /// Give a stdio server (`-- COMMAND` or a config entry) this whole environment, instead
    /// of HOME, LOGNAME, PATH, SHELL, TERM and USER plus its own variables.
    #[arg(long, global = true)]
    pub inherit_env: bool,
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
    /// How long starting or reaching the server and its handshake may take, together;
    /// stopping a stdio server that did not answer in time takes at most 4 s more.
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
    /// Which of the server's log messages to show on stderr: this level and above.
    #[arg(long, value_enum, default_value_t = ServerLog::Warning, global = true)]
    pub server_log: ServerLog,
    /// Write a JSONL transcript: one line per decision and per wire message.
    #[arg(long, value_name = "FILE", global = true)]
    pub transcript: Option<PathBuf>,
    /// No status lines or progress on stderr (errors and warnings are still shown).
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
}

/// What the command answers when the server asks the client (roots, elicitation, sampling).
#[derive(Debug, Args)]
#[command(next_help_heading = "Answering the server")]
pub struct ClientOptions {
    /// A folder the server may work in, answered to roots/list (repeatable).
    #[arg(long = "root", value_name = "DIR", global = true)]
    pub roots: Vec<PathBuf>,
    /// How to answer the server's questions for the user (elicitation): ask on the terminal
    /// (declined when there is none), accept with the defaults, or decline.
    #[arg(long, value_enum, default_value_t = Elicit::Ask, global = true)]
    pub elicit: Elicit,
    /// A command that answers the server's requests to sample a model: it gets the request
    /// JSON on stdin and prints a CreateMessageResult (or plain text, taken as the answer).
    /// Without it, sampling is declined.
    #[arg(long, value_name = "CMD", global = true)]
    pub sampling_command: Option<String>,
}

/// How elicitation is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Elicit {
    /// Ask the user on the terminal, field by field, defaults offered.
    Ask,
    /// Accept with every default the requested schema declares.
    AcceptDefaults,
    /// Decline.
    Decline,
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
    /// How to get a token: `authorization-code` (a user consents in a browser; the default)
    /// or `client-credentials` (RFC 6749 §4.4: no user, no browser, no terminal; needs
    /// --client-id and --client-secret or MCP_CLIENT_SECRET).
    #[arg(long, value_enum, value_name = "GRANT", global = true)]
    pub grant: Option<GrantKind>,
}

/// The OAuth grant `--grant` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GrantKind {
    /// Authorization code with PKCE: a user consents (the default).
    AuthorizationCode,
    /// Client credentials: the client is its own principal; no user is asked.
    ClientCredentials,
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

/// The lowest level of the server's log messages shown (MCP's syslog levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServerLog {
    Off,
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl ServerLog {
    /// The MCP level's name; `None` for `off`.
    pub fn level(self) -> Option<&'static str> {
        Some(match self {
            ServerLog::Off => return None,
            ServerLog::Debug => "debug",
            ServerLog::Info => "info",
            ServerLog::Notice => "notice",
            ServerLog::Warning => "warning",
            ServerLog::Error => "error",
            ServerLog::Critical => "critical",
            ServerLog::Alert => "alert",
            ServerLog::Emergency => "emergency",
        })
    }
}

/// An MCP log level (for `log-level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum McpLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl McpLevel {
    /// The level's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            McpLevel::Debug => "debug",
            McpLevel::Info => "info",
            McpLevel::Notice => "notice",
            McpLevel::Warning => "warning",
            McpLevel::Error => "error",
            McpLevel::Critical => "critical",
            McpLevel::Alert => "alert",
            McpLevel::Emergency => "emergency",
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
    /// List every tool (all pages), or show one tool's whole definition.
    Tools {
        /// One tool: its description, arguments, annotations and schemas in full.
        #[arg(value_name = "NAME")]
        name: Option<String>,
        /// Print the tool definitions as JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerCommand,
    },
    /// List the server's resources (all pages).
    Resources {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerCommand,
    },
    /// List the server's resource templates (all pages).
    Templates {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerCommand,
    },
    /// Read a resource and print its contents (text as text, binary as one line).
    Read {
        /// The resource's URI.
        uri: String,
        /// Print the whole result as JSON (binary contents in base64).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerCommand,
    },
    /// List the server's skills (no file read), or load one and print its verified SKILL.md.
    ///
    /// The Skills extension (SEP-2640): the listing is every page of `skills/list`. Loading
    /// reads the skill's SKILL.md alone and checks its size, sha256 digest and frontmatter
    /// against the listing before printing it; its other files are named, not read.
    Skills {
        /// One skill, by name or by the URI of its SKILL.md.
        #[arg(value_name = "NAME")]
        name: Option<String>,
        /// Print JSON (the listing's entries; with NAME, the entry and the verified SKILL.md).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerCommand,
    },
    /// List the server's prompts (all pages).
    Prompts {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerCommand,
    },
    /// Get a prompt filled in with its arguments (key=value ...) and print its messages.
    Prompt {
        /// The prompt's name.
        name: String,
        /// key=value ... (a prompt's arguments are strings)
        #[arg(value_name = "ARGS")]
        args: Vec<String>,
        /// Print the whole result as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerCommand,
    },
    /// Ask the server to complete an argument of a prompt or a resource template.
    // One of --prompt and --template, named together when neither is given.
    #[command(group(
        clap::ArgGroup::new("completed")
            .required(true)
            .args(["prompt", "template"])
    ))]
    Complete {
        /// The prompt whose argument is completed.
        #[arg(long, value_name = "NAME")]
        prompt: Option<String>,
        /// The resource template (its URI template) whose variable is completed.
        #[arg(long, value_name = "URI_TEMPLATE")]
        template: Option<String>,
        /// The argument's name.
        argument: String,
        /// What is typed so far.
        #[arg(default_value = "")]
        value: String,
        /// An argument already filled in, as key=value (repeatable): the completion's context.
        #[arg(long = "with", value_name = "KEY=VALUE")]
        with: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerCommand,
    },
    /// Set the level of the log messages the server sends (logging/setLevel).
    LogLevel {
        /// The lowest level the server should send.
        #[arg(value_enum)]
        level: McpLevel,
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
    /// Check every server of a config file: started or not (with its stderr), protocol
    /// version and era, tool count, whether it needs authorization, and with --policy
    /// whether the gateway's policy matches it. Exits 4 unless all are ready (2 when the
    /// policy names a server the config lacks).
    Doctor {
        /// How many servers are checked at once (at most 64).
        #[arg(long, default_value_t = 8, value_name = "N")]
        jobs: usize,
        /// Check a gateway policy file against the servers as `serve` would, without
        /// serving: a server it names that the config lacks, and each server's deny, allow
        /// and tools names that it does not list (with a "did you mean").
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// The front names `serve` would give (overrides the policy's "namespace"): a tool
        /// name two servers give is reported as a clash, served by the first in the config.
        /// Defaults to the policy's, else mcp__{server}__{tool}.
        #[arg(long, value_name = "TEMPLATE")]
        namespace: Option<String>,
        /// Check each server's tools against `serve`'s pin file: a tool whose definition
        /// differs from the one pinned (which `serve` would hold) makes the server
        /// `pins-changed`, naming the tool and the fields that differ. Defaults to the
        /// policy's "pins", else none.
        #[arg(long, value_name = "FILE")]
        pins: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// An interactive session: one connection, many commands (info, tools, call, ping,
    /// resources, templates, read, prompts, prompt, complete, log-level; help, history,
    /// exit), with line editing and history; Ctrl-C cancels the running call only.
    Shell {
        #[command(flatten)]
        server: ServerCommand,
    },
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Log in to an HTTP server (OAuth): discovery, registration, the browser, a token kept
    /// in the token file.
    Login,
    /// Forget the tokens kept for an HTTP server.
    Logout,
    /// Serve every server of the config file as one MCP server (stdio or HTTP), with the
    /// policy on every call.
    Serve(Box<crate::serve::ServeArgs>),
    /// The gateway's pinned tool definitions: approve what `serve` held.
    Pins(crate::pins::PinsArgs),
}

impl Command {
    /// The `-- COMMAND ARGS` of the subcommand, possibly empty.
    pub fn server_command(&self) -> &[String] {
        match self {
            Command::Servers { .. }
            | Command::Doctor { .. }
            | Command::Completions { .. }
            | Command::Login
            | Command::Logout
            | Command::Pins(_)
            | Command::Serve(_) => &[],
            Command::Info { server, .. }
            | Command::Tools { server, .. }
            | Command::Resources { server, .. }
            | Command::Templates { server, .. }
            | Command::Read { server, .. }
            | Command::Skills { server, .. }
            | Command::Prompts { server, .. }
            | Command::Prompt { server, .. }
            | Command::Complete { server, .. }
            | Command::LogLevel { server, .. }
            | Command::Shell { server }
            | Command::Call { server, .. }
            | Command::Ping { server } => &server.command,
        }
    }
}

/// The options of every command that `serve` does not use (it serves every server of a config
/// file, never logs in or asks, and takes its bounds from the policy): hidden from
/// `serve --help`, so its help shows only what applies to it.
const NOT_FOR_SERVE: [&str; 18] = [
    "server",
    "url",
    "ca_cert",
    "headers",
    "env",
    "timeout",
    "max_total",
    "server_log",
    "roots",
    "elicit",
    "sampling_command",
    "client_id",
    "client_secret",
    "scopes",
    "no_login",
    "headless",
    "no_browser",
    "grant",
];

/// The command line as clap sees it, each subcommand with only the options that apply to it
/// in its help.
pub fn command() -> clap::Command {
    let command = <Cli as clap::CommandFactory>::command();
    // A global option is copied into each subcommand when the command is built, unless the
    // subcommand has an option of that id already: `serve` gets hidden copies first.
    let hidden: Vec<clap::Arg> = command
        .get_arguments()
        .filter(|arg| NOT_FOR_SERVE.contains(&arg.get_id().as_str()))
        .map(|arg| arg.clone().global(false).hide(true))
        .collect();
    command.mut_subcommands(|subcommand| {
        if subcommand.get_name() == "serve" {
            subcommand.args(hidden.clone())
        } else {
            subcommand
        }
    })
}

/// Parses the command line ([`command`]).
pub fn parse(argv: &[String]) -> Result<Cli, clap::Error> {
    use clap::FromArgMatches;
    let matches = command().try_get_matches_from(argv)?;
    Cli::from_arg_matches(&matches).map_err(|error| error.format(&mut command()))
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
    // To the nearest nanosecond, so `2.3s` is 2.3 s exactly and is shown back as written.
    Ok(Duration::from_nanos((seconds * 1e9).round() as u64))
}

/// A bound the user set, the way [`parse_duration`] reads it: `3s`, `1.5s`, `500ms`, `2m`,
/// `1h`; never a measured `3.000213141s`.
pub fn show_bound(bound: Duration) -> String {
    const MINUTE: u128 = 60_000_000_000;
    const HOUR: u128 = 60 * MINUTE;
    let nanos = bound.as_nanos();
    let trimmed = |value: f64, unit: &str| {
        let text = format!("{value:.6}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        format!("{text}{unit}")
    };
    if nanos > 0 && nanos % HOUR == 0 {
        format!("{}h", nanos / HOUR)
    } else if nanos > 0 && nanos % MINUTE == 0 {
        format!("{}m", nanos / MINUTE)
    } else if nanos >= 1_000_000_000 {
        trimmed(bound.as_secs_f64(), "s")
    } else {
        trimmed(bound.as_secs_f64() * 1e3, "ms")
    }
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
    fn bounds_are_shown_as_written() {
        for written in [
            "3s", "30s", "1.5s", "2.3s", "90s", "500ms", "0.5ms", "2m", "1h",
        ] {
            let bound = parse_duration(written).unwrap();
            assert_eq!(show_bound(bound), written, "{bound:?}");
        }
        assert_eq!(show_bound(parse_duration("120s").unwrap()), "2m");
        assert_eq!(show_bound(parse_duration("3").unwrap()), "3s");
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        command().debug_assert();
    }

    #[test]
    fn options_hidden_from_serve_still_parse() {
        // `serve --help` itself: tests/cli/newuser.rs.
        // Still accepted where they apply, and parsed for serve as before.
        let argv = |line: &str| line.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert!(parse(&argv("toolwire --elicit decline call x")).is_ok());
        let cli = parse(&argv("toolwire serve --config s.json --protocol legacy")).unwrap();
        assert_eq!(cli.options.protocol, Protocol::Legacy);
    }
}
