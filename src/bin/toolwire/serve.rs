//! `toolwire serve`: one MCP server in front of every server of a config file, with the
//! policy enforced on every call (`toolwire::gateway`). Over stdio (the default, for a
//! host's config entry) stdout carries the protocol, so everything else goes to stderr: the
//! servers left out (each once, by the gateway's `warn` record; one that needs authorization
//! says how to log in: the gateway uses the tokens `toolwire login` stored, and never asks
//! anyone itself), the servers the policy's names do not match (kept out), what is served
//! once every server has started or been left out, and the counters per server and status
//! on exit. The host is answered from the start: a server that is slow to start joins when
//! it is ready (the host is told the tool list changed), within `--start-timeout`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use crossbeam_channel::{bounded, select, Receiver};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use toolwire::gateway::{AuthSection, Gateway, GatewayConfig, Policy};
use toolwire::server::{HttpServerConfig, StateKeys};

use crate::cli::{Cli, Protocol};
use crate::transcript::Transcript;
use crate::{Exit, Failure};

/// `serve [--policy FILE] [--stdio | --http ADDR [authorization] [TLS]] [--metrics ADDR]`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The policy file (JSON; see the docs of `toolwire::gateway::Policy`). Without it, the
    /// config file's "toolwire" section, else the default policy.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The front names of the tools and prompts: `{server}` and `{tool}` are replaced
    /// (`{tool}` serves the servers' own names; a name two servers give is served by the
    /// first in the config). Overrides the policy's "namespace"; checked as it is (it must
    /// hold {tool}, at most 64 bytes). Defaults to the policy's, else mcp__{server}__{tool}.
    #[arg(long, value_name = "TEMPLATE")]
    pub namespace: Option<String>,
    /// The pin file: each tool's definition is pinned the first time it is served, and one
    /// that changes later is held (not served) until `toolwire pins approve`. Overrides the
    /// policy's "pins". Defaults to the policy's, else none (pinning off). `serve` reads it
    /// again on SIGHUP.
    #[arg(long, value_name = "FILE")]
    pub pins: Option<PathBuf>,
    /// Serve on stdin and stdout (the default).
    #[arg(long, conflicts_with = "http")]
    pub stdio: bool,
    /// Serve Streamable HTTP at ADDR (e.g. 127.0.0.1:8931; the endpoint is /mcp).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Serve Prometheus metrics at ADDR (e.g. 127.0.0.1:9464; the endpoint is /metrics), on a
    /// listener of its own. Off by default.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// How long each server may take to start and list its tools, resources and prompts; one
    /// that has not by then is left out. The host is answered meanwhile: a server joins when
    /// it is ready. (--connect-timeout bounds each start's connection and handshake within it,
    /// and each restart's.)
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::cli::parse_duration)]
    pub start_timeout: std::time::Duration,
    /// With --http: accept JWT access tokens issued by the authorization server at URL (its
    /// keys found through its metadata). Repeat to trust several. Needs --auth-resource. The
    /// --auth-* flags override the policy's "auth" section.
    #[arg(
        long,
        value_name = "URL",
        requires = "http",
        conflicts_with = "auth_tokens"
    )]
    pub auth_issuer: Vec<String>,
    /// With --http: the resource URI clients reach this server at (e.g.
    /// https://mcp.example/mcp): tokens must name it in their audience, and the protected
    /// resource metadata is served at the path it gives.
    #[arg(long, value_name = "URL", requires = "http")]
    pub auth_resource: Option<String>,
    /// With --http: a scope every request needs (403 insufficient_scope without it).
    /// Repeatable.
    #[arg(long, value_name = "SCOPE", requires = "http")]
    pub auth_scope: Vec<String>,
    /// With --http: accept the tokens of FILE, JSON
    /// {"tokens": [{"sha256": "<hex of the token>", "subject": "…", "scopes": ["…"]}]}.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub auth_tokens: Option<PathBuf>,
    /// With --http: the issuer's tokens are opaque: check each at its introspection endpoint
    /// (RFC 7662; the one its metadata names), answers believed for up to 60 s.
    #[arg(long, requires = "http", conflicts_with = "auth_tokens")]
    pub auth_introspection: bool,
    /// With --http: the introspection endpoint, instead of the issuer metadata's (implies
    /// --auth-introspection).
    #[arg(
        long,
        value_name = "URL",
        requires = "http",
        conflicts_with = "auth_tokens"
    )]
    pub auth_introspection_endpoint: Option<String>,
    /// With --auth-introspection: this server's client id at the introspection endpoint.
    #[arg(long, value_name = "ID", requires = "http")]
    pub auth_client_id: Option<String>,
    /// With --auth-introspection: this server's client secret there (also read from
    /// TOOLWIRE_AUTH_CLIENT_SECRET, which keeps it out of the process list). Never shown.
    #[arg(long, value_name = "SECRET", requires = "http")]
    pub auth_client_secret: Option<String>,
    /// With --http: a host name clients reach this server by (its `Host` and `Origin` are
    /// accepted; loopback names always are, and so is --auth-resource's host). Repeatable.
    #[arg(long, value_name = "NAME", requires = "http")]
    pub allowed_host: Vec<String>,
    /// With --http: an origin browsers may call this server from (`Origin` compared exactly,
    /// e.g. `https://app.example:8443`), besides those of loopback and --allowed-host names.
    /// Repeatable.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub allowed_origin: Vec<String>,
    /// With --http on an address that is not loopback: serve without authorization anyway.
    #[arg(long, requires = "http", conflicts_with_all = ["auth_issuer", "auth_tokens"])]
    pub no_auth: bool,
    // TLS, and the proxies trusted to terminate it (issue #23, item 5).
    /// With --http: serve HTTPS with the certificate chain of FILE (PEM, the server's
    /// certificate first). Needs --tls-key.
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// With --http: the private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_cert"])]
    pub tls_key: Option<PathBuf>,
    /// With --http: the address of a reverse proxy that terminates TLS in front of this server
    /// (an IP address): from it only, X-Forwarded-Host, -Proto and -For are believed, and its
    /// connections have no per-address cap. Repeatable.
    #[arg(long, value_name = "ADDR", requires = "http")]
    pub trusted_proxy: Vec<std::net::IpAddr>,

    // Running several instances behind a load balancer (issue 25; docs/server.md).
    /// Sign and verify 2026-07-28 requestState tokens with the keys of FILE, shared by every
    /// instance: each line the standard base64 of at least 32 random bytes (`head -c 32
    /// /dev/urandom | base64`); the first line signs, every line verifies. Defaults to a
    /// random key per process.
    #[arg(long, value_name = "FILE")]
    pub state_key_file: Option<PathBuf>,
    /// With --http: this instance's name (1 to 32 of A-Z a-z 0-9 _ -), the prefix of the
    /// handshake-era session ids it mints (`NAME.<32 hex>`), for a load balancer's routing.
    /// Defaults to none.
    #[arg(long, value_name = "NAME", requires = "http")]
    pub instance_id: Option<String>,
    /// With --http: on SIGTERM, stop accepting and give the requests being served this long
    /// to be answered, then exit 0.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::cli::parse_duration)]
    pub drain_timeout: std::time::Duration,

    // Shared state (issue 25).
    /// The state store several instances share: redis://HOST:PORT/DB, or
    /// redis://:PASSWORD@HOST:PORT/DB (the password is never printed). Each caller's budget
    /// is then one count there, whichever instance it reaches; every store operation has a
    /// deadline of 1 s. Default: `memory` (this process alone).
    #[arg(
        long,
        value_name = "URL",
        default_value = "memory",
        hide_default_value = true
    )]
    pub state: String,
}

/// The TLS settings of the arguments, read and checked before anything is bound or started.
fn tls_settings(args: &ServeArgs, config: HttpServerConfig) -> Result<HttpServerConfig, Failure> {
    let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) else {
        return Ok(config);
    };
    let tls = toolwire::server::ServerTls::from_pem_files(cert, key)
        .map_err(|error| Failure::from_error("reading --tls-cert and --tls-key", &error))?;
    Ok(config.tls(tls))
}

/// The HTTP server's settings the arguments (over the policy's `"auth"` section) give:
/// authorization, and the refusal to listen on the network without it (before anything is
/// bound or started).
fn http_config(
    args: &ServeArgs,
    addr: SocketAddr,
    section: Option<&AuthSection>,
) -> Result<HttpServerConfig, Failure> {
    let authorization = crate::serve_auth::authorization(args, section)?;
    if authorization.is_none() && !addr.ip().is_loopback() && !args.no_auth {
        return Err(Failure::usage(format!(
            "--http {addr} is not a loopback address: anyone who reaches it could call every \
             tool. Give --auth-issuer URL --auth-resource URL (JWT access tokens) or \
             --auth-tokens FILE --auth-resource URL (static tokens), or the policy's \
             \"auth\" section, or --no-auth to serve without authorization anyway"
        )));
    }
    let mut hosts = args.allowed_host.clone();
    if let Some(authorization) = &authorization {
        hosts.extend(resource_host(authorization.resource()));
    }
    let mut config = HttpServerConfig::new()
        .addr(addr)
        .allowed_hosts(hosts)
        .allowed_origins(args.allowed_origin.iter().cloned())
        .trusted_proxies(args.trusted_proxy.iter().copied());
    config = tls_settings(args, config)?;
    if let Some(authorization) = authorization {
        // Tokens in clear from other machines are refused: on the network, a protected server
        // that neither speaks TLS nor sits behind a trusted proxy could take none.
        if !addr.ip().is_loopback() && !config.has_tls() && args.trusted_proxy.is_empty() {
            return Err(Failure::usage(format!(
                "--http {addr} is not a loopback address and its bearer tokens would cross the \
                 network in clear (they are refused from other machines): give --tls-cert FILE \
                 --tls-key FILE to serve HTTPS, or --trusted-proxy ADDR for the reverse proxy \
                 that terminates TLS in front of it"
            )));
        }
        config = config.authorization(authorization);
    }
    if let Some(instance) = &args.instance_id {
        config = config.instance_id(instance.clone());
    }
    Ok(config)
}

/// The host name of a resource URI (`https://mcp.example:8443/mcp` → `mcp.example`).
fn resource_host(resource: &str) -> Option<String> {
    let rest = resource.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    // An IPv6 literal keeps its brackets, as the Host check compares it.
    let host = match authority.find(']') {
        Some(end) if authority.starts_with('[') => &authority[..=end],
        _ => authority.split(':').next()?,
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Runs the gateway until stdin ends (stdio) or Ctrl-C.
pub fn run(
    cli: &Cli,
    args: &ServeArgs,
    transcript: Option<&Arc<Transcript>>,
    interrupts: &Receiver<()>,
) -> Result<Exit, Failure> {
    if cli.target.url.is_some() || cli.target.server.is_some() {
        return Err(Failure::usage(
            "`serve` serves every server of a config file: give --config FILE, not --url or --server",
        ));
    }
    let loaded = crate::configs::load(&cli.target, None)?;
    let (path, configs) = (loaded.path, loaded.configs);
    let policy = match &args.policy {
        Some(file) => Policy::load(file),
        None => Policy::from_config_section(&path).map(Option::unwrap_or_default),
    }
    .map_err(|error| Failure::usage(format!("bad policy: {error}")))?;
    let mut policy = match &args.namespace {
        Some(template) => policy
            .namespace(template.clone())
            .map_err(|error| Failure::usage(format!("bad --namespace: {error}")))?,
        None => policy,
    };
    if let Some(pins) = &args.pins {
        policy = policy.pins(pins.clone());
    }
    // Checked before any backend starts or any address is bound.
    let http = match args.http {
        Some(addr) => Some(http_config(args, addr, policy.auth())?),
        None => None,
    };
    if let Some(http) = &http {
        http.check()
            .map_err(|error| Failure::from_error("checking --http's settings", &error))?;
    }
    // A key file that does not read stops here; no key's text is ever shown.
    let state_keys = match &args.state_key_file {
        Some(file) => Some(
            StateKeys::from_file(file)
                .map_err(|error| Failure::from_error("reading --state-key-file", &error))?,
        ),
        None => None,
    };
    // The metrics listener follows --http's rule: on the network only with the same
    // authorization (it shares --http's settings), or with --no-auth.
    if let Some(addr) = args.metrics {
        let authorized = http
            .as_ref()
            .is_some_and(HttpServerConfig::has_authorization);
        if !addr.ip().is_loopback() && !authorized && !args.no_auth {
            return Err(Failure::usage(format!(
                "--metrics {addr} is not a loopback address: it needs the authorization of \
                 --http (--auth-issuer or --auth-tokens), or --no-auth to serve it anyway"
            )));
        }
    }
    let mut options = GatewayConfig::new()
        .start_timeout(args.start_timeout)
        .connect_timeout(cli.options.connect_timeout)
        .protocol(match cli.options.protocol {
            Protocol::Legacy => toolwire::ProtocolMode::Legacy,
            Protocol::Modern => toolwire::ProtocolMode::Modern,
            Protocol::Auto => toolwire::ProtocolMode::Auto,
        })
        // HTTP servers that need OAuth use the tokens `toolwire login` stored.
        .token_store(crate::auth::store());
    if args.metrics.is_some() {
        options = options.metrics(toolwire::metrics::Metrics::new());
    }
    if let Some(keys) = state_keys {
        options = options.state_keys(keys);
    }
    // Shared state (issue 25).
    let store = toolwire::server::open_state(&args.state)
        .map_err(|error| Failure::usage(format!("bad --state: {error}")))?;
    options = options.state_store(store);
    if let Some(http) = &http {
        options = options.http(http.clone());
    }
    if let Some(transcript) = transcript {
        let writer = IntoCliTranscript {
            transcript: Arc::clone(transcript),
            line: Mutex::new(Vec::new()),
        };
        options = options.transcript(Arc::new(toolwire::harness::Transcript::from_writer(writer)));
    }
    // SIGHUP reads the pin file again; watched from before the gateway starts.
    let hangups = crate::interrupt::hangups();
    // The servers start in the background; each left out is reported once, by the gateway.
    let gateway = Gateway::launch(&configs, policy, options)
        .map_err(|error| Failure::from_error("starting the gateway", &error))?;
    let started = gateway.clone();
    let quiet = cli.options.quiet;
    let summary = std::thread::Builder::new()
        .name("toolwire-serve-started".into())
        .spawn(move || {
            if started.wait_started() {
                print_started(&started, quiet);
            }
        })
        .map_err(|error| Failure::usage(format!("cannot start a thread: {error}")))?;
    let metrics = match args.metrics {
        Some(addr) => {
            let listener = gateway
                .serve_metrics(addr)
                .map_err(|error| Failure::from_error("serving metrics", &error))?;
            errln!("toolwire: metrics at {}", listener.url());
            Some(listener)
        }
        None => None,
    };
    // Ctrl-C comes to this function through `interrupts`, not to the session handling.
    crate::interrupt::call_active(true);
    let signals = Signals {
        interrupts,
        hangups: &hangups,
    };
    let (outcome, interrupted) = match args.http {
        Some(addr) => (
            serve_http(&gateway, addr, &signals, args.drain_timeout),
            true,
        ),
        None => serve_stdio(&gateway, &signals),
    };
    if !interrupted {
        // The host is gone, but every server's fate is still told (within --start-timeout).
        let _ = summary.join();
    }
    drop(metrics);
    gateway.close();
    errln!("toolwire: calls per server and status:");
    let table = gateway.stats_table();
    for line in table.lines() {
        errln!("  {}", crate::terminal::shown_line(line));
    }
    outcome
}

/// What is served once every server has started or been left out: the clashes, the lists
/// that could not be read, and the counts.
fn print_started(gateway: &Gateway, quiet: bool) {
    let report = gateway.report();
    for started in &report.started {
        for clash in &started.clashes {
            errln!(
                "toolwire: {} of server {} is not served: server {} (first in the config) \
                 serves it",
                crate::terminal::shown_line(&clash.key),
                crate::terminal::shown_line(&started.name),
                crate::terminal::shown_line(&clash.served_by)
            );
        }
        for unlisted in &started.unlisted {
            errln!(
                "toolwire: server {}: {}",
                crate::terminal::shown_line(&started.name),
                crate::terminal::shown_line(unlisted)
            );
        }
    }
    let count = |of: fn(&toolwire::gateway::StartedBackend) -> usize| -> usize {
        report.started.iter().map(of).sum()
    };
    let tools = count(|started| started.tools.len());
    let resources = count(|started| started.resources.len() + started.templates.len());
    let prompts = count(|started| started.prompts.len());
    if !quiet {
        errln!(
            "toolwire: serving {tools} tool(s), {resources} resource(s) and template(s) and \
             {prompts} prompt(s) of {} server(s){}",
            report.started.len(),
            if report.failed.is_empty() {
                ""
            } else {
                " (see above for the others)"
            }
        );
    }
}

/// What `serve` waits on besides its work: Ctrl-C, and SIGHUP (the pin file read again).
struct Signals<'a> {
    interrupts: &'a Receiver<()>,
    hangups: &'a Receiver<()>,
}

/// Reads the pin file again, as SIGHUP asks; the sessions stay.
fn reload(gateway: &Gateway) {
    match gateway.reload_pins() {
        Ok(true) => errln!("toolwire: SIGHUP: the pin file was read again"),
        Ok(false) => errln!("toolwire: SIGHUP: no pin file to read again (pinning is off)"),
        Err(error) => errln!(
            "toolwire: SIGHUP: the pin file cannot be read, so the pins read before stay: {}",
            crate::terminal::shown_line(&error.to_string())
        ),
    }
}

/// Serves HTTP until Ctrl-C (stops at once) or SIGTERM (drains within `drain`, then stops);
/// SIGHUP reads the pin file again meanwhile.
fn serve_http(
    gateway: &Gateway,
    addr: SocketAddr,
    signals: &Signals,
    drain: std::time::Duration,
) -> Result<Exit, Failure> {
    let terminations = crate::interrupt::terminations();
    let http = gateway
        .serve_http(addr)
        .map_err(|error| Failure::from_error(&format!("serving HTTP at {addr}"), &error))?;
    errln!("toolwire: listening on {}", http.url());
    let mut hangups = signals.hangups.clone();
    loop {
        select! {
            recv(signals.interrupts) -> _ => {
                errln!("toolwire: interrupted; stopping");
                drop(http);
                break;
            }
            recv(terminations) -> _ => {
                errln!(
                    "toolwire: SIGTERM; draining: no new connections, up to {drain:?} for the \
                     requests being served"
                );
                match http.drain(drain) {
                    Ok(0) => errln!("toolwire: drained; every request was answered"),
                    Ok(left) => errln!(
                        "toolwire: drained; {left} connection(s) still serving were closed"
                    ),
                    Err(error) => errln!("toolwire: draining: {error}"),
                }
                break;
            }
            recv(hangups) -> hangup => match hangup {
                Ok(()) => reload(gateway),
                // No SIGHUP watcher: wait for Ctrl-C or SIGTERM alone.
                Err(_) => hangups = crossbeam_channel::never(),
            },
        }
    }
    Ok(Exit::Ok)
}

/// Serves stdio until stdin ends or Ctrl-C; true with the outcome when interrupted.
fn serve_stdio(gateway: &Gateway, signals: &Signals) -> (Result<Exit, Failure>, bool) {
    let (done, ended) = bounded(1);
    let serving = gateway.clone();
    let spawned = std::thread::Builder::new()
        .name("toolwire-serve-stdio".into())
        .spawn(move || {
            let _ = done.send(serving.serve_stdio());
        });
    if let Err(error) = spawned {
        let failure = Failure::usage(format!("cannot start the stdio thread: {error}"));
        return (Err(failure), false);
    }
    let mut hangups = Some(signals.hangups);
    loop {
        let never = crossbeam_channel::never();
        select! {
            recv(ended) -> outcome => return match outcome {
                Ok(Err(error)) => (Err(Failure::from_error("serving stdio", &error)), false),
                _ => (Ok(Exit::Ok), false),
            },
            recv(signals.interrupts) -> _ => {
                errln!("toolwire: interrupted; stopping");
                return (Ok(Exit::Ok), true);
            }
            recv(hangups.unwrap_or(&never)) -> hangup => match hangup {
                Ok(()) => reload(gateway),
                Err(_) => hangups = None,
            },
        }
    }
}

/// The gateway's audit lines, written into the command's own transcript (one file, one
/// clock): each JSONL line the harness writes becomes a decision of its `event`.
struct IntoCliTranscript {
    transcript: Arc<Transcript>,
    line: Mutex<Vec<u8>>,
}

impl Write for IntoCliTranscript {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.line.lock().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let pending = std::mem::take(&mut *self.line.lock());
        for line in pending.split(|byte| *byte == b'\n') {
            if line.is_empty() {
                continue;
            }
            if let Ok(Value::Object(mut fields)) = serde_json::from_slice::<Value>(line) {
                let event = match fields.remove("event") {
                    Some(Value::String(event)) => event,
                    _ => "audit".to_owned(),
                };
                self.transcript
                    .decision(&event, Value::Object(Map::from_iter(fields)));
            }
        }
        Ok(())
    }
}
