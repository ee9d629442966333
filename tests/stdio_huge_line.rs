//! A 64 MiB line on stdout is discarded while it is read, never held whole in memory, and the
//! stream goes on. Alone in its binary: it reads this process's peak RSS.

mod common;

use serde_json::json;
use toolwire::mcp::McpDialect;
use toolwire::ClientConfig;

const HUGE: u64 = 64 * 1024 * 1024;

#[test]
fn a_64_mib_line_is_discarded_without_buffering_and_the_next_response_arrives() {
    let _serial = common::serial();
    let (client, pid) = common::tool_server_client(ClientConfig::default().dialect(McpDialect));
    // Warm up every code path first, so the baseline includes their allocations.
    assert_eq!(
        client.call("echo", json!({"warm": 1})).unwrap(),
        json!({"warm": 1})
    );
    let before = common::peak_rss_kib();

    let answer = client
        .call("huge_line", json!({"bytes": HUGE}))
        .expect("the answer after the huge line");
    assert_eq!(answer, json!({"ok": true}));
    let stats = client.stats();
    assert_eq!(stats.oversized_frames, 1);
    assert_eq!(stats.skipped_lines, 0);
    assert_eq!(stats.late_responses, 0);

    // The next valid response is delivered.
    assert_eq!(
        client.call("add", json!({"a": 1, "b": 1})).unwrap(),
        json!(2)
    );

    let grown_kib = common::peak_rss_kib().saturating_sub(before);
    // The default line cap is 16 MiB: at most that much of the line is buffered before it is
    // dropped. Holding the whole line would take at least 64 MiB.
    assert!(
        grown_kib < 40 * 1024,
        "peak RSS grew by {grown_kib} KiB while reading a 64 MiB line"
    );
    eprintln!("peak RSS grew by {grown_kib} KiB");

    common::close_and_check(&client);
    assert!(common::process_gone(pid));
    common::assert_no_client_threads();
}
