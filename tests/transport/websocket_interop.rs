//! JSON-RPC over WebSocket with a peer nobody here wrote: a server on npm's `rpc-websockets`
//! 10.0.1 (tests/peers/rpc_ws_server.cjs, installed and pinned by tests/peers/install.sh as
//! TOOLWIRE_RPC_WEBSOCKETS). Calls by array and by object, a JSON-RPC error, concurrent calls
//! matched by id, a deadline, and the server killed mid-call (the call fails at once).
//!
//! Runs when `TOOLWIRE_PEERS=1` (with the variables of peers.env) or `TOOLWIRE_PEERS_DIR=DIR`
//! is set; otherwise it prints a note and passes, like the other interop tests.
#![cfg(all(feature = "websocket", unix))]

use crate::support::mcp as support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use support::peers;
use toolwire::transport::{WebSocketConfig, WebSocketTransport};
use toolwire::{CallOptions, Client, ClientConfig, Error};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the rpc-websockets server and waits (bounded) for its "listening" line.
fn start(peers: &support::Peers) -> (Server, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/rpc_ws_server.cjs");
    let mut child = Command::new(peers.path("TOOLWIRE_NODE"))
        .arg(script)
        .arg(peers.path("TOOLWIRE_RPC_WEBSOCKETS"))
        .arg(port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start rpc_ws_server.cjs");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the rpc-websockets server did not start");
    assert_eq!(line, format!("listening {port}"));
    (Server(child), format!("ws://127.0.0.1:{port}/"))
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn a_registry_websocket_json_rpc_server() {
    let peers = peers("a_registry_websocket_json_rpc_server");
    let (mut server, url) = start(&peers);
    let transport = WebSocketTransport::connect(WebSocketConfig::new(url)).unwrap();
    let client = Client::with_config(
        transport,
        ClientConfig::default().request_timeout(Duration::from_secs(60)),
    )
    .unwrap();
    assert_eq!(client.call("sum", json!([2, 3])).unwrap(), json!(5));
    assert_eq!(
        client.call("sum", json!({"a": 1.5, "b": 2})).unwrap(),
        json!(3.5)
    );
    assert_eq!(
        client
            .call("echo", json!({"nested": {"list": [1, "two", null]}}))
            .unwrap(),
        json!({"nested": {"list": [1, "two", null]}})
    );
    let error = client.call("fail", json!([])).unwrap_err();
    let rpc = error.rpc().unwrap_or_else(|| panic!("{error:?}"));
    assert_eq!(rpc.code.0, -32000);
    // Concurrent calls, answered out of order, each matched by its id.
    let callers: Vec<_> = (0..16)
        .map(|n| {
            let client = client.clone();
            thread::spawn(move || {
                let slow = client.call("slow", json!({"ms": (16 - n) * 5})).unwrap();
                assert_eq!(slow, json!("slept"));
                client.call("sum", json!([n, 1])).unwrap()
            })
        })
        .collect();
    for (n, caller) in callers.into_iter().enumerate() {
        assert_eq!(caller.join().unwrap(), json!(n + 1));
    }
    // A deadline.
    let timeout = Duration::from_millis(200);
    let started = Instant::now();
    let error = client
        .call_with(
            "slow",
            json!({"ms": 5000}),
            CallOptions::new().timeout(timeout),
        )
        .unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error:?}");
    assert!(started.elapsed() >= timeout);
    // The server dies mid-call: the call fails at once, well before its 60 s deadline.
    let (tx, rx) = mpsc::channel();
    let caller = client.clone();
    thread::spawn(move || {
        let _ = tx.send(caller.call("slow", json!({"ms": 30000})));
    });
    while client.stats().in_flight == 0 {
        thread::sleep(Duration::from_millis(5));
    }
    let _ = server.0.kill();
    let outcome = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the call ended when the server died");
    assert!(outcome.unwrap_err().is_closed());
    client.close().unwrap();
}
