//! `max_in_flight`: one request too many fails at once with Busy, and room frees as calls end.
use crate::support::client as support;

use serde_json::json;
use support::{memory_client, next_request, round_trip, SOON};
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig, Error};

#[test]
fn a_third_request_over_a_limit_of_two_is_busy_until_one_completes() {
    let mut config = ClientConfig::default().dialect(McpDialect);
    config = config.max_in_flight(2);
    let (client, peer) = memory_client(config);
    let options = || CallOptions::new().timeout(SOON);
    let first = client
        .start("tools/1", json!({}), options())
        .expect("first");
    let second = client
        .start("tools/2", json!({}), options())
        .expect("second");
    match client.start("tools/3", json!({}), options()) {
        Err(Error::Busy { limit }) => assert_eq!(limit, 2),
        other => panic!("expected Busy, got {other:?}"),
    }
    // Blocking calls and batches are refused the same way.
    assert!(matches!(
        client.call("tools/3", json!({})),
        Err(Error::Busy { limit: 2 })
    ));
    assert_eq!(client.stats().in_flight, 2);
    let first_request = next_request(&peer);
    let second_request = next_request(&peer);
    assert_eq!(first_request.method, "tools/1");
    assert_eq!(second_request.method, "tools/2");

    support::answer(&peer, &first_request.id, json!(1));
    assert_eq!(first.wait().expect("first"), json!(1));
    let third = client
        .start("tools/3", json!({}), options())
        .expect("room again");
    let third_request = next_request(&peer);
    assert_eq!(
        third_request.method, "tools/3",
        "the refused ones never went out"
    );
    support::answer(&peer, &second_request.id, json!(2));
    support::answer(&peer, &third_request.id, json!(3));
    assert_eq!(second.wait().expect("second"), json!(2));
    assert_eq!(third.wait().expect("third"), json!(3));
    let stats = client.stats();
    assert_eq!(stats.sent, 3, "{stats:?}");
    assert_eq!(stats.cancels, 0, "{stats:?}");
    round_trip(&client, &peer);
    support::finish(&client);
}
