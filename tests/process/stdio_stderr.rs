//! A child that writes 10 MB to stderr while calls run: stderr is drained on its own thread,
//! so the child never blocks on a full pipe, and only the tail is kept.

use crate::support as common;

use std::time::Duration;

use serde_json::json;
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig, StdioConfig};

const FLOOD_BYTES: u64 = 10_000_000;
const MARKER: &str = "END-OF-FLOOD";

#[test]
fn ten_megabytes_of_stderr_do_not_block_calls_and_only_the_tail_is_kept() {
    let _serial = common::serial();
    let tail_bytes = StdioConfig::new("x").get_stderr_tail_bytes();
    let (client, transport) = common::shared_stdio_client(
        common::tool_server_config(&[]),
        ClientConfig::default().dialect(McpDialect),
    );
    let pid = transport.pid();
    let options = || CallOptions::new().timeout(Duration::from_secs(60));

    let flood = client
        .start("stderr_flood", json!({"bytes": FLOOD_BYTES}), options())
        .expect("start the flood");
    let callers: Vec<_> = (0..4)
        .map(|thread| {
            let client = client.clone();
            std::thread::spawn(move || {
                for n in 0..100 {
                    let payload = json!({"thread": thread, "n": n});
                    let answer = client
                        .call_with("echo", payload.clone(), options())
                        .unwrap_or_else(|error| panic!("echo {thread}/{n}: {error}"));
                    assert_eq!(answer, payload);
                }
            })
        })
        .collect();
    assert_eq!(
        flood.wait().expect("the flood's answer"),
        json!({"written": FLOOD_BYTES})
    );
    for caller in callers {
        caller.join().expect("an echo caller failed");
    }
    assert_eq!(client.stats().in_flight, 0);
    assert_eq!(client.stats().timeouts, 0);

    // The child wrote all of stderr before answering; the drain thread catches up by itself.
    let caught_up = common::eventually(common::SOON, || {
        transport.stderr_tail().trim_end().ends_with(MARKER)
    });
    let tail = transport.stderr_tail();
    assert!(
        caught_up,
        "the tail ends with {:?}",
        &tail[tail.len().saturating_sub(200)..]
    );
    assert!(
        tail.len() <= tail_bytes,
        "the tail holds {} bytes, more than its {tail_bytes}",
        tail.len()
    );
    assert!(
        tail.len() > tail_bytes / 2,
        "the tail kept only {} bytes",
        tail.len()
    );
    // Nothing but the end of the flood: lines of `e` (the first one cut), then the marker.
    let lines: Vec<&str> = tail.trim_end().lines().collect();
    assert!(lines.len() > 100);
    assert!(lines[..lines.len() - 1]
        .iter()
        .all(|line| !line.is_empty() && line.bytes().all(|byte| byte == b'e')));

    // A crash afterwards reports that tail, now ending with the crash message.
    let error = client.call("crash", json!({"code": 3})).expect_err("crash");
    let closed = error.closed().expect("Closed");
    assert_eq!(closed.exit_status.as_deref(), Some("exit status: 3"));
    assert!(
        closed.stderr_tail.contains(MARKER),
        "{:?}",
        closed.stderr_tail
    );
    assert!(
        closed
            .stderr_tail
            .trim_end()
            .ends_with("crashing with code 3"),
        "{:?}",
        &closed.stderr_tail[closed.stderr_tail.len().saturating_sub(200)..]
    );
    assert!(common::process_gone(pid));

    common::close_and_check(&client);
    common::assert_no_client_threads();
}
