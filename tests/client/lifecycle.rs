//! A client is Send + Sync + Clone; close is idempotent; dropping the last clone closes.
use crate::support::client as support;

use crossbeam_channel::RecvTimeoutError;
use serde_json::json;
use support::{memory_client, next_request, round_trip, SOON};
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, Client, ClientConfig, Error};

const fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}
const _: () = assert_send_sync_clone::<Client>();

#[test]
fn close_is_idempotent_and_later_calls_fail_with_closed() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let mut in_flight = client
        .start("tools/a", json!({}), CallOptions::new().timeout(SOON * 6))
        .expect("start");
    next_request(&peer);
    client.close().expect("close");
    client.close().expect("close again");
    let clone = client.clone();
    clone.close().expect("close through a clone");
    match in_flight.wait_timeout(SOON) {
        Some(Err(Error::Closed(closed))) => assert_eq!(closed.reason, "closed by the caller"),
        other => panic!("expected Closed, got {other:?}"),
    }
    drop(in_flight);
    for outcome in [
        client.call("tools/b", json!({})),
        clone.call("tools/b", json!({})),
    ] {
        match outcome {
            Err(Error::Closed(closed)) => assert_eq!(closed.reason, "closed by the caller"),
            other => panic!("expected Closed, got {other:?}"),
        }
    }
    assert!(client.notify("x", json!({})).unwrap_err().is_closed());
    // The transport is closed: the peer's side is disconnected.
    assert_eq!(
        peer.receiver().recv_timeout(SOON),
        Err(RecvTimeoutError::Disconnected)
    );
    assert!(peer.recv_line(SOON).is_none());
    support::finish(&client);
}

#[test]
fn dropping_the_last_clone_closes_the_transport() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let clone = client.clone();
    drop(client);
    // One clone left: the connection still works.
    round_trip(&clone, &peer);
    assert!(!clone.is_closed());
    assert_eq!(clone.stats().in_flight, 0);
    drop(clone);
    assert_eq!(
        peer.receiver().recv_timeout(SOON),
        Err(RecvTimeoutError::Disconnected),
        "the transport was closed when the last clone went"
    );
    assert!(peer.recv_line(SOON).is_none());
}

#[test]
fn clones_share_one_connection() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let clone = client.clone();
    let handle = clone
        .start("tools/a", json!({}), CallOptions::new().timeout(SOON))
        .expect("start");
    assert_eq!(
        client.stats().in_flight,
        1,
        "the original sees the clone's call"
    );
    let request = next_request(&peer);
    support::answer(&peer, &request.id, json!("shared"));
    assert_eq!(handle.wait().expect("ok"), json!("shared"));
    assert_eq!(client.stats(), clone.stats());
    clone.close().expect("close");
    assert!(
        client.is_closed(),
        "closing one clone closes the connection"
    );
    support::finish(&client);
}
