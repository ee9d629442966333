//! A tool the policy denies is not listed, and a call of it is UNKNOWN_TOOL that never reaches
//! its backend: the backend's own handler counter stays at zero, and a denied `crash` leaves
//! its server running. An allow list serves only the tools it names. The policy fails closed:
//! a name in `deny`, `allow` or `tools` that its backend does not list keeps that backend
//! out (at start and on a list change), and a server the config lacks stops the start.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use support::{call, front, gateway, http_backend, status_count, tool_server_entry, url_entry};
use toolwire::gateway::{Gateway, Policy};
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
fn an_allow_list_serves_only_its_tools() {
    let gateway = gateway(
        &[("tools", tool_server_entry())],
        r#"{"servers": {"tools": {"allow": ["echo", "add"]}}}"#,
    );
    let report = gateway.report();
    let started = &report.started[0];
    let mut served = started.tools.clone();
    served.sort();
    assert_eq!(served, ["mcp__tools__add", "mcp__tools__echo"]);
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

#[test]
fn a_policy_naming_a_tool_its_backend_does_not_list_keeps_that_backend_out() {
    for (policy, wanted) in [
        (
            r#"{"servers": {"files": {"deny": ["ecoh"]}}}"#,
            r#"deny "ecoh" (did you mean "echo"?)"#,
        ),
        (
            r#"{"servers": {"files": {"allow": ["echo", "teleport"]}}}"#,
            r#"allow "teleport""#,
        ),
        (
            r#"{"servers": {"files": {"tools": {"ad": {"timeout": "fast"}}}}}"#,
            r#"tools "ad" (did you mean "add"?)"#,
        ),
    ] {
        let gateway = gateway(
            &[
                ("files", tool_server_entry()),
                ("other", tool_server_entry()),
            ],
            policy,
        );
        let report = gateway.report();
        let started: Vec<&str> = report.started.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(started, ["other"], "{policy}: {report:?}");
        assert_eq!(report.failed.len(), 1, "{policy}: {report:?}");
        let error = &report.failed[0].error;
        assert!(error.contains(wanted), "{policy}: {error}");
        // What it does list is named, for the fix.
        assert!(error.contains(r#""echo""#), "{policy}: {error}");
        let (client, connection) = front(&gateway);
        let names: Vec<String> = client
            .list_tools()
            .unwrap()
            .iter()
            .map(|tool| tool.name.clone())
            .collect();
        assert!(
            names.iter().all(|name| name.starts_with("mcp__other__")) && !names.is_empty(),
            "{policy}: {names:?}"
        );
        let kept_out = call(&client, "mcp__files__echo", json!({"message": "no"}));
        assert!(
            kept_out.text().starts_with("UNKNOWN_TOOL: "),
            "{}",
            kept_out.text()
        );
        client.close().unwrap();
        connection.wait();
        gateway.close();
    }
}

#[test]
fn a_policy_naming_a_server_the_config_lacks_stops_the_start() {
    let policy = Policy::parse(r#"{"servers": {"fles": {"deny": ["echo"]}}}"#).unwrap();
    let error = Gateway::start(
        &support::configs(&[
            ("files", tool_server_entry()),
            ("search", tool_server_entry()),
        ]),
        policy,
        toolwire::gateway::GatewayConfig::new(),
    )
    .unwrap_err();
    assert!(matches!(error, toolwire::Error::Config(_)), "{error:?}");
    let said = error.to_string();
    assert!(
        said.contains(r#"server "fles" (did you mean "files"?)"#),
        "{said}"
    );
    assert!(said.contains(r#""files", "search""#), "{said}");
}

#[test]
fn a_list_change_is_judged_by_the_same_names() {
    let backend = Server::new(ServerConfig::new("live", "1.0")).unwrap();
    for name in ["alpha", "beta"] {
        backend.add_tool(plain(name)).unwrap();
    }
    let (_http, url) = http_backend(&backend);
    // Backends tell their changes on a handshake-era session.
    let gateway = support::gateway_with(
        &[("live", url_entry(&url))],
        r#"{"servers": {"live": {"deny": ["beta"]}}}"#,
        toolwire::gateway::GatewayConfig::new().protocol(toolwire::ProtocolMode::Legacy),
    );
    let (client, connection) = front(&gateway);
    assert_eq!(support::tool_names(&client), ["mcp__live__alpha"]);
    // A tool that appears later is served unless the policy's names say otherwise.
    backend.add_tool(plain("gamma")).unwrap();
    assert!(support::eventually(support::LONG, || support::tool_names(
        &client
    ) == [
        "mcp__live__alpha",
        "mcp__live__gamma"
    ]));
    // The denied tool goes: the deny list names what the backend no longer lists, and the
    // backend is kept out.
    assert!(backend.remove_tool("beta"));
    assert!(support::eventually(support::LONG, || support::tool_names(
        &client
    )
    .is_empty()));
    let report = gateway.report();
    assert!(report.started.is_empty(), "{report:?}");
    assert!(
        report.failed[0].error.contains(r#"deny "beta""#),
        "{report:?}"
    );
    // It comes back: the names match again.
    backend.add_tool(plain("beta")).unwrap();
    assert!(support::eventually(support::LONG, || support::tool_names(
        &client
    ) == [
        "mcp__live__alpha",
        "mcp__live__gamma"
    ]));
    let report = gateway.report();
    assert_eq!(report.started.len(), 1, "{report:?}");
    assert!(report.failed.is_empty(), "{report:?}");
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

fn plain(name: &'static str) -> LocalTool {
    LocalTool::with_context(
        name,
        "A tool.",
        json!({"type": "object", "properties": {}}),
        move |_, _| Ok(CallToolResult::from_text(name)),
    )
}
