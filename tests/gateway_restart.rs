//! A backend that dies is started again on its next call, under the restart policy, while
//! the other backends keep answering.
#![cfg(feature = "gateway")]

#[path = "gateway_support.rs"]
mod support;

use serde_json::json;
use support::{call, front, gateway, status_count, tool_server_entry};

#[test]
fn a_killed_backend_is_restarted_while_the_other_keeps_answering() {
    let gateway = gateway(
        &[
            ("fragile", tool_server_entry()),
            ("steady", tool_server_entry()),
        ],
        "{}",
    );
    let (client, connection) = front(&gateway);
    assert_eq!(
        call(&client, "mcp__fragile__echo", json!({"message": "before"})).text(),
        "before"
    );
    // `crash` makes the server exit at once, without an answer.
    let crashed = call(&client, "mcp__fragile__crash", json!({"code": 9}));
    assert!(crashed.is_error);
    assert!(
        crashed.text().starts_with("TOOL_ERROR: "),
        "{}",
        crashed.text()
    );
    assert!(
        !crashed.text().contains("crashing with code"),
        "the backend's stderr stays with the operator: {}",
        crashed.text()
    );
    assert_eq!(
        call(&client, "mcp__steady__echo", json!({"message": "steady"})).text(),
        "steady"
    );
    // The next call starts the dead one again.
    assert_eq!(
        call(&client, "mcp__fragile__echo", json!({"message": "after"})).text(),
        "after"
    );
    assert_eq!(
        call(&client, "mcp__steady__echo", json!({"message": "still"})).text(),
        "still"
    );
    let stats = gateway.stats();
    assert_eq!(status_count(&stats, "fragile", "TOOL_ERROR"), 1, "{stats}");
    assert_eq!(status_count(&stats, "fragile", "OK"), 2, "{stats}");
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn an_idempotent_call_that_met_a_death_is_sent_once_more_and_others_are_not() {
    // `crash` marked idempotent (which it is not) shows the retry: each attempt kills the
    // server, so the first is retried on the restarted server and the call still fails.
    let gateway = gateway(
        &[
            ("retried", tool_server_entry()),
            ("once", tool_server_entry()),
        ],
        r#"{"servers": {"retried": {"tools": {"crash": {"idempotent": true}}}}}"#,
    );
    let (client, connection) = front(&gateway);
    assert!(call(&client, "mcp__retried__crash", json!({}))
        .text()
        .starts_with("TOOL_ERROR: "));
    assert!(call(&client, "mcp__once__crash", json!({}))
        .text()
        .starts_with("TOOL_ERROR: "));
    let stats = gateway.stats();
    assert_eq!(
        stats["backends"]["retried"]["forwarded"],
        json!(2),
        "{stats}"
    );
    assert_eq!(stats["backends"]["once"]["forwarded"], json!(1), "{stats}");
    // Both are back for the next call.
    assert_eq!(
        call(&client, "mcp__retried__echo", json!({"message": "a"})).text(),
        "a"
    );
    assert_eq!(
        call(&client, "mcp__once__echo", json!({"message": "b"})).text(),
        "b"
    );
    client.close().unwrap();
    connection.wait();
    gateway.close();
}
