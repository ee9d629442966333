//! The one handler signature in a local harness: a tool written with
//! `LocalTool::with_context` gets the harness's context (the caller's progress sink, the cancel
//! flag, no client to ask) and returns the one result type, held to the harness's checks,
//! failure wording and result limit. (tests/server/registry.rs serves the same kind of tool.)

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolwire::harness::{CallSettings, Overflow, ResultLimit, ToolContext, ToolFailure};
use toolwire::{
    CallToolResult, Harness, HarnessConfig, LocalTool, Status, ToolOptions, ToolRegistry,
};

/// One tool whose `mode` argument picks what it does.
fn weather() -> LocalTool {
    LocalTool::with_context(
        "get_weather",
        "The weather in a city.",
        json!({"type": "object", "required": ["mode"], "properties": {"mode": {"type": "string"}}}),
        |context: &dyn ToolContext, args: &Value| {
            context.report_progress(1.0, Some(2.0), Some("asked the sky"));
            context.log_message(log::Level::Info, "looking up the weather");
            match args["mode"].as_str() {
                Some("ok") => Ok(CallToolResult::structured(json!({"sky": "clear"}))),
                Some("text") => Ok(CallToolResult::from_text("clear")),
                Some("ask") => {
                    let answer = context.request_input(
                        "city",
                        "elicitation/create",
                        json!({"message": "Which city?", "requestedSchema": {"type": "object"}}),
                    )?;
                    Ok(CallToolResult::from_text(answer.to_string()))
                }
                Some("where") => Ok(CallToolResult::from_text(
                    match toolwire::server::RequestContext::of(context) {
                        Some(_) => "served",
                        None => "local",
                    },
                )),
                Some("error") => Ok(CallToolResult::error("no city named Atlantis")),
                Some("secret") => Err(ToolFailure::internal("password=hunter2")),
                Some("long") => Ok(CallToolResult::structured(json!({"sky": "y".repeat(200)}))),
                _ => Ok(CallToolResult::new(Vec::new())),
            }
        },
    )
    .output_schema(json!({"type": "object", "properties": {"sky": {"type": "string"}}}))
    .options(ToolOptions::new().result_limit(ResultLimit::new(100, Overflow::Truncate)))
}

#[test]
fn a_tool_with_the_one_signature_runs_in_a_local_harness() {
    let mut registry = ToolRegistry::new();
    registry.register(weather()).unwrap();
    let harness = Harness::new(registry, HarnessConfig::default()).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let settings = CallSettings::new().on_progress(move |done, total, message| {
        sink.lock()
            .unwrap()
            .push((done, total, message.map(str::to_owned)));
    });
    let call = |mode: &str| harness.call_with("get_weather", json!({"mode": mode}), &settings);

    let ok = call("ok");
    assert_eq!(ok.status, Status::Ok, "{ok:?}");
    assert_eq!(ok.result, json!({"sky": "clear"}));
    let sent = ok.mcp_result.as_ref().expect("the MCP result is kept");
    assert_eq!(sent.structured_content, Some(json!({"sky": "clear"})));
    assert_eq!(
        seen.lock().unwrap()[0],
        (1.0, Some(2.0), Some("asked the sky".to_owned())),
        "the progress reached the caller's sink"
    );
    assert_eq!(call("text").result, json!("clear"));
    assert_eq!(call("where").result, json!("local"));
    assert_eq!(call("nothing").status, Status::NotFound);

    // No client to ask in a local harness: a safe failure saying so.
    let ask = call("ask");
    assert_eq!(ask.status, Status::ToolError, "{ask:?}");
    assert!(
        ask.result.as_str().unwrap().contains("not available here"),
        "{ask:?}"
    );
    let error = call("error");
    assert_eq!(error.status, Status::ToolError);
    assert_eq!(error.result, json!("no city named Atlantis"));
    let secret = call("secret");
    assert_eq!(secret.status, Status::ToolError);
    assert!(
        !format!("{secret:?}").contains("hunter2"),
        "an internal text reached the model: {secret:?}"
    );
    // The harness's one result limit: over it, with an output schema, a tool error naming it.
    let long = call("long");
    assert_eq!(long.status, Status::ToolError, "{long:?}");
    assert!(
        long.detail
            .contains("over this tool's limit of 100 characters"),
        "{long:?}"
    );
    harness.close();
}

/// Issue 21: the one tool type carries the server-only options; in a local harness they
/// change nothing (no client to declare capabilities, no task, the call's own thread), while
/// unchecked schemas apply wherever the tool runs: the code gets what was sent.
#[test]
fn server_only_options_are_harmless_in_a_local_harness_and_unchecked_schemas_apply() {
    let strict = json!({"type": "object", "required": ["n"],
                        "properties": {"n": {"type": "integer"}}});
    let echo = |name: &str| {
        LocalTool::with_context(name, "Echoes.", strict.clone(), |_, args| {
            Ok(CallToolResult::from_text(args.to_string()))
        })
    };
    let mut registry = ToolRegistry::new();
    registry
        .register(
            echo("served_only")
                .inline(true)
                .requires("sampling")
                .task(toolwire::mcp::TaskSupport::Required)
                .before_task(|_, _| Err(ToolFailure::safe("never run locally"))),
        )
        .unwrap();
    registry
        .register(echo("unchecked").check_schemas(false))
        .unwrap();
    // An unchecked schema is not compiled: one that would not compile is accepted.
    registry
        .register(
            LocalTool::with_context("odd", "", json!({"type": 5}), |_, _| {
                Ok(CallToolResult::from_text("ran"))
            })
            .check_schemas(false),
        )
        .unwrap();
    let harness = Harness::new(registry, HarnessConfig::default()).unwrap();
    let ran = harness.call("served_only", json!({"n": 1}));
    assert_eq!(
        (ran.status, ran.result.clone()),
        (Status::Ok, json!(r#"{"n":1}"#)),
        "{ran:?}"
    );
    let refused = harness.call("served_only", json!({"n": "x"}));
    assert_eq!(refused.status, Status::Invalid, "{refused:?}");
    let passed = harness.call("unchecked", json!({"n": "x"}));
    assert_eq!(
        (passed.status, passed.result.clone()),
        (Status::Ok, json!(r#"{"n":"x"}"#)),
        "{passed:?}"
    );
    assert_eq!(harness.call("odd", json!({})).status, Status::Ok);
    harness.close();
}
