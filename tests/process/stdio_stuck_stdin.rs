//! A child that never reads its stdin: the pipe and the writer queue fill up, and callers still
//! get their timeout at the deadline instead of blocking forever; `close()` still ends it.

use crate::support as common;

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use serde_json::json;
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig, Error, StdioConfig};

#[test]
fn calls_to_a_child_that_never_reads_time_out_at_their_deadline_and_close_still_works() {
    let _serial = common::serial();
    let stdin_grace = Duration::from_millis(300);
    // An hour: SIGTERM ends `sleep` at once, so a close that returns at all (within `SOON`
    // below) did not wait out this grace, and the child's status says SIGTERM, not SIGKILL.
    let term_grace = Duration::from_secs(3600);
    let mut config = StdioConfig::new("sleep").arg("1000");
    config = config.writer_queue(1);
    config = config.stdin_close_grace(stdin_grace);
    config = config.terminate_grace(term_grace);
    let (client, transport) =
        common::shared_stdio_client(config, ClientConfig::default().dialect(McpDialect));
    let pid = transport.pid();

    // 2 MiB each, far more than a pipe holds: the first one alone fills the pipe and blocks the
    // writer thread, the second fills the queue, the later ones cannot even be queued.
    let big = "p".repeat(2 * 1024 * 1024);
    let timeout = Duration::from_millis(300);
    for n in 0..4 {
        let (caller, big) = (client.clone(), big.clone());
        // A call that blocked past its deadline would fail here rather than hang the test.
        let (outcome, waited) = common::within(timeout + common::SOON, move || {
            let started = Instant::now();
            let outcome = caller.call_with(
                "echo",
                json!({"n": n, "big": big}),
                CallOptions::new().timeout(timeout),
            );
            (outcome, started.elapsed())
        });
        match outcome {
            Err(Error::Timeout { method, after }) => {
                assert_eq!(method, "echo");
                assert!(after >= timeout, "call {n} reported {after:?}");
            }
            other => panic!("call {n}: expected a timeout, got {other:?}"),
        }
        assert!(waited >= timeout, "call {n} returned after {waited:?}");
    }
    // Even a small call cannot get past the full queue.
    let caller = client.clone();
    let (outcome, waited) = common::within(timeout + common::SOON, move || {
        let started = Instant::now();
        let outcome = caller.call_with("echo", json!([1]), CallOptions::new().timeout(timeout));
        (outcome, started.elapsed())
    });
    let error = outcome.expect_err("the queue is full");
    assert!(error.is_timeout(), "{error:?}");
    assert!(waited >= timeout, "returned after {waited:?}");
    let stats = client.stats();
    assert_eq!(stats.timeouts, 5);
    assert_eq!(stats.in_flight, 0);
    assert!(common::process_alive(pid));

    // sleep ignores the end of stdin but not SIGTERM.
    let closer = client.clone();
    let elapsed = common::within(common::SOON, move || {
        let started = Instant::now();
        closer.close().expect("close");
        started.elapsed()
    });
    assert!(elapsed >= stdin_grace, "close returned after {elapsed:?}");
    let status = transport.exit_status().expect("the child was reaped");
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    assert!(common::process_gone(pid));

    common::close_and_check(&client);
    common::assert_no_client_threads();
}
