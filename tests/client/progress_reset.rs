//! Progress resets a call's deadline when asked to, and `max_total` caps how far.
use crate::support::client as support;

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{select, unbounded, Receiver};
use serde_json::json;
use support::{memory_client, next_request, progress, progress_token, SOON};
use toolwire::jsonrpc::Message;
use toolwire::mcp::methods::CANCELLED;
use toolwire::mcp::McpDialect;
use toolwire::transport::MemoryPeer;
use toolwire::{CallOptions, ClientConfig, Error};

const TIMEOUT: Duration = Duration::from_millis(500);
/// How long the peer lets pass between reports: a tenth of the timeout, so each report
/// arrives before the reset deadline would pass even when a thread is descheduled for a
/// while; the reports span twice the timeout, so without resets the call cannot last.
const STEP: Duration = Duration::from_millis(50);
const STEPS: u32 = 20;

#[derive(Debug, PartialEq)]
enum PeerEnd {
    Answered,
    /// The client sent `notifications/cancelled` for the request after this many reports.
    CancelledAfter(u32),
}

/// Reads the request, then sends `STEPS` reports, each one after the caller's callback ran
/// for the previous one and `STEP` more passed (a sleep on the peer's side only makes time
/// pass; the order is driven by the callback's signal). Then answers, unless the client gave
/// the request up first.
fn stepping_peer(peer: Arc<MemoryPeer>, seen: Receiver<f64>) -> PeerEnd {
    let request = next_request(&peer);
    let token = progress_token(&request);
    assert_eq!(
        token, request.id,
        "the client uses the request id as the token"
    );
    for step in 1..=STEPS {
        if step > 1 {
            thread::sleep(STEP);
        }
        progress(&peer, &token, f64::from(step));
        select! {
            recv(seen) -> value => assert_eq!(value.expect("callback"), f64::from(step)),
            recv(peer.receiver()) -> line => {
                assert_cancelled(&line.expect("a frame"), &request.id);
                return PeerEnd::CancelledAfter(step);
            }
        }
    }
    thread::sleep(STEP);
    support::answer(&peer, &request.id, json!({"done": true}));
    PeerEnd::Answered
}

fn assert_cancelled(line: &str, id: &toolwire::jsonrpc::RequestId) {
    match toolwire::jsonrpc::parse_frame(line.as_bytes()) {
        Ok(toolwire::jsonrpc::Frame::Single(Message::Notification(notification)))
            if notification.method == CANCELLED =>
        {
            assert_eq!(
                notification.params.expect("params")["requestId"],
                id.to_value()
            );
        }
        other => panic!("expected notifications/cancelled, got {other:?}"),
    }
}

fn run(reset: bool) -> (Result<serde_json::Value, Error>, Duration, PeerEnd) {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let peer = Arc::new(peer);
    let (seen_tx, seen_rx) = unbounded();
    let peer_thread = {
        let peer = Arc::clone(&peer);
        thread::spawn(move || stepping_peer(peer, seen_rx))
    };
    let started = Instant::now();
    let outcome = client.call_with(
        "tools/long",
        json!({"work": 1}),
        CallOptions::new()
            .timeout(TIMEOUT)
            .reset_on_progress(reset)
            .on_progress(move |report| {
                let _ = seen_tx.send(report.progress);
            }),
    );
    let elapsed = started.elapsed();
    let end = peer_thread.join().expect("peer");
    support::round_trip(&client, &peer);
    support::finish(&client);
    (outcome, elapsed, end)
}

#[test]
fn progress_resets_the_deadline_so_a_long_call_succeeds() {
    let (outcome, elapsed, end) = run(true);
    assert_eq!(end, PeerEnd::Answered);
    assert_eq!(outcome.expect("the call succeeds"), json!({"done": true}));
    // The call ran well past its timeout: only the resets kept it alive.
    assert!(elapsed >= STEP * STEPS, "elapsed {elapsed:?}");
    assert!(elapsed > TIMEOUT * 2);
}

#[test]
fn without_reset_the_same_call_times_out() {
    let (outcome, _elapsed, end) = run(false);
    match outcome {
        Err(Error::Timeout { method, after }) => {
            assert_eq!(method, "tools/long");
            assert!(after >= TIMEOUT, "after {after:?}");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(
        matches!(end, PeerEnd::CancelledAfter(step) if step < STEPS),
        "the peer should have been told before it finished: {end:?}"
    );
}

#[test]
fn max_total_caps_a_call_whose_progress_never_ends() {
    // A report every 40 ms against a 500 ms timeout: only max_total can end the call, even
    // when a thread is descheduled for a while.
    let max_total = Duration::from_millis(1000);
    let interval = Duration::from_millis(40);
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let peer = Arc::new(peer);
    let peer_thread = {
        let peer = Arc::clone(&peer);
        thread::spawn(move || {
            let request = next_request(&peer);
            let token = progress_token(&request);
            let started = Instant::now();
            let mut sent = 0u32;
            // Progress "forever": until the client gives up (or, if it never did, for SOON).
            while started.elapsed() < SOON {
                sent += 1;
                progress(&peer, &token, f64::from(sent));
                if let Ok(line) = peer.receiver().recv_timeout(interval) {
                    assert_cancelled(&line, &request.id);
                    return Some(sent);
                }
            }
            None
        })
    };
    let reports = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = Arc::clone(&reports);
    let started = Instant::now();
    let outcome = client.call_with(
        "tools/endless",
        json!({}),
        CallOptions::new()
            .timeout(Duration::from_millis(500))
            .max_total(max_total)
            .reset_on_progress(true)
            .on_progress(move |_| {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }),
    );
    let elapsed = started.elapsed();
    match outcome {
        Err(Error::Timeout { method, after }) => {
            assert_eq!(method, "tools/endless");
            assert!(
                after >= max_total,
                "after {after:?} < max_total {max_total:?}"
            );
        }
        other => panic!("expected a timeout at max_total, got {other:?}"),
    }
    assert!(elapsed >= max_total);
    let sent = peer_thread
        .join()
        .expect("peer")
        .expect("the client gave up while progress was still flowing");
    assert!(sent >= 2, "sent {sent}");
    assert!(reports.load(std::sync::atomic::Ordering::SeqCst) >= 2);
    support::round_trip(&client, &peer);
    assert_eq!(client.stats().timeouts, 1);
    support::finish(&client);
}
