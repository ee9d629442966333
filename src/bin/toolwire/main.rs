//! `toolwire`: list, call and ping any MCP server from a config file, a command or a URL.
//!
//! Built with the `cli` feature. The pieces: `cli` (the clap definition), `target` (which
//! server, and connecting to it), `call` (one tool call: checks, progress, Ctrl-C), `args`
//! (call arguments typed by the tool's schema, and the repair message), `output` (tables and
//! content), `terminal` (control characters shown, never obeyed), `progress` (bar or plain
//! lines), `interrupt` (SIGINT), `logger`, `transcript`.
#![deny(unsafe_code)]

/// `println!` to stdout through [`output::emit`], which ignores a closed pipe.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::emit(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` through [`output::emit_err`], which ignores a closed stderr.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::emit_err(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` to stdout through [`output::emit`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::emit(&format!($($arg)*))
    };
}

mod args;
mod asks;
mod auth;
mod call;
mod catalog;
#[path = "../../civil.rs"]
mod civil;
mod cli;
mod configs;
mod doctor;
mod interrupt;
mod lineedit;
mod logger;
mod output;
mod pins;
mod progress;
mod serve;
mod serve_auth;
mod serverlog;
mod shell;
mod sniff;
mod target;
mod terminal;
mod transcript;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolwire::{Error, McpClient, McpConfig};

use crate::cli::{Cli, Command, Protocol};
use crate::transcript::Transcript;

/// The process's exit codes, as documented in `--help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything worked.
    Ok = 0,
    /// The tool ran and returned `isError: true`.
    ToolError = 1,
    /// Bad usage, a bad config, or arguments that break the tool's input schema.
    Usage = 2,
    /// A request passed its deadline.
    Timeout = 3,
    /// The server could not be started or reached, broke the protocol, or answered an error.
    Transport = 4,
    /// Ctrl-C: the running call was cancelled and the server closed.
    Interrupted = 130,
}

impl Exit {
    /// The word written to the transcript.
    pub fn status(self) -> &'static str {
        match self {
            Exit::Ok => "OK",
            Exit::ToolError => "TOOL_ERROR",
            Exit::Usage => "USAGE",
            Exit::Timeout => "TIMEOUT",
            Exit::Transport => "TRANSPORT",
            Exit::Interrupted => "INTERRUPTED",
        }
    }
}

/// Why the command stopped short: an exit code and the message for stderr.
#[derive(Debug)]
pub struct Failure {
    /// The exit code.
    pub exit: Exit,
    /// What to tell the user (without the "toolwire: " prefix).
    pub message: String,
    /// The server needs a user's authorization, which `login` can obtain.
    pub login_required: bool,
}

impl Failure {
    /// A usage or config error (exit 2).
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            exit: Exit::Usage,
            message: message.into(),
            login_required: false,
        }
    }

    /// A library error met while doing `what` (e.g. "listing the tools"), with its exit code.
    pub fn from_error(what: &str, error: &Error) -> Failure {
        let exit = match error {
            Error::Timeout { .. } => Exit::Timeout,
            Error::Cancelled { .. } => Exit::Interrupted,
            Error::Config(_) => Exit::Usage,
            _ => Exit::Transport,
        };
        Failure {
            exit,
            message: format!("{what}: {error}"),
            login_required: error
                .auth()
                .is_some_and(|auth| auth.kind == toolwire::error::AuthErrorKind::LoginRequired),
        }
    }
}

/// How long a command waits, before it exits, for the server's messages sent before its last
/// answer to be shown (they are handled on the client's dispatch thread, behind the answers).
const SETTLE: Duration = Duration::from_secs(10);

/// Programs that start MCP servers, to notice one given without `--` before it.
const LAUNCHERS: [&str; 14] = [
    "npx", "uvx", "uv", "node", "python", "python3", "deno", "bun", "bunx", "docker", "pipx",
    "java", "ruby", "cargo",
];

/// The hint for a server command given without `--`: the line as it should have been.
fn missing_separator(argv: &[String]) -> Option<String> {
    if argv.iter().any(|arg| arg == "--") {
        return None;
    }
    let at = argv.iter().skip(1).position(|arg| {
        let path = std::path::Path::new(arg);
        LAUNCHERS.contains(&arg.as_str())
            || (arg.contains('/')
                && path.is_file()
                && path.extension().is_none_or(|extension| extension != "json"))
    })? + 1;
    let before = argv[1..at].join(" ");
    let after = argv[at..].join(" ");
    Some(format!(
        "hint: a stdio server's command goes after `--`: toolwire {before} -- {after}"
    ))
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let hint = missing_separator(&argv);
    let cli = match cli::parse(&argv) {
        Ok(cli) => cli,
        Err(error) => {
            let usage = error.use_stderr();
            let _ = error.print();
            if !usage {
                return ExitCode::SUCCESS;
            }
            if let Some(hint) = &hint {
                errln!("{hint}");
            }
            return ExitCode::from(Exit::Usage as u8);
        }
    };
    logger::init(cli.options.log_level.filter());
    let transcript = match &cli.options.transcript {
        Some(path) => match Transcript::create(path) {
            Ok(transcript) => Some(Arc::new(transcript)),
            Err(error) => {
                errln!(
                    "toolwire: error: cannot create the transcript {}: {error}",
                    path.display()
                );
                return ExitCode::from(Exit::Usage as u8);
            }
        },
        None => None,
    };
    let interrupts = interrupt::install(transcript.clone());
    let started = Instant::now();
    let mut outcome = run(&cli, transcript.as_ref(), &interrupts);
    if interrupt::interrupted() {
        outcome = Err(Failure {
            exit: Exit::Interrupted,
            message: "interrupted; the server was closed".into(),
            login_required: false,
        });
    }
    let exit = match outcome {
        Ok(exit) => exit,
        Err(failure) => {
            if failure.exit == Exit::Interrupted {
                errln!("toolwire: {}", failure.message);
            } else {
                errln!("toolwire: error: {}", failure.message);
            }
            if let (Exit::Usage, Some(hint)) = (failure.exit, &hint) {
                errln!("{hint}");
            }
            if let Some(transcript) = &transcript {
                transcript.decision("error", json!({"detail": failure.message}));
            }
            failure.exit
        }
    };
    asks::report_refusals();
    // Spans still queued go to the collector before the process ends (bounded).
    toolwire::telemetry::flush(toolwire::telemetry::EXIT_FLUSH);
    if let Some(transcript) = &transcript {
        transcript.decision(
            "exit",
            json!({"code": exit as u8, "status": exit.status(),
                   "duration_us": micros(started.elapsed())}),
        );
    }
    ExitCode::from(exit as u8)
}

/// Runs the command; the client, once connected, is closed on every path.
fn run(
    cli: &Cli,
    transcript: Option<&Arc<Transcript>>,
    interrupts: &crossbeam_channel::Receiver<()>,
) -> Result<Exit, Failure> {
    if let Command::Serve(args) = &cli.command {
        return serve::run(cli, args, transcript, interrupts);
    }
    if let Command::Completions { shell } = &cli.command {
        let mut command = cli::command();
        let mut out = Vec::new();
        clap_complete::generate(*shell, &mut command, "toolwire", &mut out);
        output::write_raw(&out);
        return Ok(Exit::Ok);
    }
    if let Command::Servers { json } = &cli.command {
        if cli.target.url.is_some() {
            return Err(Failure::usage(
                "`servers` lists the entries of a config file; --url names one server",
            ));
        }
        let loaded = configs::load(&cli.target, None)?;
        output::print_servers(&loaded, *json);
        return Ok(Exit::Ok);
    }
    if let Command::Doctor {
        jobs,
        json,
        policy,
        namespace,
        pins,
    } = &cli.command
    {
        let checks = doctor::Checks {
            policy: policy.as_deref(),
            namespace: namespace.as_deref(),
            pins: pins.as_deref(),
        };
        return doctor::run(cli, *jobs, *json, &checks);
    }
    if let Command::Pins(args) = &cli.command {
        return pins::run(cli, args);
    }
    let mut target = target::resolve(&cli.target, cli.command.server_command())?;
    if let target::Target::Url(http) = &mut target {
        let bound = http.get_connect_timeout().min(cli.options.connect_timeout);
        *http = http.clone().connect_timeout(bound);
    }
    let plan = auth::plan(&target);
    match (&cli.command, &plan) {
        (Command::Login, Some(plan)) => {
            return match auth::login(plan, &cli.auth, false) {
                Ok(_) => Ok(Exit::Ok),
                // A server that answers without asking for authorization has nothing to log
                // in to: its discovery or registration endpoints are simply absent (404).
                Err(failure) if answers_without_login(cli, &target) => {
                    errln!(
                        "toolwire: {} needs no login: it answers without authorization, so \
                         there is nothing to log in to and no token was kept (the attempt \
                         ended with: {})",
                        target.describe(),
                        failure.message
                    );
                    Ok(Exit::Ok)
                }
                Err(failure) => Err(failure),
            };
        }
        (Command::Logout, Some(plan)) => {
            let removed = auth::logout(plan, &cli.auth)?;
            errln!(
                "toolwire: logged out of {}: {removed} token(s) forgotten",
                target.describe()
            );
            return Ok(Exit::Ok);
        }
        (Command::Login | Command::Logout, None) => {
            return Err(Failure::usage(format!(
                "{} is not an HTTP server that toolwire authorizes (login and logout are for \
                 --url or a config file's HTTP entry without its own Authorization header)",
                target.describe()
            )))
        }
        _ => {}
    }
    let asks = asks::Asks::new(
        &cli.client.roots,
        cli.client.elicit,
        cli.client.sampling_command.clone(),
        cli.options.timeout,
    )?;
    // A server that needs a user's consent gets it once, when someone is there to give it.
    let mut logged_in = false;
    loop {
        let provider = match &plan {
            Some(plan) => Some(auth::provider(plan, &cli.auth, false)?),
            None => None,
        };
        let outcome = match target::connect(
            &target,
            mcp_config(cli, &asks),
            transcript,
            provider.clone(),
        ) {
            Ok(client) => {
                serverlog::ask_stateless(&client, cli.options.server_log);
                interrupt::hold_client(Some(client.clone()));
                let outcome = if let Command::Shell { .. } = &cli.command {
                    shell::run(cli, &client, transcript, interrupts, provider.as_deref())
                } else {
                    run_connected(
                        cli,
                        &cli.command,
                        &client,
                        transcript,
                        interrupts,
                        provider.as_deref(),
                    )
                };
                interrupt::hold_client(None);
                // The server's log lines sent before its last answer are shown before exiting.
                client.settle(SETTLE);
                if let Err(error) = client.close() {
                    log::debug!("closing the session: {error}");
                }
                outcome
            }
            Err(failure) => Err(failure),
        };
        match (outcome, &plan) {
            (Err(failure), Some(plan))
                if failure.login_required && !logged_in && auth::may_prompt(&cli.auth) =>
            {
                errln!(
                    "toolwire: {} needs authorization; logging in",
                    target.describe()
                );
                auth::login(plan, &cli.auth, cli.options.quiet)?;
                logged_in = true;
            }
            (Err(mut failure), _) if failure.login_required => {
                failure.message.push_str(
                    " (log in with `toolwire login` and the same target, or run this from a terminal)",
                );
                return Err(failure);
            }
            (outcome, _) => return outcome,
        }
    }
}

/// Runs one command on a connected session (the command line's, or one typed in `shell`).
fn run_connected(
    cli: &Cli,
    command: &Command,
    client: &McpClient,
    transcript: Option<&Arc<Transcript>>,
    interrupts: &crossbeam_channel::Receiver<()>,
    oauth: Option<&toolwire::auth::OAuth>,
) -> Result<Exit, Failure> {
    if let Some(outcome) = catalog::run(command, client) {
        return outcome;
    }
    match command {
        Command::Servers { .. }
        | Command::Doctor { .. }
        | Command::Login
        | Command::Logout
        | Command::Shell { .. }
        | Command::Completions { .. }
        | Command::Pins(_)
        | Command::Serve(_) => {
            unreachable!("handled before connecting")
        }
        Command::Resources { .. }
        | Command::Templates { .. }
        | Command::Read { .. }
        | Command::Skills { .. }
        | Command::Prompts { .. }
        | Command::Prompt { .. }
        | Command::Complete { .. }
        | Command::LogLevel { .. } => unreachable!("run by catalog::run"),
        Command::Info { json, .. } => {
            let info = client
                .session_info()
                .map_err(|error| Failure::from_error("reading the session", &error))?;
            let status = oauth.map(toolwire::auth::OAuth::status);
            output::print_info(&info, *json, status.as_ref());
            Ok(Exit::Ok)
        }
        Command::Tools { json, .. } => {
            let tools = client
                .list_tools()
                .map_err(|error| Failure::from_error("listing the tools", &error))?;
            output::print_tools(&tools, *json);
            if !*json && !cli.options.quiet {
                if let Some(note) = output::capability_note(&tools) {
                    errln!("{note}");
                }
            }
            Ok(Exit::Ok)
        }
        Command::Ping { .. } => {
            let started = Instant::now();
            client
                .ping()
                .map_err(|error| Failure::from_error("ping", &error))?;
            let elapsed = started.elapsed();
            let server = client
                .session_info()
                .map(|info| info.server.name)
                .unwrap_or_default();
            outln!("pong from {server} in {}", output::duration(elapsed));
            Ok(Exit::Ok)
        }
        Command::Call {
            tool, args, json, ..
        } => {
            let mode = if cli.options.quiet {
                progress::Mode::Quiet
            } else if std::io::stderr().is_terminal() {
                progress::Mode::Bar
            } else {
                progress::Mode::Lines
            };
            let request = call::CallRequest {
                tool,
                raw_args: args,
                json: *json,
                timeout: cli.options.timeout,
                max_total: cli.options.max_total.max(cli.options.timeout),
                mode,
            };
            call::run(client, &request, transcript, interrupts)
        }
    }
}

/// The MCP settings from the options: protocol mode and timeouts.
/// Whether the target opens a session with no authorization at all (within
/// `--connect-timeout`), asking nobody anything.
fn answers_without_login(cli: &Cli, target: &target::Target) -> bool {
    let Ok(asks) = asks::Asks::new(&[], cli::Elicit::Decline, None, cli.options.timeout) else {
        return false;
    };
    match target::connect(target, mcp_config(cli, &asks), None, None) {
        Ok(client) => {
            if let Err(error) = client.close() {
                log::debug!("closing the probe session: {error}");
            }
            true
        }
        Err(_) => false,
    }
}

fn mcp_config(cli: &Cli, asks: &asks::Asks) -> McpConfig {
    let timeout = cli.options.timeout;
    let mut config = McpConfig::default().mode(match cli.options.protocol {
        Protocol::Legacy => toolwire::ProtocolMode::Legacy,
        Protocol::Modern => toolwire::ProtocolMode::Modern,
        Protocol::Auto => toolwire::ProtocolMode::Auto,
    });
    config = config.rpc(
        toolwire::ClientConfig::default()
            .request_timeout(timeout)
            .max_total_timeout(cli.options.max_total.max(timeout) + call::BACKSTOP),
    );
    // A server may take a while to start (node, python): the lifecycle has its own bound.
    let connect = cli.options.connect_timeout;
    // One budget for start, probe and handshake together: Auto mode cannot spend it twice.
    config = config.connect_timeout(connect).initialize_timeout(connect);
    let probe = connect.min(config.get_discover_timeout());
    let server_log = cli.options.server_log;
    asks.install(config)
        .discover_timeout(probe)
        .on_log(move |message| serverlog::show(message, server_log))
}

/// A duration in whole microseconds, for the transcript.
pub fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}
