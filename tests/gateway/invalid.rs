//! Arguments are checked against the backend tool's input schema and the harness's integer
//! bound before anything is forwarded: INVALID with the repair message, and the backend never
//! sees the call (its handler counter stays at zero, the gateway forwarded nothing).
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use support::{call, front, gateway, http_backend, tool_server_entry, url_entry};
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, Server, ServerConfig};

#[test]
fn arguments_that_break_the_schema_are_invalid_before_forwarding() {
    let gateway = gateway(&[("tools", tool_server_entry())], "{}");
    let (client, connection) = front(&gateway);
    let missing = call(&client, "mcp__tools__add", json!({"a": 1}));
    assert!(missing.is_error);
    let text = missing.text();
    assert!(text.starts_with("INVALID: "), "{text}");
    assert!(
        text.contains("\"b\""),
        "the repair message names the missing key: {text}"
    );
    let wrong = call(&client, "mcp__tools__echo", json!({"message": 5}));
    assert!(wrong.text().starts_with("INVALID: "), "{}", wrong.text());
    let stats = gateway.stats();
    assert_eq!(stats["backends"]["tools"]["forwarded"], json!(0), "{stats}");
    assert_eq!(
        stats["backends"]["tools"]["statuses"]["INVALID"],
        json!(2),
        "{stats}"
    );
    // Good arguments go through.
    assert_eq!(
        call(&client, "mcp__tools__echo", json!({"message": "ok"})).text(),
        "ok"
    );
    client.close().unwrap();
    connection.wait();
}

#[test]
fn an_integer_beyond_two_to_the_53_is_invalid_and_never_reaches_the_backend() {
    // The backend's own schema accepts any integer: only the gateway's check stands between.
    let backend = Server::new(ServerConfig::new("numbers", "1.0")).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    backend
        .add_tool(LocalTool::with_context(
            "store",
            "Stores a number.",
            json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}),
            move |_, args| {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok(CallToolResult::from_text(args["n"].to_string()))
            },
        ))
        .unwrap();
    let (_http, url) = http_backend(&backend);
    let gateway = gateway(&[("numbers", url_entry(&url))], "{}");
    let (client, connection) = front(&gateway);
    let big = call(
        &client,
        "mcp__numbers__store",
        json!({"n": 9_007_199_254_740_993_u64}),
    );
    assert!(big.is_error);
    assert!(big.text().starts_with("INVALID: "), "{}", big.text());
    assert!(big.text().contains("9007199254740993"), "{}", big.text());
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the call reached the backend"
    );
    assert_eq!(
        call(&client, "mcp__numbers__store", json!({"n": 7})).text(),
        "7"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    client.close().unwrap();
    connection.wait();
}

#[test]
fn a_policy_may_let_large_integers_through() {
    let gateway = gateway(
        &[("tools", tool_server_entry())],
        r#"{"servers": {"tools": {"tools": {"add": {"allow_large_integers": true}}}}}"#,
    );
    let (client, connection) = front(&gateway);
    let sum = call(
        &client,
        "mcp__tools__add",
        json!({"a": 9_007_199_254_740_993_u64, "b": 0}),
    );
    assert!(!sum.is_error, "{}", sum.text());
    client.close().unwrap();
    connection.wait();
}
