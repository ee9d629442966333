//! Every decision and every forwarded call is a line of the harness's JSONL transcript:
//! received, request, response and finished for a forwarded call; received and finished
//! (INVALID) for a refused one, with no request; finished (UNKNOWN_TOOL) for a denied one.
//! Arguments and results are never written, only their sizes. A forwarded resource read and
//! prompt get are a request and a response line each; a backend's refusal is the response's
//! status (NOT_FOUND for its "resource not found", TOOL_ERROR for any other error).
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use std::sync::Arc;

use serde_json::json;
use support::{call, front, gateway_with, http_backend, tool_server, tool_server_entry, url_entry};
use toolwire::gateway::GatewayConfig;
use toolwire::harness::{AuditKind, Status, Transcript};
use toolwire::jsonrpc::ErrorCode;
use toolwire::server::{HandlerError, Server, ServerConfig, ServerResource};

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
        GatewayConfig::new().transcript(transcript),
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

#[test]
fn forwarded_reads_and_prompt_gets_are_in_the_transcript() {
    let folder = std::env::temp_dir().join(format!(
        "toolwire-gateway-transcript-reads-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("audit.jsonl");
    let transcript = Arc::new(Transcript::create(&path).unwrap());
    let entry = json!({"command": tool_server().display().to_string(), "args": ["--catalog"]});
    let gateway = gateway_with(
        &[("notes", entry)],
        "{}",
        GatewayConfig::new().transcript(transcript),
    );
    let (client, connection) = front(&gateway);
    client.read_resource("note://readme").unwrap();
    client.read_resource("note://items/42").unwrap();
    client
        .get_prompt("mcp__notes__greet", json!({"name": "Grace-secret"}))
        .unwrap();
    assert!(client.read_resource("note://no-such-note").is_err());
    client.close().unwrap();
    connection.wait();
    gateway.close();

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("Grace-secret"),
        "arguments were written: {text}"
    );
    assert!(
        !text.contains("Read me first."),
        "a result was written: {text}"
    );
    let events = Transcript::replay(&path).unwrap();
    let lines = |named: &str| -> Vec<(AuditKind, Option<Status>)> {
        events
            .iter()
            .filter(|event| event.tool.as_deref() == Some(named))
            .map(|event| (event.kind, event.status))
            .collect()
    };
    assert_eq!(
        lines("resources/read note://readme"),
        [
            (AuditKind::Request, None),
            (AuditKind::Response, Some(Status::Ok))
        ]
    );
    assert_eq!(
        lines("prompts/get mcp__notes__greet"),
        [
            (AuditKind::Request, None),
            (AuditKind::Response, Some(Status::Ok))
        ]
    );
    assert_eq!(
        lines("resources/read note://items/42"),
        [
            (AuditKind::Request, None),
            (AuditKind::Response, Some(Status::Ok))
        ]
    );
    // A URI no backend serves is answered by the gateway itself: nothing was forwarded.
    assert_eq!(lines("resources/read note://no-such-note"), []);
    let _ = std::fs::remove_dir_all(&folder);
}

#[test]
fn a_backends_refused_read_is_its_response_status() {
    let folder = std::env::temp_dir().join(format!(
        "toolwire-gateway-transcript-refused-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("audit.jsonl");
    let transcript = Arc::new(Transcript::create(&path).unwrap());
    let backend = Server::new(ServerConfig::new("flaky", "1.0")).unwrap();
    backend
        .add_resource(ServerResource::new("flaky://gone", "gone", |_, uri| {
            Err(HandlerError::new(
                ErrorCode(-32002),
                format!("Resource not found: {uri}"),
            ))
        }))
        .unwrap();
    backend
        .add_resource(ServerResource::new("flaky://broken", "broken", |_, _| {
            Err(HandlerError::internal("the disk is on fire"))
        }))
        .unwrap();
    let (_http, url) = http_backend(&backend);
    let gateway = gateway_with(
        &[("flaky", url_entry(&url))],
        "{}",
        GatewayConfig::new().transcript(transcript),
    );
    assert!(gateway.report().failed.is_empty(), "{:?}", gateway.report());
    let (client, connection) = front(&gateway);
    assert!(client.read_resource("flaky://gone").is_err());
    assert!(client.read_resource("flaky://broken").is_err());
    client.close().unwrap();
    connection.wait();
    gateway.close();

    let events = Transcript::replay(&path).unwrap();
    let status = |named: &str| {
        events
            .iter()
            .find(|event| event.kind == AuditKind::Response && event.tool.as_deref() == Some(named))
            .and_then(|event| event.status)
    };
    assert_eq!(
        status("resources/read flaky://gone"),
        Some(Status::NotFound)
    );
    assert_eq!(
        status("resources/read flaky://broken"),
        Some(Status::ToolError)
    );
    let _ = std::fs::remove_dir_all(&folder);
}
