//! The `notifications/cancelled` of a timed-out call is sent after its caller is woken (so
//! thousands of calls timing out together wake sooner), yet still exactly once, never for an
//! answered call, before anything the caller sends next, before the connection closes, and
//! without waiting for the caller to send anything at all.
use crate::support::client as support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Sender};
use serde_json::{json, Value};
use support::{expect_cancelled, memory_client, next_request, SOON};
use toolwire::jsonrpc::{Message, RequestId, TimerWheel};
use toolwire::mcp::methods::CANCELLED;
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig};

/// A client on its own wheel whose callers wait for the timer (a long grace), so the timer
/// thread is the one that completes a timed-out call.
fn timer_completes() -> (
    TimerWheel,
    toolwire::Client,
    toolwire::transport::MemoryPeer,
) {
    let wheel = TimerWheel::new();
    let (client, peer) = memory_client(
        ClientConfig::default()
            .dialect(McpDialect)
            .timer(wheel.clone())
            .timer_grace(SOON),
    );
    (wheel, client, peer)
}

/// Blocks the wheel's thread from `at` until the returned sender is dropped: the flush the
/// timer schedules when it times a call out (due after every expiry already due, this task
/// included) waits behind it.
fn stall_at(wheel: &TimerWheel, at: Instant) -> Sender<()> {
    let (release, released) = bounded::<()>(0);
    wheel.schedule(
        at,
        Box::new(move || {
            let _ = released.recv_timeout(SOON);
        }),
    );
    release
}

/// Times out one call of `tools/slow` with the wheel stalled right after its expiry.
fn time_out_with_the_flush_stalled(wheel: &TimerWheel, client: &toolwire::Client) -> Sender<()> {
    let handle = client
        .start(
            "tools/slow",
            json!({}),
            CallOptions::new().timeout(Duration::from_millis(5)),
        )
        .expect("start");
    let release = stall_at(wheel, handle.deadline());
    let error = handle.wait().expect_err("nobody answers");
    assert!(error.is_timeout(), "{error}");
    release
}

#[test]
fn a_request_sent_right_after_a_timeout_follows_its_notice() {
    let (wheel, client, peer) = timer_completes();
    let release = time_out_with_the_flush_stalled(&wheel, &client);
    // The timer's flush cannot have run: the next send sends the notice first.
    let next = client
        .start("tools/next", json!({}), CallOptions::new().timeout(SOON))
        .expect("start");
    let slow = next_request(&peer);
    assert_eq!(slow.method, "tools/slow");
    expect_cancelled(&peer, &slow.id);
    let request = next_request(&peer);
    assert_eq!(request.method, "tools/next");
    support::answer(&peer, &request.id, json!({}));
    next.wait().expect("answered");
    drop(release);
    support::finish(&client);
}

#[test]
fn closing_right_after_a_timeout_sends_the_notice_first() {
    let (wheel, client, peer) = timer_completes();
    let release = time_out_with_the_flush_stalled(&wheel, &client);
    client.close().expect("close");
    let slow = next_request(&peer);
    let notice = peer
        .recv_message(Duration::ZERO)
        .expect("the notice was sent before the transport closed");
    match notice {
        Message::Notification(notice) => {
            assert_eq!(notice.method, CANCELLED);
            assert_eq!(
                notice.params.expect("params")["requestId"],
                slow.id.to_value()
            );
        }
        other => panic!("expected the notice, got {other:?}"),
    }
    drop(release);
}

#[test]
fn the_notice_goes_out_without_the_caller_sending_anything_else() {
    let (_wheel, client, peer) = timer_completes();
    let error = client
        .call_with(
            "tools/slow",
            json!({}),
            CallOptions::new().timeout(Duration::from_millis(5)),
        )
        .expect_err("nobody answers");
    assert!(error.is_timeout(), "{error}");
    let slow = next_request(&peer);
    // Nothing else is sent or closed: the flush scheduled on the wheel sends it.
    expect_cancelled(&peer, &slow.id);
    support::finish(&client);
}

#[test]
fn many_timeouts_at_once_each_send_one_notice_and_answered_calls_none() {
    let (client, peer) = memory_client(
        ClientConfig::default()
            .dialect(McpDialect)
            .max_in_flight(1000),
    );
    let n = 400;
    let deadline = Instant::now() + Duration::from_millis(300);
    let mut handles = Vec::with_capacity(n);
    for _ in 0..n {
        let timeout = deadline.saturating_duration_since(Instant::now());
        handles.push(
            client
                .start(
                    "tools/slow",
                    Value::Null,
                    CallOptions::new().timeout(timeout),
                )
                .expect("start"),
        );
    }
    // Every other call is answered before the deadline (the answers are in before the
    // callers wait); the others time out together.
    let mut answered = Vec::new();
    for index in 0..n {
        let request = next_request(&peer);
        if index % 2 == 0 {
            support::answer(&peer, &request.id, json!({"ok": true}));
            answered.push(request.id);
        }
    }
    let mut timed_out = Vec::new();
    for handle in handles {
        let id = handle.id().clone();
        match handle.wait() {
            Ok(_) => assert!(answered.contains(&id), "{id} was answered"),
            Err(error) if error.is_timeout() => timed_out.push(id),
            Err(error) => panic!("{id}: {error}"),
        }
    }
    // The answers may have raced their deadlines on a slow machine: count what happened.
    assert!(!timed_out.is_empty());
    client.close().expect("close");
    let mut notices: HashMap<RequestId, usize> = HashMap::new();
    while let Some(message) = peer.recv_message(Duration::ZERO) {
        match message {
            Message::Notification(notice) if notice.method == CANCELLED => {
                let params = notice.params.expect("params");
                let id = RequestId::from_value(&params["requestId"]).expect("id");
                *notices.entry(id).or_default() += 1;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    for id in &timed_out {
        assert_eq!(notices.get(id), Some(&1), "one notice for {id}");
    }
    assert_eq!(
        notices.len(),
        timed_out.len(),
        "no notice for an answered call"
    );
    assert_eq!(client.stats().in_flight, 0);
}
