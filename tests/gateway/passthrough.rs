//! Pass-through: progress from a backend reaches the front client only when it asked for
//! it; the front client's cancellation reaches the backend (its handler sees the flag); a
//! backend's sampling request goes to the front client whose call it serves and the answer
//! comes back; a backend's list change becomes the gateway's.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use support::{
    call, eventually, front, front_with, gateway, gateway_with, http_backend, tool_server_entry,
    url_entry, LONG,
};
use toolwire::gateway::GatewayConfig;
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, RequestContext, Server, ServerConfig};
use toolwire::{CallOptions, McpConfig, ProtocolMode};

#[test]
fn progress_reaches_the_front_client_that_asked_for_it() {
    let gateway = gateway(&[("tools", tool_server_entry())], "{}");
    let (client, connection) = front(&gateway);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let result = client
        .call_tool_with(
            "mcp__tools__sleep",
            json!({"ms": 50, "progress": 3}),
            CallOptions::new()
                .on_progress(move |progress| sink.lock().unwrap().push(progress.progress)),
        )
        .unwrap();
    assert_eq!(result.text(), "slept 50 ms");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen.windows(2).all(|pair| pair[0] < pair[1]), "{seen:?}");
    client.close().unwrap();
    connection.wait();
}

/// A backend whose tools say whether they were given a progress token, and wait for their
/// cancellation (telling the test when they start and when they see it).
fn watching_backend(events: mpsc::Sender<&'static str>) -> Server {
    let server = Server::new(ServerConfig::new("watched", "1.0")).unwrap();
    server
        .add_tool(LocalTool::with_context(
            "token",
            "Says whether progress was asked for.",
            json!({"type": "object", "properties": {}}),
            |context, _| {
                Ok(CallToolResult::from_text(
                    if RequestContext::of(context).is_some_and(|c| c.progress().is_some()) {
                        "token"
                    } else {
                        "none"
                    },
                ))
            },
        ))
        .unwrap();
    let events = Mutex::new(events);
    server
        .add_tool(LocalTool::with_context(
            "wait",
            "Waits until it is cancelled.",
            json!({"type": "object", "properties": {}}),
            move |context, _| {
                let _ = events.lock().unwrap().send("started");
                while !context.is_cancelled() {
                    std::thread::sleep(Duration::from_millis(5));
                }
                let _ = events.lock().unwrap().send("cancelled");
                Ok(CallToolResult::from_text("cancelled"))
            },
        ))
        .unwrap();
    server
}

#[test]
fn no_progress_token_is_sent_on_without_one_from_the_front() {
    let (events, _seen) = mpsc::channel();
    let backend = watching_backend(events);
    let (_http, url) = http_backend(&backend);
    let gateway = gateway(&[("watched", url_entry(&url))], "{}");
    let (client, connection) = front(&gateway);
    assert_eq!(
        call(&client, "mcp__watched__token", json!({})).text(),
        "none"
    );
    let asked = client
        .call_tool_with(
            "mcp__watched__token",
            json!({}),
            CallOptions::new().want_progress(true),
        )
        .unwrap();
    assert_eq!(asked.text(), "token");
    client.close().unwrap();
    connection.wait();
}

#[test]
fn the_front_clients_cancellation_reaches_the_backend() {
    let (events, seen) = mpsc::channel();
    let backend = watching_backend(events);
    let (_http, url) = http_backend(&backend);
    let gateway = gateway(&[("watched", url_entry(&url))], "{}");
    let (client, connection) = front(&gateway);
    let waiting = client
        .start_tool("mcp__watched__wait", json!({}), CallOptions::new())
        .unwrap();
    assert_eq!(seen.recv_timeout(LONG), Ok("started"));
    assert!(waiting.cancel());
    assert_eq!(
        seen.recv_timeout(LONG),
        Ok("cancelled"),
        "the backend never saw the cancellation"
    );
    assert!(eventually(support::LONG, || gateway.stats()["backends"]
        ["watched"]["cancelled"]
        == json!(1)));
    client.close().unwrap();
    connection.wait();
}

#[test]
fn a_backends_sampling_request_goes_to_the_front_client_and_back() {
    let backend = Server::new(ServerConfig::new("asker", "1.0")).unwrap();
    backend
        .add_tool(
            LocalTool::with_context(
                "ask",
                "Asks the client's model.",
                json!({"type": "object", "properties": {}}),
                |context, _| {
                    let answer = context.request_input(
                        "q",
                        "sampling/createMessage",
                        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}],
                               "maxTokens": 5}),
                    )?;
                    Ok(CallToolResult::from_text(answer["content"]["text"].as_str().unwrap_or("?").to_owned()))
                },
            )
            .requires("sampling"),
        )
        .unwrap();
    let (_http, url) = http_backend(&backend);
    let gateway = gateway(&[("asker", url_entry(&url))], "{}");
    let asked = Arc::new(Mutex::new(Vec::<Value>::new()));
    let record = Arc::clone(&asked);
    let (client, connection) = front_with(
        &gateway,
        McpConfig::default()
            .mode(ProtocolMode::Legacy)
            .sampling(move |params| {
                record.lock().unwrap().push(params.clone());
                Ok(json!({"role": "assistant", "model": "front-model",
                      "content": {"type": "text", "text": "four"}}))
            }),
    );
    let result = call(&client, "mcp__asker__ask", json!({}));
    assert_eq!(result.text(), "four", "{:?}", result.raw);
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["messages"][0]["content"]["text"], json!("2+2?"));
    client.close().unwrap();
    connection.wait();

    // A front client without `sampling` gets the backend's own refusal, as a tool error.
    let (plain, plain_connection) = front(&gateway);
    let refused = call(&plain, "mcp__asker__ask", json!({}));
    assert!(refused.is_error, "{:?}", refused.raw);
    plain.close().unwrap();
    plain_connection.wait();
}

#[test]
fn a_backends_list_change_becomes_the_gateways() {
    let backend = Server::new(ServerConfig::new("growing", "1.0")).unwrap();
    let tool = |name: &'static str| {
        LocalTool::with_context(
            name,
            "A tool.",
            json!({"type": "object", "properties": {}}),
            move |_, _| Ok(CallToolResult::from_text(name)),
        )
    };
    backend.add_tool(tool("first")).unwrap();
    let (_http, url) = http_backend(&backend);
    // A handshake-era session: its list changes come on the session's stream (the client
    // does not follow 2026-07-28 `subscriptions/listen`).
    let gateway = gateway_with(
        &[("growing", url_entry(&url))],
        "{}",
        GatewayConfig::new().protocol(ProtocolMode::Legacy),
    );
    let (changed, changes) = mpsc::channel();
    let changed = Mutex::new(changed);
    let (client, connection) = front_with(
        &gateway,
        McpConfig::default()
            .mode(ProtocolMode::Legacy)
            .on_notification(move |notification| {
                if notification.method == "notifications/tools/list_changed" {
                    let _ = changed.lock().unwrap().send(());
                }
            }),
    );
    assert_eq!(client.list_tools().unwrap().len(), 1);
    backend.add_tool(tool("second")).unwrap();
    assert!(
        changes.recv_timeout(LONG).is_ok(),
        "the front client was never told"
    );
    assert!(
        eventually(support::LONG, || client
            .refresh_tools()
            .is_ok_and(|tools| tools.len() == 2)),
        "the gateway's list did not change"
    );
    assert_eq!(
        call(&client, "mcp__growing__second", json!({})).text(),
        "second"
    );
    backend.remove_tool("first");
    assert!(eventually(support::LONG, || client
        .refresh_tools()
        .is_ok_and(|tools| tools.len() == 1)));
    assert!(call(&client, "mcp__growing__first", json!({}))
        .text()
        .starts_with("UNKNOWN_TOOL: "));
    client.close().unwrap();
    connection.wait();
}
