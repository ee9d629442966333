//! Waiting on many calls in completion order with a `CallSet`: every member completes exactly
//! once, in the order the peer answered, whatever the set's size; timeouts, cancels and a
//! dropped set release their members.
use crate::support::client as support;

use std::collections::HashSet;
use std::time::Duration;

use serde_json::json;
use support::{memory_client, next_request, SOON};
use toolwire::jsonrpc::{CallSet, Message, Notification, Response};
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig, Error};

/// A small deterministic generator for the shuffle (the test needs no crate for it).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[test]
fn ten_thousand_calls_answered_in_random_order_come_back_in_that_order() {
    const CALLS: usize = 10_000;
    let (client, peer) = memory_client(ClientConfig::default());
    // The peer reads every request, then answers them in a shuffled order, and reports it.
    let server = std::thread::spawn(move || {
        let mut requests = Vec::with_capacity(CALLS);
        for _ in 0..CALLS {
            requests.push(next_request(&peer));
        }
        let mut rng = SplitMix(7);
        for i in (1..requests.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            requests.swap(i, j);
        }
        let mut order = Vec::with_capacity(CALLS);
        for request in requests {
            let n = request.params.as_ref().expect("params")["n"]
                .as_u64()
                .expect("n");
            order.push(n as usize);
            peer.send(&Message::Response(Response::ok(
                request.id,
                json!({"echo": n}),
            )));
        }
        (order, peer)
    });
    let mut set = CallSet::new();
    for n in 0..CALLS {
        set.start(
            &client,
            n,
            "echo",
            json!({"n": n}),
            CallOptions::new().timeout(SOON),
        )
        .expect("start");
    }
    assert_eq!(set.len(), CALLS);
    let mut completed = Vec::with_capacity(CALLS);
    for (tag, outcome) in set.by_ref() {
        assert_eq!(outcome.expect("a result"), json!({"echo": tag}));
        completed.push(tag);
    }
    let (answered, _peer) = server.join().expect("the server thread");
    assert_eq!(
        completed, answered,
        "completion order is the peer's answer order"
    );
    assert_eq!(
        completed.iter().collect::<HashSet<_>>().len(),
        CALLS,
        "each member exactly once"
    );
    assert!(set.is_empty());
    assert_eq!(client.stats().in_flight, 0);
    client.close().expect("close");
}

#[test]
fn members_time_out_and_are_cancelled_at_the_peer() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let mut set = CallSet::new();
    set.start(
        &client,
        "slow",
        "hang",
        json!({}),
        CallOptions::new().timeout(Duration::from_millis(20)),
    )
    .expect("start");
    let request = next_request(&peer);
    let (tag, outcome) = set.next().expect("one member");
    assert_eq!(tag, "slow");
    match outcome {
        Err(Error::Timeout { after, .. }) => assert!(after >= Duration::from_millis(20)),
        other => panic!("expected a timeout, got {other:?}"),
    }
    support::expect_cancelled(&peer, &request.id);
    assert!(set.next().is_none());
    client.close().expect("close");
}

#[test]
fn cancel_all_and_drop_release_the_members() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let mut set = CallSet::new();
    for tag in 0..3 {
        set.start(
            &client,
            tag,
            "hang",
            json!({}),
            CallOptions::new().timeout(SOON),
        )
        .expect("start");
    }
    let ids: Vec<_> = (0..3).map(|_| next_request(&peer).id).collect();
    set.cancel_all();
    let mut cancelled = 0;
    for (_, outcome) in set.by_ref() {
        assert!(
            matches!(outcome, Err(Error::Cancelled { .. })),
            "{outcome:?}"
        );
        cancelled += 1;
    }
    assert_eq!(cancelled, 3);
    for id in &ids {
        support::expect_cancelled(&peer, id);
    }
    // A set dropped with members in flight cancels them.
    let mut dropped = CallSet::new();
    dropped
        .start(
            &client,
            9,
            "hang",
            json!({}),
            CallOptions::new().timeout(SOON),
        )
        .expect("start");
    let request = next_request(&peer);
    drop(dropped);
    support::expect_cancelled(&peer, &request.id);
    assert_eq!(client.stats().in_flight, 0);
    client.close().expect("close");
}

#[test]
fn progress_reaches_a_members_callback_on_the_waiting_thread() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let (seen_tx, seen) = crossbeam_channel::unbounded();
    let waiter = std::thread::current().id();
    let mut set = CallSet::new();
    set.start(
        &client,
        (),
        "work",
        json!({}),
        CallOptions::new()
            .timeout(SOON)
            .on_progress(move |progress| {
                assert_eq!(std::thread::current().id(), waiter);
                let _ = seen_tx.send(progress.progress);
            }),
    )
    .expect("start");
    let request = next_request(&peer);
    peer.send(&Message::Notification(Notification {
        method: "notifications/progress".into(),
        params: Some(json!({"progressToken": request.id.to_value(), "progress": 1})),
    }));
    peer.send(&Message::Response(Response::ok(request.id, json!(true))));
    let ((), outcome) = set.next().expect("the member");
    assert_eq!(outcome.expect("done"), json!(true));
    assert_eq!(seen.try_recv().expect("one report"), 1.0);
    client.close().expect("close");
}
