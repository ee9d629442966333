//! OpenAI and Anthropic round trips: tool definitions out, the model's tool call in, the
//! tool-result message out, including the repair message for a bad argument.

use serde_json::{json, Value};
use toolwire::{CallShape, Harness, HarnessConfig, LocalTool, Status, ToolRegistry};

fn weather_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["city", "unit"],
        "properties": {
            "city": {"type": "string", "minLength": 1},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
        }
    })
}

fn harness() -> Harness {
    let mut registry = ToolRegistry::new();
    registry
        .register(LocalTool::new(
            "get-weather",
            "The current temperature in a city.",
            weather_schema(),
            |args, _| {
                let degrees = if args["unit"] == "celsius" { 21 } else { 70 };
                Ok(Some(json!(format!(
                    "{degrees} degrees in {}",
                    args["city"].as_str().unwrap()
                ))))
            },
        ))
        .unwrap();
    Harness::new(registry, HarnessConfig::default()).unwrap()
}

/// What the model would send back for the tool call `{city, unit}`, as OpenAI does: the
/// arguments as a JSON string.
fn openai_call(id: &str, arguments: Value) -> String {
    json!({
        "id": id,
        "type": "function",
        "function": {"name": "get-weather", "arguments": arguments.to_string()}
    })
    .to_string()
}

fn anthropic_call(id: &str, input: Value) -> String {
    json!({"type": "tool_use", "id": id, "name": "get-weather", "input": input}).to_string()
}

#[test]
fn tool_definitions_are_exported_for_both_apis() {
    let harness = harness();
    assert_eq!(
        harness.registry().openai_tools(),
        json!([{
            "type": "function",
            "function": {
                "name": "get-weather",
                "description": "The current temperature in a city.",
                "parameters": weather_schema()
            }
        }])
    );
    assert_eq!(
        harness.registry().anthropic_tools(),
        json!([{
            "name": "get-weather",
            "description": "The current temperature in a city.",
            "input_schema": weather_schema()
        }])
    );
}

#[test]
fn openai_round_trip_from_tool_call_to_tool_message() {
    let harness = harness();
    let reply = harness.handle(
        CallShape::OpenAi,
        &openai_call("call_abc", json!({"city": "Paris", "unit": "celsius"})),
    );
    assert_eq!(reply.outcome.status, Status::Ok);
    assert_eq!(reply.call_id.as_deref(), Some("call_abc"));
    assert_eq!(reply.tool.as_deref(), Some("get-weather"));
    assert_eq!(
        reply.message(),
        json!({"role": "tool", "tool_call_id": "call_abc", "content": "21 degrees in Paris"})
    );
}

#[test]
fn openai_round_trip_with_a_repair_message_for_a_bad_argument() {
    let harness = harness();
    let reply = harness.handle(
        CallShape::OpenAi,
        &openai_call("call_def", json!({"city": "Paris", "unit": "kelvin"})),
    );
    assert_eq!(reply.outcome.status, Status::Invalid);
    let message = reply.message();
    assert_eq!(message["role"], "tool");
    assert_eq!(message["tool_call_id"], "call_def");
    let content = message["content"].as_str().unwrap();
    let expected_start = "INVALID: the arguments of tool \"get-weather\" do not match its input \
                          schema; nothing was run.\n- field /unit: \"kelvin\" is not one of \
                          \"celsius\" or \"fahrenheit\"\n";
    assert!(content.starts_with(expected_start), "{content}");
    assert!(
        content.contains(&format!(
            "Fix these fields and call get-weather again with arguments matching this JSON \
             Schema: {}",
            weather_schema()
        )),
        "{content}"
    );
    // The model repairs its call, and the same id gets a result.
    let reply = harness.handle(
        CallShape::OpenAi,
        &openai_call("call_def", json!({"city": "Paris", "unit": "fahrenheit"})),
    );
    assert_eq!(reply.message()["content"], "70 degrees in Paris");
    assert_eq!(harness.budget().used, 1);
}

#[test]
fn anthropic_round_trip_from_tool_use_to_tool_result() {
    let harness = harness();
    let reply = harness.handle(
        CallShape::Anthropic,
        &anthropic_call("toolu_01", json!({"city": "Oslo", "unit": "celsius"})),
    );
    assert_eq!(
        reply.message(),
        json!({
            "type": "tool_result",
            "tool_use_id": "toolu_01",
            "content": "21 degrees in Oslo",
            "is_error": false
        })
    );
}

#[test]
fn anthropic_round_trip_with_a_repair_message_for_a_bad_argument() {
    let harness = harness();
    let reply = harness.handle(
        CallShape::Anthropic,
        &anthropic_call("toolu_02", json!({"city": "", "units": "celsius"})),
    );
    assert_eq!(reply.outcome.status, Status::Invalid);
    let message = reply.message();
    assert_eq!(message["type"], "tool_result");
    assert_eq!(message["tool_use_id"], "toolu_02");
    assert_eq!(message["is_error"], true);
    let content = message["content"].as_str().unwrap();
    // Every failing field is named, with what is wrong.
    for part in [
        "INVALID: the arguments of tool \"get-weather\" do not match its input schema",
        "- field /city: \"\" is shorter than 1 character",
        "- field (root): \"unit\" is a required property",
        "- field (root): Additional properties are not allowed ('units' was unexpected)",
        "matching this JSON Schema: {",
    ] {
        assert!(content.contains(part), "{part:?} missing from {content}");
    }
    assert_eq!(harness.budget().used, 0);
}

#[test]
fn replies_to_broken_calls_are_still_addressed_when_the_id_can_be_read() {
    let harness = harness();
    // A repeated key in the envelope: the id is read only to address the reply.
    let raw = r#"{"id":"call_x","type":"function","type":"function",
                 "function":{"name":"get-weather","arguments":"{}"}}"#;
    let reply = harness.handle(CallShape::OpenAi, raw);
    assert_eq!(reply.outcome.status, Status::Invalid);
    assert_eq!(reply.message()["tool_call_id"], "call_x");
    assert!(reply.message()["content"]
        .as_str()
        .unwrap()
        .contains("duplicate key \"type\""));
    // Unreadable: an empty id, and still a well-formed message.
    let reply = harness.handle(CallShape::Anthropic, "{\"id\": ");
    assert_eq!(reply.call_id, None);
    assert_eq!(reply.message()["tool_use_id"], "");
    assert_eq!(reply.message()["is_error"], true);
}

#[test]
fn the_plain_shape_answers_with_the_outcome() {
    let harness = harness();
    let reply = harness.handle(
        CallShape::Plain,
        r#"{"tool":"get-weather","arguments":{"city":"Rome","unit":"celsius"}}"#,
    );
    assert_eq!(
        reply.message(),
        json!({"status": "OK", "result": "21 degrees in Rome", "detail": ""})
    );
    let reply = harness.handle(CallShape::Plain, r#"{"tool":"get-time","arguments":{}}"#);
    assert_eq!(reply.message()["status"], "UNKNOWN_TOOL");
}
