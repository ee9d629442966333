//! A request the server never answers: the caller gets a timeout at its deadline, the child
//! keeps running and hears `notifications/cancelled`, and only `close()` ends it.

use crate::support as common;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig, Error};

#[test]
fn hang_times_out_at_its_deadline_cancels_on_the_wire_and_close_ends_the_child() {
    let _serial = common::serial();
    let (client, pid) = common::tool_server_client(ClientConfig::default().dialect(McpDialect));
    let timeout = Duration::from_millis(300);

    let started = Instant::now();
    let handle = client
        .start("hang", json!({}), CallOptions::new().timeout(timeout))
        .expect("start hang");
    let id = handle.id().to_value();
    let outcome = handle.wait();
    let waited = started.elapsed();
    match outcome {
        Err(Error::Timeout { method, after }) => {
            assert_eq!(method, "hang");
            assert!(after >= timeout, "reported {after:?}, deadline {timeout:?}");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(
        waited >= timeout,
        "returned after {waited:?}, before the deadline {timeout:?}"
    );
    let stats = client.stats();
    assert_eq!(stats.timeouts, 1);
    assert_eq!(stats.in_flight, 0);

    // A timeout releases the request; it does not stop the child.
    assert!(common::process_alive(pid), "the child died on a timeout");

    // The timer thread sends the cancellation after waking the caller, so ask a few times.
    let mut seen = Value::Null;
    let heard = common::eventually(common::SOON, || {
        seen = client
            .call("cancellations", json!({}))
            .expect("cancellations");
        seen["cancelled"]
            .as_array()
            .is_some_and(|ids| ids.contains(&id))
    });
    assert!(
        heard,
        "the child never heard the cancellation of {id}: {seen}"
    );
    let position = seen["cancelled"]
        .as_array()
        .unwrap()
        .iter()
        .position(|cancelled| *cancelled == id)
        .unwrap();
    assert_eq!(seen["reasons"][position], json!("timed out"));
    assert_eq!(seen["cancelled"].as_array().unwrap().len(), 1);
    assert!(
        common::process_alive(pid),
        "the child died after the cancellation"
    );

    common::close_and_check(&client);
    // close() reaps the child before it returns: not even a zombie is left.
    assert!(
        common::process_gone(pid),
        "pid {pid} still exists after close()"
    );
    common::assert_no_client_threads();
}

#[test]
fn several_hanging_calls_time_out_independently_and_close_releases_one_still_waiting() {
    let _serial = common::serial();
    let (client, pid) = common::tool_server_client(ClientConfig::default().dialect(McpDialect));
    let short = Duration::from_millis(200);
    let long = Duration::from_millis(400);

    let started = Instant::now();
    let first = client
        .start("hang", json!({}), CallOptions::new().timeout(short))
        .unwrap();
    let second = client
        .start("hang", json!({}), CallOptions::new().timeout(long))
        .unwrap();
    let still_waiting = client
        .start(
            "hang",
            json!({}),
            CallOptions::new().timeout(Duration::from_secs(60)),
        )
        .unwrap();

    assert!(first.wait().unwrap_err().is_timeout());
    assert!(started.elapsed() >= short);
    assert!(second.wait().unwrap_err().is_timeout());
    assert!(started.elapsed() >= long);
    assert_eq!(client.stats().in_flight, 1);
    assert!(common::process_alive(pid));

    // close() fails the call still waiting, instead of leaving it to its 60 s deadline. Which
    // of the two ended the wait is told by the outcome, not by the clock: the deadline would
    // have given `Timeout` (and a third timeout in the stats), close() gives `Closed`.
    let waiter = std::thread::spawn(move || still_waiting.wait());
    client.close().unwrap();
    let error = waiter.join().unwrap().unwrap_err();
    let closed = error
        .closed()
        .unwrap_or_else(|| panic!("expected Closed: {error:?}"));
    assert_eq!(closed.reason, "closed by the caller");
    assert_eq!(client.stats().timeouts, 2);

    common::close_and_check(&client);
    assert!(common::process_gone(pid));
    common::assert_no_client_threads();
}
