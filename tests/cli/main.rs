//! The `toolwire` command, run as a child process (`support::cli`): its subcommands, output,
//! deadlines, interrupts, configs, the pty shell, and the peers through it.

#[path = "../support/mod.rs"]
mod support;

mod auth;
mod call_deadlines;
mod catalog;
mod client_requests;
mod configs;
mod connect_timeout;
mod deadlines;
mod deep_schemas;
mod doctor;
mod hostile;
mod human_output;
mod interrupt;
mod newuser;
mod output_safety;
mod peer_secrets;
mod peers;
mod peers_catalog;
mod pty;
mod pty_elicit;
mod pty_shell;
mod server;
mod skills;
mod tool_server;
