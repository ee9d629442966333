//! toolwire's own MCP client against toolwire's server, in-process over Streamable HTTP and
//! through the example over stdio, in both protocol eras: the listing as served, a structured
//! result checked by the client against the served output schema, progress, a sampling round
//! trip (a request back to the client on the handshake era, an input round on 2026-07-28),
//! and a cancellation the handler sees.

use crate::support::server as support;

use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use toolwire::harness::LocalTool;
use toolwire::mcp::Era as ClientEra;
use toolwire::server::{CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig};
use toolwire::{CallOptions, Error, HttpConfig, McpClient, McpConfig, ProtocolMode, StdioConfig};

use support::{example, LONG};

/// A server whose `block` tool tells the test when it saw its cancellation.
fn server(cancelled: mpsc::Sender<()>) -> Server {
    let server = Server::new(ServerConfig::new("toolwire-test", "1")).expect("server");
    server
        .add_tool(
            LocalTool::with_context(
                "add",
                "Adds.",
                json!({"type": "object", "required": ["a", "b"],
                       "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
                |_, args| {
                    let sum = args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap();
                    Ok(CallToolResult::structured(json!({"sum": sum})))
                },
            )
            .output_schema(json!({"type": "object", "required": ["sum"],
                                  "properties": {"sum": {"type": "integer"}}})),
        )
        .unwrap();
    server
        .add_tool(LocalTool::with_context(
            "steps",
            "Reports three steps.",
            json!({"type": "object"}),
            |context, _| {
                for step in 1..=3 {
                    context.report_progress(f64::from(step), Some(3.0), None);
                }
                Ok(CallToolResult::from_text("done"))
            },
        ))
        .unwrap();
    let seen = std::sync::Mutex::new(cancelled);
    server
        .add_tool(LocalTool::with_context(
            "block",
            "Waits to be cancelled.",
            json!({"type": "object"}),
            move |context, _| {
                while !context.is_cancelled() {
                    std::thread::sleep(Duration::from_millis(2));
                }
                let _ = seen.lock().unwrap().send(());
                Ok(CallToolResult::from_text("cancelled"))
            },
        ))
        .unwrap();
    server
        .add_tool(LocalTool::with_context(
            "ask",
            "Asks the client's model.",
            json!({"type": "object"}),
            |context, _| {
                let answer = context.request_input(
                "question",
                "sampling/createMessage",
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}],
                       "maxTokens": 5}),
            )?;
                Ok(CallToolResult::from_text(format!(
                    "model said {}",
                    answer["content"]["text"].as_str().unwrap_or("")
                )))
            },
        ))
        .unwrap();
    server
}

fn config(mode: ProtocolMode) -> McpConfig {
    McpConfig::default().mode(mode).sampling(|params: &Value| {
        assert_eq!(params["maxTokens"], 5);
        Ok(json!({"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "test"}))
    })
}

/// Everything the client does against a server, in one era.
fn exercise(client: &McpClient, era: ClientEra, cancelled: &mpsc::Receiver<()>) {
    assert_eq!(client.session_info().expect("session").era, era);
    let tools = client.list_tools().expect("tools");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["add", "steps", "block", "ask"]);
    assert!(tools[0].has_output_schema());
    let sum = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .expect("add");
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    let reports = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&reports);
    let steps = client
        .call_tool_with(
            "steps",
            json!({}),
            CallOptions::new()
                .on_progress(move |progress| seen.lock().unwrap().push(progress.progress)),
        )
        .expect("steps");
    assert_eq!(steps.text(), "done");
    assert_eq!(*reports.lock().unwrap(), [1.0, 2.0, 3.0]);
    let asked = client.call_tool("ask", json!({})).expect("ask");
    assert_eq!(asked.text(), "model said 4");
    let call = client
        .start_tool("block", json!({}), CallOptions::new())
        .expect("block");
    std::thread::sleep(Duration::from_millis(50));
    assert!(call.cancel());
    match call.wait() {
        Err(Error::Cancelled { .. }) => {}
        other => panic!("expected Cancelled, got {other:?}"),
    }
    cancelled
        .recv_timeout(LONG)
        .expect("the handler saw its cancellation");
    // The connection goes on.
    assert_eq!(
        client
            .call_tool("add", json!({"a": 1, "b": 1}))
            .unwrap()
            .structured_content,
        Some(json!({"sum": 2}))
    );
}

#[test]
fn toolwire_client_over_http_in_both_eras() {
    let (tx, rx) = mpsc::channel();
    let server = server(tx);
    let http = HttpServer::bind(&server, HttpServerConfig::new()).expect("bind");
    for (mode, era) in [
        (ProtocolMode::Legacy, ClientEra::Handshake),
        (ProtocolMode::Modern, ClientEra::Stateless),
        (ProtocolMode::Auto, ClientEra::Stateless),
    ] {
        let client =
            McpClient::connect_http(HttpConfig::new(http.url()), config(mode)).expect("connect");
        exercise(&client, era, &rx);
        client.close().expect("close");
    }
    assert!(
        support::eventually(support::LONG, || http.sessions() == 0),
        "the DELETE ended the session"
    );
    http.close().unwrap();
    assert!(server.wait_idle(LONG), "a handler is still running");
}

#[test]
fn toolwire_client_over_stdio_in_both_eras() {
    let server = example("http_server");
    for (mode, era) in [
        (ProtocolMode::Legacy, ClientEra::Handshake),
        (ProtocolMode::Auto, ClientEra::Stateless),
    ] {
        let stdio = StdioConfig::new(&server).arg("--stdio");
        let config = McpConfig::default().mode(mode).sampling(|_| {
            Ok(json!({"role": "assistant", "content": {"type": "text", "text": "brief"}, "model": "t"}))
        });
        let client = McpClient::connect_stdio(stdio, config).expect("connect");
        assert_eq!(client.session_info().unwrap().era, era);
        let summary = client
            .call_tool("summarize", json!({"text": "long"}))
            .expect("summarize");
        assert_eq!(summary.text(), "summary: brief");
        let added = client
            .call_tool("add", json!({"a": 1.5, "b": 2}))
            .expect("add");
        assert_eq!(added.structured_content, Some(json!({"sum": 3.5})));
        let bad = client
            .call_tool("echo", json!({"message": 5}))
            .expect("echo");
        assert!(
            bad.is_error && bad.text().contains("input schema"),
            "{}",
            bad.text()
        );
        client.close().expect("close");
    }
}
