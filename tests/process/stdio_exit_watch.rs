//! A child that exits while a process it started keeps its stdout open: the exit itself is
//! watched, so every pending call fails at once with the exit status instead of waiting for
//! its deadline; and responses written just before the exit are still delivered.

use crate::support as common;

use serde_json::json;
use toolwire::transport::StdioTransport;
use toolwire::{CallOptions, Client, ClientConfig, StdioConfig};

/// Reads one request, leaves a grandchild holding stdout (and stderr), says why on stderr,
/// and exits with status 3 without answering.
const ORPHANING_SERVER: &str = r#"
read line
sleep 600 &
echo "leaving a grandchild behind" >&2
exit 3
"#;

#[test]
fn a_child_that_exits_fails_pending_calls_at_once_even_when_its_stdout_stays_open() {
    let _serial = common::serial();
    let config = StdioConfig::new("sh").args(["-c", ORPHANING_SERVER]);
    let transport = StdioTransport::spawn(config).expect("spawn");
    let pid = transport.pid();
    let client = Client::with_config(transport, ClientConfig::default()).expect("client");
    // The deadline is only a hang guard: a regression shows as a timeout instead of Closed.
    let outcome = client.call_with(
        "anything",
        json!({}),
        CallOptions::new().timeout(common::SOON),
    );
    let error = outcome.expect_err("the call fails");
    let closed = error
        .closed()
        .unwrap_or_else(|| panic!("expected Closed, got {error:?}"));
    assert_eq!(
        closed.exit_status.as_deref(),
        Some("exit status: 3"),
        "{closed:?}"
    );
    assert!(
        closed.reason.contains("still held open"),
        "the reason says why stdout never ended: {closed:?}"
    );
    assert!(
        closed.stderr_tail.contains("leaving a grandchild behind"),
        "{closed:?}"
    );
    assert_eq!(client.stats().in_flight, 0);
    // close() takes the grandchild down with the child's process group.
    common::close_and_check(&client);
    assert!(
        common::eventually(common::SOON, || common::group_members(pid).is_empty()),
        "the grandchild outlived close(): {:?}",
        common::group_members(pid)
    );
}

#[test]
fn a_response_written_just_before_the_exit_is_still_delivered() {
    let _serial = common::serial();
    // Answers the request, then exits at once while a grandchild keeps stdout open.
    let script = r#"
read line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{"jsonrpc":"2.0","id":%s,"result":"last words"}\n' "$id"
sleep 600 &
exit 0
"#;
    let transport =
        StdioTransport::spawn(StdioConfig::new("sh").args(["-c", script])).expect("spawn");
    let client = Client::new(transport).expect("client");
    let outcome = client.call_with(
        "anything",
        json!({}),
        CallOptions::new().timeout(common::SOON),
    );
    assert_eq!(outcome.expect("the answer"), json!("last words"));
    common::close_and_check(&client);
}
