//! Schemas are untrusted input: a tool whose `$ref`s fan out (each definition referring twice
//! to the next, 30 levels deep: 2^30 paths) is refused by name, at once, without running for
//! hours; that tool is unusable and the others work; nothing hangs a worker or the caller.
use crate::support::mcp as support;

use std::time::Instant;

use serde_json::{json, Map, Value};
use support::*;
use toolwire::harness::McpImport;
use toolwire::{CallShape, Error, Harness, HarnessConfig, ProtocolMode, Status, ToolRegistry};

/// An object schema whose one property's definitions fan out `levels` deep.
fn fan_out(levels: usize) -> Value {
    let mut defs = Map::new();
    for level in 0..levels {
        let next = format!("#/$defs/d{}", level + 1);
        defs.insert(
            format!("d{level}"),
            json!({"allOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert(format!("d{levels}"), json!({"type": "integer"}));
    json!({"type": "object", "properties": {"n": {"$ref": "#/$defs/d0"}}, "$defs": defs})
}

fn tools() -> Value {
    json!([
        tool("good"),
        {"name": "fanout", "inputSchema": fan_out(30)},
        {"name": "outfan", "inputSchema": {"type": "object"}, "outputSchema": fan_out(30)}
    ])
}

/// Serves the list (once) and then the calls the test expects, answering each with a result;
/// with `list_after_first` the list comes after the first call (output validation asks for it).
fn serve_calls(
    peer: &toolwire::transport::MemoryPeer,
    calls: usize,
    list_after_first: bool,
) -> Vec<String> {
    if !list_after_first {
        serve_tools(peer, tools());
    }
    let mut called = Vec::new();
    for index in 0..calls {
        if list_after_first && index == 1 {
            serve_tools(peer, tools());
        }
        let request = expect_request(peer, "tools/call");
        let name = request.params.as_ref().unwrap()["name"]
            .as_str()
            .unwrap()
            .to_owned();
        answer(
            peer,
            &request.id,
            json!({"content": [{"type": "text", "text": "ok"}], "structuredContent": {"n": 1}}),
        );
        called.push(name);
    }
    if list_after_first && calls == 1 {
        serve_tools(peer, tools());
    }
    called
}

#[test]
fn a_fan_out_input_schema_makes_only_its_tool_unusable_in_the_harness() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    let harness = std::thread::scope(|scope| {
        let server = scope.spawn(|| serve_calls(&peer, 1, false));
        let mut registry = ToolRegistry::new();
        let report = registry
            .import_mcp(&client, &McpImport::new("srv"))
            .expect("the import");
        assert_eq!(report.imported.len(), 3, "{report:?}");
        let harness = Harness::new(registry, HarnessConfig::default()).expect("harness");
        let started = Instant::now();
        let refused = harness.handle(
            CallShape::Plain,
            r#"{"tool":"mcp__srv__fanout","arguments":{"n":1}}"#,
        );
        let took = started.elapsed();
        assert_eq!(
            refused.outcome.status,
            Status::ToolError,
            "{:?}",
            refused.outcome
        );
        assert!(
            refused.outcome.detail.contains("mcp__srv__fanout")
                && refused.outcome.detail.contains("cannot be used"),
            "{}",
            refused.outcome.detail
        );
        println!("the fan-out schema was refused in {took:?}");
        // The others work, and no worker is held.
        let good = harness.handle(
            CallShape::Plain,
            r#"{"tool":"mcp__srv__good","arguments":{}}"#,
        );
        assert_eq!(good.outcome.status, Status::Ok, "{:?}", good.outcome);
        assert_eq!(harness.busy_workers(), 0);
        let called = server.join().expect("the server");
        // Nothing of the refused tool reached the server.
        assert_eq!(called, vec!["good".to_owned()]);
        harness
    });
    harness.close();
    finish(&client, &peer);
}

#[test]
fn a_fan_out_output_schema_fails_its_tools_calls_by_name_and_the_others_work() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    std::thread::scope(|scope| {
        let server = scope.spawn(|| serve_calls(&peer, 2, true));
        let outcome = client.call_tool("outfan", json!({}));
        match outcome {
            Err(Error::Protocol(message)) => {
                assert!(
                    message.contains("outfan") && message.contains("outputSchema"),
                    "{message}"
                )
            }
            other => panic!("expected the schema's refusal, got {other:?}"),
        }
        let good = client.call_tool("good", json!({})).expect("the good tool");
        assert_eq!(good.text(), "ok");
        server.join().expect("the server");
    });
    finish(&client, &peer);
}
