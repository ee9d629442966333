//! A 64 MiB line on stdout is discarded while it is read, never held whole in memory, and the
//! stream goes on. It reads the peak RSS, a high-water mark of the whole process, so the
//! test runs its body in a child process of its own (this binary, this test alone), where no
//! other test has raised it before.

use crate::support as common;

use serde_json::json;
use toolwire::mcp::McpDialect;
use toolwire::ClientConfig;

const HUGE: u64 = 64 * 1024 * 1024;

/// Set in the child process that runs the test's body.
const CHILD: &str = "TOOLWIRE_TEST_HUGE_LINE_CHILD";

#[test]
fn a_64_mib_line_is_discarded_without_buffering_and_the_next_response_arrives() {
    let _serial = common::serial();
    if std::env::var_os(CHILD).is_none() {
        let name = common::test_name(
            module_path!(),
            "a_64_mib_line_is_discarded_without_buffering_and_the_next_response_arrives",
        );
        let output = std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args(["--exact", name.as_str(), "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .expect("run the child");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "the child failed:\n{stdout}\n{stderr}"
        );
        // The filter matched the test: the child ran it rather than nothing.
        assert!(stdout.contains("1 passed"), "{stdout}");
        eprint!("{stderr}");
        return;
    }
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
