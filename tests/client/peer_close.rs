//! The peer closing the connection fails every call in flight at once, and every later one.
use crate::support::client as support;

use std::thread;

use serde_json::{json, Value};
use support::{memory_client, next_request, SOON};
use toolwire::jsonrpc::BatchEntry;
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig, Closed, Error};

fn the_close() -> Closed {
    Closed::with_exit(
        "the server's stdout ended",
        Some("exit status: 3".into()),
        "panic: out of cheese\n".into(),
    )
}

fn assert_closed(outcome: Result<Value, Error>) {
    match outcome {
        Err(Error::Closed(closed)) => assert_eq!(*closed, the_close()),
        other => panic!("expected Closed, got {other:?}"),
    }
}

#[test]
fn calls_in_flight_fail_with_the_close_reason_and_later_calls_fail_at_once() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    // Two handles and one caller blocked in `call`, all with far deadlines.
    let mut first = client
        .start("tools/a", json!({}), CallOptions::new().timeout(SOON * 6))
        .expect("start");
    let mut second = client
        .start("tools/b", json!({}), CallOptions::new().timeout(SOON * 6))
        .expect("start");
    let blocked = {
        let client = client.clone();
        thread::spawn(move || client.call("tools/c", json!({})))
    };
    let methods: Vec<String> = (0..3).map(|_| next_request(&peer).method).collect();
    assert_eq!(methods.len(), 3);
    assert_eq!(client.stats().in_flight, 3);

    peer.close(the_close());
    assert_closed(first.wait_timeout(SOON).expect("failed at once"));
    assert_closed(second.wait_timeout(SOON).expect("failed at once"));
    assert_closed(blocked.join().expect("caller"));
    drop((first, second));
    assert_eq!(client.stats().in_flight, 0);
    assert!(client.is_closed());
    assert_eq!(client.closed_reason(), Some(the_close()));
    let display = Error::Closed(Box::new(the_close())).to_string();
    assert!(display.contains("exit status: 3") && display.contains("out of cheese"));

    // Everything after fails at once with the same reason, without waiting for a deadline.
    assert_closed(client.call("tools/d", json!({})));
    assert_closed(
        client
            .start("tools/e", Value::Null, CallOptions::default())
            .map(|_| Value::Null),
    );
    assert_closed(
        client
            .notify("notifications/x", json!({}))
            .map(|()| Value::Null),
    );
    assert_closed(
        client
            .batch(
                vec![BatchEntry::Request {
                    method: "tools/f".into(),
                    params: Value::Null,
                }],
                CallOptions::default(),
            )
            .map(|_| Value::Null),
    );
    let stats = client.stats();
    assert_eq!(stats.sent, 3, "nothing was sent after the close: {stats:?}");
    assert_eq!(stats.timeouts, 0, "{stats:?}");
    // close() after the peer's close is fine, and keeps the peer's reason.
    support::finish(&client);
    assert_eq!(client.closed_reason(), Some(the_close()));
}

#[test]
fn a_dropped_peer_closes_the_client() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let mut handle = client
        .start("tools/a", json!({}), CallOptions::new().timeout(SOON * 6))
        .expect("start");
    drop(peer);
    match handle.wait_timeout(SOON) {
        Some(Err(Error::Closed(closed))) => assert!(!closed.reason.is_empty()),
        other => panic!("expected Closed, got {other:?}"),
    }
    drop(handle);
    assert!(client.call("tools/b", json!({})).unwrap_err().is_closed());
    support::finish(&client);
}
