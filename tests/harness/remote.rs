//! The same statuses through MCP tools (the bundled tool_server over stdio), the import
//! filters, and what a timeout does to the admission slot under each policy.

use crate::support as common;

use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver};
use serde_json::{json, Value};
use toolwire::error::RegistryErrorKind;
use toolwire::harness::{
    AuditEvent, AuditKind, Namespace, RemoteErrorText, RemoteTimeoutSlot, RetryPolicy, ToolTimeout,
};
use toolwire::{
    CallOptions, CallShape, Error, Harness, HarnessConfig, McpClient, McpConfig, McpImport,
    ProtocolMode, Status, StdioConfig, ToolOptions, ToolRegistry,
};

use crate::support::{Recorder, SOON};
const BOUND: Duration = Duration::from_millis(300);

fn server() -> McpClient {
    McpClient::connect_stdio(
        StdioConfig::new(common::tool_server_path()),
        McpConfig::default().mode(ProtocolMode::Legacy),
    )
    .expect("connect to tool_server")
}

fn short(timeout: Duration) -> ToolOptions {
    ToolOptions::new().timeout(ToolTimeout::Custom(timeout))
}

/// A harness over `client`'s tools (imported as `import` says) and a stream of its events.
fn harness(
    client: &McpClient,
    import: McpImport,
    config: HarnessConfig,
) -> (Harness, Receiver<AuditEvent>) {
    let mut registry = ToolRegistry::new();
    registry.import_mcp(client, &import).expect("import");
    let (tx, rx) = unbounded();
    let config = config.observer(move |event| {
        let _ = tx.send(event.clone());
    });
    (Harness::new(registry, config).unwrap(), rx)
}

fn wait_for(events: &Receiver<AuditEvent>, kind: AuditKind) -> AuditEvent {
    loop {
        let event = events
            .recv_timeout(SOON)
            .unwrap_or_else(|_| panic!("no {kind} event"));
        if event.kind == kind {
            return event;
        }
    }
}

/// The ids of the requests the server was told were cancelled.
fn cancellations(client: &McpClient) -> Vec<Value> {
    let seen = client
        .request("cancellations", Value::Null, CallOptions::new())
        .expect("cancellations");
    seen["cancelled"].as_array().cloned().unwrap_or_default()
}

#[test]
fn imported_tools_are_namespaced_filtered_and_marked_idempotent_by_annotation() {
    let client = server();
    let mut registry = ToolRegistry::new();
    let report = registry.import_mcp(&client, &McpImport::new("ts")).unwrap();
    assert_eq!(
        report.imported,
        [
            "mcp__ts__echo",
            "mcp__ts__add",
            "mcp__ts__sleep",
            "mcp__ts__hang",
            "mcp__ts__crash",
            "mcp__ts__stderr_flood",
            "mcp__ts__garbage",
            "mcp__ts__fail",
            "mcp__ts__big_text"
        ]
    );
    // readOnlyHint or idempotentHint: every tool but `crash`.
    for tool in registry.tools() {
        assert_eq!(
            tool.idempotent,
            tool.name != "mcp__ts__crash",
            "{}",
            tool.name
        );
        assert_eq!(
            tool.remote_name.as_deref(),
            tool.name.strip_prefix("mcp__ts__")
        );
    }
    let tools = registry.openai_tools();
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["function"]["name"] == "mcp__ts__echo")
        .unwrap();
    assert_eq!(echo["function"]["name"], "mcp__ts__echo");
    assert_eq!(
        echo["function"]["parameters"],
        json!({"type": "object", "required": ["message"],
               "properties": {"message": {"type": "string"}}})
    );
    // Importing the same names twice is refused, and leaves the registry as it was.
    let error = registry
        .import_mcp(&client, &McpImport::new("ts"))
        .unwrap_err();
    assert_eq!(
        error.registry().map(|registry| registry.kind),
        Some(RegistryErrorKind::Duplicate),
        "{error}"
    );
    assert_eq!(registry.len(), 9);

    // Allow and deny lists; deny wins.
    let mut registry = ToolRegistry::new();
    let import = McpImport::new("ts")
        .allow(["echo", "fail", "add", "nope"])
        .deny(["add", "crash"]);
    let report = registry.import_mcp(&client, &import).unwrap();
    assert_eq!(report.imported, ["mcp__ts__echo", "mcp__ts__fail"]);
    assert_eq!(report.missing, ["nope"]);
    let add = report
        .skipped
        .iter()
        .find(|skip| skip.name == "add")
        .unwrap();
    assert_eq!(add.reason, "it is on the deny list");
    let hang = report
        .skipped
        .iter()
        .find(|skip| skip.name == "hang")
        .unwrap();
    assert_eq!(hang.reason, "it is not on the allow list");

    // Annotations are hints; an import may ignore them.
    let mut registry = ToolRegistry::new();
    registry
        .import_mcp(&client, &McpImport::new("ts").trust_annotations(false))
        .unwrap();
    assert!(registry.tools().iter().all(|tool| !tool.idempotent));

    // Bare names follow the one tool-name rule as they are: the server's snake_case
    // `stderr_flood` is imported under its own name.
    let mut registry = ToolRegistry::new();
    let report = registry
        .import_mcp(&client, &McpImport::new("ts").namespace(Namespace::Bare))
        .unwrap();
    assert!(report.imported.contains(&"echo".to_owned()));
    assert!(
        report.imported.contains(&"stderr_flood".to_owned()),
        "{report:?}"
    );
    assert!(registry.contains("stderr_flood"));

    // A server name outside [a-z0-9-]+ is refused.
    let error = ToolRegistry::new()
        .import_mcp(&client, &McpImport::new("My_Server"))
        .unwrap_err();
    assert_eq!(
        error.registry().map(|registry| registry.kind),
        Some(RegistryErrorKind::BadName),
        "{error}"
    );
    client.close().unwrap();
}

#[test]
fn remote_tools_end_in_the_same_statuses() {
    let client = server();
    let import = McpImport::new("ts")
        .deny(["crash"])
        .tool_options("hang", short(BOUND));
    let (harness, events) = harness(&client, import, HarnessConfig::default());

    // OK, through the OpenAI shape.
    let raw = json!({"id": "call_1", "type": "function",
                     "function": {"name": "mcp__ts__echo",
                                  "arguments": "{\"message\":\"hello\"}"}});
    let reply = harness.handle_value(CallShape::OpenAi, &raw);
    assert_eq!(reply.outcome.status, Status::Ok);
    assert_eq!(
        reply.message(),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "hello"})
    );
    // Structured content (validated against the tool's outputSchema) is the result.
    let outcome = harness.call("mcp__ts__add", json!({"a": 2, "b": 3}));
    assert_eq!(outcome.status, Status::Ok);
    assert_eq!(outcome.result, json!({"sum": 5}));

    // TOOL_ERROR: the tool's own isError text is its answer.
    let outcome = harness.call("mcp__ts__fail", json!({"message": "disk on fire"}));
    assert_eq!(outcome.status, Status::ToolError);
    assert_eq!(outcome.detail, "the tool reported an error");
    assert_eq!(outcome.result, json!("disk on fire"));

    // UNKNOWN_TOOL: not listed, or denied.
    for name in [
        "mcp__ts__nope",
        "mcp__ts__crash",
        "mcp__other__echo",
        "echo",
    ] {
        let outcome = harness.call(name, json!({}));
        assert_eq!(outcome.status, Status::UnknownTool, "{name}");
    }

    // INVALID against tool_server's own schemas, and nothing is sent.
    let before = harness.budget().used;
    let reply = harness.handle(
        CallShape::Anthropic,
        r#"{"type":"tool_use","id":"toolu_1","name":"mcp__ts__echo","input":{"message":5}}"#,
    );
    assert_eq!(reply.outcome.status, Status::Invalid);
    assert!(reply
        .outcome
        .detail
        .contains("- field /message: 5 is not of type \"string\""));
    let outcome = harness.call("mcp__ts__sleep", json!({"ms": -1}));
    assert_eq!(outcome.status, Status::Invalid);
    assert!(outcome
        .detail
        .contains("field /ms: -1 is less than the minimum of 0"));
    let outcome = harness.call("mcp__ts__add", json!({"a": 1}));
    assert_eq!(outcome.status, Status::Invalid);
    assert!(outcome.detail.contains("\"b\" is a required property"));
    assert_eq!(harness.budget().used, before);

    // TIMEOUT: `hang` never answers; the request is cancelled on the wire.
    let started = Instant::now();
    let outcome = harness.call("mcp__ts__hang", json!({}));
    assert_eq!(outcome.status, Status::Timeout);
    assert!(started.elapsed() >= BOUND);
    assert_eq!(
        outcome.detail,
        "the tool did not answer within 300ms; the request was cancelled"
    );

    // Every admitted call cost one attempt: echo, add, fail, hang.
    assert_eq!(harness.budget().used, 4);
    // The wire messages were audited: a request for each, a response for each.
    drop(harness);
    let events: Vec<AuditEvent> = events.try_iter().collect();
    let count = |kind| events.iter().filter(|event| event.kind == kind).count();
    assert_eq!(count(AuditKind::Request), 4);
    assert_eq!(count(AuditKind::Response), 4);
    let response = events
        .iter()
        .find(|event| {
            event.kind == AuditKind::Response && event.tool.as_deref() == Some("mcp__ts__echo")
        })
        .unwrap();
    assert_eq!(response.status, Some(Status::Ok));
    assert!(response.size.unwrap() > 0);
    client.close().unwrap();
}

#[test]
fn a_slot_held_by_sleep_makes_the_next_call_busy() {
    let client = server();
    let mut registry = ToolRegistry::new();
    registry
        .import_mcp(&client, &McpImport::new("ts"))
        .expect("import");
    // The worker reports the sleep's answer (the `Response` event) before it frees its slot;
    // the observer holds that report until the test lets it go, so the slot stays taken for
    // as long as the test needs, however slowly the test runs. The guard only keeps a broken
    // test from hanging.
    let (release, held) = bounded::<()>(1);
    let (tx, events) = unbounded();
    let config = HarnessConfig::default()
        .workers(1)
        // A call that waited for the worker at the hand-off, instead of being refused, would
        // wait until the sleep's slot came free, and then run.
        .hand_off_grace(Duration::from_secs(3600))
        .observer(move |event| {
            let _ = tx.send(event.clone());
            if event.kind == AuditKind::Response && event.tool.as_deref() == Some("mcp__ts__sleep")
            {
                let _ = held.recv_timeout(SOON);
            }
        });
    let harness = Harness::new(registry, config).unwrap();
    let sleeper = {
        let harness = harness.clone();
        std::thread::spawn(move || harness.call("mcp__ts__sleep", json!({"ms": 1000})))
    };
    let admitted = wait_for(&events, AuditKind::Admitted);
    assert_eq!(admitted.tool.as_deref(), Some("mcp__ts__sleep"));
    // BUSY while the sleep holds the slot: the test releases it only after this call, so a
    // call that waited for the worker would have run (after the guard) and answered OK.
    let outcome = harness.call("mcp__ts__echo", json!({"message": "me too"}));
    assert_eq!(outcome.status, Status::Busy);
    assert_eq!(outcome.attempts, 0);
    assert_eq!(harness.busy_workers(), 1);
    release.send(()).unwrap();
    let slept = sleeper.join().unwrap();
    assert_eq!(slept.status, Status::Ok);
    assert_eq!(slept.result, json!("slept 1000 ms"));
    assert_eq!(harness.budget().used, 1);
    assert_eq!(
        harness
            .call("mcp__ts__echo", json!({"message": "now"}))
            .status,
        Status::Ok
    );
    client.close().unwrap();
}

#[test]
fn the_release_policy_cancels_on_the_wire_and_frees_the_slot_at_the_timeout() {
    let client = server();
    let import = McpImport::new("ts")
        .timeout_slot(RemoteTimeoutSlot::Release)
        .tool_options("hang", short(BOUND));
    let (harness, _events) = harness(&client, import, HarnessConfig::default().workers(1));
    let started = Instant::now();
    assert_eq!(
        harness.call("mcp__ts__hang", json!({})).status,
        Status::Timeout
    );
    assert!(started.elapsed() >= BOUND);
    // The slot is free at once: the next call is admitted, not BUSY.
    assert_eq!(harness.busy_workers(), 0);
    let outcome = harness.call("mcp__ts__echo", json!({"message": "next"}));
    assert_eq!(outcome.status, Status::Ok);
    // And the server was told.
    assert_eq!(cancellations(&client).len(), 1);
    client.close().unwrap();
}

#[test]
fn the_hold_policy_keeps_the_slot_until_the_server_answers() {
    let client = server();
    let import = McpImport::new("ts")
        .timeout_slot(RemoteTimeoutSlot::HoldUntilAnswered {
            limit: Duration::from_secs(120),
        })
        .tool_options("sleep", short(BOUND));
    let (harness, events) = harness(&client, import, HarnessConfig::default().workers(1));
    let started = Instant::now();
    let outcome = harness.call("mcp__ts__sleep", json!({"ms": 900}));
    assert_eq!(outcome.status, Status::Timeout);
    assert!(started.elapsed() >= BOUND);
    assert!(
        outcome.detail.contains("may still be running"),
        "{}",
        outcome.detail
    );
    // The worker still waits for the server's answer.
    let outcome = harness.call("mcp__ts__echo", json!({"message": "next"}));
    assert_eq!(outcome.status, Status::Busy);
    let late = wait_for(&events, AuditKind::Late);
    assert_eq!(late.tool.as_deref(), Some("mcp__ts__sleep"));
    assert!(late.detail.contains("discarded"));
    assert!(late.duration.unwrap() >= Duration::from_millis(900));
    let outcome = harness.call("mcp__ts__echo", json!({"message": "now"}));
    assert_eq!(outcome.status, Status::Ok);
    // Nothing was cancelled on the wire: the answer was awaited.
    assert!(cancellations(&client).is_empty());
    // A hold limit shorter than the tool's bound is refused.
    let error = ToolRegistry::new()
        .import_mcp(
            &client,
            &McpImport::new("ts").timeout_slot(RemoteTimeoutSlot::HoldUntilAnswered {
                limit: Duration::from_secs(1),
            }),
        )
        .unwrap_err();
    assert!(matches!(error, Error::Config(_)), "{error}");
    client.close().unwrap();
}

#[test]
fn a_remote_error_text_can_be_withheld_from_the_model() {
    let client = server();
    let import = McpImport::new("ts").error_text(RemoteErrorText::Withhold);
    let (harness, events) = harness(&client, import, HarnessConfig::default());
    let outcome = harness.call(
        "mcp__ts__fail",
        json!({"message": "stack trace at db.rs:42"}),
    );
    assert_eq!(outcome.status, Status::ToolError);
    assert_eq!(outcome.result, Value::Null);
    assert!(!outcome.model_text().contains("db.rs"));
    let response = wait_for(&events, AuditKind::Response);
    assert!(response.detail.contains("db.rs:42"), "{}", response.detail);
    client.close().unwrap();
}

#[test]
fn transport_failures_are_retried_for_idempotent_remote_tools_only() {
    let client = server();
    let policy = RetryPolicy::new()
        .max_attempts(3)
        .delays(Duration::from_millis(50), Duration::from_secs(10))
        .jitter(0.5);
    let import = McpImport::new("ts").options(ToolOptions::new().retry(policy));
    let recorder = Recorder::default();
    let (harness, events) = harness(
        &client,
        import,
        HarnessConfig::default().sleeper(recorder.clone()),
    );
    // The server is gone: every attempt fails on the transport.
    client.close().unwrap();

    let outcome = harness.call("mcp__ts__echo", json!({"message": "anyone?"}));
    assert_eq!(outcome.status, Status::ToolError);
    assert_eq!(outcome.attempts, 3);
    assert!(outcome.detail.starts_with("the tool could not be reached"));
    assert!(!outcome.detail.contains("closed"), "{}", outcome.detail);
    let delays = recorder.0.lock().unwrap().clone();
    assert_eq!(delays, outcome.retry_delays);
    assert_eq!(delays.len(), 2);
    assert!(delays[0] < delays[1], "{delays:?}");
    // The transport's own words are in the audit trail, not in the outcome.
    let response = wait_for(&events, AuditKind::Response);
    assert!(
        response.detail.contains("connection closed"),
        "{}",
        response.detail
    );

    // `crash` is not idempotent (no hint): one attempt, whatever its policy says.
    let outcome = harness.call("mcp__ts__crash", json!({}));
    assert_eq!(outcome.status, Status::ToolError);
    assert_eq!(outcome.attempts, 1);
    assert_eq!(recorder.0.lock().unwrap().len(), 2);
    assert_eq!(harness.budget().used, 4);
}

#[test]
fn a_callers_deadline_cancels_a_remote_call_on_the_wire_and_frees_its_worker() {
    // `hang` keeps its standard bound (60 s): only the caller's deadline can end it early.
    let client = server();
    let import = McpImport::new("ts").timeout_slot(RemoteTimeoutSlot::Release);
    let (harness, _events) = harness(&client, import, HarnessConfig::default().workers(2));
    let calls = [
        r#"{"tool":"mcp__ts__hang","arguments":{}}"#,
        r#"{"tool":"mcp__ts__echo","arguments":{"message":"meanwhile"}}"#,
    ];
    let started = Instant::now();
    let replies = harness.handle_all_until(CallShape::Plain, &calls, started + BOUND);
    assert!(started.elapsed() >= BOUND);
    assert_eq!(replies[0].outcome.status, Status::Timeout);
    assert_eq!(
        replies[0].outcome.detail,
        "the tool did not answer before the caller's deadline; the request was cancelled"
    );
    assert_eq!(replies[1].outcome.status, Status::Ok);
    // The request was cancelled at the deadline, so the worker is back long before the
    // tool's own bound.
    assert!(harness.wait_idle(SOON), "the worker is still held by hang");
    assert_eq!(cancellations(&client).len(), 1);
    client.close().unwrap();
}
