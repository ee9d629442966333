//! A tool the policy denies is not listed, and a call of it is UNKNOWN_TOOL that never reaches
//! its backend: the backend's own handler counter stays at zero, and a denied `crash` leaves
//! its server running. An allow list serves only the tools it names, and reports the names
//! its server does not offer.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use support::{call, front, gateway, http_backend, status_count, tool_server_entry, url_entry};
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, Server, ServerConfig};

/// A backend whose tools count the calls that reach them.
fn counted_backend() -> (Server, Arc<AtomicUsize>) {
    let server = Server::new(ServerConfig::new("counted", "1.0")).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    for name in ["open", "secret"] {
        let calls = Arc::clone(&calls);
        server
            .add_tool(LocalTool::with_context(
                name,
                "Counts its calls.",
                json!({"type": "object", "properties": {}}),
                move |_, _| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    Ok(CallToolResult::from_text("ran"))
                },
            ))
            .unwrap();
    }
    (server, calls)
}

#[test]
fn a_denied_tool_is_not_listed_and_is_unknown_without_reaching_its_backend() {
    let (backend, calls) = counted_backend();
    let (_http, url) = http_backend(&backend);
    let gateway = gateway(
        &[("counted", url_entry(&url)), ("tools", tool_server_entry())],
        r#"{"servers": {"counted": {"deny": ["secret"]}, "tools": {"deny": ["crash"]}}}"#,
    );
    assert!(gateway.report().failed.is_empty(), "{:?}", gateway.report());
    let (client, connection) = front(&gateway);
    let names: Vec<String> = client
        .list_tools()
        .unwrap()
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    assert!(
        names.contains(&"mcp__counted__open".to_owned()),
        "{names:?}"
    );
    assert!(
        !names
            .iter()
            .any(|name| name.ends_with("__secret") || name.ends_with("__crash")),
        "{names:?}"
    );

    let denied = call(&client, "mcp__counted__secret", json!({}));
    assert!(denied.is_error);
    assert!(
        denied.text().starts_with("UNKNOWN_TOOL: "),
        "{}",
        denied.text()
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the denied call reached its backend"
    );

    // The same backend's allowed tool does reach it: the counter counts.
    assert_eq!(call(&client, "mcp__counted__open", json!({})).text(), "ran");
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // A denied crash would end its server; the next call finds it as it was.
    let crash = call(&client, "mcp__tools__crash", json!({}));
    assert!(
        crash.text().starts_with("UNKNOWN_TOOL: "),
        "{}",
        crash.text()
    );
    assert_eq!(
        call(
            &client,
            "mcp__tools__echo",
            json!({"message": "still here"})
        )
        .text(),
        "still here"
    );

    let stats = gateway.stats();
    assert_eq!(
        status_count(&stats, "counted", "UNKNOWN_TOOL"),
        1,
        "{stats}"
    );
    assert_eq!(status_count(&stats, "tools", "UNKNOWN_TOOL"), 1, "{stats}");
    assert_eq!(
        stats["backends"]["counted"]["forwarded"],
        json!(1),
        "{stats}"
    );
    let nowhere = call(&client, "no_such_tool", json!({}));
    assert!(
        nowhere.text().starts_with("UNKNOWN_TOOL: "),
        "{}",
        nowhere.text()
    );
    assert_eq!(gateway.stats()["unserved"]["UNKNOWN_TOOL"], json!(1));
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn an_allow_list_serves_only_its_tools_and_reports_the_missing_ones() {
    let gateway = gateway(
        &[("tools", tool_server_entry())],
        r#"{"servers": {"tools": {"allow": ["echo", "add", "teleport"]}}}"#,
    );
    let started = &gateway.report().started[0];
    let mut served = started.tools.clone();
    served.sort();
    assert_eq!(served, ["mcp__tools__add", "mcp__tools__echo"]);
    assert_eq!(started.missing, ["teleport"]);
    assert!(
        started
            .skipped
            .iter()
            .any(|skipped| skipped.name == "hang" && skipped.reason.contains("allow list")),
        "{:?}",
        started.skipped
    );
    let (client, connection) = front(&gateway);
    assert_eq!(client.list_tools().unwrap().len(), 2);
    let hang = call(&client, "mcp__tools__hang", json!({}));
    assert!(hang.text().starts_with("UNKNOWN_TOOL: "), "{}", hang.text());
    client.close().unwrap();
    connection.wait();
}
