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
