//! Helpers shared by the gateway tests: a config of bundled tool servers, in-process
//! backends over Streamable HTTP (whose handlers the test watches), a gateway started from a
//! config and a policy text, and toolwire's own `McpClient` as the front client. Each test
//! file names it with `use crate::support::gateway as support;`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{json, Map, Value};
use toolwire::config::LoadOptions;
use toolwire::gateway::{Gateway, GatewayConfig, Policy};
use toolwire::server::{HttpServer, HttpServerConfig, PeerTransport, Server, ServerConnection};
use toolwire::transport::MemoryTransport;
use toolwire::{CallToolResult, McpClient, McpConfig, ProtocolMode, ServerConfigs};

pub use super::{eventually, LONG};

/// The bundled tool server, built once per test binary.
pub fn tool_server() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        let profile_dir = exe
            .parent()
            .and_then(|deps| deps.parent())
            .expect("target dir")
            .to_path_buf();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "--quiet", "--example", "tool_server"]);
        if profile_dir.file_name().is_some_and(|dir| dir == "release") {
            build.arg("--release");
        }
        let status = build
            .status()
            .expect("run cargo build --example tool_server");
        assert!(status.success(), "building tool_server failed");
        let path = profile_dir.join("examples").join("tool_server");
        assert!(path.exists(), "{} missing after build", path.display());
        path
    })
    .clone()
}

/// A config entry that runs the bundled tool server.
pub fn tool_server_entry() -> Value {
    json!({"command": tool_server().display().to_string(), "args": []})
}

/// A config entry for a Streamable HTTP server.
pub fn url_entry(url: &str) -> Value {
    json!({"url": url})
}

/// A Claude Desktop-style config of these entries.
pub fn configs(entries: &[(&str, Value)]) -> ServerConfigs {
    // Written in the order given (a JSON map would sort them): the config's order is the
    // gateway's order for a name two servers give.
    let servers: Vec<String> = entries
        .iter()
        .map(|(name, entry)| format!("{}: {entry}", Value::from(*name)))
        .collect();
    let text = format!("{{\"mcpServers\": {{{}}}}}", servers.join(", "));
    ServerConfigs::parse(&text, &LoadOptions::new().skip_bad_entries(true)).expect("config")
}

/// The names of the tools `client` lists now (asked again), sorted.
pub fn tool_names(client: &McpClient) -> Vec<String> {
    let mut names: Vec<String> = client
        .refresh_tools()
        .unwrap()
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    names.sort_unstable();
    names
}

/// A gateway over `entries` with the policy `policy` (JSON text).
pub fn gateway(entries: &[(&str, Value)], policy: &str) -> Gateway {
    gateway_with(entries, policy, GatewayConfig::new())
}

/// [`gateway`] with options.
pub fn gateway_with(entries: &[(&str, Value)], policy: &str, options: GatewayConfig) -> Gateway {
    let policy = Policy::parse(policy).expect("policy");
    Gateway::start(&configs(entries), policy, options).expect("gateway")
}

/// A front client connected to the gateway in memory, with `config`.
pub fn front_with(gateway: &Gateway, config: McpConfig) -> (McpClient, ServerConnection) {
    let (client_end, server_end) = MemoryTransport::pair();
    let connection = gateway
        .server()
        .connect(PeerTransport::new(server_end))
        .expect("connect");
    let client = McpClient::connect(client_end, config).expect("front client");
    (client, connection)
}

/// A front client on the handshake protocol.
pub fn front(gateway: &Gateway) -> (McpClient, ServerConnection) {
    front_with(gateway, McpConfig::default().mode(ProtocolMode::Legacy))
}

/// An in-process server over HTTP on a port the system picks; its URL.
pub fn http_backend(server: &Server) -> (HttpServer, String) {
    let http = HttpServer::bind(server, HttpServerConfig::new()).expect("bind");
    let url = http.url();
    (http, url)
}

/// The text of a result.
pub fn text(result: &CallToolResult) -> String {
    result.text()
}

/// Calls a tool through the front client; a transport error fails the test.
pub fn call(client: &McpClient, name: &str, arguments: Value) -> CallToolResult {
    client
        .call_tool(name, arguments)
        .unwrap_or_else(|error| panic!("calling {name}: {error}"))
}

/// A backend's counter of one status in the gateway's stats (0 when absent).
pub fn status_count(stats: &Value, backend: &str, status: &str) -> u64 {
    stats["backends"][backend]["statuses"][status]
        .as_u64()
        .unwrap_or(0)
}
