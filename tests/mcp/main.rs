//! The MCP client (`support::mcp` plays the server): lifecycle, eras, tools, tasks, input
//! rounds, restarts, request metadata, and the interop peers.

#[path = "../support/mod.rs"]
mod support;

mod connect_budget;
mod input_rounds;
mod interop_everything;
mod interop_http;
mod interop_python;
mod interop_server;
mod interop_sse;
mod lifecycle;
mod list_memory;
mod request_metadata;
mod restart;
mod skills_client;
mod stdio;
mod tasks;
mod tasks_everything;
mod tools_call;
mod tools_list;
