//! The union of two backends' tools, listed under their front names (`mcp__{server}__{tool}`
//! by default, or the policy's template) and called through the gateway; the counters per
//! backend and status over `toolwire/stats`.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use serde_json::json;
use support::{call, front, gateway, http_backend, status_count, tool_server_entry, url_entry};
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, Server, ServerConfig};
use toolwire::CallOptions;

#[test]
fn the_tools_of_two_backends_are_listed_namespaced_and_called() {
    let gateway = gateway(
        &[
            ("alpha", tool_server_entry()),
            ("beta", tool_server_entry()),
        ],
        "{}",
    );
    assert!(gateway.report().failed.is_empty(), "{:?}", gateway.report());
    let (client, connection) = front(&gateway);
    let names: Vec<String> = client
        .list_tools()
        .unwrap()
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    for wanted in [
        "mcp__alpha__echo",
        "mcp__alpha__add",
        "mcp__beta__echo",
        "mcp__beta__sleep",
    ] {
        assert!(
            names.contains(&wanted.to_owned()),
            "{wanted} not in {names:?}"
        );
    }
    assert!(!names.iter().any(|name| name == "echo"), "{names:?}");
    // The backend's schema is listed as it is.
    let tools = client.list_tools().unwrap();
    let add = tools
        .iter()
        .find(|tool| tool.name == "mcp__beta__add")
        .unwrap();
    assert_eq!(add.input_schema().unwrap()["required"], json!(["a", "b"]));

    let echoed = call(
        &client,
        "mcp__alpha__echo",
        json!({"message": "from alpha"}),
    );
    assert!(!echoed.is_error);
    assert_eq!(echoed.text(), "from alpha");
    let sum = call(&client, "mcp__beta__add", json!({"a": 2, "b": 3}));
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));

    let stats = client
        .request("toolwire/stats", json!({}), CallOptions::new())
        .unwrap();
    assert_eq!(status_count(&stats, "alpha", "OK"), 1, "{stats}");
    assert_eq!(status_count(&stats, "beta", "OK"), 1, "{stats}");
    assert_eq!(stats["backends"]["alpha"]["forwarded"], json!(1));
    assert_eq!(
        gateway.stats(),
        client
            .request("toolwire/stats", json!({}), CallOptions::new())
            .unwrap()
    );
    assert!(
        gateway.stats_table().contains("alpha: forwarded 1"),
        "{}",
        gateway.stats_table()
    );
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn the_policy_template_names_the_front_tools() {
    let gateway = gateway(
        &[("files", tool_server_entry())],
        r#"{"namespace": "{server}.{tool}"}"#,
    );
    let report = gateway.report();
    let started = &report.started[0];
    assert!(
        started.tools.contains(&"files.echo".to_owned()),
        "{started:?}"
    );
    let (client, connection) = front(&gateway);
    assert_eq!(
        call(&client, "files.echo", json!({"message": "x"})).text(),
        "x"
    );
    client.close().unwrap();
    connection.wait();
}

#[test]
fn a_result_over_the_limit_is_cut_with_the_marker_or_refused() {
    let gateway = gateway(
        &[
            ("cut", tool_server_entry()),
            ("strict", tool_server_entry()),
        ],
        r#"{"servers": {"cut": {"result_chars": 10},
                        "strict": {"tools": {"big_text": {"result_chars": 10, "overflow": "reject"}}}}}"#,
    );
    let (client, connection) = front(&gateway);
    let cut = call(&client, "mcp__cut__big_text", json!({"bytes": 50}));
    assert!(!cut.is_error);
    assert_eq!(
        cut.text(),
        format!(
            "{}\n[truncated: showing 10 of 50 characters]",
            "a".repeat(10)
        )
    );
    let refused = call(&client, "mcp__strict__big_text", json!({"bytes": 50}));
    assert!(refused.is_error);
    assert!(
        refused
            .text()
            .starts_with("TOOL_ERROR: the result is 50 characters long (its text, content blocks and structured content together), over this tool's limit of 10"),
        "{}",
        refused.text()
    );
    let small = call(&client, "mcp__strict__big_text", json!({"bytes": 5}));
    assert_eq!(small.text(), "aaaaa");
    client.close().unwrap();
    connection.wait();
}

/// Issue 21: one tool-name rule. A backend's `get_weather`, `test_simple_text` and `a.b`
/// pass the gateway: listed and called under the default front names and under their own
/// (`{tool}`).
#[test]
fn provider_style_and_dotted_names_pass_the_gateway() {
    let names = ["get_weather", "test_simple_text", "a.b"];
    let backend = Server::new(ServerConfig::new("names", "1.0")).unwrap();
    for name in names {
        backend
            .add_tool(LocalTool::with_context(
                name,
                "Says its name.",
                json!({"type": "object"}),
                move |_, _| Ok(CallToolResult::from_text(name)),
            ))
            .unwrap();
    }
    let (_http, url) = http_backend(&backend);
    for (policy, prefix) in [("{}", "mcp__names__"), (r#"{"namespace": "{tool}"}"#, "")] {
        let gateway = gateway(&[("names", url_entry(&url))], policy);
        let started = &gateway.report().started[0];
        assert!(started.skipped.is_empty(), "{started:?}");
        let (client, connection) = front(&gateway);
        let mut listed: Vec<String> = client
            .list_tools()
            .unwrap()
            .iter()
            .map(|tool| tool.name.clone())
            .collect();
        listed.sort_unstable();
        let mut expected: Vec<String> =
            names.iter().map(|name| format!("{prefix}{name}")).collect();
        expected.sort_unstable();
        assert_eq!(listed, expected, "{policy}");
        for name in names {
            let result = call(&client, &format!("{prefix}{name}"), json!({}));
            assert!(!result.is_error, "{policy} {name}: {result:?}");
            assert_eq!(result.text(), name);
        }
        client.close().unwrap();
        connection.wait();
    }
}
