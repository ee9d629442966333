//! Over stdio, a response longer than `StdioConfig::max_line_bytes` is skipped, the stream
//! goes on, and the call it answered fails at once with a protocol error naming the size and
//! the limit, instead of waiting for its deadline.

use crate::support as common;

use std::time::Duration;

use serde_json::json;
use toolwire::mcp::McpDialect;
use toolwire::transport::StdioTransport;
use toolwire::{CallOptions, Client, ClientConfig, Error};

/// A deadline no call may reach here: a regression hangs rather than passing on TIMEOUT.
const NEVER: Duration = Duration::from_secs(3600);
/// The hang guard for each wait.
const GUARD: Duration = Duration::from_secs(30);

#[test]
fn an_oversized_stdio_response_fails_its_call_at_once() {
    let _serial = common::serial();
    let config = common::tool_server_config(&[]).max_line_bytes(4096);
    let transport = StdioTransport::spawn(config).expect("spawn tool_server");
    let pid = transport.pid();
    let client = Client::with_config(
        transport,
        ClientConfig::default()
            .dialect(McpDialect)
            .request_timeout(NEVER),
    )
    .expect("client");
    let options = || CallOptions::new().timeout(NEVER);

    // A line just under the cap still arrives.
    let fits = "f".repeat(3_800);
    assert_eq!(
        client.call("echo", json!({"text": fits})).unwrap(),
        json!({"text": fits})
    );

    // The echo of 10,000 bytes of text is over the 4,096-byte limit; the small one is not.
    let mut big = client
        .start("echo", json!({"text": "y".repeat(10_000)}), options())
        .expect("start the big echo");
    let mut small = client
        .start("echo", json!({"n": 2}), options())
        .expect("start the small echo");
    match big.wait_timeout(GUARD) {
        Some(Err(Error::Protocol(message))) => {
            assert!(message.contains("the response to `echo`"), "{message}");
            assert!(
                message.contains("over the 4,096-byte frame limit"),
                "{message}"
            );
            assert!(message.contains("StdioConfig::max_line_bytes"), "{message}");
        }
        None => panic!("the big echo still waiting after {GUARD:?}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
    let answer = small
        .wait_timeout(GUARD)
        .expect("the small echo still waiting");
    assert_eq!(answer.unwrap(), json!({"n": 2}));
    assert_eq!(
        client.call("echo", json!({"n": 3})).unwrap(),
        json!({"n": 3})
    );

    let stats = client.stats();
    assert_eq!(stats.in_flight, 0, "{stats:?}");
    assert_eq!(stats.oversized_frames, 1, "{stats:?}");
    assert_eq!(stats.timeouts, 0, "{stats:?}");
    assert_eq!(stats.skipped_lines, 0, "{stats:?}");
    assert_eq!(stats.late_responses, 0, "{stats:?}");
    common::close_and_check(&client);
    assert!(common::process_gone(pid));
}
