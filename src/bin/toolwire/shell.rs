//! `shell`: one connection, many commands. Each line is split like a shell's words and read
//! as one of the session commands (`info`, `tools`, `call`, `ping`, `resources`, `templates`,
//! `read`, `skills`, `prompts`, `prompt`, `complete`, `log-level`), with the command line's
//! options;
//! `help`, `history` and `exit` are the shell's own. Ctrl-C during a call cancels that call
//! (the server is told) and the session goes on; at the prompt it clears the line; Ctrl-D or
//! `exit` ends the session.

use std::sync::Arc;

use clap::Parser;
use crossbeam_channel::Receiver;
use toolwire::McpClient;

use crate::cli::{Cli, Command};
use crate::lineedit::{split, Editor, Line};
use crate::transcript::Transcript;
use crate::{asks, interrupt, Exit, Failure};

/// One line of the shell, as clap reads it.
#[derive(Debug, Parser)]
#[command(
    name = "",
    no_binary_name = true,
    disable_version_flag = true,
    override_usage = "COMMAND [ARGS] (help lists them)"
)]
struct ShellLine {
    #[command(subcommand)]
    command: Command,
}

const HELP: &str = "\
commands: info | tools [NAME] | call TOOL [ARGS] | ping | resources | templates | read URI |
          skills [NAME] | prompts | prompt NAME [k=v...] |
          complete --prompt NAME|--template URI ARG [VALUE] |
          log-level LEVEL   (each takes --json; COMMAND --help for more)
shell:    help | history | exit (or Ctrl-D). Ctrl-C cancels a running call.";

/// Runs the session until `exit`, Ctrl-D or the end of stdin.
pub fn run(
    cli: &Cli,
    client: &McpClient,
    transcript: Option<&Arc<Transcript>>,
    interrupts: &Receiver<()>,
    oauth: Option<&toolwire::auth::OAuth>,
) -> Result<Exit, Failure> {
    interrupt::shell_mode(true);
    let name = client
        .session_info()
        .map(|info| info.server.name)
        .unwrap_or_else(|_| "server".into());
    let prompt = format!("{}> ", crate::terminal::shown_line(&name));
    let mut editor = Editor::new().map_err(Failure::usage)?;
    errln!("connected to {name}; `help` lists the commands, `exit` or Ctrl-D leaves");
    loop {
        let text = match editor.read(&prompt) {
            Line::Text(text) => text,
            Line::Interrupted => continue,
            Line::End => break,
        };
        let words = match split(&text) {
            Ok(words) => words,
            Err(why) => {
                errln!("toolwire: {why}");
                continue;
            }
        };
        editor.remember(&text);
        match words.first().map(String::as_str) {
            None => continue,
            Some("exit" | "quit") => break,
            Some("help") => {
                outln!("{HELP}");
                continue;
            }
            Some("history") => {
                for (number, line) in editor.history().iter().enumerate() {
                    outln!("{:>4}  {line}", number + 1);
                }
                continue;
            }
            Some(_) => {}
        }
        let command = match ShellLine::try_parse_from(&words) {
            Ok(line) => line.command,
            Err(error) => {
                // clap's own text: the error or the help asked for.
                let _ = error.print();
                continue;
            }
        };
        if let Some(why) = not_here(&command) {
            errln!("toolwire: {why}");
            continue;
        }
        // A Ctrl-C that came as the last call ended is not this command's.
        while interrupts.try_recv().is_ok() {}
        let outcome = crate::run_connected(cli, &command, client, transcript, interrupts, oauth);
        asks::report_refusals();
        match outcome {
            Ok(_) => {}
            Err(failure) if failure.exit == Exit::Interrupted => {
                errln!("toolwire: {}", failure.message);
            }
            Err(failure) => errln!("toolwire: error: {}", failure.message),
        }
    }
    interrupt::shell_mode(false);
    Ok(Exit::Ok)
}

/// Why a command is not for the shell, if it is not.
fn not_here(command: &Command) -> Option<String> {
    match command {
        Command::Servers { .. }
        | Command::Doctor { .. }
        | Command::Login
        | Command::Logout
        | Command::Shell { .. }
        | Command::Completions { .. } => {
            Some("that command is not for a session: run it from your shell (exit first)".into())
        }
        other if !other.server_command().is_empty() => Some(
            "the session is connected already: a server command (after --) is not taken here"
                .into(),
        ),
        _ => None,
    }
}
