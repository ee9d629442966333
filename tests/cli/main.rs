//! The `toolwire` command, run as a child process (`support::cli`): its subcommands, output,
//! deadlines, interrupts, configs, the pty shell, and the peers through it.

#[path = "../support/mod.rs"]
mod support;

mod auth;
mod catalog;
mod client_requests;
mod configs;
mod deadlines;
mod doctor;
mod hostile;
mod human_output;
mod interrupt;
mod output_safety;
mod peers;
mod peers_catalog;
mod pty;
mod pty_elicit;
mod pty_shell;
mod server;
mod tool_server;
