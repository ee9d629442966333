//! The child exits while calls are in flight: every caller learns it at once, with the exit
//! status and the end of stderr, instead of waiting for its deadline.

use crate::support as common;

use std::time::Duration;

use serde_json::json;
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig, Closed, Error};

fn expect_crash_details(error: &Error) -> Closed {
    let closed = error
        .closed()
        .unwrap_or_else(|| panic!("expected Closed, got {error:?}"))
        .clone();
    assert_eq!(
        closed.exit_status.as_deref(),
        Some("exit status: 3"),
        "{closed:?}"
    );
    assert!(
        closed.stderr_tail.contains("crashing with code 3"),
        "stderr tail: {:?}",
        closed.stderr_tail
    );
    closed
}

#[test]
fn a_crash_fails_every_call_in_flight_at_once_with_status_and_stderr() {
    let _serial = common::serial();
    let (client, pid) = common::tool_server_client(ClientConfig::default().dialect(McpDialect));
    // Deadlines a minute away: a caller left to its deadline would get `Timeout`, so the
    // `Closed` outcomes below show the crash ended every wait, without timing anything.
    let long = || CallOptions::new().timeout(Duration::from_secs(60));

    let hanging: Vec<_> = (0..5)
        .map(|_| client.start("hang", json!({}), long()).expect("start hang"))
        .collect();
    assert_eq!(client.stats().in_flight, 5);
    let crash = client
        .start("crash", json!({"code": 3}), long())
        .expect("start crash");

    // Wait on every call from its own thread, as real callers would.
    let waiters: Vec<_> = hanging
        .into_iter()
        .chain(std::iter::once(crash))
        .map(|handle| std::thread::spawn(move || handle.wait()))
        .collect();
    let mut reasons = Vec::new();
    for waiter in waiters {
        let error = waiter.join().unwrap().expect_err("no call can succeed");
        reasons.push(expect_crash_details(&error).reason);
    }
    assert!(
        reasons
            .iter()
            .all(|reason| reason == "the server's stdout ended"),
        "{reasons:?}"
    );
    let stats = client.stats();
    assert_eq!(stats.in_flight, 0);
    assert_eq!(stats.timeouts, 0);

    // The reader reaped the child before reporting: no zombie.
    assert!(
        common::process_gone(pid),
        "pid {pid} still exists after the crash"
    );

    // Later calls fail with the same details: `Closed`, where waiting for the minute-long
    // deadline would have ended in `Timeout`.
    let error = client
        .call_with("echo", json!({"after": "crash"}), long())
        .expect_err("a call after the crash");
    expect_crash_details(&error);
    assert_eq!(client.stats().timeouts, 0);
    let error = client
        .start("hang", json!({}), long())
        .expect_err("start after the crash");
    expect_crash_details(&error);

    common::close_and_check(&client);
    common::assert_no_client_threads();
}

#[test]
fn a_crash_between_calls_is_reported_to_the_next_caller() {
    let _serial = common::serial();
    let (client, pid) = common::tool_server_client(ClientConfig::default().dialect(McpDialect));
    assert_eq!(
        client.call("add", json!({"a": 1, "b": 2})).unwrap(),
        json!(3)
    );
    let error = client
        .call("crash", json!({}))
        .expect_err("crash answers nothing");
    expect_crash_details(&error);
    assert!(common::process_gone(pid));
    let error = client.call("echo", json!({})).expect_err("closed");
    expect_crash_details(&error);
    common::close_and_check(&client);
    common::assert_no_client_threads();
}
