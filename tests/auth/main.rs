//! MCP authorization (OAuth 2.1) against the fake authorization server (`support::auth_fake`):
//! discovery, registration, grants, refresh, scopes, token stores, and the fuzz inputs of
//! the authorization readers.

#[path = "../support/mod.rs"]
mod support;

mod concurrency;
mod failures;
mod flow;
mod fuzz_inputs;
mod grants;
mod loopback;
mod refresh;
mod scopes;
mod token_rules;
mod tokens;
