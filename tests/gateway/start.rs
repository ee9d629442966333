//! Start-up: every backend starts in parallel with a deadline each; one that cannot start (a
//! missing command, a server that never answers, a bad config entry) is reported with its
//! error and left out, and the others serve.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use std::time::Duration;

use serde_json::json;
use support::{call, front, gateway_with, tool_server_entry};
use toolwire::gateway::GatewayConfig;

#[test]
fn a_backend_that_fails_to_start_is_reported_and_the_others_serve() {
    let gateway = gateway_with(
        &[
            ("good", tool_server_entry()),
            (
                "missing",
                json!({"command": "/nonexistent/toolwire-no-such-server"}),
            ),
            // Starts, but never says a word: its deadline passes.
            ("silent", json!({"command": "sleep", "args": ["600"]})),
            ("broken", json!({"command": 5})),
        ],
        "{}",
        GatewayConfig::new().start_timeout(Duration::from_secs(2)),
    );
    let report = gateway.report();
    let started: Vec<&str> = report
        .started
        .iter()
        .map(|backend| backend.name.as_str())
        .collect();
    assert_eq!(started, ["good"], "{report:?}");
    let failed = |name: &str| {
        report
            .failed
            .iter()
            .find(|failed| failed.name == name)
            .unwrap_or_else(|| panic!("{name} is not reported: {report:?}"))
            .error
            .clone()
    };
    assert!(
        failed("missing").contains("/nonexistent/toolwire-no-such-server"),
        "{}",
        failed("missing")
    );
    assert!(!failed("silent").is_empty());
    assert!(failed("broken").contains("command"), "{}", failed("broken"));
    assert_eq!(report.failed.len(), 3, "{report:?}");

    let (client, connection) = front(&gateway);
    let names: Vec<String> = client
        .list_tools()
        .unwrap()
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    assert!(
        names.iter().all(|name| name.starts_with("mcp__good__")),
        "{names:?}"
    );
    assert_eq!(
        call(&client, "mcp__good__echo", json!({"message": "served"})).text(),
        "served"
    );
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn a_gateway_with_no_backend_that_starts_still_serves_its_stats() {
    let gateway = gateway_with(
        &[(
            "missing",
            json!({"command": "/nonexistent/toolwire-no-such-server"}),
        )],
        "{}",
        GatewayConfig::new(),
    );
    assert!(gateway.report().started.is_empty());
    let (client, connection) = front(&gateway);
    assert!(client.list_tools().unwrap().is_empty());
    let stats = client
        .request("toolwire/stats", json!({}), toolwire::CallOptions::new())
        .unwrap();
    assert_eq!(stats["calls"], json!(0), "{stats}");
    client.close().unwrap();
    connection.wait();
}

/// Code written against the old name keeps building and starting a gateway for one release.
#[test]
#[allow(deprecated)]
fn the_deprecated_gateway_options_name_still_configures_a_gateway() {
    let options: toolwire::gateway::GatewayOptions =
        toolwire::gateway::GatewayOptions::new().name("old-name");
    let gateway = gateway_with(&[], "{}", options);
    let (client, connection) = front(&gateway);
    assert_eq!(client.session_info().unwrap().server.name, "old-name");
    client.close().unwrap();
    connection.wait();
}
