//! The harness against what the providers' SDKs really send: the fixtures in
//! tests/fixtures/providers/ were built with the official `openai`, `anthropic` and
//! `google-genai` Python packages' own types (tests/peers/provider_fixtures.py). Whole
//! responses (as the API sends them, and as the SDK dumps them with every declared field) and
//! the events of streamed ones go through `handle_message` and the stream accumulators; every
//! call must be answered, and run when it can.
//!
//! The ignored test sends toolwire's answers and tool definitions back through the same
//! script, which checks them against the SDKs' input types (needs TOOLWIRE_PEERS_DIR, after
//! `bash tests/peers/install.sh DIR`).

use crate::support::mcp as support;

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use toolwire::harness::{ToolExport, ToolInfo};
use toolwire::{CallShape, Error, Harness, HarnessConfig, LocalTool, Status, ToolRegistry};

fn harness() -> Harness {
    let mut registry = ToolRegistry::new();
    registry
        .register(LocalTool::new(
            "get_weather",
            "The current temperature in a city.",
            json!({"type": "object", "additionalProperties": false, "required": ["city", "unit"],
                   "properties": {"city": {"type": "string"},
                                  "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}}),
            |args, _| {
                Ok(Some(json!(format!(
                    "21 degrees in {}",
                    args["city"].as_str().unwrap()
                ))))
            },
        ))
        .unwrap();
    registry
        .register(LocalTool::new(
            "get-time",
            "The time in a zone.",
            json!({"type": "object", "required": ["zone"],
                   "properties": {"zone": {"type": "string"}}}),
            |args, _| {
                Ok(Some(json!(format!(
                    "12:00 in {}",
                    args["zone"].as_str().unwrap()
                ))))
            },
        ))
        .unwrap();
    Harness::new(registry, HarnessConfig::default()).unwrap()
}

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/providers")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    serde_json::from_str(&text).unwrap()
}

/// The forms of a whole response in a fixture: as the API sends it, and as the SDK dumps it
/// with every declared field (and, for Gemini, with the SDK's snake_case names).
fn forms(fixture: &Value) -> Vec<(&'static str, String)> {
    ["wire", "dumped", "snake"]
        .into_iter()
        .filter_map(|form| fixture.get(form).map(|value| (form, value.to_string())))
        .collect()
}

fn events(fixture: &Value) -> Vec<String> {
    fixture["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event.as_str().unwrap().to_owned())
        .collect()
}

/// The replies' ids and statuses, in order.
fn summary(replies: &[toolwire::ToolReply]) -> Vec<(Option<String>, Status)> {
    replies
        .iter()
        .map(|reply| (reply.call_id.clone(), reply.outcome.status))
        .collect()
}

fn ok(ids: &[&str]) -> Vec<(Option<String>, Status)> {
    ids.iter()
        .map(|id| (Some((*id).to_owned()), Status::Ok))
        .collect()
}

#[test]
fn a_whole_chat_completion_is_answered_call_by_call() {
    let harness = harness();
    let fixture = fixture("openai_chat.json");
    for (form, text) in forms(&fixture) {
        let reply = harness.handle_message(CallShape::OpenAi, &text).unwrap();
        assert_eq!(summary(&reply.replies), ok(&["call_w", "call_t"]), "{form}");
        assert_eq!(
            reply.messages()[0],
            json!({"role": "tool", "tool_call_id": "call_w", "content": "21 degrees in Paris"})
        );
    }
    // Its message alone is read the same.
    let message = fixture["wire"]["choices"][0]["message"].to_string();
    let reply = harness.handle_message(CallShape::OpenAi, &message).unwrap();
    assert_eq!(summary(&reply.replies), ok(&["call_w", "call_t"]));
}

/// The fixtures' snake_case call (`get_weather`, as the SDKs' own examples name tools) to a
/// harness that has no such tool is UNKNOWN_TOOL naming the tools there are, in every shape,
/// and the other call still runs: the model is told what exists, never "not a valid name".
#[test]
fn an_unknown_snake_case_call_from_each_sdk_is_unknown_tool_with_the_list() {
    let mut registry = ToolRegistry::new();
    registry
        .register(LocalTool::new(
            "get-time",
            "The time in a zone.",
            json!({"type": "object", "required": ["zone"],
                   "properties": {"zone": {"type": "string"}}}),
            |_, _| Ok(Some(json!("12:00"))),
        ))
        .unwrap();
    let harness = Harness::new(registry, HarnessConfig::default()).unwrap();
    for (shape, name) in [
        (CallShape::OpenAi, "openai_chat.json"),
        (CallShape::OpenAiResponses, "openai_responses.json"),
        (CallShape::Anthropic, "anthropic_message.json"),
        (CallShape::Gemini, "gemini_response.json"),
    ] {
        let fixture = fixture(name);
        for (form, text) in forms(&fixture) {
            let reply = harness.handle_message(shape, &text).unwrap();
            let weather = reply
                .replies
                .iter()
                .find(|reply| reply.tool.as_deref() == Some("get_weather"))
                .unwrap_or_else(|| panic!("{name} {form}: {:?}", reply.replies));
            assert_eq!(weather.outcome.status, Status::UnknownTool, "{name} {form}");
            assert!(
                weather.outcome.detail.contains("get-time"),
                "{name} {form}: {}",
                weather.outcome.detail
            );
            assert!(
                reply
                    .replies
                    .iter()
                    .any(|reply| reply.outcome.status == Status::Ok),
                "{name} {form}: the known call ran"
            );
        }
    }
}

#[test]
fn custom_tool_calls_are_answered_alike_in_both_openai_shapes() {
    let harness = harness();
    let chat = fixture("openai_chat_custom.json");
    for (form, text) in forms(&chat) {
        let reply = harness.handle_message(CallShape::OpenAi, &text).unwrap();
        let [custom, time] = &reply.replies[..] else {
            panic!("{form}: {:?}", reply.replies)
        };
        assert_eq!(custom.outcome.status, Status::Invalid, "{form}");
        assert!(custom.custom);
        assert!(
            custom
                .outcome
                .detail
                .starts_with("\"apply-patch\" was called as a custom tool"),
            "{}",
            custom.outcome.detail
        );
        assert_eq!(custom.message()["tool_call_id"], "call_patch");
        assert_eq!(time.outcome.status, Status::Ok);
    }

    let fixture = fixture("openai_responses.json");
    for (form, text) in forms(&fixture) {
        let reply = harness
            .handle_message(CallShape::OpenAiResponses, &text)
            .unwrap();
        let statuses = summary(&reply.replies);
        assert_eq!(
            statuses,
            vec![
                (Some("call_w".into()), Status::Ok),
                // The SDK's optional `async` is accepted.
                (Some("call_t".into()), Status::Ok),
                (Some("call_patch".into()), Status::Invalid),
            ],
            "{form}"
        );
        let custom = &reply.replies[2];
        assert!(custom.custom);
        assert!(custom
            .outcome
            .detail
            .starts_with("\"apply-patch\" was called as a custom tool"));
        // Answered in its own kind, not as a function call.
        assert_eq!(
            reply.messages()[2],
            json!({"type": "custom_tool_call_output", "call_id": "call_patch",
                   "output": format!("INVALID: {}", custom.outcome.detail)})
        );
        assert_eq!(reply.messages()[0]["type"], "function_call_output");
    }
    // One call at a time, the same.
    let item = fixture["wire"]["output"][4].to_string();
    let reply = harness.handle(CallShape::OpenAiResponses, &item);
    assert!(reply.custom);
    assert_eq!(reply.message()["type"], "custom_tool_call_output");
}

#[test]
fn anthropic_messages_with_thinking_are_answered() {
    let harness = harness();
    for (form, text) in forms(&fixture("anthropic_message.json")) {
        let reply = harness.handle_message(CallShape::Anthropic, &text).unwrap();
        assert_eq!(
            summary(&reply.replies),
            ok(&["toolu_w", "toolu_t"]),
            "{form}"
        );
        let answer = &reply.messages()[0];
        assert_eq!(answer["role"], "user");
        assert_eq!(answer["content"][1]["tool_use_id"], "toolu_t");
    }
}

#[test]
fn a_whole_gemini_response_is_answered_in_each_spelling() {
    let harness = harness();
    let fixture = fixture("gemini_response.json");
    let forms = forms(&fixture);
    assert_eq!(forms.len(), 3);
    for (form, text) in forms {
        let reply = harness.handle_message(CallShape::Gemini, &text).unwrap();
        assert_eq!(summary(&reply.replies), ok(&["fc_w", "fc_t"]), "{form}");
        assert_eq!(
            reply.messages()[0]["parts"][1],
            json!({"functionResponse": {"name": "get-time", "id": "fc_t",
                                        "response": {"output": "12:00 in Europe/Paris"}}})
        );
    }
}

#[test]
fn what_is_no_message_of_the_shape_is_refused_with_the_path_expected() {
    let harness = harness();
    for (shape, text, path) in [
        (
            CallShape::OpenAi,
            r#"{"id":"chatcmpl-1","object":"chat.completion"}"#,
            "choices[0].message",
        ),
        (
            CallShape::OpenAi,
            r#"{"object":"chat.completion","choices":[{"index":1,"message":{}}]}"#,
            "\"index\" 0",
        ),
        (
            CallShape::OpenAi,
            r#"{"role":"assistant","function_call":{"name":"get-time","arguments":"{}"}}"#,
            "\"tool_calls\"",
        ),
        (
            CallShape::Gemini,
            r#"{"usageMetadata":{"totalTokenCount":1}}"#,
            "candidates[0].content",
        ),
        (
            CallShape::Anthropic,
            r#"{"id":"msg_1"}"#,
            "\"content\" array",
        ),
    ] {
        match harness.handle_message(shape, text) {
            Err(Error::Protocol(reason)) => assert!(reason.contains(path), "{reason}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    // A chunk of a stream (the SDK's ChatCompletionChunk, here the fixture's second, which
    // starts a tool call) is no whole message: refused, pointing at the accumulator, and
    // nothing runs.
    let chunks = events(&fixture("openai_chat_stream.json"));
    let chunk = chunks
        .iter()
        .find(|chunk| chunk.contains("tool_calls"))
        .expect("a chunk with a tool call");
    match harness.handle_message(CallShape::OpenAi, chunk) {
        Err(Error::Protocol(reason)) => {
            assert!(reason.contains("Harness::openai_deltas"), "{reason}")
        }
        other => panic!("{chunk}: {other:?}"),
    }
    assert_eq!(harness.budget().used, 0);
    // A response stopped before any content holds no call: nothing to answer.
    let blocked = r#"{"candidates":[{"finishReason":"SAFETY","index":0}]}"#;
    let reply = harness.handle_message(CallShape::Gemini, blocked).unwrap();
    assert!(reply.replies.is_empty());
    assert_eq!(harness.budget().used, 0);
}

/// The calls of each fixture stream, put together by the matching accumulator.
fn streamed(harness: &Harness) -> Vec<(CallShape, Vec<String>)> {
    let mut chat = harness.openai_deltas();
    for event in events(&fixture("openai_chat_stream.json")) {
        chat.push_chunk(&event).unwrap();
    }
    let mut responses = harness.responses_events();
    for event in events(&fixture("openai_responses_stream.json")) {
        responses.push_event(&event).unwrap();
    }
    assert_eq!(responses.pending(), 0);
    let mut anthropic = harness.anthropic_events();
    for event in events(&fixture("anthropic_stream.json")) {
        anthropic.push_event(&event).unwrap();
    }
    assert_eq!(anthropic.pending(), 0);
    let mut gemini = harness.gemini_chunks();
    for event in events(&fixture("gemini_stream.json")) {
        gemini.push_chunk(&event).unwrap();
    }
    vec![
        (CallShape::OpenAi, chat.calls()),
        (CallShape::OpenAiResponses, responses.calls()),
        (CallShape::Anthropic, anthropic.calls()),
        (CallShape::Gemini, gemini.calls()),
    ]
}

#[test]
fn every_stream_is_put_together_from_the_sdks_own_events() {
    let harness = harness();
    let expected = [
        ok(&["call_w", "call_t"]),
        vec![
            (Some("call_w".into()), Status::Ok),
            (Some("call_t".into()), Status::Ok),
            (Some("call_patch".into()), Status::Invalid),
        ],
        ok(&["toolu_w", "toolu_t"]),
        ok(&["fc_w", "fc_t"]),
    ];
    for ((shape, calls), expected) in streamed(&harness).into_iter().zip(expected) {
        let replies = harness.handle_all(shape, &calls);
        assert_eq!(summary(&replies), expected, "{shape:?}: {calls:?}");
    }
}

/// The model APIs of the name cases (tool_names.json), by the fixture's key.
const APIS: [(&str, CallShape); 4] = [
    ("openai", CallShape::OpenAi),
    ("responses", CallShape::OpenAiResponses),
    ("anthropic", CallShape::Anthropic),
    ("gemini", CallShape::Gemini),
];

/// A registered tool's description under each name of tool_names.json.
fn name_cases(harness: &Harness) -> (Value, Vec<ToolInfo>) {
    let cases = fixture("tool_names.json")["cases"].clone();
    let model = harness.registry().tool("get-time").unwrap();
    let tools = cases
        .as_array()
        .unwrap()
        .iter()
        .map(|case| ToolInfo {
            name: case["name"].as_str().unwrap().to_owned(),
            ..model.clone()
        })
        .collect();
    (cases, tools)
}

fn left_out_names(export: &ToolExport) -> Vec<String> {
    export
        .left_out
        .iter()
        .map(|left| left.name.clone())
        .collect()
}

#[test]
fn each_api_is_offered_only_the_tool_names_its_sdk_documents() {
    let harness = harness();
    let (cases, tools) = name_cases(&harness);
    for (key, shape) in APIS {
        let mut refused = Vec::new();
        for case in cases.as_array().unwrap() {
            let name = case["name"].as_str().unwrap();
            let accepted = case["accepted"][key].as_bool().unwrap();
            let checked = shape.check_tool_name(name);
            assert_eq!(checked.is_ok(), accepted, "{key}: {name:?}: {checked:?}");
            if !accepted {
                refused.push(name.to_owned());
            }
        }
        let export = ToolExport::of(shape, &tools);
        refused.sort();
        assert_eq!(left_out_names(&export), refused, "{key}");
        for left in &export.left_out {
            assert!(left.reason.contains("takes"), "{key}: {left:?}");
        }
        // What is left out is never sent.
        let sent = export.tools.to_string();
        for name in &refused {
            assert!(
                !sent.contains(&format!("{name:?}")),
                "{key} was sent {name:?}"
            );
        }
    }
    // The registry's own tools fit every API: nothing is left out, and the older methods
    // give the same definitions.
    let registry = harness.registry();
    for (shape, tools) in [
        (CallShape::OpenAi, registry.openai_tools()),
        (CallShape::OpenAiResponses, registry.responses_tools()),
        (CallShape::Anthropic, registry.anthropic_tools()),
        (CallShape::Gemini, registry.gemini_tools()),
    ] {
        let export = registry.export(shape);
        assert!(
            export.left_out.is_empty(),
            "{shape:?}: {:?}",
            export.left_out
        );
        assert_eq!(export.tools, tools, "{shape:?}");
    }
}

/// Everything toolwire produced from the fixtures, for the SDKs' input types.
fn answers(harness: &Harness) -> Value {
    let reply = |shape, name: &str, form: &str| {
        let text = fixture(name)[form].to_string();
        harness.handle_message(shape, &text).unwrap().messages()
    };
    let mut openai = reply(CallShape::OpenAi, "openai_chat.json", "wire");
    openai.extend(reply(CallShape::OpenAi, "openai_chat_custom.json", "wire"));
    let streamed: Vec<Vec<Value>> = streamed(harness)
        .into_iter()
        .map(|(_, calls)| {
            calls
                .iter()
                .map(|call| serde_json::from_str(call).unwrap())
                .collect()
        })
        .collect();
    let registry = harness.registry();
    let (_, tools) = name_cases(harness);
    let mut name_exports = serde_json::Map::new();
    for (key, shape) in APIS {
        let export = ToolExport::of(shape, &tools);
        let all: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        name_exports.insert(
            key.into(),
            json!({"tools": export.tools, "left_out": left_out_names(&export), "all": all}),
        );
    }
    json!({
        "name_exports": name_exports,
        "openai_messages": openai,
        "openai_tools": registry.openai_tools(),
        "responses_input": reply(CallShape::OpenAiResponses, "openai_responses.json", "wire"),
        "responses_tools": registry.responses_tools(),
        "anthropic_messages": reply(CallShape::Anthropic, "anthropic_message.json", "wire"),
        "anthropic_tools": registry.anthropic_tools(),
        "gemini_contents": reply(CallShape::Gemini, "gemini_response.json", "snake"),
        "gemini_tools": registry.gemini_tools(),
        "openai_stream_calls": streamed[0],
        "responses_stream_calls": streamed[1],
        "anthropic_stream_calls": streamed[2],
        "gemini_stream_calls": streamed[3],
    })
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_sdks_accept_toolwires_answers_and_tool_definitions() {
    let peers = support::peers("the_sdks_accept_toolwires_answers_and_tool_definitions");
    let python = peers.path("TOOLWIRE_PROVIDERS_PYTHON");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/provider_fixtures.py");
    let answers = answers(&harness());
    let file = std::env::temp_dir().join(format!(
        "toolwire-provider-answers-{}.json",
        std::process::id()
    ));
    std::fs::write(&file, serde_json::to_string_pretty(&answers).unwrap()).unwrap();
    let output = Command::new(python)
        .arg(&script)
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the SDKs refused toolwire's output:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Every kind was checked (the script also fails when it checked nothing).
    assert!(stdout.contains(" checked, 0 failed"), "{stdout}");
}
