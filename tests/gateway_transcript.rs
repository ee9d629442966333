//! Every decision and every forwarded call is a line of the harness's JSONL transcript:
//! received, request, response and finished for a forwarded call; received and finished
//! (INVALID) for a refused one, with no request; finished (UNKNOWN_TOOL) for a denied one.
//! Arguments and results are never written, only their sizes.
#![cfg(feature = "gateway")]

#[path = "gateway_support.rs"]
mod support;

use std::sync::Arc;

use serde_json::json;
use support::{call, front, gateway_with, tool_server_entry};
use toolwire::gateway::GatewayOptions;
use toolwire::harness::{AuditKind, Status, Transcript};

#[test]
fn decisions_and_forwarded_calls_are_in_the_transcript() {
    let folder = std::env::temp_dir().join(format!(
        "toolwire-gateway-transcript-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("audit.jsonl");
    let transcript = Arc::new(Transcript::create(&path).unwrap());
    let gateway = gateway_with(
        &[("tools", tool_server_entry())],
        r#"{"servers": {"tools": {"deny": ["crash"]}}}"#,
        GatewayOptions::new().transcript(transcript),
    );
    let (client, connection) = front(&gateway);
    assert_eq!(
        call(
            &client,
            "mcp__tools__echo",
            json!({"message": "secret-argument-text"})
        )
        .text(),
        "secret-argument-text"
    );
    assert!(call(&client, "mcp__tools__echo", json!({}))
        .text()
        .starts_with("INVALID: "));
    assert!(call(&client, "mcp__tools__crash", json!({}))
        .text()
        .starts_with("UNKNOWN_TOOL: "));
    client.close().unwrap();
    connection.wait();

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("secret-argument-text"),
        "arguments or results were written: {text}"
    );
    let events = Transcript::replay(&path).unwrap();
    let of = |call: u64| -> Vec<AuditKind> {
        events
            .iter()
            .filter(|event| event.call == call)
            .map(|event| event.kind)
            .collect()
    };
    assert_eq!(
        of(1),
        [
            AuditKind::Received,
            AuditKind::Request,
            AuditKind::Response,
            AuditKind::Finished
        ]
    );
    assert_eq!(of(2), [AuditKind::Received, AuditKind::Finished]);
    assert_eq!(of(3), [AuditKind::Finished]);
    let status = |call: u64| {
        events
            .iter()
            .find(|event| event.call == call && event.kind == AuditKind::Finished)
            .and_then(|event| event.status)
    };
    assert_eq!(status(1), Some(Status::Ok));
    assert_eq!(status(2), Some(Status::Invalid));
    assert_eq!(status(3), Some(Status::UnknownTool));
    let first = events.iter().find(|event| event.call == 1).unwrap();
    assert_eq!(first.tool.as_deref(), Some("mcp__tools__echo"));
    let denied = events.iter().find(|event| event.call == 3).unwrap();
    assert_eq!(denied.tool.as_deref(), Some("mcp__tools__crash"));
    let _ = std::fs::remove_dir_all(&folder);
}
