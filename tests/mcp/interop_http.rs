//! Interop over Streamable HTTP with two real servers on 127.0.0.1: server-everything
//! (`node index.js streamableHttp`, forced onto loopback by tests/peers/loopback.cjs) and our
//! Python SDK server (tests/peers/py_server.py `http PORT`, endpoint /mcp). Each test
//! establishes a session, lists tools, calls `echo`, receives progress over SSE, cancels a
//! running call (the client stays usable), and closes, checking that the session was deleted.
//!
//! The tests that need the peers are `#[ignore]`d (a plain `cargo test` lists them as
//! ignored); `TOOLWIRE_PEERS_DIR=DIR cargo test --features cli --tests -- --ignored` runs them
//! after `bash tests/peers/install.sh DIR`, and run that way without the peers they fail.
#![cfg(feature = "http")]

use crate::interop_server as interop;
use crate::support::mcp as support;

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use interop::{loopback_preload, Server};
use serde_json::json;
use support::{peers, Peers, SOON};
use toolwire::jsonrpc::CallEvent;
use toolwire::mcp::McpDialect;
use toolwire::mcp::{Era, STATELESS_VERSION};
use toolwire::transport::{HttpTransport, Transport};
use toolwire::{CallOptions, ClientConfig, Error, HttpConfig, McpClient, McpConfig, ProtocolMode};

/// server-everything's tools (2026.8.31).
const EVERYTHING_TOOLS: usize = 13;

/// server-everything over Streamable HTTP, on 127.0.0.1 only.
fn start_everything(peers: &Peers) -> Server {
    Server::start(|port| {
        let mut command = Command::new(peers.path("TOOLWIRE_NODE"));
        command
            .arg("--require")
            .arg(loopback_preload())
            .arg(peers.path("TOOLWIRE_EVERYTHING_JS"))
            .arg("streamableHttp")
            .env("PORT", port.to_string());
        command
    })
}

/// Our Python SDK server over Streamable HTTP (it binds 127.0.0.1 itself).
fn start_python(peers: &Peers) -> Server {
    Server::start(|port| {
        let mut command = Command::new(peers.path("TOOLWIRE_PYTHON"));
        command
            .arg(peers.py_server())
            .arg("http")
            .arg(port.to_string());
        command
    })
}

// ---- the client ----

/// The transport the client's connector made last, kept to read its session id.
type Made = Arc<Mutex<Option<Arc<HttpTransport>>>>;

/// Connects in `mode` with what [`HttpConfig::connector`] does, keeping a reference to the
/// transport it makes (the connector hides it behind `Arc<dyn Transport>`).
fn connect(url: &str, mode: ProtocolMode) -> (McpClient, Made) {
    let made: Made = Arc::default();
    let http = HttpConfig::new(url);
    let connector = {
        let made = Arc::clone(&made);
        Box::new(move || {
            let transport = Arc::new(HttpTransport::new(http.clone())?);
            *made.lock().unwrap() = Some(Arc::clone(&transport));
            Ok(transport as Arc<dyn Transport>)
        })
    };
    let mut config = McpConfig::default().mode(mode);
    config = config.rpc(
        ClientConfig::default()
            .dialect(McpDialect)
            .request_timeout(SOON),
    );
    let client = McpClient::connect_with(connector, config)
        .unwrap_or_else(|error| panic!("connect to {url} ({mode:?}): {error}"));
    (client, made)
}

fn session_id(made: &Made) -> Option<String> {
    made.lock()
        .unwrap()
        .as_ref()
        .expect("the connector ran")
        .session_id()
}

/// The `text` of an `echo` call.
fn echo(client: &McpClient, message: &str) -> String {
    let result = client
        .call_tool_with("echo", json!({ "message": message }), CallOptions::new())
        .unwrap_or_else(|error| panic!("echo: {error}"));
    assert!(!result.is_error, "{:?}", result.raw);
    result.text()
}

/// Calls `tool` with `on_progress` and returns the (progress, total) reports in order.
fn progress_of(
    client: &McpClient,
    tool: &str,
    arguments: serde_json::Value,
) -> Vec<(f64, Option<f64>)> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let result = client
        .call_tool_with(
            tool,
            arguments,
            CallOptions::new().on_progress({
                let seen = Arc::clone(&seen);
                move |progress| {
                    seen.lock()
                        .unwrap()
                        .push((progress.progress, progress.total))
                }
            }),
        )
        .unwrap_or_else(|error| panic!("{tool}: {error}"));
    assert!(!result.is_error, "{:?}", result.raw);
    let seen = seen.lock().unwrap().clone();
    seen
}

/// Starts `tool`, waits for its first progress report, cancels it: the wait ends with
/// `Cancelled`, and `echo` still works afterwards. `arguments` must keep the tool running
/// well past [`SOON`], so that only the cancel can end the wait in time.
fn cancel_a_running_call(
    client: &McpClient,
    tool: &str,
    arguments: serde_json::Value,
    echoed: &str,
) {
    // An hour of deadline: neither the deadline nor the tool's own end can come before the
    // guard below, so a wait that ends with `Cancelled` in time was ended by the cancel.
    let options = CallOptions::new()
        .want_progress(true)
        .timeout(Duration::from_secs(3600));
    let mut running = client.start_tool(tool, arguments, options).expect("start");
    match running.handle().receiver().recv_timeout(SOON) {
        Ok(CallEvent::Progress(progress)) => assert_eq!(progress.progress, 1.0),
        other => panic!("{tool}: expected progress, got {other:?}"),
    }
    assert!(running.cancel(), "the call had already completed");
    // Waited on its own thread, with a guard that only keeps a broken test from hanging.
    let (outcome_tx, outcome_rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let _ = outcome_tx.send(running.wait());
    });
    let outcome = outcome_rx
        .recv_timeout(SOON)
        .unwrap_or_else(|_| panic!("{tool}: the wait did not end at the cancel"));
    assert!(
        matches!(outcome, Err(Error::Cancelled { .. })),
        "{outcome:?}"
    );
    assert_eq!(echo(client, "after"), echoed);
    let rpc = client.rpc().expect("rpc");
    assert_eq!(rpc.stats().cancels, 1);
    assert!(!rpc.is_closed());
}

/// Nothing in flight, then `close()`.
fn finish(client: &McpClient) {
    let rpc = client.rpc().expect("a live session");
    assert_eq!(rpc.stats().in_flight, 0, "requests left in flight");
    client.close().expect("close");
    assert!(rpc.is_closed());
}

/// The status of a raw `ping` POST carrying `session`: 200 while the session lives, 404 once
/// the server terminated it (the Python SDK; server-everything answers 400).
fn probe_session(port: u16, session: &str, version: &str) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":"probe","method":"ping"}"#;
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream =
        TcpStream::connect_timeout(&address, Duration::from_secs(2)).expect("connect probe");
    stream.set_read_timeout(Some(SOON)).unwrap();
    stream.set_write_timeout(Some(SOON)).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         Mcp-Protocol-Version: {version}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write probe");
    let mut status = String::new();
    BufReader::new(stream)
        .read_line(&mut status)
        .expect("read probe status");
    status
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {status:?}"))
}

// ---- the tests ----

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn everything_over_streamable_http() {
    let peers = peers("everything_over_streamable_http");
    let began = Instant::now();
    let server = start_everything(&peers);
    let (client, made) = connect(&server.url("/mcp"), ProtocolMode::Auto);

    // Session established, in the handshake era, with a session id from the server.
    let info = client.session_info().expect("session info");
    assert_eq!(info.era, Era::Handshake, "{info:?}");
    assert!(!info.protocol_version.is_empty());
    let session = session_id(&made).expect("server-everything issues a session id");
    assert!(!session.is_empty());
    assert!(
        eventually_log(&server, &format!("Session initialized with ID: {session}")),
        "{}",
        server.log()
    );

    // Tools.
    let tools = client.list_tools().expect("tools");
    assert_eq!(
        tools.len(),
        EVERYTHING_TOOLS,
        "{:?}",
        support::names(&tools)
    );
    assert!(tools.iter().any(|tool| tool.name == "echo"));
    assert!(tools
        .iter()
        .any(|tool| tool.name == "trigger-long-running-operation"));

    // A call.
    assert_eq!(echo(&client, "hi"), "Echo: hi");

    // Progress over the POST's SSE stream, in order.
    let seen = progress_of(
        &client,
        "trigger-long-running-operation",
        json!({"duration": 1, "steps": 4}),
    );
    let expected: Vec<(f64, Option<f64>)> = (1..=4).map(|i| (f64::from(i), Some(4.0))).collect();
    assert_eq!(seen, expected);

    // Cancel a running call; the client stays usable.
    cancel_a_running_call(
        &client,
        "trigger-long-running-operation",
        // A report every half second, for a minute.
        json!({"duration": 60, "steps": 120}),
        "Echo: after",
    );

    // Close: the session is deleted (server-everything logs the DELETE it handles).
    finish(&client);
    assert!(
        eventually_log(
            &server,
            &format!("Received session termination request for session {session}")
        ),
        "no DELETE seen after close:\n{}",
        server.log()
    );
    eprintln!(
        "everything_over_streamable_http: {} ({}) in {:?}",
        info.protocol_version,
        session,
        began.elapsed()
    );
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn python_over_streamable_http_auto() {
    let peers = peers("python_over_streamable_http_auto");
    let began = Instant::now();
    let server = start_python(&peers);
    let (client, made) = connect(&server.url("/mcp"), ProtocolMode::Auto);

    let info = client.session_info().expect("session info");
    assert_eq!(info.era, Era::Stateless, "{info:?}");
    assert_eq!(info.protocol_version, STATELESS_VERSION);
    assert_eq!(info.protocol_version, "2026-07-28");
    assert_eq!(info.server.name, "toolwire-py-peer");
    let whoami = client
        .call_tool_with("whoami", json!({}), CallOptions::new())
        .expect("whoami");
    assert_eq!(whoami.text(), "protocol 2026-07-28");

    let tools = client.list_tools().expect("tools");
    assert!(tools.iter().any(|tool| tool.name == "echo"));
    assert!(tools.iter().any(|tool| tool.name == "slow"));
    assert_eq!(echo(&client, "hi"), "echo: hi");

    let seen = progress_of(&client, "slow", json!({"seconds": 0.5}));
    let expected: Vec<(f64, Option<f64>)> = (1..=10).map(|i| (f64::from(i), Some(10.0))).collect();
    assert_eq!(seen, expected);

    // 20 s in 10 steps: the first report after 2 s, the end long after the guard.
    cancel_a_running_call(&client, "slow", json!({"seconds": 20}), "echo: after");
    assert!(
        eventually_log(&server, "slow: cancelled after"),
        "the server never saw the cancel:\n{}",
        server.log()
    );

    finish(&client);
    eprintln!(
        "python_over_streamable_http_auto: {} (session id {:?}) in {:?}",
        info.protocol_version,
        session_id(&made),
        began.elapsed()
    );
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn python_legacy_over_streamable_http_deletes_the_session_on_close() {
    let peers = peers("python_legacy_over_streamable_http_deletes_the_session_on_close");
    let began = Instant::now();
    let server = start_python(&peers);
    let (client, made) = connect(&server.url("/mcp"), ProtocolMode::Legacy);

    let info = client.session_info().expect("session info");
    assert_eq!(info.era, Era::Handshake, "{info:?}");
    assert_eq!(info.protocol_version, "2025-11-25");
    let session = session_id(&made).expect("a stateful server issues a session id");
    assert!(!session.is_empty());

    let tools = client.list_tools().expect("tools");
    assert!(tools.iter().any(|tool| tool.name == "echo"));
    assert_eq!(echo(&client, "hi"), "echo: hi");

    let seen = progress_of(&client, "slow", json!({"seconds": 0.5}));
    let expected: Vec<(f64, Option<f64>)> = (1..=10).map(|i| (f64::from(i), Some(10.0))).collect();
    assert_eq!(seen, expected);

    // 20 s in 10 steps: the first report after 2 s, the end long after the guard.
    cancel_a_running_call(&client, "slow", json!({"seconds": 20}), "echo: after");

    // The session lives until close...
    assert_eq!(probe_session(server.port, &session, "2025-11-25"), 200);
    finish(&client);
    // ...and is gone after it. The server runs uvicorn at log level WARNING, so it logs no
    // requests: the DELETE is seen through its effect, the session id now being unknown (404).
    // Closing waits for the DELETE's answer (bounded by HttpConfig::close_timeout), so no
    // polling is needed.
    assert_eq!(
        probe_session(server.port, &session, "2025-11-25"),
        404,
        "the session outlived close():\n{}",
        server.log()
    );
    eprintln!(
        "python_legacy_over_streamable_http_deletes_the_session_on_close: {session} in {:?}",
        began.elapsed()
    );
}

/// True once the server's output contains `needle` (polled for at most [`SOON`]).
fn eventually_log(server: &Server, needle: &str) -> bool {
    support::eventually(SOON, || server.log().contains(needle))
}
