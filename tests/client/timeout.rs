//! Timeouts: the error names the method and how long the caller waited, and the peer is told
//! with `notifications/cancelled` (never for `initialize`, never when the config says not to).
use crate::support::client as support;

use std::time::{Duration, Instant};

use crossbeam_channel::bounded;
use serde_json::json;
use support::{memory_client, next_request, round_trip, SOON};
use toolwire::jsonrpc::TimerWheel;
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig, Error};

/// Returns once every task the wheel had started before this call has finished: tasks run one
/// after another on the wheel's thread, so a marker scheduled now runs after them.
fn drain_timer(wheel: &TimerWheel) {
    let (tx, rx) = bounded(1);
    wheel.schedule(
        Instant::now(),
        Box::new(move || {
            let _ = tx.send(());
        }),
    );
    rx.recv_timeout(SOON).expect("the wheel runs the marker");
}

#[test]
fn a_timeout_names_the_method_and_cancels_the_request_at_the_peer() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let timeout = Duration::from_millis(50);
    let started = Instant::now();
    let error = client
        .call_with(
            "tools/slow",
            json!({"n": 1}),
            CallOptions::new().timeout(timeout),
        )
        .expect_err("nobody answers");
    let waited = started.elapsed();
    match &error {
        Error::Timeout { method, after } => {
            assert_eq!(method, "tools/slow");
            assert!(*after >= timeout, "after {after:?} < {timeout:?}");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(error.is_timeout());
    assert!(waited >= timeout, "returned after {waited:?}");
    assert!(
        error.rpc().is_none(),
        "a local failure carries no JSON-RPC code"
    );

    let request = next_request(&peer);
    assert_eq!(request.method, "tools/slow");
    let reason = support::expect_cancelled(&peer, &request.id);
    assert!(!reason.is_empty());

    // The answer that comes after all is counted late and goes nowhere.
    support::answer(&peer, &request.id, json!("too late"));
    round_trip(&client, &peer);
    let stats = client.stats();
    assert_eq!(stats.timeouts, 1, "{stats:?}");
    assert_eq!(stats.late_responses, 1, "{stats:?}");
    assert_eq!(
        stats.cancels, 0,
        "a timeout is not a caller's cancel: {stats:?}"
    );
    support::finish(&client);
}

#[test]
fn a_call_made_with_notify_cancel_off_times_out_without_a_cancellation() {
    // What the MCP layer does for `initialize`, which must never be cancelled.
    let wheel = TimerWheel::new();
    let (client, peer) = memory_client(
        ClientConfig::default()
            .dialect(McpDialect)
            .timer(wheel.clone()),
    );
    let timeout = Duration::from_millis(20);
    let handle = client
        .start(
            "initialize",
            json!({"protocolVersion": "2025-06-18"}),
            CallOptions::new().timeout(timeout).notify_cancel(false),
        )
        .expect("start");
    let request = next_request(&peer);
    assert_eq!(request.method, "initialize");
    match handle.wait() {
        Err(Error::Timeout { method, after }) => {
            assert_eq!(method, "initialize");
            assert!(after >= timeout);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    // Whatever the expiry would have sent, it has sent by now.
    drain_timer(&wheel);
    // The next frame the peer sees is the ping, not a cancellation.
    round_trip(&client, &peer);
    let stats = client.stats();
    assert_eq!(stats.timeouts, 1, "{stats:?}");
    assert_eq!(stats.sent, 2, "only initialize and the ping: {stats:?}");
    support::finish(&client);
}

#[test]
fn cancel_on_timeout_false_sends_no_cancellation() {
    let wheel = TimerWheel::new();
    let mut config = ClientConfig::default()
        .dialect(McpDialect)
        .timer(wheel.clone());
    config = config.cancel_on_timeout(false);
    let (client, peer) = memory_client(config);
    let timeout = Duration::from_millis(20);
    let error = client
        .call_with("tools/slow", json!({}), CallOptions::new().timeout(timeout))
        .expect_err("nobody answers");
    assert!(
        matches!(&error, Error::Timeout { method, after } if method == "tools/slow" && *after >= timeout),
        "{error:?}"
    );
    let request = next_request(&peer);
    assert_eq!(request.method, "tools/slow");
    drain_timer(&wheel);
    round_trip(&client, &peer);
    let stats = client.stats();
    assert_eq!(stats.timeouts, 1, "{stats:?}");
    assert_eq!(stats.sent, 2, "only the request and the ping: {stats:?}");
    support::finish(&client);
}

#[test]
fn the_same_config_with_cancel_on_timeout_sends_one() {
    // The control for the two tests above: same private wheel, same steps, default config.
    let wheel = TimerWheel::new();
    let (client, peer) = memory_client(
        ClientConfig::default()
            .dialect(McpDialect)
            .timer(wheel.clone()),
    );
    let timeout = Duration::from_millis(20);
    let error = client
        .call_with("tools/slow", json!({}), CallOptions::new().timeout(timeout))
        .expect_err("nobody answers");
    assert!(error.is_timeout(), "{error:?}");
    let request = next_request(&peer);
    drain_timer(&wheel);
    support::expect_cancelled(&peer, &request.id);
    round_trip(&client, &peer);
    assert_eq!(client.stats().sent, 3);
    support::finish(&client);
}

#[test]
fn the_cancel_notice_is_queued_before_the_caller_wakes_so_closing_at_once_keeps_it() {
    for _round in 0..50 {
        let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
        let error = client
            .call_with(
                "tools/slow",
                json!({}),
                CallOptions::new().timeout(Duration::from_millis(2)),
            )
            .expect_err("nobody answers");
        assert!(error.is_timeout(), "{error}");
        // Close the moment the caller is free: the notice must already be on its way.
        client.close().unwrap();
        let request = peer.recv_line(SOON).expect("the request");
        assert!(request.contains("tools/slow"), "{request}");
        let notice = peer
            .recv_line(Duration::from_millis(0))
            .expect("notifications/cancelled was queued before the caller woke");
        assert!(notice.contains("notifications/cancelled"), "{notice}");
    }
}
