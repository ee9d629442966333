//! Interop over the legacy HTTP+SSE transport (2024-11-05) with two official servers on
//! 127.0.0.1: our Python SDK server (`tests/peers/py_server.py sse PORT`: GET /sse, POST
//! /messages/?session_id=…) and server-everything (`node index.js sse`, forced onto loopback
//! by tests/peers/loopback.cjs: GET /sse, POST /message?sessionId=…). Each test connects in
//! Auto mode (the probe fails over to the handshake), lists tools, calls `echo`, receives
//! progress, cancels a running call (the client stays usable) and closes; a config entry of
//! `type: "sse"` connects the same way.
//!
//! The tests that need the peers are `#[ignore]`d (a plain `cargo test` lists them as
//! ignored); `TOOLWIRE_PEERS_DIR=DIR cargo test --features cli --tests -- --ignored` runs them
//! after `bash tests/peers/install.sh DIR`, and run that way without the peers they fail.
#![cfg(feature = "http")]

use crate::interop_server as interop;
use crate::support::mcp as support;

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use interop::{loopback_preload, Server};
use serde_json::json;
use support::{peers, Peers, SOON};
use toolwire::config::LoadOptions;
use toolwire::{CallOptions, HttpConfig, McpClient, McpConfig, ProtocolMode, ServerConfigs};

/// Our Python SDK server in SSE mode (the repository's script: the mode is new).
fn start_python(peers: &Peers) -> Server {
    Server::start(|port| {
        let mut command = Command::new(peers.path("TOOLWIRE_PYTHON"));
        command
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_server.py"))
            .arg("sse")
            .arg(port.to_string());
        command
    })
}

/// server-everything in SSE mode, on 127.0.0.1 only.
fn start_everything(peers: &Peers) -> Server {
    Server::start(|port| {
        let mut command = Command::new(peers.path("TOOLWIRE_NODE"));
        command
            .arg("--require")
            .arg(loopback_preload())
            .arg(peers.path("TOOLWIRE_EVERYTHING_JS"))
            .arg("sse")
            .env("PORT", port.to_string());
        command
    })
}

fn config() -> McpConfig {
    McpConfig::default()
        .mode(ProtocolMode::Auto)
        .request_timeout(SOON)
        .discover_timeout(Duration::from_secs(5))
}

/// The common script: list, echo, progress, a cancelled call, echo again, close.
fn exercise(client: &McpClient, echo: &str, slow: (&str, serde_json::Value)) {
    let tools = client.list_tools().unwrap();
    assert!(tools.iter().any(|tool| tool.name == "echo"));
    let result = client
        .call_tool("echo", json!({"message": "over sse"}))
        .unwrap();
    assert!(result.text().contains("over sse"), "{}", result.text());
    assert!(result.text().starts_with(echo), "{}", result.text());
    let reports = Arc::new(Mutex::new(0usize));
    let seen = Arc::clone(&reports);
    let call = client
        .start_tool(
            slow.0,
            slow.1,
            CallOptions::new().on_progress(move |_| *seen.lock().unwrap() += 1),
        )
        .unwrap();
    let mut call = call;
    let guard = Instant::now() + SOON;
    while *reports.lock().unwrap() == 0 {
        assert!(Instant::now() < guard, "no progress arrived");
        assert!(call.wait_timeout(Duration::from_millis(50)).is_none());
    }
    assert!(call.cancel());
    assert!(matches!(
        call.wait(),
        Err(toolwire::Error::Cancelled { .. })
    ));
    let again = client
        .call_tool("echo", json!({"message": "still here"}))
        .unwrap();
    assert!(again.text().contains("still here"));
    client.close().unwrap();
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn python_server_over_legacy_sse() {
    let peers = peers("python_server_over_legacy_sse");
    let server = start_python(&peers);
    let client = McpClient::connect_with(
        HttpConfig::new(server.url("/sse")).legacy_sse_connector(),
        config(),
    )
    .unwrap_or_else(|error| panic!("connect: {error}\n{}", server.log()));
    exercise(&client, "echo: ", ("slow", json!({"seconds": 5})));
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn everything_over_legacy_sse() {
    let peers = peers("everything_over_legacy_sse");
    let server = start_everything(&peers);
    let client = McpClient::connect_with(
        HttpConfig::new(server.url("/sse")).legacy_sse_connector(),
        config(),
    )
    .unwrap_or_else(|error| panic!("connect: {error}\n{}", server.log()));
    exercise(
        &client,
        "Echo: ",
        (
            "trigger-long-running-operation",
            json!({"duration": 5, "steps": 5}),
        ),
    );
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn a_config_entry_of_type_sse_connects_over_legacy_sse() {
    let peers = peers("a_config_entry_of_type_sse_connects_over_legacy_sse");
    let server = start_python(&peers);
    let text = format!(
        r#"{{"mcpServers": {{"old": {{"type": "sse", "url": "{}"}}}}}}"#,
        server.url("/sse")
    );
    let configs = ServerConfigs::parse(&text, &LoadOptions::new().process_env(false)).unwrap();
    let client = configs.connect("old", config()).unwrap();
    let result = client
        .call_tool("echo", json!({"message": "from the config"}))
        .unwrap();
    assert!(result.text().contains("from the config"));
    client.close().unwrap();
}
