//! Interop over the legacy HTTP+SSE transport (2024-11-05) with two official servers on
//! 127.0.0.1: our Python SDK server (`tests/peers/py_server.py sse PORT`: GET /sse, POST
//! /messages/?session_id=…) and server-everything (`node index.js sse`, forced onto loopback
//! by tests/peers/loopback.cjs: GET /sse, POST /message?sessionId=…). Each test connects in
//! Auto mode (the probe fails over to the handshake), lists tools, calls `echo`, receives
//! progress, cancels a running call (the client stays usable) and closes; a config entry of
//! `type: "sse"` connects the same way.
//!
//! These tests run when `TOOLWIRE_PEERS=1` (with the variables of peers.env in the
//! environment) or `TOOLWIRE_PEERS_DIR=DIR` is set, after `bash tests/peers/install.sh DIR`;
//! then missing peers fail them. Without either variable each test prints a note and passes.
#![cfg(feature = "http")]

#[path = "mcp_support.rs"]
mod support;

use std::io::{BufRead, BufReader, Read};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{peers, Peers, SOON};
use toolwire::config::LoadOptions;
use toolwire::{CallOptions, HttpConfig, McpClient, McpConfig, ProtocolMode, ServerConfigs};

/// How long a server may take to accept TCP connections after it was started.
const STARTUP: Duration = Duration::from_secs(20);

/// A port that was free on 127.0.0.1 a moment ago: bound, then released for the server.
/// How many ports [`Server::start`] tries before it gives up.
const PORT_TRIES: usize = 4;

fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// A server process, killed (and reaped) on drop; its stdout and stderr are collected.
struct Server {
    child: Child,
    port: u16,
    log: Arc<Mutex<String>>,
}

impl Server {
    /// Starts the command `make(port)` builds (which must listen on 127.0.0.1:`port`) on a
    /// free port and waits, at most [`STARTUP`], until the port accepts TCP connections while
    /// the server is alive. The port is free when chosen but may be taken before the server
    /// binds it (other test processes share the machine): a server that exits before
    /// listening is started again on another port, up to [`PORT_TRIES`] times.
    fn start(make: impl Fn(u16) -> Command) -> Server {
        let mut exits = Vec::new();
        for _ in 0..PORT_TRIES {
            let port = free_port();
            let mut command = make(port);
            command
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let mut child = command
                .spawn()
                .unwrap_or_else(|error| panic!("spawn {command:?}: {error}"));
            let log = Arc::new(Mutex::new(String::new()));
            let stdout = child.stdout.take().expect("stdout");
            let stderr = child.stderr.take().expect("stderr");
            drain(stdout, Arc::clone(&log));
            drain(stderr, Arc::clone(&log));
            let mut server = Server { child, port, log };
            match server.wait_for_port() {
                Ok(()) => return server,
                Err(exit) => exits.push(exit),
            }
        }
        panic!(
            "the server exited before listening, {PORT_TRIES} times:\n{}",
            exits.join("\n")
        );
    }

    /// Waits until the port accepts connections and the server is still running then (so the
    /// listener is the server's, not another process's on a port taken first); `Err` with
    /// the server's output when it exited first.
    fn wait_for_port(&mut self) -> Result<(), String> {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let deadline = Instant::now() + STARTUP;
        loop {
            let open = TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok();
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "exited ({status}) before listening on {address}:\n{}",
                    self.log()
                ));
            }
            if open {
                return Ok(());
            }
            assert!(
                Instant::now() < deadline,
                "the server did not listen on {address} within {STARTUP:?}:\n{}",
                self.log()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.port)
    }

    /// Everything the server printed so far.
    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Copies a pipe, line by line, into `log` on its own thread (ends at EOF, when the server
/// dies).
fn drain(pipe: impl Read + Send + 'static, log: Arc<Mutex<String>>) {
    thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            let mut log = log.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
}

fn loopback_preload() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/loopback.cjs")
}

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
        HttpConfig::new(server.url()).legacy_sse_connector(),
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
        HttpConfig::new(server.url()).legacy_sse_connector(),
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
        server.url()
    );
    let configs = ServerConfigs::parse(&text, &LoadOptions::new().process_env(false)).unwrap();
    let client = configs.connect("old", config()).unwrap();
    let result = client
        .call_tool("echo", json!({"message": "from the config"}))
        .unwrap();
    assert!(result.text().contains("from the config"));
    client.close().unwrap();
}
