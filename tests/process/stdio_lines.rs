//! What arrives on stdout that is not an answer to a call: lines that are not JSON, responses
//! for ids nobody asked for, lines over the cap. Each is skipped and counted; the stream goes on.

use crate::support as common;

use std::time::{Duration, Instant};

use serde_json::json;
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig, Error};

#[test]
fn non_json_lines_and_unknown_ids_are_skipped_and_counted() {
    let _serial = common::serial();
    // `--banner` writes `tool_server ready` before anything else.
    let (client, _transport) = common::shared_stdio_client(
        common::tool_server_config(&["--banner"]),
        ClientConfig::default().dialect(McpDialect),
    );

    // The banner precedes the first answer on the same stream, so it is counted by now.
    assert_eq!(
        client.call("echo", json!(["first"])).unwrap(),
        json!(["first"])
    );
    assert_eq!(client.stats().skipped_lines, 1);
    assert_eq!(client.stats().late_responses, 0);

    for round in 1..=3u64 {
        assert_eq!(
            client.call("garbage", json!({})).unwrap(),
            json!({"ok": true})
        );
        assert_eq!(client.stats().skipped_lines, 1 + round);
        assert_eq!(
            client.call("echo", json!({"round": round})).unwrap(),
            json!({"round": round})
        );
    }
    for round in 1..=2u64 {
        assert_eq!(
            client.call("reply_unknown", json!({})).unwrap(),
            json!({"ok": true})
        );
        assert_eq!(client.stats().late_responses, round);
        assert_eq!(
            client.call("add", json!({"a": round, "b": 1})).unwrap(),
            json!(round + 1)
        );
    }

    let stats = client.stats();
    assert_eq!(stats.skipped_lines, 4);
    assert_eq!(stats.late_responses, 2);
    assert_eq!(stats.oversized_frames, 0);
    assert_eq!(stats.timeouts, 0);
    common::close_and_check(&client);
    common::assert_no_client_threads();
}

#[test]
fn a_response_over_a_small_line_cap_is_discarded_and_its_caller_times_out() {
    let _serial = common::serial();
    let mut config = common::tool_server_config(&[]);
    config = config.max_line_bytes(1024);
    let (client, _transport) =
        common::shared_stdio_client(config, ClientConfig::default().dialect(McpDialect));

    // A line just under the cap still arrives.
    let fits = "f".repeat(900);
    assert_eq!(client.call("echo", json!([fits])).unwrap(), json!([fits]));

    // Sending is not capped; the 5,000-byte answer is.
    let big = "b".repeat(5_000);
    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    let outcome = client.call_with("echo", json!([big]), CallOptions::new().timeout(timeout));
    let waited = started.elapsed();
    match outcome {
        Err(Error::Timeout { method, after }) => {
            assert_eq!(method, "echo");
            assert!(after >= timeout, "{after:?}");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(waited >= timeout, "returned after {waited:?}");

    // The stream goes on; this answer follows the discarded line, so the discard is counted.
    assert_eq!(
        client.call("echo", json!(["small"])).unwrap(),
        json!(["small"])
    );
    let stats = client.stats();
    assert_eq!(stats.oversized_frames, 1);
    assert_eq!(stats.skipped_lines, 0);
    assert_eq!(stats.late_responses, 0);
    assert_eq!(stats.timeouts, 1);
    common::close_and_check(&client);
    common::assert_no_client_threads();
}
