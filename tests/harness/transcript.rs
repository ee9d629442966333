//! The JSONL transcript: one line per decision and per wire message, replayed by a test that
//! checks the counts and the statuses against the outcomes the calls returned.

use crate::support as common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use toolwire::harness::{AuditKind, ToolFailure, Transcript};
use toolwire::{
    CallShape, Harness, HarnessConfig, LocalTool, McpClient, McpConfig, McpImport, ProtocolMode,
    Status, StdioConfig, ToolRegistry,
};

/// A transcript path of this test's own, removed when dropped.
struct TempPath(PathBuf);

impl TempPath {
    fn new(name: &str) -> TempPath {
        let path = std::env::temp_dir().join(format!(
            "toolwire-{name}-{}-{:?}.jsonl",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_file(&path);
        TempPath(path)
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn a_transcript_replays_to_the_same_counts_and_statuses() {
    let path = TempPath::new("transcript");
    let client = McpClient::connect_stdio(
        StdioConfig::new(common::tool_server_path()),
        McpConfig::default().mode(ProtocolMode::Legacy),
    )
    .unwrap();
    let mut registry = ToolRegistry::new();
    registry
        .import_mcp(&client, &McpImport::new("ts").allow(["echo"]))
        .unwrap();
    let object = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    registry
        .register(LocalTool::new(
            "search",
            "Searches.",
            object.clone(),
            |args, _| {
                Ok(args["q"]
                    .as_str()
                    .filter(|q| !q.is_empty())
                    .map(|q| json!([q])))
            },
        ))
        .unwrap();
    registry
        .register(LocalTool::new("explode", "Fails.", object, |_, _| {
            Err(ToolFailure::internal("segfault in libfoo"))
        }))
        .unwrap();
    let config = HarnessConfig::default()
        .attempt_budget(5)
        .transcript(Transcript::create(&path.0).unwrap());
    let harness = Harness::new(registry, config).unwrap();

    let calls = [
        (
            CallShape::Plain,
            r#"{"tool":"search","arguments":{"q":"rust"}}"#,
        ),
        (
            CallShape::Plain,
            r#"{"tool":"search","arguments":{"q":""}}"#,
        ),
        (CallShape::Plain, r#"{"tool":"explode","arguments":{}}"#),
        (CallShape::Plain, r#"{"tool":"search","arguments":{"q":1}}"#),
        (
            CallShape::Plain,
            r#"{"tool":"search","tool":"x","arguments":{}}"#,
        ),
        (
            CallShape::Anthropic,
            r#"{"type":"tool_use","id":"toolu_7","name":"nope","input":{}}"#,
        ),
        (
            CallShape::OpenAi,
            r#"{"id":"call_9","type":"function","function":{"name":"mcp__ts__echo","arguments":"{\"message\":\"hi\"}"}}"#,
        ),
        (
            CallShape::Plain,
            r#"{"tool":"search","arguments":{"q":"more"}}"#,
        ),
        (
            CallShape::Plain,
            r#"{"tool":"search","arguments":{"q":"again"}}"#,
        ),
    ];
    let mut expected: BTreeMap<Status, usize> = BTreeMap::new();
    for (shape, raw) in calls {
        let reply = harness.handle(shape, raw);
        *expected.entry(reply.outcome.status).or_default() += 1;
    }
    harness.close();
    client.close().unwrap();
    assert_eq!(
        expected,
        BTreeMap::from([
            (Status::Invalid, 2),
            (Status::UnknownTool, 1),
            (Status::Budget, 1),
            (Status::NotFound, 1),
            (Status::ToolError, 1),
            (Status::Ok, 3),
        ])
    );

    let events = Transcript::replay(&path.0).unwrap();
    let count = |kind: AuditKind| events.iter().filter(|event| event.kind == kind).count();
    // One received and one finished per call, one admitted per admission.
    assert_eq!(count(AuditKind::Received), 9);
    assert_eq!(count(AuditKind::Finished), 9);
    assert_eq!(count(AuditKind::Admitted), 5);
    // The local runs returned, the remote one went over the wire and back.
    assert_eq!(count(AuditKind::Returned), 4);
    assert_eq!(count(AuditKind::Request), 1);
    assert_eq!(count(AuditKind::Response), 1);
    let mut replayed: BTreeMap<Status, usize> = BTreeMap::new();
    for event in events
        .iter()
        .filter(|event| event.kind == AuditKind::Finished)
    {
        *replayed.entry(event.status.unwrap()).or_default() += 1;
    }
    assert_eq!(replayed, expected);
    // Calls are numbered, and every event names its call.
    let mut calls: Vec<u64> = events.iter().map(|event| event.call).collect();
    calls.dedup();
    assert_eq!(calls, (1..=9).collect::<Vec<u64>>());
    // Ids, tools, durations and sizes are kept.
    let echo = events
        .iter()
        .find(|event| {
            event.kind == AuditKind::Finished && event.call_id.as_deref() == Some("call_9")
        })
        .unwrap();
    assert_eq!(echo.tool.as_deref(), Some("mcp__ts__echo"));
    assert_eq!(echo.status, Some(Status::Ok));
    assert_eq!(echo.size, Some(2));
    assert!(echo.duration.unwrap() > Duration::ZERO);
    let request = events
        .iter()
        .find(|event| event.kind == AuditKind::Request)
        .unwrap();
    assert_eq!(request.size, Some(r#"{"message":"hi"}"#.len()));
    // The operator reads the internal failure; the model did not.
    let explode: Vec<_> = events.iter().filter(|event| event.call == 3).collect();
    assert!(explode
        .iter()
        .any(|event| event.kind == AuditKind::Returned && event.detail.contains("segfault")));
    assert!(explode
        .iter()
        .all(|event| event.kind != AuditKind::Finished || !event.detail.contains("segfault")));
}

#[test]
fn a_broken_transcript_line_is_reported_with_its_number() {
    let path = TempPath::new("broken");
    std::fs::write(
        &path.0,
        "{\"call\":1,\"event\":\"received\",\"attempt\":0}\n\n{\"call\":\"x\"}\n",
    )
    .unwrap();
    let error = Transcript::replay(&path.0).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
    assert!(
        error.to_string().starts_with("transcript line 3:"),
        "{error}"
    );
}
