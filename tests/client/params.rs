//! Params must be an object, an array or nothing; progress needs an object.
use crate::support::client as support;

use serde_json::{json, Value};
use support::{memory_client, round_trip};
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig, Error};

fn assert_config<T: std::fmt::Debug>(outcome: Result<T, Error>) {
    match outcome {
        Err(Error::Config(message)) => assert!(!message.is_empty()),
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn scalar_params_are_a_config_error_before_anything_is_sent() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    assert_config(client.call("tools/a", json!("a string")));
    assert_config(client.call("tools/a", json!(42)));
    assert_config(client.call("tools/a", json!(true)));
    assert_config(client.start("tools/a", json!("x"), CallOptions::default()));
    assert_config(client.notify("notifications/a", json!("x")));
    assert_eq!(client.stats().sent, 0);
    assert_eq!(client.stats().in_flight, 0);
    round_trip(&client, &peer);
    support::finish(&client);
}

#[test]
fn progress_with_array_params_is_a_config_error() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    assert_config(client.start(
        "tools/a",
        json!([1, 2]),
        CallOptions::new().want_progress(true),
    ));
    assert_config(client.call_with(
        "tools/a",
        json!([1, 2]),
        CallOptions::new().on_progress(|_| {}),
    ));
    assert_config(client.call_with(
        "tools/a",
        json!({"_meta": "not an object"}),
        CallOptions::new().reset_on_progress(true),
    ));
    // Without progress, array params are fine; null params send none.
    let handle = client
        .start("tools/a", json!([1, 2]), CallOptions::default())
        .expect("array params");
    let request = support::next_request(&peer);
    assert_eq!(request.params, Some(json!([1, 2])));
    support::answer(&peer, &request.id, Value::Null);
    handle.wait().expect("ok");
    let handle = client
        .start(
            "tools/b",
            Value::Null,
            CallOptions::new().want_progress(true),
        )
        .expect("null params with progress");
    let request = support::next_request(&peer);
    assert_eq!(
        request.params,
        Some(json!({"_meta": {"progressToken": request.id.to_value()}}))
    );
    support::answer(&peer, &request.id, Value::Null);
    handle.wait().expect("ok");
    assert_eq!(client.stats().sent, 2);
    support::finish(&client);
}
