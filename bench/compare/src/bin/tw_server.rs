//! toolwire's server answering one `echo` tool, for the servers side by side
//! (`toolwire-compare servers`): built on `toolwire::server` as a user would, with the tool on
//! the worker pool (the default) or run inline.
//!
//! ```text
//! tw_server stdio [inline]
//! tw_server http-stateless PORT [inline]   # HttpServerConfig::sessions(false): 2026-07-28 only
//! tw_server http-sessions PORT [inline]    # the handshake era's Mcp-Session-Id sessions
//! ```
//!
//! The pool has 64 workers (the default 16 would answer the 17th call in flight "busy"),
//! and the HTTP server takes up to 128 connections (per address too: the load client's 64
//! connections all come from 127.0.0.1). Authorization and telemetry are off.

use serde_json::json;
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("stdio");
    let inline = args.iter().any(|arg| arg == "inline");
    let server = Server::new(ServerConfig::new("toolwire-echo", "0").workers(64)).expect("server");
    let echo = LocalTool::with_context(
        "echo",
        "Returns the message it is given.",
        json!({"type": "object", "required": ["message"],
               "properties": {"message": {"type": "string"}}}),
        |_, args| {
            Ok(CallToolResult::from_text(
                args["message"].as_str().unwrap_or_default(),
            ))
        },
    )
    .inline(inline);
    server.add_tool(echo).expect("tool");
    match mode {
        "stdio" => server.serve_stdio().expect("stdio"),
        "http-stateless" | "http-sessions" => {
            let port: u16 = args
                .get(1)
                .and_then(|port| port.parse().ok())
                .expect("a port");
            let config = HttpServerConfig::new()
                .port(port)
                .sessions(mode == "http-sessions")
                .max_connections(128)
                .max_connections_per_address(128);
            let http = HttpServer::bind(&server, config).expect("bind");
            http.wait();
        }
        other => panic!("unknown mode {other}"),
    }
}
