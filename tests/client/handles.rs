//! Call handles: wait with a limit, poll, cancel, drop, and select over many.
use crate::support::client as support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Select;
use serde_json::{json, Value};
use support::{expect_cancelled, memory_client, next_request, round_trip, SOON};
use toolwire::jsonrpc::{ErrorCode, ErrorObject, Message, RequestId, Response};
use toolwire::mcp::McpDialect;
use toolwire::{CallHandle, CallOptions, ClientConfig, Error};

fn start(client: &toolwire::Client, method: &str) -> CallHandle {
    client
        .start(method, json!({}), CallOptions::new().timeout(SOON))
        .expect("start")
}

#[test]
fn wait_timeout_is_none_while_pending_and_some_once_answered() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let mut handle = start(&client, "tools/a");
    let request = next_request(&peer);
    let limit = Duration::from_millis(20);
    let before = Instant::now();
    assert!(handle.wait_timeout(limit).is_none());
    assert!(
        before.elapsed() >= limit,
        "returned early: {:?}",
        before.elapsed()
    );
    // The call keeps running.
    assert!(handle.try_result().is_none());
    assert_eq!(client.stats().in_flight, 1);
    support::answer(&peer, &request.id, json!({"v": 1}));
    assert_eq!(
        handle.wait_timeout(SOON).expect("answered").expect("ok"),
        json!({"v": 1})
    );
    // The outcome is taken: polling has nothing more.
    assert!(handle.try_result().is_none());
    drop(handle);
    // Nothing was cancelled at the peer by dropping a finished handle.
    round_trip(&client, &peer);
    assert_eq!(client.stats().cancels, 0);
    support::finish(&client);
}

#[test]
fn try_result_polls_without_blocking() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let mut handle = start(&client, "tools/b");
    assert!(handle.try_result().is_none());
    let request = next_request(&peer);
    support::answer(&peer, &request.id, json!([1, 2]));
    // Once a later frame was processed, the answer is certainly there.
    round_trip(&client, &peer);
    assert_eq!(
        handle.try_result().expect("there").expect("ok"),
        json!([1, 2])
    );
    assert!(handle.try_result().is_none());
    drop(handle);
    support::finish(&client);
}

#[test]
fn cancel_completes_with_cancelled_tells_the_peer_and_counts_the_late_answer() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let handle = start(&client, "tools/c");
    let request = next_request(&peer);
    assert!(handle.cancel());
    assert!(!handle.cancel(), "a second cancel finds nothing to cancel");
    let reason = expect_cancelled(&peer, &request.id);
    assert!(!reason.is_empty());
    // The peer's answer crosses the cancel: it is counted late, not delivered.
    support::answer(&peer, &request.id, json!("late"));
    round_trip(&client, &peer);
    match handle.wait() {
        Err(Error::Cancelled { method }) => assert_eq!(method, "tools/c"),
        other => panic!("expected Cancelled, got {other:?}"),
    }
    let stats = client.stats();
    assert_eq!(stats.cancels, 1, "{stats:?}");
    assert_eq!(stats.late_responses, 1, "{stats:?}");
    assert_eq!(stats.timeouts, 0, "{stats:?}");
    support::finish(&client);
}

#[test]
fn cancelling_a_completed_call_returns_false_and_keeps_its_outcome() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let handle = start(&client, "tools/d");
    let request = next_request(&peer);
    support::answer(&peer, &request.id, json!("kept"));
    round_trip(&client, &peer);
    assert!(!handle.cancel());
    assert_eq!(
        handle.wait().expect("the outcome is still there"),
        json!("kept")
    );
    // No cancellation went to the peer: the next frame it sees is the ping.
    round_trip(&client, &peer);
    assert_eq!(client.stats().cancels, 0);
    support::finish(&client);
}

#[test]
fn dropping_an_unfinished_handle_cancels_the_request() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let handle = start(&client, "tools/e");
    let request = next_request(&peer);
    assert_eq!(client.stats().in_flight, 1);
    drop(handle);
    assert_eq!(client.stats().in_flight, 0);
    expect_cancelled(&peer, &request.id);
    support::answer(&peer, &request.id, json!("nobody listens"));
    round_trip(&client, &peer);
    let stats = client.stats();
    assert_eq!(stats.cancels, 1, "{stats:?}");
    assert_eq!(stats.late_responses, 1, "{stats:?}");
    support::finish(&client);
}

#[test]
fn one_thread_selects_over_many_handles_answered_out_of_order() {
    const CALLS: usize = 40;
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let peer = Arc::new(peer);
    let handles: Vec<CallHandle> = (0..CALLS)
        .map(|n| {
            client
                .start("tools/n", json!({"n": n}), CallOptions::new().timeout(SOON))
                .expect("start")
        })
        .collect();
    let peer_thread = {
        let peer = Arc::clone(&peer);
        thread::spawn(move || {
            let mut requests: Vec<_> = (0..CALLS).map(|_| next_request(&peer)).collect();
            // A fixed shuffle: odd positions from the back, then even positions.
            requests.reverse();
            let (odd, even): (Vec<_>, Vec<_>) = requests
                .into_iter()
                .enumerate()
                .partition(|(position, _)| position % 2 == 1);
            for (_, request) in odd.into_iter().chain(even) {
                let n = request.params.as_ref().expect("params")["n"]
                    .as_u64()
                    .expect("n");
                let response = if n % 7 == 3 {
                    Response::error(
                        Some(request.id),
                        ErrorObject::new(ErrorCode(-32000 - n as i32), format!("no {n}")),
                    )
                } else {
                    Response::ok(request.id, json!({"n": n, "squared": n * n}))
                };
                peer.send(&Message::Response(response));
            }
        })
    };

    let selector = thread::spawn(move || {
        let mut remaining = handles;
        let mut outcomes: BTreeMap<RequestId, Result<Value, Error>> = BTreeMap::new();
        let mut order = Vec::new();
        while !remaining.is_empty() {
            let mut select = Select::new();
            for handle in &remaining {
                select.recv(handle.receiver());
            }
            let operation = select.select_timeout(SOON).expect("an event soon");
            let index = operation.index();
            let event = operation
                .recv(remaining[index].receiver())
                .expect("an event");
            if let Some(outcome) = remaining[index].on_event(event) {
                let handle = remaining.swap_remove(index);
                order.push(handle.id().clone());
                outcomes.insert(handle.id().clone(), outcome);
            }
        }
        (outcomes, order)
    });
    let (outcomes, order) = selector.join().expect("selector");
    peer_thread.join().expect("peer");
    assert_eq!(outcomes.len(), CALLS);
    let mut sorted = order.clone();
    sorted.sort();
    assert_ne!(order, sorted, "the answers really arrived out of order");
    for (position, (id, outcome)) in outcomes.into_iter().enumerate() {
        // Ids are handed out in start order; the n-th call asked about n.
        let n = position as u64;
        assert_eq!(id, RequestId::Number(position as i64 + 1));
        if n % 7 == 3 {
            let error = outcome.expect_err("an error answer");
            assert_eq!(error.rpc().expect("rpc").code, ErrorCode(-32000 - n as i32));
        } else {
            assert_eq!(outcome.expect("ok"), json!({"n": n, "squared": n * n}));
        }
    }
    support::finish(&client);
}
