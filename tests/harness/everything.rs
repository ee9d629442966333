//! The harness statuses through `@modelcontextprotocol/server-everything` over stdio.
//!
//! The tests that need the peers are `#[ignore]`d (a plain `cargo test` lists them as
//! ignored); `TOOLWIRE_PEERS_DIR=DIR cargo test --features cli --tests -- --ignored` runs them
//! after `bash tests/peers/install.sh DIR`, and run that way without the peers they fail.
use crate::support::mcp as support;

use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded};
use serde_json::json;
use support::{peers, SOON};
use toolwire::harness::{AuditKind, ToolTimeout};
use toolwire::{
    CallShape, Harness, HarnessConfig, McpClient, McpImport, ProtocolMode, Status, StdioConfig,
    ToolOptions, ToolRegistry,
};

const LONG: &str = "mcp__everything__trigger-long-running-operation";
/// The same tool, imported again with a generous bound, to hold the worker.
const HELD: &str = "mcp__held__trigger-long-running-operation";

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_harness_statuses_through_server_everything() {
    let peers = peers("the_harness_statuses_through_server_everything");
    let stdio = StdioConfig::new(peers.path("TOOLWIRE_NODE"))
        .arg(peers.path("TOOLWIRE_EVERYTHING_JS"))
        .arg("stdio");
    let client = McpClient::connect_stdio(stdio, support::config(ProtocolMode::Auto))
        .expect("connect to server-everything");
    let bound = Duration::from_millis(300);
    let import = McpImport::new("everything")
        .allow([
            "echo",
            "get-sum",
            "gzip-file-as-resource",
            "trigger-long-running-operation",
        ])
        .tool_options(
            "trigger-long-running-operation",
            ToolOptions::new().timeout(ToolTimeout::Custom(bound)),
        );
    let mut registry = ToolRegistry::new();
    let report = registry.import_mcp(&client, &import).unwrap();
    assert_eq!(report.imported.len(), 4, "{report:?}");
    assert!(registry.tool("mcp__everything__echo").unwrap().idempotent);
    // The same long-running tool once more, under its own name and with a bound that a slow
    // machine cannot reach, to hold the only worker for the BUSY check below.
    let held = McpImport::new("held")
        .allow(["trigger-long-running-operation"])
        .tool_options(
            "trigger-long-running-operation",
            ToolOptions::new().timeout(ToolTimeout::Custom(Duration::from_secs(60))),
        );
    registry.import_mcp(&client, &held).unwrap();
    // The worker reports the holder's answer (the `Response` event) before it frees its slot;
    // the observer holds that report until the test lets it go, so the slot stays taken for
    // as long as the test needs. The guard only keeps a broken test from hanging.
    let (release, holding) = bounded::<()>(1);
    let (tx, events) = unbounded();
    let config = HarnessConfig::default()
        .workers(1)
        // A call that waited for the worker at the hand-off, instead of being refused, would
        // wait until the holder's slot came free, and then run.
        .hand_off_grace(Duration::from_secs(3600))
        .observer(move |event| {
            let _ = tx.send(event.clone());
            if event.kind == AuditKind::Response && event.tool.as_deref() == Some(HELD) {
                let _ = holding.recv_timeout(SOON);
            }
        });
    let harness = Harness::new(registry, config).unwrap();

    // OK, from an Anthropic tool_use block to its tool_result.
    let reply = harness.handle(
        CallShape::Anthropic,
        r#"{"type":"tool_use","id":"toolu_1","name":"mcp__everything__echo","input":{"message":"hi"}}"#,
    );
    assert_eq!(reply.outcome.status, Status::Ok, "{:?}", reply.outcome);
    assert_eq!(
        reply.message(),
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "Echo: hi",
               "is_error": false})
    );
    // INVALID against the server's (zod-made) schema; nothing is sent.
    let outcome = harness.call("mcp__everything__get-sum", json!({"a": "1", "b": 2}));
    assert_eq!(outcome.status, Status::Invalid);
    assert!(
        outcome
            .detail
            .contains("field /a: \"1\" is not of type \"number\""),
        "{}",
        outcome.detail
    );
    // UNKNOWN_TOOL: listed by the server, but not allowed.
    let outcome = harness.call("mcp__everything__get-env", json!({}));
    assert_eq!(outcome.status, Status::UnknownTool);
    // TOOL_ERROR: the server's own isError answer.
    let outcome = harness.call(
        "mcp__everything__gzip-file-as-resource",
        json!({"data": "ftp://example.invalid/file"}),
    );
    assert_eq!(outcome.status, Status::ToolError, "{outcome:?}");
    assert!(outcome.model_text().contains("Unsupported URL protocol"));
    // TIMEOUT, the request cancelled on the wire and the slot freed.
    let started = Instant::now();
    let outcome = harness.call(LONG, json!({"duration": 5, "steps": 1}));
    assert_eq!(outcome.status, Status::Timeout);
    assert!(started.elapsed() >= bound);
    assert_eq!(harness.busy_workers(), 0);
    // BUSY while the only worker holds a quarter-second operation (and its answer, which the
    // observer keeps until the echo was refused): a call that waited for the worker would
    // have run, after the guard, and answered OK.
    let holder = {
        let harness = harness.clone();
        std::thread::spawn(move || harness.call(HELD, json!({"duration": 0.25, "steps": 1})))
    };
    loop {
        let event = events.recv_timeout(SOON).expect("the holder's admission");
        if event.kind == AuditKind::Admitted && event.call == 6 {
            break;
        }
    }
    let outcome = harness.call("mcp__everything__echo", json!({"message": "me too"}));
    assert_eq!(outcome.status, Status::Busy);
    release.send(()).unwrap();
    assert_eq!(holder.join().unwrap().status, Status::Ok);
    assert_eq!(harness.budget().used, 4);
    harness.close();
    client.close().unwrap();
}
