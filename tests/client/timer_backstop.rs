//! A stalled timer thread cannot hang a caller: it releases itself after the timer grace.
use crate::support::client as support;

use std::time::{Duration, Instant};

use crossbeam_channel::bounded;
use serde_json::json;
use support::{memory_client, next_request, round_trip, SOON};
use toolwire::jsonrpc::TimerWheel;
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig, Error};

#[test]
fn a_caller_times_out_by_itself_when_the_timer_is_stalled() {
    let wheel = TimerWheel::new();
    // Stall the wheel's thread inside a task until the test lets go.
    let (running_tx, running_rx) = bounded::<()>(1);
    let (release_tx, release_rx) = bounded::<()>(1);
    wheel.schedule(
        Instant::now(),
        Box::new(move || {
            running_tx.send(()).expect("the test waits");
            let _ = release_rx.recv();
        }),
    );
    running_rx.recv_timeout(SOON).expect("the wheel is stalled");

    let mut config = ClientConfig::default()
        .dialect(McpDialect)
        .timer(wheel.clone());
    config = config.timer_grace(Duration::from_millis(30));
    let (client, peer) = memory_client(config);
    let timeout = Duration::from_millis(50);
    let started = Instant::now();
    let outcome = client.call_with("tools/slow", json!({}), CallOptions::new().timeout(timeout));
    let waited = started.elapsed();
    match outcome {
        Err(Error::Timeout { method, after }) => {
            assert_eq!(method, "tools/slow");
            assert!(after >= timeout, "after {after:?}");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    // The timer could not fire: the caller waited out its deadline and the grace.
    assert!(
        waited >= timeout + Duration::from_millis(30),
        "returned after {waited:?}"
    );
    assert_eq!(client.stats().in_flight, 0);
    assert_eq!(client.stats().timeouts, 1);
    // The caller released the request itself, so it also told the peer.
    let request = next_request(&peer);
    support::expect_cancelled(&peer, &request.id);

    // The wheel wakes up; the deadline it finally runs finds nothing left to do.
    release_tx.send(()).expect("release");
    let (done_tx, done_rx) = bounded::<()>(1);
    wheel.schedule(
        Instant::now(),
        Box::new(move || {
            let _ = done_tx.send(());
        }),
    );
    done_rx.recv_timeout(SOON).expect("the wheel runs again");
    assert_eq!(client.stats().timeouts, 1, "timed out once");
    assert!(wheel.is_empty());
    round_trip(&client, &peer);
    support::finish(&client);
}
