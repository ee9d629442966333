//! `close()` escalates: stdin closed, then SIGTERM to the child's process group, then SIGKILL,
//! each after its grace; it reaps the child and joins the threads, in bounded time.

use crate::support as common;

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use serde_json::json;
use toolwire::mcp::McpDialect;
use toolwire::{ClientConfig, StdioConfig};

/// A shell that ignores SIGTERM and never reads stdin, and forks a grandchild that ignores
/// SIGTERM too and loops forever; it reports the grandchild's pid on stderr.
const STUBBORN_WRAPPER: &str = r#"trap '' TERM; sh -c 'trap "" TERM; while :; do sleep 1; done' & echo "grandchild=$!" >&2; wait"#;

fn grandchild_pid(tail: &str) -> Option<u32> {
    let start = tail.find("grandchild=")? + "grandchild=".len();
    let digits: String = tail[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    if tail[start + digits.len()..].starts_with('\n') {
        digits.parse().ok()
    } else {
        None
    }
}

#[test]
fn close_kills_a_wrapper_and_its_grandchild_that_ignore_eof_and_sigterm() {
    let _serial = common::serial();
    let stdin_grace = Duration::from_millis(300);
    let term_grace = Duration::from_millis(300);
    let mut config = StdioConfig::new("sh").args(["-c", STUBBORN_WRAPPER]);
    config = config.stdin_close_grace(stdin_grace);
    config = config.terminate_grace(term_grace);
    let (client, transport) =
        common::shared_stdio_client(config, ClientConfig::default().dialect(McpDialect));
    let pid = transport.pid();

    let mut grandchild = None;
    let reported = common::eventually(common::SOON, || {
        grandchild = grandchild_pid(&transport.stderr_tail());
        grandchild.is_some()
    });
    assert!(
        reported,
        "no grandchild pid on stderr: {:?}",
        transport.stderr_tail()
    );
    let grandchild = grandchild.unwrap();
    assert!(common::process_alive(pid));
    assert!(common::process_alive(grandchild));
    assert!(
        common::group_members(pid)
            .iter()
            .any(|(member, _)| *member == grandchild),
        "the grandchild is not in the child's process group"
    );

    // A close that deadlocked (it once did, reaping the child) fails here instead of hanging.
    let closer = client.clone();
    let elapsed = common::within(common::SOON, move || {
        let started = Instant::now();
        closer.close().expect("close");
        started.elapsed()
    });
    // Neither closing stdin nor SIGTERM can end these processes: both graces must pass. That
    // close then ends them at once is shown by SIGKILL below and by `within`, which fails a
    // close that kept waiting; its duration has no upper bound here, so a slow machine cannot
    // fail the test.
    assert!(
        elapsed >= stdin_grace + term_grace,
        "close returned after {elapsed:?}, before both graces had passed"
    );
    let status = transport.exit_status().expect("the child was reaped");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");

    // Our child is reaped by close(): its pid is gone entirely.
    assert!(
        common::process_gone(pid),
        "pid {pid} still exists after close()"
    );
    // The grandchild was sent SIGKILL with its group; the kernel ends it when it is next
    // scheduled (on a loaded machine, not yet when close() returns), so its death is waited
    // for under a guard. Reaping it is the job of its new parent (PID 1 or a subreaper).
    assert!(
        common::eventually(common::SOON, || !common::process_alive(grandchild)),
        "the grandchild {grandchild} survived close()"
    );
    if !common::eventually(common::SOON, || common::process_gone(grandchild)) {
        eprintln!(
            "note: grandchild {grandchild} is dead but still a zombie, parent {:?}: this \
             sandbox's init does not reap orphans promptly",
            common::parent_pid(grandchild)
        );
    }
    let alive: Vec<_> = common::group_members(pid)
        .into_iter()
        .filter(|(_, state)| state != "Z")
        .collect();
    assert!(
        alive.is_empty(),
        "group members alive after close: {alive:?}"
    );

    common::close_and_check(&client);
    common::assert_no_client_threads();
}

#[test]
fn close_lets_a_cooperative_child_exit_on_eof() {
    let _serial = common::serial();
    let (client, transport) = common::shared_stdio_client(
        common::tool_server_config(&[]),
        ClientConfig::default().dialect(McpDialect),
    );
    let pid = transport.pid();
    assert_eq!(client.call("pid", json!({})).unwrap(), json!(pid));

    client.close().expect("close");
    // tool_server exits with 0 at the end of stdin: no signal was needed.
    let status = transport.exit_status().expect("the child was reaped");
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(common::process_gone(pid));

    common::close_and_check(&client);
    common::assert_no_client_threads();
}

#[test]
fn close_sends_sigterm_to_a_child_that_ignores_eof() {
    let _serial = common::serial();
    let stdin_grace = Duration::from_millis(300);
    let mut config = common::tool_server_config(&["--ignore-eof"]);
    config = config.stdin_close_grace(stdin_grace);
    config = config.terminate_grace(Duration::from_secs(5));
    let (client, transport) =
        common::shared_stdio_client(config, ClientConfig::default().dialect(McpDialect));
    let pid = transport.pid();
    assert_eq!(client.call("echo", json!([1])).unwrap(), json!([1]));

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
    assert!(
        transport
            .stderr_tail()
            .contains("stdin closed; --ignore-eof given"),
        "{:?}",
        transport.stderr_tail()
    );

    common::close_and_check(&client);
    common::assert_no_client_threads();
}

#[test]
fn dropping_the_last_client_closes_and_reaps_the_child() {
    let _serial = common::serial();
    // Repeated: the reader thread may still hold its momentary reference to the client when the
    // caller drops the last clone; the close must still happen on the caller's thread, before
    // `drop` returns.
    for _round in 0..20 {
        let (client, pid) = common::tool_server_client(ClientConfig::default().dialect(McpDialect));
        let clone = client.clone();
        assert_eq!(
            clone.call("add", json!({"a": 40, "b": 2})).unwrap(),
            json!(42)
        );
        drop(clone);
        assert!(
            common::process_alive(pid),
            "dropping a clone closed the connection"
        );
        assert_eq!(client.call("echo", json!([1])).unwrap(), json!([1]));
        assert_eq!(client.stats().in_flight, 0);
        drop(client);
        assert!(
            common::process_gone(pid),
            "pid {pid} still exists after the drop returned"
        );
    }
    common::assert_no_client_threads();
}

#[test]
fn close_does_not_deadlock_with_a_reader_waiting_for_the_exit_status() {
    let _serial = common::serial();
    // The child closes stdout early (the reader then polls for its exit status, for up to
    // `exit_wait`), ignores SIGTERM, and holds 300 MB so that dying from SIGKILL takes a while:
    // close() reaps it while the reader polls. Both must get through.
    let script = r#"$SIG{TERM} = "IGNORE"; my $ballast = "x" x 300_000_000; close STDOUT; close STDERR; sleep 1000 while 1;"#;
    let mut config = StdioConfig::new("perl").args(["-e", script]);
    config = config.exit_wait(Duration::from_secs(30));
    config = config.stdin_close_grace(Duration::from_millis(100));
    config = config.terminate_grace(Duration::from_millis(100));
    let (client, transport) =
        common::shared_stdio_client(config, ClientConfig::default().dialect(McpDialect));
    let pid = transport.pid();
    let stdout_closed = common::eventually(common::SOON, || {
        !std::path::Path::new(&format!("/proc/{pid}/fd/1")).exists()
    });
    assert!(stdout_closed, "the child never closed its stdout");
    assert!(common::process_alive(pid));

    let closer = client.clone();
    common::within(common::SOON, move || closer.close().expect("close"));
    let status = transport.exit_status().expect("the child was reaped");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    assert!(common::process_gone(pid));
    common::close_and_check(&client);
    common::assert_no_client_threads();
}
