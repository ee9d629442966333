//! `pins approve --pins FILE --server S [--tool T]`: the operator accepts the definitions the
//! gateway held (the pin file's `pending` section; see `toolwire::gateway::pins`), which
//! `serve` then serves from its next reading of the file (SIGHUP, or a new start).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::{json, Value};
use toolwire::gateway::PinFile;

use crate::cli::Cli;
use crate::{Exit, Failure};

/// `pins`: the gateway's pinned tool definitions.
#[derive(Debug, Args)]
pub struct PinsArgs {
    #[command(subcommand)]
    pub action: PinsAction,
}

/// What to do with the pin file.
#[derive(Debug, Subcommand)]
pub enum PinsAction {
    /// Approve the definitions `serve` held for the server given by --server (only --tool's,
    /// when given): each held definition (changed, or new under "new_tools": "hold") is
    /// pinned, and `serve` serves it from its next reading of the file (send it SIGHUP, or
    /// start it again). Prints what it approved.
    Approve {
        /// The pin file `serve` writes (its --pins, or the policy's "pins").
        #[arg(long, value_name = "FILE")]
        pins: PathBuf,
        /// Only this tool (the server's own name for it).
        #[arg(long, value_name = "NAME")]
        tool: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `pins`.
pub fn run(cli: &Cli, args: &PinsArgs) -> Result<Exit, Failure> {
    let PinsAction::Approve { pins, tool, json } = &args.action;
    let Some(server) = cli.target.server.as_deref() else {
        return Err(Failure::usage(
            "`pins approve` needs --server NAME: the server whose held definitions to approve",
        ));
    };
    let mut file =
        PinFile::load(pins).map_err(|error| Failure::from_error("reading the pin file", &error))?;
    let approved = file.approve(server, tool.as_deref());
    if approved.is_empty() {
        let held: Vec<String> = file
            .pending_servers()
            .flat_map(|held| {
                file.pending(held)
                    .map(move |(tool, _)| format!("{held}/{tool}"))
            })
            .collect();
        return Err(Failure::usage(format!(
            "{} holds no definition of {}{}; held: {}",
            pins.display(),
            match tool {
                Some(tool) => format!("tool {tool:?} of "),
                None => String::new(),
            },
            format_args!("server {server:?}"),
            if held.is_empty() {
                "none".to_owned()
            } else {
                held.join(", ")
            }
        )));
    }
    file.save(pins)
        .map_err(|error| Failure::from_error("writing the pin file", &error))?;
    if *json {
        let items: Vec<Value> = approved
            .iter()
            .map(|item| {
                json!({"server": server, "tool": item.tool,
                       "reason": item.pending.reason.word(), "changed": item.pending.changed,
                       "sha256": item.pending.digest.sha256,
                       "definition": item.pending.definition})
            })
            .collect();
        crate::output::emit_json(&json!({"approved": items}));
        return Ok(Exit::Ok);
    }
    for item in &approved {
        let what = match item.pending.reason {
            toolwire::gateway::pins::HeldReason::New => "new".to_owned(),
            toolwire::gateway::pins::HeldReason::Changed => {
                format!("changed: {}", item.pending.changed.join(", "))
            }
        };
        outln!(
            "approved {}/{} ({what})",
            crate::terminal::shown_line(server),
            crate::terminal::shown_line(&item.tool)
        );
        let description = item.pending.definition["description"]
            .as_str()
            .unwrap_or("");
        outln!(
            "  description: {}",
            crate::terminal::shown_line(description)
        );
    }
    outln!(
        "send SIGHUP to `toolwire serve` (or start it again) to serve {}",
        if approved.len() == 1 { "it" } else { "them" }
    );
    Ok(Exit::Ok)
}
