//! What arrives on stdout that is not an answer to a call: lines that are not JSON, responses
//! for ids nobody asked for, lines over the cap. Each is skipped and counted; the stream goes on.

use crate::support as common;

use serde_json::json;
use toolwire::mcp::McpDialect;
use toolwire::ClientConfig;

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
