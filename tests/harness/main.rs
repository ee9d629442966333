//! The tool-call harness: registry checks, shapes, numbers, outcomes, budgets, retries,
//! timeouts, transcripts, and imported MCP tools.

#[path = "../support/mod.rs"]
mod support;

mod budget;
mod checks;
mod context;
mod everything;
mod numbers;
mod outcomes;
mod providers;
mod remote;
mod retry;
mod shapes;
mod timeout;
mod transcript;
