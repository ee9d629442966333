//! The policy's budget of calls per front session ends in BUDGET; refused calls (INVALID,
//! UNKNOWN_TOOL) spend none of it, and a new session has its own.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use serde_json::json;
use support::{call, front, gateway, status_count, tool_server_entry};

#[test]
fn the_budget_per_session_ends_in_budget() {
    let gateway = gateway(
        &[("tools", tool_server_entry())],
        r#"{"calls_per_session": 2}"#,
    );
    let (client, connection) = front(&gateway);
    assert_eq!(
        call(&client, "mcp__tools__echo", json!({"message": "1"})).text(),
        "1"
    );
    // Refusals spend nothing.
    assert!(call(&client, "mcp__tools__echo", json!({}))
        .text()
        .starts_with("INVALID: "));
    assert!(call(&client, "mcp__tools__nothing", json!({}))
        .text()
        .starts_with("UNKNOWN_TOOL: "));
    assert_eq!(
        call(&client, "mcp__tools__echo", json!({"message": "2"})).text(),
        "2"
    );
    let spent = call(&client, "mcp__tools__echo", json!({"message": "3"}));
    assert!(spent.is_error);
    assert!(spent.text().starts_with("BUDGET: "), "{}", spent.text());
    assert!(
        // The harness's words: the gateway's budget is a harness budget scope.
        spent.text().contains("attempt budget of 2 is spent"),
        "{}",
        spent.text()
    );
    let stats = gateway.stats();
    assert_eq!(status_count(&stats, "tools", "BUDGET"), 1, "{stats}");
    assert_eq!(stats["backends"]["tools"]["forwarded"], json!(2), "{stats}");

    // Another session starts with the whole budget.
    let (second, second_connection) = front(&gateway);
    assert_eq!(
        call(&second, "mcp__tools__echo", json!({"message": "4"})).text(),
        "4"
    );
    assert!(call(&client, "mcp__tools__echo", json!({"message": "5"}))
        .text()
        .starts_with("BUDGET: "));
    for (client, connection) in [(client, connection), (second, second_connection)] {
        client.close().unwrap();
        connection.wait();
    }
}

#[test]
fn requests_of_2026_07_28_have_no_session_and_share_one_budget() {
    let gateway = gateway(
        &[("tools", tool_server_entry())],
        r#"{"calls_per_session": 2}"#,
    );
    let modern = || {
        support::front_with(
            &gateway,
            toolwire::McpConfig::default().mode(toolwire::ProtocolMode::Modern),
        )
    };
    let (first, first_connection) = modern();
    let (second, second_connection) = modern();
    assert_eq!(
        call(&first, "mcp__tools__echo", json!({"message": "1"})).text(),
        "1"
    );
    assert_eq!(
        call(&second, "mcp__tools__echo", json!({"message": "2"})).text(),
        "2"
    );
    assert!(call(&first, "mcp__tools__echo", json!({"message": "3"}))
        .text()
        .starts_with("BUDGET: "));
    assert!(call(&second, "mcp__tools__echo", json!({"message": "4"}))
        .text()
        .starts_with("BUDGET: "));
    for (client, connection) in [(first, first_connection), (second, second_connection)] {
        client.close().unwrap();
        connection.wait();
    }
}
