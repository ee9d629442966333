//! One list change, one notification: a backend's tool list change reaches the front client
//! as exactly one `notifications/tools/list_changed`, however many tools the gateway
//! replaced; the server core's `Server::apply` changes several items with one notification
//! per kind.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use std::sync::mpsc;
use std::sync::Mutex;

use serde_json::json;
use support::{front_with, gateway_with, http_backend, url_entry, LONG};
use toolwire::gateway::GatewayConfig;
use toolwire::harness::LocalTool;
use toolwire::server::{
    CallToolResult, CatalogChange, CatalogKind, PromptResult, Server, ServerConfig, ServerPrompt,
    ServerResource,
};
use toolwire::{McpClient, McpConfig, ProtocolMode};

fn tool(name: &'static str) -> LocalTool {
    LocalTool::with_context(
        name,
        "A tool.",
        json!({"type": "object", "properties": {}}),
        move |_, _| Ok(CallToolResult::from_text(name)),
    )
}

fn prompt(name: &'static str) -> ServerPrompt {
    ServerPrompt::new(name, "A prompt.", move |_, _| {
        Ok(PromptResult::new().user_text(name))
    })
}

/// A client config whose notifications' methods go to a channel.
fn watching() -> (McpConfig, mpsc::Receiver<String>) {
    let (sender, receiver) = mpsc::channel();
    let sender = Mutex::new(sender);
    let config = McpConfig::default()
        .mode(ProtocolMode::Legacy)
        .on_notification(move |notification| {
            let _ = sender.lock().unwrap().send(notification.method.clone());
        });
    (config, receiver)
}

/// The notifications that came before the first `until`, which must come.
fn before(notifications: &mpsc::Receiver<String>, until: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        match notifications.recv_timeout(LONG) {
            Ok(method) if method == until => return seen,
            Ok(method) => seen.push(method),
            Err(_) => panic!("no {until} came; before it: {seen:?}"),
        }
    }
}

#[test]
fn a_backends_tool_list_change_is_one_notification_to_the_front_client() {
    let backend = Server::new(ServerConfig::new("many", "1.0")).unwrap();
    for name in ["one", "two", "three", "four"] {
        backend.add_tool(tool(name)).unwrap();
    }
    backend.add_prompt(prompt("first")).unwrap();
    let (_http, url) = http_backend(&backend);
    let gateway = gateway_with(
        &[("many", url_entry(&url))],
        "{}",
        GatewayConfig::new().protocol(ProtocolMode::Legacy),
    );
    let (config, notifications) = watching();
    let (client, connection) = front_with(&gateway, config);
    assert_eq!(client.list_tools().unwrap().len(), 4);
    // One change of the backend: the gateway lists its four tools and a fifth again.
    backend.add_tool(tool("five")).unwrap();
    let first = notifications
        .recv_timeout(LONG)
        .expect("the front client was told");
    assert_eq!(first, "notifications/tools/list_changed");
    assert_eq!(client.refresh_tools().unwrap().len(), 5);
    // A prompt change is listed after the tool change is done (a backend is re-listed by one
    // thread at a time), so whatever the tool change sent has come before it.
    backend.add_prompt(prompt("second")).unwrap();
    let between = before(&notifications, "notifications/prompts/list_changed");
    assert!(
        between.is_empty(),
        "more than one notification: {between:?}"
    );
    assert_eq!(client.list_prompts().unwrap().len(), 2);
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn apply_changes_several_items_with_one_notification_per_kind() {
    let server = Server::new(ServerConfig::new("core", "1.0")).unwrap();
    server.add_tool(tool("old")).unwrap();
    server.add_prompt(prompt("kept")).unwrap();
    server
        .add_resource(ServerResource::new("note://a", "a", |_, _| Ok(Vec::new())))
        .unwrap();
    let (config, notifications) = watching();
    let (client_end, server_end) = toolwire::transport::MemoryTransport::pair();
    let connection = server
        .connect(toolwire::server::PeerTransport::new(server_end))
        .unwrap();
    let client = McpClient::connect(client_end, config).unwrap();
    // A round trip: the server has read the client's `initialized` and will notify it.
    assert_eq!(client.list_tools().unwrap().len(), 1);
    let refused = server.apply(
        CatalogChange::new()
            .remove_tool("old")
            .add_tool(tool("new"))
            .add_tool(tool("newer"))
            .add_tool(tool("new"))
            .remove_resource("note://a")
            .add_resource(ServerResource::new("note://b", "b", |_, _| Ok(Vec::new()))),
    );
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].kind, CatalogKind::Tool);
    assert_eq!(refused[0].key, "new");
    // A marker: the prompts' notification is sent after the change's own.
    server.add_prompt(prompt("marker")).unwrap();
    let mut seen = before(&notifications, "notifications/prompts/list_changed");
    seen.sort_unstable();
    assert_eq!(
        seen,
        [
            "notifications/resources/list_changed",
            "notifications/tools/list_changed"
        ]
    );
    let names: Vec<String> = client
        .list_tools()
        .unwrap()
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    assert_eq!(names, ["new", "newer"]);
    // Nothing changed, nothing sent.
    assert!(server
        .apply(CatalogChange::new().remove_tool("absent"))
        .is_empty());
    server.add_prompt(prompt("marker-2")).unwrap();
    assert!(before(&notifications, "notifications/prompts/list_changed").is_empty());
    client.close().unwrap();
    connection.wait();
}

/// Waits for `method` among the notifications, skipping others.
fn wait_for(notifications: &mpsc::Receiver<String>, method: &str) {
    before(notifications, method);
}

#[test]
fn a_2026_backends_tool_list_changes_reach_front_clients_of_both_eras() {
    let backend = Server::new(ServerConfig::new("modern", "1.0")).unwrap();
    backend.add_tool(tool("one")).unwrap();
    let (_http, url) = http_backend(&backend);
    // 2026-07-28 to the backend (as `--protocol auto` reaches a toolwire HTTP server): it
    // sends its list changes only on the gateway's `subscriptions/listen`.
    let gateway = gateway_with(
        &[("modern", url_entry(&url))],
        "{}",
        GatewayConfig::new().protocol(ProtocolMode::Modern),
    );
    let (config, legacy_notes) = watching();
    let (legacy, legacy_connection) = front_with(&gateway, config);
    // A 2026-07-28 front client hears list changes on a listen of its own.
    let (sender, modern_notes) = mpsc::channel();
    let sender = Mutex::new(sender);
    let config = McpConfig::default()
        .mode(ProtocolMode::Modern)
        .on_notification(move |notification| {
            let _ = sender.lock().unwrap().send(notification.method.clone());
        });
    let (modern, modern_connection) = front_with(&gateway, config);
    let listen = modern
        .start_request(
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
            toolwire::CallOptions::new().timeout(LONG),
        )
        .unwrap();
    wait_for(&modern_notes, "notifications/subscriptions/acknowledged");
    assert_eq!(support::tool_names(&legacy), ["mcp__modern__one"]);

    // A tool added after the start: both front clients are told, see it and can call it.
    backend.add_tool(tool("two")).unwrap();
    wait_for(&legacy_notes, "notifications/tools/list_changed");
    wait_for(&modern_notes, "notifications/tools/list_changed");
    for client in [&legacy, &modern] {
        assert_eq!(
            support::tool_names(client),
            ["mcp__modern__one", "mcp__modern__two"]
        );
        let result = client.call_tool("mcp__modern__two", json!({})).unwrap();
        assert_eq!(result.text(), "two");
    }

    // A tool removed: both are told, and it is gone.
    assert!(backend.remove_tool("one"));
    wait_for(&legacy_notes, "notifications/tools/list_changed");
    wait_for(&modern_notes, "notifications/tools/list_changed");
    for client in [&legacy, &modern] {
        assert_eq!(support::tool_names(client), ["mcp__modern__two"]);
        let gone = client.call_tool("mcp__modern__one", json!({}));
        assert!(
            gone.as_ref().map_or(true, |result| result.is_error),
            "{gone:?}"
        );
    }

    drop(listen);
    legacy.close().unwrap();
    modern.close().unwrap();
    legacy_connection.wait();
    modern_connection.wait();
    gateway.close();
}
