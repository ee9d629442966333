//! The examples and the README's programs, run as they are shipped.

#[path = "../support/mod.rs"]
mod support;

mod agent_loop;
mod auth_server;
mod demo;
mod harness;
mod proxy;
mod smoke;
