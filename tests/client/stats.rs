//! The counters after a known exchange.
use crate::support::client as support;

use serde_json::{json, Value};
use support::{memory_client, next_message, next_request, next_response, round_trip, SOON};
use toolwire::jsonrpc::{Message, Request, RequestId, Stats};
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig};

#[test]
fn counters_follow_a_known_exchange() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    assert_eq!(client.stats(), Stats::default());

    // A call and its answer: one out, one in.
    let handle = client
        .start("tools/a", json!({}), CallOptions::new().timeout(SOON))
        .expect("start");
    let request = next_request(&peer);
    support::answer(&peer, &request.id, json!(1));
    assert_eq!(handle.wait().expect("ok"), json!(1));
    // A notification: one out.
    client.notify("notifications/x", json!({})).expect("notify");
    assert!(matches!(next_message(&peer), Message::Notification(_)));
    // The peer's ping: one in, our answer out.
    peer.send(&Message::Request(Request {
        id: RequestId::Number(100),
        method: "ping".into(),
        params: None,
    }));
    assert_eq!(next_response(&peer).id, Some(RequestId::Number(100)));
    // Garbage: one in, skipped. An answer for nobody: one in, late.
    peer.send_line("garbage");
    support::answer(&peer, &RequestId::Number(12345), json!("late"));
    // A cancelled call: one out for the request, one for the cancellation.
    let handle = client
        .start("tools/b", Value::Null, CallOptions::new().timeout(SOON))
        .expect("start");
    let request = next_request(&peer);
    assert!(handle.cancel());
    support::expect_cancelled(&peer, &request.id);
    assert!(handle.wait().is_err());
    // A timed-out call: one out for the request, one for the cancellation.
    let error = client
        .call_with(
            "tools/c",
            json!({}),
            CallOptions::new().timeout(std::time::Duration::from_millis(5)),
        )
        .expect_err("times out");
    assert!(error.is_timeout());
    let request = next_request(&peer);
    support::expect_cancelled(&peer, &request.id);
    // And the sync ping: one out, one in.
    round_trip(&client, &peer);

    let stats = client.stats();
    let mut expected = Stats::default();
    expected.sent = 1 + 1 + 1 + 2 + 2 + 1;
    expected.received = 1 + 1 + 1 + 1 + 1;
    expected.timeouts = 1;
    expected.cancels = 1;
    expected.late_responses = 1;
    expected.skipped_lines = 1;
    assert_eq!(stats, expected);
    support::finish(&client);
}
