//! The gateway (`toolwire::gateway`, `support::gateway`): start, listing, calls passed
//! through, policy (budget, busy, deny), resources, restarts, transcripts, and its CLI.

#[path = "../support/mod.rs"]
mod support;

mod auth;
mod bridge;
mod bridge_peers;
mod budget;
mod busy;
mod caller_policy;
mod cli;
mod deny;
mod interop;
mod invalid;
mod list_change;
mod listing;
mod metrics;
mod names;
mod passthrough;
mod pins;
mod pins_cli;
mod pipeline;
mod resources;
mod restart;
mod rounds;
mod scaleout;
mod serve_auth;
mod serve_tls;
mod shared_budget;
mod skills;
mod start;
mod tasks;
mod traces;
mod transcript;
