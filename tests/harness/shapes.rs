//! Round trips in every shape (OpenAI Chat Completions, OpenAI Responses, Anthropic, Gemini,
//! plain): tool definitions out, the model's tool call in, the tool-result message out in the
//! same shape, with the status and the repair message for each kind of error.

use serde_json::{json, Value};
use toolwire::harness::ToolFailure;
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

// ---- every shape ----

/// A harness with `get-weather` (as above) and `fail-safely`, whose failure is its answer.
fn harness_with_failure(config: HarnessConfig) -> Harness {
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
    registry
        .register(LocalTool::new(
            "fail-safely",
            "Always fails, saying why.",
            json!({"type": "object"}),
            |_, _| Err(ToolFailure::safe("the city is closed")),
        ))
        .unwrap();
    Harness::new(registry, config).unwrap()
}

/// A call of `name` with `arguments` as each API writes it, with the id `id`; `arguments` is
/// JSON text, so that a test can put into it what a serializer never would.
fn call_text(shape: CallShape, id: &str, name: &str, arguments: &str) -> String {
    let name = json!(name);
    let id = json!(id);
    let as_string = json!(arguments);
    match shape {
        CallShape::OpenAi => format!(
            r#"{{"id":{id},"type":"function","function":{{"name":{name},"arguments":{as_string}}}}}"#
        ),
        CallShape::OpenAiResponses => format!(
            r#"{{"type":"function_call","id":"fc_1","call_id":{id},"name":{name},"arguments":{as_string},"status":"completed"}}"#
        ),
        CallShape::Anthropic => {
            format!(r#"{{"type":"tool_use","id":{id},"name":{name},"input":{arguments}}}"#)
        }
        CallShape::Gemini => format!(
            r#"{{"functionCall":{{"id":{id},"name":{name},"args":{arguments}}},"thoughtSignature":"c2lnbmF0dXJl"}}"#
        ),
        _ => format!(r#"{{"tool":{name},"arguments":{arguments}}}"#),
    }
}

/// The text the model reads in a reply, and whether the reply is marked as an error, from
/// the message in the reply's own shape.
fn read_back(shape: CallShape, message: &Value) -> (String, bool) {
    match shape {
        CallShape::OpenAi => {
            assert_eq!(message["role"], "tool");
            (message["content"].as_str().unwrap().to_owned(), false)
        }
        CallShape::OpenAiResponses => {
            assert_eq!(message["type"], "function_call_output");
            (message["output"].as_str().unwrap().to_owned(), false)
        }
        CallShape::Anthropic => {
            assert_eq!(message["type"], "tool_result");
            (
                message["content"].as_str().unwrap().to_owned(),
                message["is_error"].as_bool().unwrap(),
            )
        }
        CallShape::Gemini => {
            let response = &message["functionResponse"]["response"];
            let keys: Vec<&String> = response.as_object().unwrap().keys().collect();
            assert_eq!(keys.len(), 1, "{message}");
            match response.get("error") {
                Some(error) => (error.as_str().unwrap().to_owned(), true),
                None => (response["output"].as_str().unwrap().to_owned(), false),
            }
        }
        _ => (
            format!(
                "{}: {}",
                message["status"].as_str().unwrap(),
                message["detail"]
            ),
            message["status"] != "OK",
        ),
    }
}

/// The id a reply in `shape` is addressed to.
fn addressed_to(shape: CallShape, message: &Value) -> Value {
    match shape {
        CallShape::OpenAi => message["tool_call_id"].clone(),
        CallShape::OpenAiResponses => message["call_id"].clone(),
        CallShape::Anthropic => message["tool_use_id"].clone(),
        CallShape::Gemini => message["functionResponse"]["id"].clone(),
        _ => Value::Null,
    }
}

const PROVIDERS: [CallShape; 4] = [
    CallShape::OpenAi,
    CallShape::OpenAiResponses,
    CallShape::Anthropic,
    CallShape::Gemini,
];

#[test]
fn every_shape_runs_the_call_and_answers_in_its_own_shape() {
    let harness = harness_with_failure(HarnessConfig::default());
    let expected = [
        json!({"role": "tool", "tool_call_id": "id-1", "content": "21 degrees in Lima"}),
        json!({"type": "function_call_output", "call_id": "id-1", "output": "21 degrees in Lima"}),
        json!({"type": "tool_result", "tool_use_id": "id-1", "content": "21 degrees in Lima",
               "is_error": false}),
        json!({"functionResponse": {"name": "get-weather", "id": "id-1",
                                    "response": {"output": "21 degrees in Lima"}}}),
    ];
    for (shape, expected) in PROVIDERS.into_iter().zip(expected) {
        let raw = call_text(
            shape,
            "id-1",
            "get-weather",
            r#"{"city":"Lima","unit":"celsius"}"#,
        );
        let reply = harness.handle(shape, &raw);
        assert_eq!(reply.outcome.status, Status::Ok, "{shape:?}");
        assert_eq!(reply.shape, shape);
        assert_eq!(reply.call_id.as_deref(), Some("id-1"), "{shape:?}");
        assert_eq!(reply.tool.as_deref(), Some("get-weather"));
        assert_eq!(reply.message(), expected, "{shape:?}");
    }
    assert_eq!(harness.budget().used, 4);
}

#[test]
fn every_shape_answers_each_error_status_with_its_reason() {
    let harness = harness_with_failure(HarnessConfig::default());
    let cases: [(&str, &str, Status, &str); 6] = [
        (
            "get-weather",
            r#"{"city":"Lima","unit":"kelvin"}"#,
            Status::Invalid,
            "INVALID: the arguments of tool \"get-weather\" do not match its input schema; \
             nothing was run.\n- field /unit: \"kelvin\" is not one of \"celsius\" or \
             \"fahrenheit\"",
        ),
        (
            "get-weather",
            r#"{"city":"Lima","city":"Oslo","unit":"celsius"}"#,
            Status::Invalid,
            "duplicate key \"city\"",
        ),
        (
            "fail-safely",
            r#"{"days":9007199254740993}"#,
            Status::Invalid,
            "9007199254740993",
        ),
        (
            "get-time",
            r#"{}"#,
            Status::UnknownTool,
            "UNKNOWN_TOOL: there is no tool named \"get-time\"; nothing was run. The \
             available tools are: fail-safely, get-weather",
        ),
        (
            "get weather",
            r#"{}"#,
            Status::Invalid,
            "is not a valid tool name",
        ),
        (
            "fail-safely",
            r#"{}"#,
            Status::ToolError,
            "TOOL_ERROR: the tool reported an error\nthe city is closed",
        ),
    ];
    for shape in PROVIDERS {
        for (name, arguments, status, text) in cases {
            let reply = harness.handle(shape, &call_text(shape, "id-2", name, arguments));
            assert_eq!(reply.outcome.status, status, "{shape:?} {name} {arguments}");
            let message = reply.message();
            assert_eq!(
                addressed_to(shape, &message),
                "id-2",
                "{shape:?}: {message}"
            );
            let (read, is_error) = read_back(shape, &message);
            assert!(read.contains(text), "{shape:?}: {text:?} not in {read:?}");
            assert!(
                read.starts_with(&format!("{status}: ")),
                "{shape:?}: {read}"
            );
            if matches!(shape, CallShape::Anthropic | CallShape::Gemini) {
                assert!(is_error, "{shape:?}: {message}");
            }
        }
    }
    // Only the failing tool ran: once per shape.
    assert_eq!(harness.budget().used, 4);
}

#[test]
fn every_shape_is_held_to_the_size_limit_before_it_is_read() {
    let harness = harness_with_failure(HarnessConfig::default().max_input_chars(200));
    for shape in PROVIDERS {
        let long = format!(r#"{{"city":"{}","unit":"celsius"}}"#, "L".repeat(300));
        let reply = harness.handle(shape, &call_text(shape, "id-3", "get-weather", &long));
        assert_eq!(reply.outcome.status, Status::Invalid, "{shape:?}");
        assert!(
            reply
                .outcome
                .detail
                .contains("more than 200 characters long"),
            "{shape:?}: {}",
            reply.outcome.detail
        );
    }
    assert_eq!(harness.budget().used, 0);
}

#[test]
fn a_streamed_openai_call_with_its_index_runs() {
    let harness = harness();
    let raw = r#"{"index":0,"id":"call_s","type":"function",
                  "function":{"name":"get-weather","arguments":"{\"city\":\"Rome\",\"unit\":\"celsius\"}"}}"#;
    let reply = harness.handle(CallShape::OpenAi, raw);
    assert_eq!(reply.outcome.status, Status::Ok, "{}", reply.outcome.detail);
    assert_eq!(reply.message()["tool_call_id"], "call_s");
    let reply = harness.handle(
        CallShape::OpenAi,
        &raw.replace("\"index\":0", "\"index\":-1"),
    );
    assert_eq!(reply.outcome.status, Status::Invalid);
    assert!(reply.outcome.detail.contains("non-negative integer"));
}

#[test]
fn responses_items_that_are_not_completed_or_are_namespaced_do_not_run() {
    let harness = harness();
    let item = |extra: &str| {
        format!(
            r#"{{"type":"function_call","call_id":"c1","name":"get-weather",
                 "arguments":"{{\"city\":\"Rome\",\"unit\":\"celsius\"}}"{extra}}}"#
        )
    };
    for (extra, reason) in [
        (r#","status":"incomplete""#, "the status \"incomplete\""),
        (r#","status":"in_progress""#, "the status \"in_progress\""),
        (r#","namespace":"weather""#, "the namespace \"weather\""),
        (r#","strict":true"#, "unexpected field(s) \"strict\""),
    ] {
        let reply = harness.handle(CallShape::OpenAiResponses, &item(extra));
        assert_eq!(reply.outcome.status, Status::Invalid, "{extra}");
        assert!(
            reply.outcome.detail.contains(reason),
            "{}",
            reply.outcome.detail
        );
        assert_eq!(reply.message()["call_id"], "c1");
    }
    assert_eq!(harness.budget().used, 0);
}

#[test]
fn gemini_calls_without_id_or_args_are_answered_by_name() {
    let mut registry = ToolRegistry::new();
    registry
        .register(LocalTool::new(
            "now",
            "The time.",
            json!({"type": "object", "properties": {}}),
            |_, _| Ok(Some(json!("noon"))),
        ))
        .unwrap();
    let harness = Harness::new(registry, HarnessConfig::default()).unwrap();
    let reply = harness.handle(CallShape::Gemini, r#"{"functionCall":{"name":"now"}}"#);
    assert_eq!(reply.outcome.status, Status::Ok);
    assert_eq!(reply.call_id, None);
    assert_eq!(
        reply.message(),
        json!({"functionResponse": {"name": "now", "response": {"output": "noon"}}})
    );
    // A broken call is still answered under its name, which is how Gemini matches replies.
    let reply = harness.handle(
        CallShape::Gemini,
        r#"{"functionCall":{"name":"now","args":{"x":1,"x":2}}}"#,
    );
    assert_eq!(reply.outcome.status, Status::Invalid);
    assert_eq!(reply.message()["functionResponse"]["name"], "now");
    assert!(reply.message()["functionResponse"]["response"]["error"]
        .as_str()
        .unwrap()
        .contains("duplicate key \"x\""));
}

#[test]
fn tool_definitions_are_exported_for_the_responses_and_gemini_apis() {
    let harness = harness();
    assert_eq!(
        harness.registry().responses_tools(),
        json!([{
            "type": "function",
            "name": "get-weather",
            "description": "The current temperature in a city.",
            "parameters": weather_schema(),
            "strict": false
        }])
    );
    assert_eq!(
        harness.registry().gemini_tools(),
        json!([{"functionDeclarations": [{
            "name": "get-weather",
            "description": "The current temperature in a city.",
            "parametersJsonSchema": weather_schema()
        }]}])
    );
}

#[test]
fn a_streamed_openai_response_is_put_together_from_its_deltas_and_run() {
    let harness = harness();
    // Two parallel calls, their argument text cut anywhere (inside a key, a string, an
    // escape), interleaved, with chunks that carry no call in between: as the API streams.
    let first = r#"{"city":"Z\u00fcrich","unit":"celsius"}"#;
    let second = r#"{"city":"Oslo","unit":"fahrenheit"}"#;
    let chunk = |deltas: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
               "model": "gpt-x", "choices": [{"index": 0, "delta": {"tool_calls": deltas},
               "logprobs": null, "finish_reason": null}]})
        .to_string()
    };
    let mut chunks = vec![
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#.to_owned(),
        chunk(json!([{"index": 0, "id": "call_z", "type": "function",
                      "function": {"name": "get-weather", "arguments": ""}}])),
    ];
    let (head, tail) = first.split_at(13); // inside the \u escape
    chunks.push(chunk(
        json!([{"index": 0, "function": {"arguments": head}}]),
    ));
    chunks.push(chunk(
        json!([{"index": 1, "id": "call_o", "type": "function",
                              "function": {"name": "get-", "arguments": &second[..5]}}]),
    ));
    chunks.push(chunk(
        json!([{"index": 1, "function": {"name": "weather", "arguments": &second[5..]}},
                             {"index": 0, "function": {"arguments": tail}}]),
    ));
    chunks.push(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#.to_owned());
    let mut deltas = harness.openai_deltas();
    for text in &chunks {
        deltas.push_chunk(text).unwrap();
    }
    let replies = harness.handle_all(CallShape::OpenAi, &deltas.calls());
    let messages: Vec<Value> = replies.iter().map(|reply| reply.message()).collect();
    assert_eq!(
        messages,
        vec![
            json!({"role": "tool", "tool_call_id": "call_z", "content": "21 degrees in Zürich"}),
            json!({"role": "tool", "tool_call_id": "call_o", "content": "70 degrees in Oslo"}),
        ]
    );
    // A chunk that is not strict JSON is refused, and what was put together is kept.
    assert!(deltas.push_chunk(r#"{"choices":[],"choices":[]}"#).is_err());
    assert_eq!(deltas.calls().len(), 2);
}
