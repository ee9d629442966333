//! A send queue that stays full: the call times out at its deadline instead of blocking.
use crate::support::client as support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{next_notification, round_trip};
use toolwire::mcp::McpDialect;
use toolwire::transport::MemoryTransport;
use toolwire::{CallOptions, Client, ClientConfig, Error};

#[test]
fn a_call_that_cannot_be_queued_times_out_at_its_deadline() {
    let (transport, peer) = MemoryTransport::pair_with_capacity(1);
    let client = Client::with_config(transport, ClientConfig::default().dialect(McpDialect))
        .expect("client");
    // The peer does not read: one frame fills the queue.
    client
        .notify("notifications/fill", json!({}))
        .expect("the first frame fits");
    let timeout = Duration::from_millis(50);
    // Several times: the send giving up and the call's own deadline race each other, and
    // either way the caller must see a timeout.
    for attempt in 0..8 {
        let started = Instant::now();
        let outcome = client.call_with(
            "tools/stuck",
            json!({"attempt": attempt}),
            CallOptions::new().timeout(timeout),
        );
        let waited = started.elapsed();
        match outcome {
            Err(Error::Timeout { method, after }) => {
                assert_eq!(method, "tools/stuck");
                assert!(after >= timeout, "attempt {attempt}: after {after:?}");
            }
            other => panic!("attempt {attempt}: expected a timeout, got {other:?}"),
        }
        assert!(
            waited >= timeout,
            "attempt {attempt}: returned after {waited:?}"
        );
        assert_eq!(client.stats().in_flight, 0);
    }
    let stats = client.stats();
    assert_eq!(stats.timeouts, 8, "{stats:?}");
    assert_eq!(stats.cancels, 0, "{stats:?}");
    assert_eq!(stats.sent, 1, "{stats:?}");
    // Once the peer reads, the connection works again.
    assert_eq!(next_notification(&peer).method, "notifications/fill");
    // A cancellation that was tried while the queue was full is lost, never queued later.
    round_trip(&client, &peer);
    support::finish(&client);
}

#[test]
fn the_send_giving_up_and_the_deadline_firing_together_still_time_out() {
    // Many short deadlines make the two releases (the send's and the timer's) meet often.
    let (transport, peer) = MemoryTransport::pair_with_capacity(1);
    let client = Client::with_config(transport, ClientConfig::default().dialect(McpDialect))
        .expect("client");
    client
        .notify("notifications/fill", json!({}))
        .expect("the first frame fits");
    let timeout = Duration::from_millis(2);
    const ATTEMPTS: u64 = 100;
    for attempt in 0..ATTEMPTS {
        let handle = client.start(
            "tools/stuck",
            json!({"attempt": attempt}),
            CallOptions::new().timeout(timeout),
        );
        match handle {
            Err(Error::Timeout { method, after }) => {
                assert_eq!(method, "tools/stuck");
                assert!(after >= timeout, "attempt {attempt}: after {after:?}");
            }
            other => panic!("attempt {attempt}: expected a timeout, got {other:?}"),
        }
    }
    let stats = client.stats();
    assert_eq!(stats.timeouts, ATTEMPTS, "{stats:?}");
    assert_eq!(stats.in_flight, 0, "{stats:?}");
    assert_eq!(next_notification(&peer).method, "notifications/fill");
    round_trip(&client, &peer);
    support::finish(&client);
}
