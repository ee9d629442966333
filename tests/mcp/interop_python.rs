//! Interop with our server written with the official Python SDK (PyPI `mcp` 2.3.0,
//! tests/peers/py_server.py) over stdio, in both protocol eras.
//!
//! The tests that need the peers are `#[ignore]`d (a plain `cargo test` lists them as
//! ignored); `TOOLWIRE_PEERS_DIR=DIR cargo test --features cli --tests -- --ignored` runs them
//! after `bash tests/peers/install.sh DIR`, and run that way without the peers they fail.
use crate::support::mcp as support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{peers, Peers, SOON};
use toolwire::jsonrpc::CallEvent;
use toolwire::mcp::McpDialect;
use toolwire::mcp::{Era, STATELESS_VERSION};
use toolwire::{CallOptions, ClientConfig, Error, McpClient, McpConfig, ProtocolMode, StdioConfig};

const TOOLS: [&str; 8] = [
    "add", "ask", "echo", "explode", "measure", "refuse", "slow", "whoami",
];

fn py_server(peers: &Peers) -> StdioConfig {
    StdioConfig::new(peers.path("TOOLWIRE_PYTHON"))
        .arg(peers.py_server())
        .arg("stdio")
}

fn connect(peers: &Peers, mode: ProtocolMode) -> McpClient {
    let mut config = McpConfig::default().mode(mode);
    config = config.rpc(
        ClientConfig::default()
            .dialect(McpDialect)
            .request_timeout(SOON),
    );
    McpClient::connect_stdio(py_server(peers), config).expect("connect to the Python server")
}

/// Nothing in flight, nothing skipped, then `close()`.
fn finish(client: &McpClient) {
    let rpc = client.rpc().expect("a live session");
    let stats = rpc.stats();
    assert_eq!(stats.in_flight, 0, "requests left in flight");
    assert_eq!(stats.skipped_lines, 0);
    client.close().expect("close");
    assert!(rpc.is_closed());
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn auto_negotiates_the_stateless_version() {
    let peers = peers("auto_negotiates_the_stateless_version");
    let client = connect(&peers, ProtocolMode::Auto);
    let info = client.session_info().expect("session info");
    assert_eq!(info.era, Era::Stateless);
    assert_eq!(info.protocol_version, STATELESS_VERSION);
    assert_eq!(info.server.name, "toolwire-py-peer");
    assert_eq!(info.server.version, "0.1.0");
    assert!(info.has_capability("tools"));
    // The server sees the version on every request.
    let whoami = client
        .call_tool_with("whoami", json!({}), CallOptions::new())
        .expect("whoami");
    assert_eq!(whoami.text(), "protocol 2026-07-28");
    client.ping().expect("ping");
    finish(&client);
}

/// The same calls in both eras.
fn the_same_calls_pass(mode: ProtocolMode, version: &str) {
    let peers = peers(&format!("the_same_calls_pass ({mode:?})"));
    let client = connect(&peers, mode);
    let info = client.session_info().expect("session info");
    assert_eq!(info.protocol_version, version);

    let tools = client.list_tools().expect("tools");
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, TOOLS);
    let measure = tools
        .iter()
        .find(|tool| tool.name == "measure")
        .expect("measure");
    assert!(measure.has_output_schema());

    let call = |name: &str, arguments| {
        client
            .call_tool_with(name, arguments, CallOptions::new())
            .unwrap_or_else(|error| panic!("{name}: {error}"))
    };
    let echoed = call("echo", json!({"message": "hi"}));
    assert!(!echoed.is_error);
    assert_eq!(echoed.text(), "echo: hi");
    assert_eq!(call("add", json!({"a": 2, "b": 3})).text(), "5.0");
    assert_eq!(
        call("whoami", json!({})).text(),
        format!("protocol {version}")
    );

    // Structured content, checked against the declared output schema.
    let measured = call("measure", json!({"values": [1, 2, 3]}));
    assert!(!measured.is_error);
    assert_eq!(
        measured.structured_content,
        Some(json!({"count": 3, "total": 6.0, "mean": 2.0}))
    );

    // Progress in order.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let slept = client
        .call_tool_with(
            "slow",
            json!({"seconds": 0.3}),
            CallOptions::new().on_progress({
                let seen = Arc::clone(&seen);
                move |progress| seen.lock().unwrap().push(progress.progress)
            }),
        )
        .expect("slow");
    assert_eq!(slept.text(), "slept 0.3s");
    let expected: Vec<f64> = (1..=10).map(f64::from).collect();
    assert_eq!(*seen.lock().unwrap(), expected);

    // A raising tool, a refusing tool, bad arguments and an unknown tool are tool errors.
    let exploded = call("explode", json!({}));
    assert!(exploded.is_error, "{:?}", exploded.raw);
    let refused = call("refuse", json!({"reason": "not today"}));
    assert!(refused.is_error);
    assert!(refused.text().contains("not today"), "{}", refused.text());
    let bad = call("add", json!({"a": "x", "b": 1}));
    assert!(bad.is_error);
    let unknown = call("no_such_tool", json!({}));
    assert!(unknown.is_error);
    assert!(
        unknown.text().contains("no_such_tool"),
        "{}",
        unknown.text()
    );

    // Resources and prompts.
    let resources = client.list_resources().expect("resources");
    assert_eq!(resources[0].uri, "toolwire://greeting");
    let read = client.read_resource("toolwire://greeting").expect("read");
    assert_eq!(
        read[0].text.as_deref(),
        Some("Hello from the toolwire Python peer.")
    );
    let prompts = client.list_prompts().expect("prompts");
    assert_eq!(prompts[0].name, "greet");
    let prompt = client
        .get_prompt("greet", json!({"name": "Ada"}))
        .expect("prompt");
    assert!(
        prompt.messages[0]
            .content
            .as_text()
            .is_some_and(|text| text.contains("Ada")),
        "{prompt:?}"
    );
    finish(&client);
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_same_calls_pass_in_modern_mode() {
    the_same_calls_pass(ProtocolMode::Modern, STATELESS_VERSION);
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_same_calls_pass_in_legacy_mode() {
    the_same_calls_pass(ProtocolMode::Legacy, "2025-11-25");
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn reset_on_progress_and_cancel_in_both_eras() {
    let peers = peers("reset_on_progress_and_cancel_in_both_eras");
    const TIMEOUT: Duration = Duration::from_millis(500);
    for mode in [ProtocolMode::Modern, ProtocolMode::Legacy] {
        let client = connect(&peers, mode);
        // 1.5 s in 10 steps: a report every 150 ms.
        let started = Instant::now();
        client
            .call_tool_with(
                "slow",
                json!({"seconds": 1.5}),
                CallOptions::new().timeout(TIMEOUT).reset_on_progress(true),
            )
            .unwrap_or_else(|error| panic!("{mode:?}: {error}"));
        // It outlived the timeout by far.
        assert!(started.elapsed() >= 2 * TIMEOUT);
        let started = Instant::now();
        let error = client
            .call_tool_with(
                "slow",
                json!({"seconds": 1.5}),
                CallOptions::new().timeout(TIMEOUT).want_progress(true),
            )
            .expect_err("without reset it times out");
        assert!(error.is_timeout(), "{mode:?}: {error:?}");
        assert!(started.elapsed() >= TIMEOUT);

        let mut running = client
            .start_tool(
                "slow",
                json!({"seconds": 2}),
                CallOptions::new().want_progress(true),
            )
            .expect("start");
        match running.handle().receiver().recv_timeout(SOON) {
            Ok(CallEvent::Progress(progress)) => assert_eq!(progress.progress, 1.0),
            other => panic!("{mode:?}: expected progress, got {other:?}"),
        }
        assert!(running.cancel());
        assert!(matches!(running.wait(), Err(Error::Cancelled { .. })));
        let echoed = client
            .call_tool_with("echo", json!({"message": "after"}), CallOptions::new())
            .expect("the client stays usable");
        assert_eq!(echoed.text(), "echo: after");
        let rpc = client.rpc().expect("rpc");
        assert_eq!(rpc.stats().cancels, 1);
        assert!(!rpc.is_closed());
        finish(&client);
    }
}
