//! `doctor`: every server of a config file started (or reached) in parallel, at most
//! `--jobs` at a time, each within `--connect-timeout` for its start and handshake and
//! `--timeout` for its tool list; per server, whether it started (with the error and its
//! stderr tail, secrets masked, when not), its protocol version and era, its tool count, and
//! whether it needs authorization. It never asks anyone: no login, elicitation declined.
//! With `--policy FILE`, the gateway's policy is checked as `serve` checks it, without
//! serving: a server it names that the config lacks (exit 2), and each ready server's
//! listing against its `deny`, `allow` and `tools` names (a server they do not match is
//! `policy-mismatch`: `serve` would keep it out). With `--pins FILE` (else the policy's
//! `"pins"`), each ready server's
//! tools are checked against `serve`'s pin file: one whose definition differs from the one
//! pinned (which `serve` would hold) makes the server `pins-changed`, naming the tool and the
//! fields. A tool name two servers give under the namespace (`--namespace`, else the
//! policy's) is reported as a clash, served by the first in the config. The exit code is 0
//! only when every server is ready.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolwire::config::ServerEntry;
use toolwire::gateway::pins::{ToolDigest, Verdict};
use toolwire::gateway::{NewTools, PinFile, Policy};

use crate::asks::Asks;
use crate::cli::{Cli, Elicit};
use crate::output::{duration, emit_json, render_table};
use crate::target::Target;
use crate::{auth, configs, mcp_config, target, Exit, Failure};

/// The most servers `--jobs` may check at once.
pub const MAX_JOBS: usize = 64;

/// How one server fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    /// Started, answered the handshake and listed its tools.
    Ready,
    /// Reached, but it needs a user's authorization (`toolwire login`).
    NeedsAuth,
    /// Could not be started, reached or listed.
    Failed,
    /// Its config entry is bad or unsupported.
    Skipped,
    /// Ready, but the policy's names do not match what it lists: `serve` keeps it out.
    PolicyMismatch,
    /// Ready, but a tool's definition differs from the one pinned: `serve` holds it.
    PinsChanged,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Ready => "ready",
            Status::NeedsAuth => "needs-auth",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
            Status::PolicyMismatch => "policy-mismatch",
            Status::PinsChanged => "pins-changed",
        }
    }
}

/// One server's report.
struct Report {
    name: String,
    transport: &'static str,
    status: Status,
    protocol: Option<String>,
    era: Option<&'static str>,
    server: Option<String>,
    tools: Option<usize>,
    authorization: &'static str,
    detail: Option<String>,
    took: Duration,
    /// The tools it listed, when it is ready.
    listing: Vec<toolwire::Tool>,
}

/// What `doctor` checks besides the servers themselves.
pub struct Checks<'a> {
    /// The gateway's policy file.
    pub policy: Option<&'a std::path::Path>,
    /// The namespace `serve --namespace` would use.
    pub namespace: Option<&'a str>,
    /// `serve`'s pin file.
    pub pins: Option<&'a std::path::Path>,
}

/// Runs `doctor`, checking the policy in `policy` too when given.
pub fn run(cli: &Cli, jobs: usize, json_out: bool, checks: &Checks) -> Result<Exit, Failure> {
    if cli.target.url.is_some() || cli.target.server.is_some() {
        return Err(Failure::usage(
            "doctor checks every server of a config file: give --config FILE (or none, to \
             search the hosts' places), not --url or --server",
        ));
    }
    let loaded = configs::load(&cli.target, None)?;
    let policy = checks
        .policy
        .map(Policy::load)
        .transpose()
        .map_err(|error| Failure::usage(format!("bad policy: {error}")))?;
    let namer = match checks.namespace {
        Some(template) => policy
            .clone()
            .unwrap_or_default()
            .namespace(template)
            .map_err(|error| Failure::usage(format!("bad --namespace: {error}")))?,
        None => policy.clone().unwrap_or_default(),
    };
    // `--pins`, else the policy's "pins", as `serve` takes them.
    let pin_path = checks
        .pins
        .or_else(|| policy.as_ref().and_then(Policy::pin_file));
    let pins = pin_path
        .map(PinFile::load)
        .transpose()
        .map_err(|error| Failure::usage(format!("bad pin file: {error}")))?;
    // A server the policy names that the config lacks: `serve` would not start.
    let unknown = policy
        .as_ref()
        .and_then(|policy| policy.check_servers(&loaded.configs).err())
        .map(|error| error.to_string());
    let asks = Asks::new(&[], Elicit::Decline, None, cli.options.timeout)?;
    let names: Vec<String> = loaded.configs.names().map(str::to_owned).collect();
    let jobs = jobs.clamp(1, MAX_JOBS).min(names.len().max(1));
    let (work_tx, work_rx) = crossbeam_channel::unbounded::<String>();
    for name in &names {
        let _ = work_tx.send(name.clone());
    }
    drop(work_tx);
    let (done_tx, done_rx) = crossbeam_channel::unbounded::<Report>();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let work = work_rx.clone();
            let done = done_tx.clone();
            let loaded = &loaded;
            let asks = &asks;
            let policy = policy.as_ref();
            scope.spawn(move || {
                for name in work.iter() {
                    let _ = done.send(check(cli, loaded, &name, asks, policy));
                }
            });
        }
    });
    drop(done_tx);
    let mut reports: Vec<Report> = done_rx.iter().collect();
    for (name, reason) in loaded.configs.rejected() {
        reports.push(Report {
            name: name.to_owned(),
            transport: "-",
            status: Status::Skipped,
            protocol: None,
            era: None,
            server: None,
            tools: None,
            authorization: "-",
            detail: Some(reason.to_owned()),
            took: Duration::ZERO,
            listing: Vec::new(),
        });
    }
    if let Some(pins) = &pins {
        for report in &mut reports {
            check_pins(report, pins, &namer);
        }
    }
    let file_order: Vec<String> = loaded
        .configs
        .names_in_file_order()
        .map(str::to_owned)
        .collect();
    let clashes = clashes(&file_order, &reports, &namer);
    reports.sort_by(|a, b| a.name.cmp(&b.name));
    let bad = reports
        .iter()
        .filter(|report| report.status != Status::Ready)
        .count();
    if json_out {
        print_json(&loaded, &reports, unknown.as_deref(), &clashes);
    } else {
        print_text(&loaded, &reports, bad, unknown.as_deref());
        if !clashes.is_empty() {
            outln!("\nclashes (each name is served by the first server in the config):");
            for clash in &clashes {
                outln!(
                    "  {}: listed by {}, served by {}",
                    crate::terminal::shown_line(clash["name"].as_str().unwrap_or_default()),
                    crate::terminal::shown_line(clash["server"].as_str().unwrap_or_default()),
                    crate::terminal::shown_line(clash["served_by"].as_str().unwrap_or_default())
                );
            }
        }
    }
    Ok(if unknown.is_some() {
        Exit::Usage
    } else if bad == 0 {
        Exit::Ok
    } else {
        Exit::Transport
    })
}

/// Starts one server, lists its tools (and its prompts, to check `policy`'s names), closes
/// it.
fn check(
    cli: &Cli,
    loaded: &configs::Loaded,
    name: &str,
    asks: &Asks,
    policy: Option<&Policy>,
) -> Report {
    let started = Instant::now();
    let entry = loaded.configs.get(name);
    let transport = entry.map_or("-", ServerEntry::transport);
    let mut report = Report {
        name: name.to_owned(),
        transport,
        status: Status::Failed,
        protocol: None,
        era: None,
        server: None,
        tools: None,
        authorization: "-",
        detail: None,
        took: Duration::ZERO,
        listing: Vec::new(),
    };
    let target = Target::Config {
        path: loaded.path.clone(),
        configs: loaded.configs.clone(),
        server: name.to_owned(),
        inherit_env: cli.target.inherit_env,
    };
    let mut provider = None;
    if let Some(plan) = auth::plan(&target) {
        match auth::provider(&plan, &cli.auth, false) {
            Ok(oauth) => provider = Some(oauth),
            Err(failure) => {
                report.detail = Some(failure.message);
                report.took = started.elapsed();
                return report;
            }
        }
    }
    let outcome = target::connect(&target, mcp_config(cli, asks), None, provider.clone()).and_then(
        |client| {
            let info = client.session_info().ok();
            let tools = client
                .list_tools()
                .map_err(|error| Failure::from_error("listing the tools", &error));
            let mismatch = match (policy, &tools) {
                (Some(policy), Ok(tools)) => {
                    // As the gateway judges it: a prompt list that cannot be read is empty.
                    let prompts = info
                        .as_ref()
                        .filter(|info| info.has_capability("prompts"))
                        .and_then(|_| client.list_prompts().ok())
                        .unwrap_or_default();
                    let tools: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
                    let prompts: Vec<&str> =
                        prompts.iter().map(|prompt| prompt.name.as_str()).collect();
                    policy.check_listing(name, &tools, &prompts).err()
                }
                _ => None,
            };
            if let Err(error) = client.close() {
                log::debug!("closing `{name}`: {error}");
            }
            tools.map(|tools| (info, tools, mismatch))
        },
    );
    match outcome {
        Ok((info, tools, mismatch)) => {
            report.status = Status::Ready;
            if let Some(mismatch) = mismatch {
                report.status = Status::PolicyMismatch;
                report.detail = Some(format!(
                    "{mismatch}\n`serve` keeps it out until the policy's names match"
                ));
            }
            report.tools = Some(tools.len());
            report.listing = tools.to_vec();
            if let Some(info) = info {
                report.protocol = Some(info.protocol_version);
                report.era = Some(crate::output::era_word(info.era));
                report.server = Some(format!("{} {}", info.server.name, info.server.version));
            }
            // Only a server that answered says whether it needed authorization: one that
            // could not be reached keeps `-`.
            if let Some(oauth) = &provider {
                report.authorization = if oauth.status().authorized {
                    "authorized"
                } else {
                    "not needed"
                };
            }
        }
        Err(failure) if failure.login_required => {
            report.status = Status::NeedsAuth;
            report.authorization = "needed";
            report.detail = Some(format!(
                "needs authorization: log in with `toolwire --config {} --server {name} login`",
                loaded.path.display()
            ));
        }
        Err(failure) => report.detail = Some(failure.message),
    }
    report.took = started.elapsed();
    report
}

fn print_text(loaded: &configs::Loaded, reports: &[Report], bad: usize, unknown: Option<&str>) {
    outln!(
        "{} ({} format, {} server{})",
        loaded.describe(),
        loaded.configs.format(),
        reports.len(),
        if reports.len() == 1 { "" } else { "s" }
    );
    let dash = || "-".to_owned();
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|report| {
            vec![
                report.name.clone(),
                report.transport.to_owned(),
                report.status.word().to_owned(),
                report.protocol.clone().unwrap_or_else(dash),
                report.era.map_or_else(dash, str::to_owned),
                report.tools.map_or_else(dash, |tools| tools.to_string()),
                report.authorization.to_owned(),
                if report.status == Status::Skipped {
                    dash()
                } else {
                    duration(report.took)
                },
            ]
        })
        .collect();
    out!(
        "{}",
        render_table(
            &[
                "NAME",
                "TRANSPORT",
                "STATUS",
                "PROTOCOL",
                "ERA",
                "TOOLS",
                "AUTH",
                "TIME"
            ],
            &rows
        )
    );
    for report in reports {
        if let Some(detail) = &report.detail {
            outln!("\n{} ({}):", report.name, report.status.word());
            for line in detail.lines() {
                outln!("  {line}");
            }
        }
    }
    if let Some(unknown) = unknown {
        outln!("\npolicy:\n  {unknown}");
    }
    if bad == 0 {
        outln!("\nall {} servers ready", reports.len());
    } else {
        outln!("\n{bad} of {} servers not ready", reports.len());
    }
}

/// Marks a ready server `pins-changed` when a tool's definition differs from the one pinned
/// (or, under `"new_tools": "hold"`, when no pin names it).
fn check_pins(report: &mut Report, pins: &PinFile, policy: &Policy) {
    if report.status != Status::Ready {
        return;
    }
    let mut lines = Vec::new();
    for tool in &report.listing {
        let Ok((digest, _)) = ToolDigest::of(tool) else {
            continue;
        };
        match pins.check(&report.name, &tool.name, &digest) {
            Verdict::Changed(fields) => lines.push(format!(
                "tool {:?} changed since it was pinned: {} differ{}",
                tool.name,
                fields.join(", "),
                if fields.len() == 1 { "s" } else { "" }
            )),
            Verdict::New if policy.new_tools_choice() == NewTools::Hold => {
                lines.push(format!("tool {:?} is new (no pin names it)", tool.name));
            }
            Verdict::New | Verdict::Pinned => {}
        }
    }
    if !lines.is_empty() {
        report.status = Status::PinsChanged;
        lines.push(format!(
            "`serve` holds {} until `toolwire pins approve --pins FILE --server {}`",
            if lines.len() == 1 { "it" } else { "them" },
            report.name
        ));
        report.detail = Some(lines.join("\n"));
    }
}

/// The front tool names two ready servers give, in the config file's order: the first serves it.
fn clashes(order: &[String], reports: &[Report], policy: &Policy) -> Vec<Value> {
    let mut owners: std::collections::BTreeMap<String, &str> = Default::default();
    let mut found = Vec::new();
    for name in order {
        let Some(report) = reports.iter().find(|report| &report.name == name) else {
            continue;
        };
        for tool in &report.listing {
            let front = policy.front_name(name, &tool.name);
            match owners.get(&front) {
                Some(first) if first != name => found.push(json!({
                    "name": front, "server": name, "served_by": first})),
                Some(_) => {}
                None => {
                    owners.insert(front, name);
                }
            }
        }
    }
    found
}

fn print_json(
    loaded: &configs::Loaded,
    reports: &[Report],
    unknown: Option<&str>,
    clashes: &[Value],
) {
    let servers: Vec<Value> = reports
        .iter()
        .map(|report| {
            json!({"name": report.name, "transport": report.transport,
                   "status": report.status.word(), "server": report.server,
                   "protocolVersion": report.protocol, "era": report.era,
                   "tools": report.tools, "authorization": report.authorization,
                   "detail": report.detail,
                   "duration_us": crate::micros(report.took)})
        })
        .collect();
    let mut answer = json!({"file": loaded.path.display().to_string(),
                            "format": loaded.configs.format().to_string(),
                            "servers": servers, "clashes": clashes});
    if let Some(unknown) = unknown {
        answer["policy"] = json!({"error": unknown});
    }
    emit_json(&answer);
}
