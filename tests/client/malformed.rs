//! A malformed response to a pending request fails that request at once with a protocol error.
use crate::support::client as support;

use serde_json::json;
use support::{memory_client, next_request, round_trip, SOON};
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig, Error};

#[test]
fn a_malformed_response_fails_its_caller_at_once() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let shapes = [
        // Both result and error.
        r#"{"jsonrpc":"2.0","id":ID,"result":1,"error":{"code":-32000,"message":"m"}}"#,
        // Neither.
        r#"{"jsonrpc":"2.0","id":ID}"#,
        // An error object without a message.
        r#"{"jsonrpc":"2.0","id":ID,"error":{"code":-32000}}"#,
        // A wrong version on an answer.
        r#"{"jsonrpc":"1.0","id":ID,"result":1}"#,
    ];
    for (index, shape) in shapes.iter().enumerate() {
        // The call's own deadline is far away: only the malformed answer can end it soon.
        let mut handle = client
            .start(
                "tools/broken",
                json!({"shape": index}),
                CallOptions::new().timeout(SOON * 6),
            )
            .expect("start");
        let request = next_request(&peer);
        peer.send_line(shape.replace("ID", &request.id.to_string()));
        match handle.wait_timeout(SOON) {
            Some(Err(Error::Protocol(message))) => {
                assert!(message.contains("tools/broken"), "{message}");
            }
            other => panic!("shape {index}: expected a protocol error, got {other:?}"),
        }
        drop(handle);
    }
    let stats = client.stats();
    assert_eq!(stats.timeouts, 0, "{stats:?}");
    assert_eq!(stats.cancels, 0, "{stats:?}");
    assert_eq!(stats.skipped_lines, shapes.len() as u64, "{stats:?}");
    // The connection goes on, and no cancellation was sent for those calls.
    round_trip(&client, &peer);
    support::finish(&client);
}

#[test]
fn a_malformed_message_for_no_pending_request_is_skipped() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    peer.send_line(r#"{"jsonrpc":"2.0","id":999,"result":1,"error":{"code":1,"message":"m"}}"#);
    peer.send_line("this is not json");
    peer.send_line("[]");
    round_trip(&client, &peer);
    let stats = client.stats();
    assert_eq!(stats.skipped_lines, 3, "{stats:?}");
    assert!(!client.is_closed());
    support::finish(&client);
}
