//! Hostile peers: bad batches and frames, hostile HTTP servers and schemas.

#[path = "../support/mod.rs"]
mod support;

mod batches;
mod frames;
mod http;
mod schemas;
