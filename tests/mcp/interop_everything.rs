//! Interop with the official `@modelcontextprotocol/server-everything` 2026.8.31 over stdio.
//!
//! The tests that need the peers are `#[ignore]`d (a plain `cargo test` lists them as
//! ignored); `TOOLWIRE_PEERS_DIR=DIR cargo test --features cli --tests -- --ignored` runs them
//! after `bash tests/peers/install.sh DIR`, and run that way without the peers they fail.
//!
//! Some tests run the server behind two `tee`s, to see on the wire what the client sent
//! (`notifications/cancelled`) and in which order the server answered.
use crate::support::mcp as support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::unbounded;
use serde_json::{json, Value};
use support::{eventually, parse_env_file, peers, Peers, SOON};
use toolwire::jsonrpc::CallEvent;
use toolwire::mcp::McpDialect;
use toolwire::mcp::{Era, Root, HANDSHAKE_VERSIONS};
use toolwire::{
    CallOptions, ClientConfig, Content, Error, McpClient, McpConfig, ProtocolMode, StdioConfig,
};

/// The 13 tools server-everything lists to a client that declares no capabilities.
const TOOLS: [&str; 13] = [
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "simulate-research-query",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
];

const LONG_RUNNING: &str = "trigger-long-running-operation";

fn everything(peers: &Peers) -> StdioConfig {
    StdioConfig::new(peers.path("TOOLWIRE_NODE"))
        .arg(peers.path("TOOLWIRE_EVERYTHING_JS"))
        .arg("stdio")
}

fn config(mode: ProtocolMode) -> McpConfig {
    let mut config = McpConfig::default().mode(mode);
    config = config.rpc(
        ClientConfig::default()
            .dialect(McpDialect)
            .request_timeout(SOON),
    );
    config
}

fn connect(stdio: StdioConfig, config: McpConfig) -> McpClient {
    McpClient::connect_stdio(stdio, config).expect("connect to server-everything")
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

fn call(client: &McpClient, name: &str, arguments: Value) -> toolwire::CallToolResult {
    let result = client
        .call_tool_with(name, arguments, CallOptions::new())
        .unwrap_or_else(|error| panic!("{name}: {error}"));
    assert!(!result.is_error, "{name}: {:?}", result.raw);
    result
}

/// Records both directions of a stdio server's traffic in files, through `tee`.
struct Tap {
    dir: PathBuf,
}

impl Tap {
    fn new(name: &str) -> Tap {
        let dir = std::env::temp_dir().join(format!("toolwire-tap-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("tap dir");
        Tap { dir }
    }

    fn stdio(&self, peers: &Peers) -> StdioConfig {
        let script = r#"tee "$1" | "$2" "$3" stdio | tee "$4""#;
        StdioConfig::new("/bin/sh").args([
            "-c".into(),
            script.into(),
            "tap".into(),
            self.dir.join("in").into_os_string(),
            peers.path("TOOLWIRE_NODE").into_os_string(),
            peers.path("TOOLWIRE_EVERYTHING_JS").into_os_string(),
            self.dir.join("out").into_os_string(),
        ])
    }

    /// The messages the client sent, as far as the tap has written them.
    fn sent(&self) -> Vec<Value> {
        read_lines(&self.dir.join("in"))
    }

    /// The messages the server sent, as far as the tap has written them.
    fn received(&self) -> Vec<Value> {
        read_lines(&self.dir.join("out"))
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn read_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

#[test]
fn peers_env_lines_are_unquoted() {
    let parsed = parse_env_file(
        "# comment\nTOOLWIRE_A=/tmp/x\nTOOLWIRE_B=/tmp/with\\ space\nTOOLWIRE_C='/q'\n",
    );
    assert_eq!(
        parsed,
        [
            ("TOOLWIRE_A".to_owned(), "/tmp/x".to_owned()),
            ("TOOLWIRE_B".to_owned(), "/tmp/with space".to_owned()),
            ("TOOLWIRE_C".to_owned(), "/q".to_owned()),
        ]
    );
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn each_handshake_version_is_negotiated_when_pinned() {
    let peers = peers("each_handshake_version_is_negotiated_when_pinned");
    for version in HANDSHAKE_VERSIONS {
        let client = connect(
            everything(&peers),
            config(ProtocolMode::Legacy).handshake_version(*version),
        );
        let info = client.session_info().expect("session info");
        assert_eq!(info.protocol_version, *version);
        assert_eq!(info.era, Era::Handshake);
        assert_eq!(info.server.name, "mcp-servers/everything");
        assert!(info.instructions.is_some());
        assert!(info.has_capability("tools"));
        finish(&client);
    }
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn auto_falls_back_after_method_not_found() {
    let peers = peers("auto_falls_back_after_method_not_found");
    let tap = Tap::new("auto");
    let mut auto = config(ProtocolMode::Auto);
    auto = auto.discover_timeout(Duration::from_secs(60));
    let client = connect(tap.stdio(&peers), auto);
    // The fallback followed the server's error (checked on the wire below), not the probe's
    // bound: a probe left to its deadline would have been counted as a timeout.
    assert_eq!(client.rpc().expect("rpc").stats().timeouts, 0);
    let info = client.session_info().expect("session info");
    assert_eq!(info.era, Era::Handshake);
    assert_eq!(info.protocol_version, "2025-11-25");
    client.ping().expect("ping");

    let sent = tap.sent();
    let methods: Vec<&str> = sent
        .iter()
        .filter_map(|message| message["method"].as_str())
        .collect();
    assert_eq!(
        methods[..3],
        ["server/discover", "initialize", "notifications/initialized"],
        "{methods:?}"
    );
    let discover_id = &sent[0]["id"];
    let refused = tap
        .received()
        .into_iter()
        .find(|message| &message["id"] == discover_id)
        .expect("the answer to server/discover");
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    finish(&client);
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn all_thirteen_tools_are_listed() {
    let peers = peers("all_thirteen_tools_are_listed");
    let client = connect(everything(&peers), config(ProtocolMode::Legacy));
    let tools = client.list_tools().expect("tools");
    let names: BTreeSet<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, TOOLS.into_iter().collect(), "{names:?}");
    assert_eq!(tools.len(), 13);
    let structured = tools
        .iter()
        .find(|tool| tool.name == "get-structured-content")
        .expect("get-structured-content");
    assert!(structured.has_output_schema());
    finish(&client);
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn tools_return_typed_content() {
    let peers = peers("tools_return_typed_content");
    let client = connect(everything(&peers), config(ProtocolMode::Legacy));

    assert_eq!(
        call(&client, "echo", json!({"message": "hello"})).text(),
        "Echo: hello"
    );
    assert_eq!(
        call(&client, "get-sum", json!({"a": 2, "b": 3})).text(),
        "The sum of 2 and 3 is 5."
    );

    // Checked against the tool's outputSchema before it is returned.
    let weather = call(
        &client,
        "get-structured-content",
        json!({"location": "Chicago"}),
    );
    let structured = weather.structured_content.expect("structuredContent");
    assert!(structured["temperature"].is_number(), "{structured}");
    assert!(structured["conditions"].is_string(), "{structured}");
    assert!(structured["humidity"].is_number(), "{structured}");

    let image = call(&client, "get-tiny-image", json!({}));
    let png = image
        .content
        .iter()
        .find_map(|block| match block {
            Content::Image { data, mime_type } => Some((data, mime_type)),
            _ => None,
        })
        .expect("an image block");
    assert_eq!(png.1, "image/png");
    assert!(png.0.starts_with("iVBORw0KGgo"), "base64 PNG data");

    let links = call(&client, "get-resource-links", json!({"count": 2}));
    let uris: Vec<&str> = links
        .content
        .iter()
        .filter_map(|block| match block {
            Content::ResourceLink { uri, .. } => Some(uri.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(uris.len(), 2, "{:?}", links.content);
    assert!(
        uris.iter().all(|uri| uri.starts_with("demo://")),
        "{uris:?}"
    );

    let text = call(
        &client,
        "get-resource-reference",
        json!({"resourceType": "Text", "resourceId": 1}),
    );
    assert!(
        text.content.iter().any(|block| matches!(
            block,
            Content::Resource { uri, text: Some(_), blob: None, .. } if uri.starts_with("demo://")
        )),
        "{:?}",
        text.content
    );
    let blob = call(
        &client,
        "get-resource-reference",
        json!({"resourceType": "Blob", "resourceId": 2}),
    );
    assert!(
        blob.content.iter().any(|block| matches!(
            block,
            Content::Resource {
                text: None,
                blob: Some(_),
                ..
            }
        )),
        "{:?}",
        blob.content
    );

    let missing = client
        .call_tool_with("no-such-tool", json!({}), CallOptions::new())
        .expect("an unknown tool is a tool error");
    assert!(missing.is_error);
    finish(&client);
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn long_running_operation_reports_progress_in_order() {
    let peers = peers("long_running_operation_reports_progress_in_order");
    let client = connect(everything(&peers), config(ProtocolMode::Legacy));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let result = client
        .call_tool_with(
            LONG_RUNNING,
            json!({"duration": 1, "steps": 4}),
            CallOptions::new().on_progress({
                let seen = Arc::clone(&seen);
                move |progress| {
                    seen.lock()
                        .unwrap()
                        .push((progress.progress, progress.total))
                }
            }),
        )
        .expect("the operation");
    assert!(result.text().contains("Long running operation completed"));
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (1.0, Some(4.0)),
            (2.0, Some(4.0)),
            (3.0, Some(4.0)),
            (4.0, Some(4.0))
        ]
    );
    finish(&client);
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn reset_on_progress_outlasts_the_timeout_and_without_it_the_call_times_out() {
    let peers = peers("reset_on_progress");
    const TIMEOUT: Duration = Duration::from_millis(800);
    let client = connect(everything(&peers), config(ProtocolMode::Legacy));
    // 2 s in 8 steps: a report every 250 ms, the whole far past the timeout.
    let arguments = json!({"duration": 2, "steps": 8});
    let started = Instant::now();
    let result = client
        .call_tool_with(
            LONG_RUNNING,
            arguments.clone(),
            CallOptions::new().timeout(TIMEOUT).reset_on_progress(true),
        )
        .expect("progress keeps the call alive");
    assert!(result.text().contains("completed"), "{}", result.text());
    // It outlived the timeout by far.
    assert!(started.elapsed() >= 2 * TIMEOUT);

    let started = Instant::now();
    let error = client
        .call_tool_with(
            LONG_RUNNING,
            arguments,
            CallOptions::new().timeout(TIMEOUT).want_progress(true),
        )
        .expect_err("without reset the call times out");
    assert!(error.is_timeout(), "{error:?}");
    assert!(started.elapsed() >= TIMEOUT);
    // The client stays usable while the server finishes the abandoned operation.
    assert_eq!(
        call(&client, "echo", json!({"message": "after"})).text(),
        "Echo: after"
    );
    finish(&client);
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn cancel_mid_run_sends_cancelled_and_later_progress_is_harmless() {
    let peers = peers("cancel_mid_run");
    let tap = Tap::new("cancel");
    let client = connect(tap.stdio(&peers), config(ProtocolMode::Legacy));
    let steps = 6;
    let mut running = client
        .start_tool(
            LONG_RUNNING,
            json!({"duration": 1.5, "steps": steps}),
            CallOptions::new().want_progress(true),
        )
        .expect("start");
    let id = running.handle().id().to_value();
    match running.handle().receiver().recv_timeout(SOON) {
        Ok(CallEvent::Progress(progress)) => assert_eq!(progress.progress, 1.0),
        other => panic!("expected progress, got {other:?}"),
    }
    assert!(running.cancel());
    assert!(matches!(running.wait(), Err(Error::Cancelled { .. })));

    // server-everything keeps reporting after the cancel (and never answers): wait until the
    // last report has gone by on the wire, then make sure the client took it in quietly.
    let last_report = |message: &Value| {
        message["method"] == "notifications/progress"
            && message["params"]["progressToken"] == id
            && message["params"]["progress"] == steps
    };
    assert!(
        eventually(SOON, || tap.received().iter().any(last_report)),
        "the server's last report"
    );
    // The echo's reply comes after that report on the pipe, so the client has read it.
    assert_eq!(
        call(&client, "echo", json!({"message": "x"})).text(),
        "Echo: x"
    );
    let rpc = client.rpc().expect("rpc");
    assert!(!rpc.is_closed());
    assert_eq!(rpc.stats().cancels, 1);
    assert_eq!(rpc.stats().late_responses, 0);

    let cancelled: Vec<Value> = tap
        .sent()
        .into_iter()
        .filter(|message| message["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0]["params"]["requestId"], id);
    finish(&client);
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn roots_list_reaches_the_roots_handler() {
    let peers = peers("roots_list_reaches_the_roots_handler");
    let (asked_tx, asked) = unbounded();
    let with_roots = config(ProtocolMode::Legacy).roots(move || {
        let _ = asked_tx.send(());
        vec![Root {
            uri: "file:///srv/toolwire-root".into(),
            name: Some("toolwire-root".into()),
        }]
    });
    let client = connect(everything(&peers), with_roots);
    // The server asks by itself soon after the handshake.
    asked
        .recv_timeout(SOON)
        .expect("roots/list reached the handler");
    let tools = client.list_tools().expect("tools");
    assert!(tools.iter().any(|tool| tool.name == "get-roots-list"));
    let roots = call(&client, "get-roots-list", json!({}));
    assert!(
        roots.text().contains("file:///srv/toolwire-root"),
        "{}",
        roots.text()
    );
    finish(&client);
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn list_changed_before_the_tools_list_reply_is_handled() {
    let peers = peers("list_changed_before_the_tools_list_reply_is_handled");
    let tap = Tap::new("list-changed");
    let client = connect(tap.stdio(&peers), config(ProtocolMode::Legacy));
    // Straight after the handshake: server-everything announces its tools as changed then.
    let first = client.list_tools().expect("tools");
    assert_eq!(first.len(), 13);
    // The ping's reply follows the list's on the pipe, so the tap has written the list's.
    client.ping().expect("ping");
    let received = tap.received();
    let position = |wanted: &dyn Fn(&Value) -> bool| received.iter().position(wanted);
    let changed = position(&|message| message["method"] == "notifications/tools/list_changed");
    let reply =
        position(&|message| message["result"]["tools"].is_array()).expect("the tools/list reply");
    let lists_sent = || {
        tap.sent()
            .iter()
            .filter(|message| message["method"] == "tools/list")
            .count()
    };
    match changed {
        Some(changed) if changed < reply => {
            // The list may be stale already: it was not kept, so the next call asks again.
            let second = client.list_tools().expect("tools again");
            assert_eq!(second.len(), 13);
            // The first tee passes each line on before it writes it to its file, so the file
            // may lag the server's reply a moment: wait for the count, then check it.
            eventually(SOON, || lists_sent() >= 2);
            assert_eq!(lists_sent(), 2);
        }
        _ => eprintln!(
            "note: server-everything did not send list_changed before the tools/list reply \
             this time; nothing to check"
        ),
    }
    finish(&client);
}
