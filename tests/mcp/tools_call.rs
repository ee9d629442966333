//! `call_tool` over the in-memory transport: typed content (unknown kinds kept), malformed
//! results, output-schema validation naming the failing path, and `isError` as a tool error
//! rather than an `Err`.
use crate::support::mcp as support;

use serde_json::{json, Value};
use support::*;
use toolwire::transport::MemoryPeer;
use toolwire::{CallOptions, CallToolResult, Content, Error, McpClient, ProtocolMode};

/// Calls `name` while the server answers `result` and, when `then` is given, answers the
/// `tools/list` the client makes to find the output schema.
fn call(
    client: &McpClient,
    peer: &MemoryPeer,
    name: &str,
    result: Value,
    then: Option<Value>,
) -> toolwire::Result<CallToolResult> {
    exchange(
        peer,
        || client.call_tool_with(name, json!({"a": 1}), CallOptions::new()),
        |peer| {
            let request = serve(peer, "tools/call", result);
            assert_eq!(params(&request)["name"], name);
            if let Some(tools) = then {
                serve_tools(peer, tools);
            }
        },
    )
    .0
}

fn expect_protocol_error(outcome: toolwire::Result<CallToolResult>, needle: &str) {
    match outcome {
        Err(Error::Protocol(message)) => assert!(message.contains(needle), "{message}"),
        other => panic!("expected a protocol error mentioning {needle:?}, got {other:?}"),
    }
}

#[test]
fn content_blocks_are_typed_and_unknown_kinds_are_kept() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    let hologram = json!({"type": "hologram", "frames": [1, 2], "annotations": {"priority": 1}});
    let result = call(
        &client,
        &peer,
        "show",
        json!({"content": [
            {"type": "text", "text": "hi", "annotations": {"audience": ["user"]}},
            hologram,
            {"type": "image", "data": "iVBO", "mimeType": "image/png"},
            {"type": "audio", "data": "UklG", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "demo://r/1", "name": "r1", "mimeType": "text/plain"},
            {"type": "resource", "resource": {"uri": "demo://r/2", "mimeType": "text/plain", "text": "two"}},
            {"type": "resource", "resource": {"uri": "demo://r/3", "blob": "dGhyZWU="}},
        ]}),
        Some(json!([tool("show")])),
    )
    .expect("a result");
    assert!(!result.is_error);
    assert_eq!(
        result.content.len(),
        7,
        "nothing dropped: {:?}",
        result.content
    );
    assert_eq!(result.content[0].as_text(), Some("hi"));
    assert_eq!(result.content[1], Content::Unknown(hologram));
    assert!(
        matches!(&result.content[2], Content::Image { data, mime_type } if data == "iVBO" && mime_type == "image/png")
    );
    assert!(
        matches!(&result.content[3], Content::Audio { mime_type, .. } if mime_type == "audio/wav")
    );
    assert!(
        matches!(&result.content[4], Content::ResourceLink { uri, name, raw } if uri == "demo://r/1" && name == "r1" && raw["mimeType"] == "text/plain")
    );
    assert!(
        matches!(&result.content[5], Content::Resource { uri, text: Some(text), blob: None, .. } if uri == "demo://r/2" && text == "two")
    );
    assert!(
        matches!(&result.content[6], Content::Resource { text: None, blob: Some(blob), .. } if blob == "dGhyZWU=")
    );
    assert_eq!(result.text(), "hi");
    finish(&client, &peer);
}

#[test]
fn content_that_is_not_an_array_is_a_protocol_error() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    let outcome = call(
        &client,
        &peer,
        "t",
        json!({"content": {"type": "text", "text": "x"}}),
        None,
    );
    expect_protocol_error(outcome, "`content` array");
    let outcome = call(&client, &peer, "t", json!({"isError": false}), None);
    expect_protocol_error(outcome, "`content` array");
    let outcome = call(&client, &peer, "t", json!("just text"), None);
    expect_protocol_error(outcome, "must be an object");
    finish(&client, &peer);
}

#[test]
fn is_error_that_is_not_a_boolean_is_a_protocol_error() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    let outcome = call(
        &client,
        &peer,
        "t",
        json!({"content": [], "isError": "true"}),
        None,
    );
    expect_protocol_error(outcome, "`isError` must be a boolean");
    let outcome = call(
        &client,
        &peer,
        "t",
        json!({"content": [], "isError": 1}),
        None,
    );
    expect_protocol_error(outcome, "`isError` must be a boolean");
    finish(&client, &peer);
}

#[test]
fn a_tool_error_is_ok_with_is_error_set() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    // No `tools/list` follows: an error result is not checked against the output schema.
    let result = call(
        &client,
        &peer,
        "add",
        json!({"content": [{"type": "text", "text": "Unknown tool: add"}], "isError": true}),
        None,
    )
    .expect("a tool error is a result, not an Err");
    assert!(result.is_error);
    assert_eq!(result.text(), "Unknown tool: add");
    finish(&client, &peer);
}

#[test]
fn structured_content_breaking_the_output_schema_names_the_failing_path() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    let outcome = call(
        &client,
        &peer,
        "add",
        json!({"content": [{"type": "text", "text": "five"}], "structuredContent": {"sum": "five"}}),
        Some(json!([tool("echo"), add_tool()])),
    );
    match outcome {
        Err(Error::Schema(schema)) => {
            assert_eq!(schema.violations.len(), 1, "{schema}");
            assert_eq!(schema.violations[0].path, "/sum");
            assert!(schema.subject.contains("`add`"), "{schema}");
            let text = schema.to_string();
            assert!(text.contains("/sum"), "{text}");
        }
        other => panic!("expected a schema error, got {other:?}"),
    }
    // The schema is kept: the next call is checked without another `tools/list`.
    let outcome = call(
        &client,
        &peer,
        "add",
        json!({"content": [], "structuredContent": {"total": 5}}),
        None,
    );
    match outcome {
        Err(Error::Schema(schema)) => assert_eq!(schema.violations[0].path, ""),
        other => panic!("expected a schema error, got {other:?}"),
    }
    let sum = call(
        &client,
        &peer,
        "add",
        json!({"content": [], "structuredContent": {"sum": 5}}),
        None,
    )
    .expect("a valid result");
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    finish(&client, &peer);
}

#[test]
fn missing_structured_content_with_an_output_schema_is_a_schema_error() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    let outcome = call(
        &client,
        &peer,
        "add",
        json!({"content": [{"type": "text", "text": "5"}]}),
        Some(json!([add_tool()])),
    );
    match outcome {
        Err(Error::Schema(schema)) => {
            assert!(
                schema.violations[0]
                    .message
                    .contains("no structuredContent"),
                "{schema}"
            );
        }
        other => panic!("expected a schema error, got {other:?}"),
    }
    finish(&client, &peer);
}

#[test]
fn tools_without_an_output_schema_are_not_checked() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    let result = call(
        &client,
        &peer,
        "echo",
        json!({"content": [], "structuredContent": {"anything": [1, "two"]}}),
        Some(json!([tool("echo")])),
    )
    .expect("no schema, no check");
    assert_eq!(
        result.structured_content,
        Some(json!({"anything": [1, "two"]}))
    );
    finish(&client, &peer);
}

#[test]
fn validation_can_be_turned_off() {
    let mut unchecked = config(ProtocolMode::Legacy);
    unchecked = unchecked.validate_output(false);
    let (client, peer) = connect_legacy(unchecked);
    // No `tools/list` is made to find a schema.
    let result = call(
        &client,
        &peer,
        "add",
        json!({"content": [], "structuredContent": {"sum": "five"}}),
        None,
    )
    .expect("not checked");
    assert_eq!(result.structured_content, Some(json!({"sum": "five"})));
    finish(&client, &peer);
}

#[test]
fn a_failed_tool_listing_is_remembered_so_later_calls_do_not_list_again() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    let result = json!({"content": [], "structuredContent": {"sum": "five"}});
    let (first, ()) = exchange(
        &peer,
        || client.call_tool_with("add", json!({"a": 1}), CallOptions::new()),
        |peer| {
            serve(peer, "tools/call", result.clone());
            let list = expect_request(peer, "tools/list");
            answer_error(
                peer,
                &list.id,
                toolwire::jsonrpc::ErrorObject::method_not_found("tools/list"),
            );
        },
    );
    first.expect("no list, nothing to check against");
    // The next calls make no `tools/list`: `finish` fails on any frame the script missed.
    for _ in 0..3 {
        call(&client, &peer, "add", result.clone(), None).expect("unchecked");
    }
    finish(&client, &peer);
}

#[test]
fn a_tool_the_list_gives_no_output_schema_is_remembered() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    let result = json!({"content": [], "structuredContent": {"x": 1}});
    call(
        &client,
        &peer,
        "echo",
        result.clone(),
        Some(json!([tool("echo")])),
    )
    .expect("no schema");
    for _ in 0..3 {
        call(&client, &peer, "echo", result.clone(), None).expect("no schema");
    }
    finish(&client, &peer);
}

/// A program keeps a `ToolCall` per call in flight (10,000 of them in `benches/memory.rs`,
/// whose target is 5 MB in all): what a call rarely needs (the input rounds' params, a task,
/// a span) is kept out of line. It took 880 bytes with all of it inline (12.4 MB for 10,000
/// calls); the call handle inside it is 152.
#[test]
fn a_tool_call_in_flight_keeps_what_it_rarely_needs_out_of_line() {
    let size = std::mem::size_of::<toolwire::ToolCall>();
    assert!(size <= 320, "a ToolCall takes {size} bytes");
}
