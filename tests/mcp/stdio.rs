//! The MCP client against the bundled `tool_server` over stdio: the Auto fallback, pinned
//! handshake versions, tools, progress, reset-on-progress, cancellation, and the server's
//! requests and log messages.
use crate::support as common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{eventually, tool_server_path, SOON};
use crossbeam_channel::unbounded;
use serde_json::{json, Value};
use toolwire::jsonrpc::CallEvent;
use toolwire::mcp::McpDialect;
use toolwire::mcp::{ElicitResult, Era, Root, HANDSHAKE_VERSIONS};
use toolwire::{CallOptions, ClientConfig, Error, McpClient, McpConfig, ProtocolMode, StdioConfig};

fn connect(config: McpConfig) -> McpClient {
    McpClient::connect_stdio(StdioConfig::new(tool_server_path()), config)
        .expect("connect to tool_server")
}

fn legacy() -> McpConfig {
    let mut config = McpConfig::default().mode(ProtocolMode::Legacy);
    config = config.rpc(
        ClientConfig::default()
            .dialect(McpDialect)
            .request_timeout(SOON),
    );
    config
}

/// Nothing in flight, nothing skipped, then `close()`; later calls fail with `Closed`.
fn finish(client: &McpClient) {
    let rpc = client.rpc().expect("a live session");
    let stats = rpc.stats();
    assert_eq!(stats.in_flight, 0, "requests left in flight");
    assert_eq!(stats.skipped_lines, 0);
    client.close().expect("close");
    assert!(rpc.is_closed());
    let error = client.ping().expect_err("a call after close");
    assert!(error.is_closed(), "{error:?}");
}

/// What `ask_client` reports the client answered.
fn ask_client(client: &McpClient, method: &str, params: Value) -> Value {
    client
        .request(
            "ask_client",
            json!({"method": method, "params": params}),
            CallOptions::new(),
        )
        .expect("ask_client")
}

#[test]
fn auto_falls_back_to_the_handshake() {
    let mut config = McpConfig::default();
    config = config.rpc(
        ClientConfig::default()
            .dialect(McpDialect)
            .request_timeout(SOON),
    );
    assert_eq!(config.get_mode(), ProtocolMode::Auto);
    let server = StdioConfig::new(tool_server_path());
    let client = McpClient::connect_stdio(server, config).expect("connect to tool_server");
    // tool_server refuses `server/discover`, and the fallback followed that refusal: a probe
    // left to its 10 s bound would have been counted as a timeout.
    assert_eq!(client.rpc().expect("rpc").stats().timeouts, 0);
    let info = client.session_info().expect("session info");
    assert_eq!(info.era, Era::Handshake);
    assert_eq!(info.protocol_version, "2025-11-25");
    assert_eq!(info.server.name, "toolwire-tool-server");
    assert_eq!(info.server.version, "0.1.0");
    assert!(info.instructions.is_some());
    assert!(info.has_capability("tools"));
    finish(&client);
}

#[test]
fn each_handshake_version_is_negotiated_when_pinned() {
    for version in HANDSHAKE_VERSIONS {
        let client = connect(legacy().handshake_version(*version));
        let info = client.session_info().expect("session info");
        assert_eq!(info.protocol_version, *version);
        assert_eq!(info.era, Era::Handshake);
        finish(&client);
    }
}

#[test]
fn the_nine_tools_are_listed_and_add_is_validated() {
    let client = connect(legacy());
    let tools = client.list_tools().expect("tools");
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "add",
            "big_text",
            "crash",
            "echo",
            "fail",
            "garbage",
            "hang",
            "sleep",
            "stderr_flood"
        ]
    );
    let add = tools.iter().find(|tool| tool.name == "add").expect("add");
    assert!(add.has_output_schema());
    assert_eq!(add.annotations.read_only_hint, Some(true));

    let sum = client
        .call_tool_with("add", json!({"a": 2, "b": 40}), CallOptions::new())
        .expect("add");
    assert!(!sum.is_error);
    assert_eq!(sum.structured_content, Some(json!({"sum": 42})));
    assert_eq!(sum.text(), r#"{"sum":42}"#);

    let echoed = client
        .call_tool_with("echo", json!({"message": "hello"}), CallOptions::new())
        .expect("echo");
    assert_eq!(echoed.text(), "hello");

    let failed = client
        .call_tool_with("fail", json!({"message": "nope"}), CallOptions::new())
        .expect("a tool error is a result");
    assert!(failed.is_error);
    assert_eq!(failed.text(), "nope");
    let unknown = client
        .call_tool_with("no_such_tool", json!({}), CallOptions::new())
        .expect("an unknown tool is a tool error");
    assert!(unknown.is_error);
    finish(&client);
}

#[test]
fn progress_reaches_the_callback_in_order_on_the_callers_thread() {
    let client = connect(legacy());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let caller = std::thread::current().id();
    let result = client
        .call_tool_with(
            "sleep",
            json!({"ms": 200, "progress": 4}),
            CallOptions::new().on_progress({
                let seen = Arc::clone(&seen);
                move |progress| {
                    assert_eq!(std::thread::current().id(), caller);
                    seen.lock()
                        .unwrap()
                        .push((progress.progress, progress.total));
                }
            }),
        )
        .expect("sleep");
    assert_eq!(result.text(), "slept 200 ms");
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
fn progress_resets_the_timeout_only_when_asked() {
    const TIMEOUT: Duration = Duration::from_millis(300);
    let client = connect(legacy());
    // 1 s of work reporting every 100 ms: longer than the timeout, never silent for as long.
    let long = json!({"ms": 1000, "progress": 10});
    let started = Instant::now();
    let result = client
        .call_tool_with(
            "sleep",
            long.clone(),
            CallOptions::new().timeout(TIMEOUT).reset_on_progress(true),
        )
        .expect("reset on progress keeps it alive");
    assert_eq!(result.text(), "slept 1000 ms");
    assert!(started.elapsed() >= Duration::from_millis(1000));

    let started = Instant::now();
    let error = client
        .call_tool_with(
            "sleep",
            long,
            CallOptions::new().timeout(TIMEOUT).want_progress(true),
        )
        .expect_err("without reset it times out");
    assert!(error.is_timeout(), "{error:?}");
    assert!(started.elapsed() >= TIMEOUT);
    let rpc = client.rpc().expect("rpc");
    assert_eq!(rpc.stats().timeouts, 1);
    finish(&client);
}

#[test]
fn cancel_mid_run_tells_the_server_and_later_progress_is_ignored() {
    let client = connect(legacy());
    let mut call = client
        .start_tool(
            "sleep",
            json!({"ms": 600, "progress": 6}),
            CallOptions::new().want_progress(true),
        )
        .expect("start");
    let id = call.handle().id().clone();
    // Mid-run: the first report has arrived.
    match call.handle().receiver().recv_timeout(SOON) {
        Ok(CallEvent::Progress(progress)) => assert_eq!(progress.progress, 1.0),
        other => panic!("expected progress, got {other:?}"),
    }
    assert!(call.cancel());
    match call.wait() {
        Err(Error::Cancelled { method }) => assert_eq!(method, "tools/call"),
        other => panic!("expected Cancelled, got {other:?}"),
    }
    let seen = client
        .request("cancellations", Value::Null, CallOptions::new())
        .expect("cancellations");
    assert_eq!(seen["cancelled"], json!([id.to_value()]), "{seen}");

    // tool_server keeps going: five more reports, then the answer nobody waits for. The
    // answer comes last, so once it was dropped every report before it was too.
    let rpc = client.rpc().expect("rpc");
    assert!(
        eventually(SOON, || rpc.stats().late_responses == 1),
        "{:?}",
        rpc.stats()
    );
    assert!(!rpc.is_closed());
    let later = client
        .call_tool_with("echo", json!({"message": "still here"}), CallOptions::new())
        .expect("the client stays usable");
    assert_eq!(later.text(), "still here");
    assert_eq!(rpc.stats().cancels, 1);
    finish(&client);
}

#[test]
fn roots_list_reaches_the_roots_handler() {
    let client = connect(legacy().roots(|| {
        vec![
            Root {
                uri: "file:///work".into(),
                name: Some("work".into()),
            },
            Root {
                uri: "file:///tmp".into(),
                name: None,
            },
        ]
    }));
    let answered = ask_client(&client, "roots/list", Value::Null);
    assert_eq!(
        answered,
        json!({"result": {"roots": [{"uri": "file:///work", "name": "work"}, {"uri": "file:///tmp"}]}})
    );
    finish(&client);
}

#[test]
fn roots_list_without_a_handler_is_method_not_found_but_ping_is_answered() {
    let client = connect(legacy());
    let answered = ask_client(&client, "roots/list", Value::Null);
    assert_eq!(answered["error"]["code"], -32601, "{answered}");
    let answered = ask_client(&client, "sampling/createMessage", json!({"messages": []}));
    assert_eq!(answered["error"]["code"], -32601, "{answered}");
    let answered = ask_client(&client, "ping", Value::Null);
    assert_eq!(answered, json!({"result": {}}));
    finish(&client);
}

#[test]
fn elicitation_is_accepted_with_the_schema_defaults() {
    let (asked_tx, asked) = unbounded();
    let client = connect(legacy().elicitation(move |request| {
        let _ = asked_tx.send(request.message.clone());
        ElicitResult::accept_defaults(request)
    }));
    let answered = ask_client(
        &client,
        "elicitation/create",
        json!({
            "message": "Your details?",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                    "verified": {"type": "boolean", "default": true},
                    "nickname": {"type": "string"}
                }
            }
        }),
    );
    assert_eq!(
        answered,
        json!({"result": {"action": "accept", "content": {
            "name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true
        }}})
    );
    assert_eq!(asked.try_recv().expect("the handler ran"), "Your details?");
    finish(&client);
}

#[test]
fn sampling_reaches_the_sampling_handler() {
    let client = connect(legacy().sampling(|params| {
        Ok(json!({
            "role": "assistant",
            "content": {"type": "text", "text": format!("{} messages", params["messages"].as_array().map_or(0, Vec::len))},
            "model": "test-model",
        }))
    }));
    let answered = ask_client(
        &client,
        "sampling/createMessage",
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}),
    );
    assert_eq!(answered["result"]["content"]["text"], "1 messages");
    assert_eq!(answered["result"]["model"], "test-model");
    finish(&client);
}

#[test]
fn log_messages_reach_on_log() {
    let (logged_tx, logged) = unbounded();
    let client = connect(legacy().on_log(move |message| {
        let _ = logged_tx.send(message.clone());
    }));
    client
        .request(
            "notify_client",
            json!({"method": "notifications/message", "params": {"level": "warning", "logger": "db", "data": "x"}}),
            CallOptions::new(),
        )
        .expect("notify_client");
    let message = logged.recv_timeout(SOON).expect("the log message");
    assert_eq!(message.level, "warning");
    assert_eq!(message.logger.as_deref(), Some("db"));
    assert_eq!(message.data, json!("x"));
    finish(&client);
}
