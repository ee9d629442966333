//! Helpers shared by the `mcp_*` tests: an MCP server played by the test over the in-memory
//! transport, and the interop peers' environment. Each test file names it with
//! `use crate::support::mcp as support;`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::thread;

use serde_json::{json, Value};
use toolwire::jsonrpc::{ErrorObject, Message, Notification, Request, RequestId, Response};
use toolwire::mcp::McpDialect;
use toolwire::mcp::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, STATELESS_VERSION};
use toolwire::transport::{MemoryPeer, MemoryTransport};
use toolwire::{ClientConfig, McpClient, McpConfig, ProtocolMode, Result};

pub use super::{eventually, SOON};

/// The name, version and instructions the in-memory server announces.
pub const SERVER_NAME: &str = "memory-server";
pub const SERVER_VERSION: &str = "1.2.3";
pub const INSTRUCTIONS: &str = "Call `add` to add numbers.";

/// A config in `mode` whose calls cannot outlive a broken test by much.
pub fn config(mode: ProtocolMode) -> McpConfig {
    let mut config = McpConfig::default().mode(mode);
    config = config.rpc(
        ClientConfig::default()
            .dialect(McpDialect)
            .request_timeout(SOON),
    );
    config
}

// ---- reading what the client sent ----

/// The next message the client sent; panics if none arrives soon.
pub fn next_message(peer: &MemoryPeer) -> Message {
    peer.recv_message(SOON)
        .expect("the client should have sent a message")
}

/// The next message, which must be a request for `method`.
pub fn expect_request(peer: &MemoryPeer, method: &str) -> Request {
    match next_message(peer) {
        Message::Request(request) if request.method == method => request,
        other => panic!("expected a `{method}` request, got {other:?}"),
    }
}

/// The next message, which must be a notification for `method`.
pub fn expect_notification(peer: &MemoryPeer, method: &str) -> Notification {
    match next_message(peer) {
        Message::Notification(notification) if notification.method == method => notification,
        other => panic!("expected a `{method}` notification, got {other:?}"),
    }
}

/// The params of a request, `Value::Null` when absent.
pub fn params(request: &Request) -> Value {
    request.params.clone().unwrap_or(Value::Null)
}

// ---- answering ----

/// Answers a request with a result.
pub fn answer(peer: &MemoryPeer, id: &RequestId, result: Value) {
    peer.send(&Message::Response(Response::ok(id.clone(), result)));
}

/// Answers a request with an error object.
pub fn answer_error(peer: &MemoryPeer, id: &RequestId, error: ErrorObject) {
    peer.send(&Message::Response(Response::error(Some(id.clone()), error)));
}

/// Sends a notification to the client.
pub fn notify(peer: &MemoryPeer, method: &str, params: Value) {
    let params = (!params.is_null()).then_some(params);
    peer.send(&Message::Notification(Notification {
        method: method.to_owned(),
        params,
    }));
}

/// Reads the next request, checks its method, answers it with `result`, and returns it.
pub fn serve(peer: &MemoryPeer, method: &str, result: Value) -> Request {
    let request = expect_request(peer, method);
    answer(peer, &request.id, result);
    request
}

/// The result of `initialize` choosing `version`.
pub fn initialize_result(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": true}, "logging": {}},
        "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION, "title": "Memory"},
        "instructions": INSTRUCTIONS,
    })
}

/// The result of `server/discover` offering `versions`.
pub fn discover_result(versions: &[&str]) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": versions,
        "capabilities": {"tools": {"listChanged": true}, "prompts": {}},
        "instructions": INSTRUCTIONS,
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION}},
    })
}

/// Plays the server's part of the handshake, choosing `version`; returns the `initialize`
/// params.
pub fn serve_handshake(peer: &MemoryPeer, version: &str) -> Value {
    let request = serve(peer, "initialize", initialize_result(version));
    expect_notification(peer, "notifications/initialized");
    params(&request)
}

/// Plays a 2026-07-28 server's `server/discover`; returns its params.
pub fn serve_discover(peer: &MemoryPeer) -> Value {
    let request = serve(
        peer,
        "server/discover",
        discover_result(&["2025-11-25", STATELESS_VERSION]),
    );
    params(&request)
}

/// Asserts that request params carry the 2026-07-28 `_meta` stamp with `capabilities`.
pub fn assert_stamped(params: &Value, capabilities: &Value) {
    let meta = &params["_meta"];
    assert_eq!(meta[META_PROTOCOL_VERSION], STATELESS_VERSION, "{params}");
    assert_eq!(&meta[META_CLIENT_CAPABILITIES], capabilities, "{params}");
}

// ---- connecting ----

/// Connects a client with `config` while `script` plays the server on its own thread; returns
/// the outcome of the connect, the peer, and what the script returned.
pub fn connect_scripted<T: Send>(
    config: McpConfig,
    script: impl FnOnce(&MemoryPeer) -> T + Send,
) -> (Result<McpClient>, MemoryPeer, T) {
    let (transport, peer) = MemoryTransport::pair();
    let (client, out) = thread::scope(|scope| {
        let server = scope.spawn(|| script(&peer));
        let client = McpClient::connect(transport, config);
        (client, server.join().expect("the server script"))
    });
    (client, peer, out)
}

/// A client connected through the handshake (2025-11-25), in Legacy mode.
pub fn connect_legacy(config: McpConfig) -> (McpClient, MemoryPeer) {
    let (client, peer, _) = connect_scripted(config.mode(ProtocolMode::Legacy), |peer| {
        serve_handshake(peer, "2025-11-25")
    });
    (client.expect("connect"), peer)
}

/// A client connected to a 2026-07-28 server, in Modern mode.
pub fn connect_modern(config: McpConfig) -> (McpClient, MemoryPeer) {
    let (client, peer, _) = connect_scripted(config.mode(ProtocolMode::Modern), |peer| {
        serve_discover(peer)
    });
    (client.expect("connect"), peer)
}

/// Runs `call` on its own thread while `serve` plays the server on this one; returns both
/// outcomes.
pub fn exchange<T: Send, U>(
    peer: &MemoryPeer,
    call: impl FnOnce() -> T + Send,
    serve: impl FnOnce(&MemoryPeer) -> U,
) -> (T, U) {
    thread::scope(|scope| {
        let caller = scope.spawn(call);
        let served = serve(peer);
        (caller.join().expect("the calling thread"), served)
    })
}

/// Checks the end state of every in-memory test: nothing in flight, `close()` works, the
/// client sent nothing the script did not read, and later calls fail with `Closed`.
pub fn finish(client: &McpClient, peer: &MemoryPeer) {
    let rpc = client.rpc().expect("a live session");
    assert_eq!(rpc.stats().in_flight, 0, "requests left in flight");
    client.close().expect("close");
    assert!(rpc.is_closed());
    // The transport is closed: what is left in the queue is everything the script missed.
    if let Some(line) = peer.recv_line(SOON) {
        panic!("the client sent something the server script did not expect: {line}");
    }
    let error = client.ping().expect_err("a call after close");
    assert!(error.is_closed(), "{error:?}");
}

// ---- tools ----

/// A tool definition with an object input schema.
pub fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}

/// The `add` tool with an output schema requiring a numeric `sum`.
pub fn add_tool() -> Value {
    json!({
        "name": "add",
        "description": "Adds two numbers.",
        "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
        "outputSchema": {"type": "object", "required": ["sum"], "properties": {"sum": {"type": "number"}}},
    })
}

/// Answers one `tools/list` with `tools` and no next page.
pub fn serve_tools(peer: &MemoryPeer, tools: Value) -> Request {
    serve(peer, "tools/list", json!({"tools": tools}))
}

/// The names of a tool list.
pub fn names(tools: &[toolwire::Tool]) -> Vec<String> {
    tools.iter().map(|tool| tool.name.clone()).collect()
}

// ---- interop peers ----

/// The environment of the installed interop peers (tests/peers/install.sh), for a test that
/// needs them. Such a test is `#[ignore = "needs the MCP peers: …"]`, so a plain `cargo test`
/// reports it as ignored; it runs under `cargo test -- --ignored` (as CI runs it), and then the
/// peers must be there: `TOOLWIRE_PEERS_DIR=DIR` (after `bash tests/peers/install.sh DIR`), or
/// `TOOLWIRE_PEERS=1` with the variables of peers.env in the environment.
///
/// # Panics
///
/// When neither variable is set, or the folder has no readable peers.env: a peer test that was
/// asked to run fails, saying what to set, rather than passing without having run.
pub fn peers(test: &str) -> Peers {
    let asked = std::env::var("TOOLWIRE_PEERS").is_ok_and(|value| value == "1")
        || std::env::var_os("TOOLWIRE_PEERS_DIR").is_some();
    assert!(
        asked,
        "{test} needs the MCP peers and was run without them: set TOOLWIRE_PEERS_DIR=DIR after \
         `bash tests/peers/install.sh DIR` (or TOOLWIRE_PEERS=1 with the variables of \
         peers.env); a plain `cargo test` leaves this test ignored"
    );
    let mut vars = HashMap::new();
    if let Some(dir) = std::env::var_os("TOOLWIRE_PEERS_DIR") {
        let file = Path::new(&dir).join("peers.env");
        let text = std::fs::read_to_string(&file).unwrap_or_else(|error| {
            panic!(
                "TOOLWIRE_PEERS_DIR is set but {} cannot be read ({error}); run \
                 `bash tests/peers/install.sh {}`",
                file.display(),
                Path::new(&dir).display()
            )
        });
        vars.extend(parse_env_file(&text));
    }
    // Variables in the environment win over the file.
    for (key, value) in std::env::vars() {
        if key.starts_with("TOOLWIRE_") {
            vars.insert(key, value);
        }
    }
    Peers { vars }
}

/// The peers' paths, by their peers.env names.
pub struct Peers {
    vars: HashMap<String, String>,
}

impl Peers {
    /// The path named by `key`, which must exist.
    ///
    /// # Panics
    ///
    /// When the variable is unset or names nothing: the peers were asked for and are missing.
    pub fn path(&self, key: &str) -> PathBuf {
        let value = self.vars.get(key).unwrap_or_else(|| {
            panic!("the interop peers were asked for but {key} is not set (see tests/peers/install.sh)")
        });
        let path = PathBuf::from(value);
        assert!(
            path.exists(),
            "the interop peers were asked for but {key}={} does not exist",
            path.display()
        );
        path
    }

    /// The Python server script: `TOOLWIRE_PYSERVER`, else the one in this repository.
    pub fn py_server(&self) -> PathBuf {
        if self.vars.contains_key("TOOLWIRE_PYSERVER") {
            return self.path("TOOLWIRE_PYSERVER");
        }
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_server.py")
    }
}

/// Reads `KEY=VALUE` lines as written by install.sh (`printf %q` quoting of plain paths).
pub fn parse_env_file(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.trim().to_owned(), unquote(value.trim())))
        .collect()
}

/// Undoes simple shell quoting: surrounding single or double quotes, backslash escapes.
fn unquote(value: &str) -> String {
    if let Some(inner) = value
        .strip_prefix('\'')
        .and_then(|rest| rest.strip_suffix('\''))
    {
        return inner.to_owned();
    }
    let value = value
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or(value);
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}
