//! What a run ends in: NOT_FOUND for a missing result, a sanitized TOOL_ERROR, safe messages,
//! panics, and the result size policy.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolwire::harness::{Overflow, ResultLimit, ToolFailure};
use toolwire::{CallShape, Harness, HarnessConfig, LocalTool, Status, ToolOptions, ToolRegistry};

const SECRET: &str = "password=hunter2 at /srv/app/db.rs:42";

fn object() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}}})
}

/// A harness with the given tools, and every audit detail it records.
fn harness(tools: Vec<LocalTool>) -> (Harness, Arc<Mutex<Vec<String>>>) {
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool).unwrap();
    }
    let details = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&details);
    let config = HarnessConfig::default().observer(move |event| {
        sink.lock()
            .unwrap()
            .push(format!("{}: {}", event.kind, event.detail));
    });
    (Harness::new(registry, config).unwrap(), details)
}

#[test]
fn a_missing_result_is_not_found() {
    let (harness, _) = harness(vec![LocalTool::new(
        "find-city",
        "Finds a city.",
        object(),
        |args, _| match args["city"].as_str() {
            Some("Paris") => Ok(Some(json!({"country": "France"}))),
            _ => Ok(None),
        },
    )]);
    let outcome = harness.call("find-city", json!({"city": "Atlantis"}));
    assert_eq!(outcome.status, Status::NotFound);
    assert_eq!(outcome.detail, "the tool ran and found no result");
    assert_eq!(outcome.result, Value::Null);
    assert_eq!(outcome.attempts, 1);
    assert_eq!(
        outcome.model_text(),
        "NOT_FOUND: the tool ran and found no result"
    );
    let outcome = harness.call("find-city", json!({"city": "Paris"}));
    assert_eq!(outcome.status, Status::Ok);
    assert_eq!(outcome.result, json!({"country": "France"}));
    assert_eq!(harness.budget().used, 2);
}

#[test]
fn tool_error_never_carries_internal_text() {
    let (harness, details) = harness(vec![
        LocalTool::new("leaky", "Fails inside.", object(), |_, _| {
            Err(ToolFailure::internal(SECRET))
        }),
        LocalTool::new("panicky", "Panics.", object(), |_, _| panic!("{SECRET}")),
        LocalTool::new("io", "Fails with an io::Error.", object(), |_, _| {
            let error = std::io::Error::other(SECRET);
            Err(error.into())
        }),
        LocalTool::new("net", "Loses its connection.", object(), |_, _| {
            Err(ToolFailure::transport(SECRET))
        }),
    ]);
    for name in ["leaky", "panicky", "io", "net"] {
        let raw = json!({"type": "tool_use", "id": "toolu_1", "name": name, "input": {}});
        let reply = harness.handle_value(CallShape::Anthropic, &raw);
        let outcome = &reply.outcome;
        assert_eq!(outcome.status, Status::ToolError, "{name}");
        assert_eq!(outcome.result, Value::Null, "{name}");
        let message = reply.message().to_string();
        for leak in ["hunter2", "db.rs", "panicked"] {
            assert!(!outcome.detail.contains(leak), "{name}: {}", outcome.detail);
            assert!(!message.contains(leak), "{name}: {message}");
        }
        assert!(
            outcome
                .detail
                .contains("details were logged for the operator"),
            "{name}: {}",
            outcome.detail
        );
        assert_eq!(reply.message()["is_error"], true);
    }
    // The operator's audit trail (log, transcript, observer) has the real text, in the
    // `returned` event of each run, and never in the `finished` event the model's detail is.
    let details = details.lock().unwrap();
    let returned: Vec<&String> = details
        .iter()
        .filter(|detail| detail.starts_with("returned:"))
        .collect();
    assert_eq!(returned.len(), 4);
    assert!(
        returned.iter().all(|detail| detail.contains("hunter2")),
        "{returned:?}"
    );
    assert!(details
        .iter()
        .filter(|detail| detail.starts_with("finished:"))
        .all(|detail| !detail.contains("hunter2")));
    assert_eq!(harness.budget().used, 4);
}

#[test]
fn a_safe_message_is_the_tools_answer() {
    let (harness, _) = harness(vec![LocalTool::new(
        "weather",
        "Tells the weather.",
        object(),
        |args, _| {
            Err(ToolFailure::safe(format!(
                "no weather station near {}",
                args["city"].as_str().unwrap_or("?")
            )))
        },
    )]);
    let outcome = harness.call("weather", json!({"city": "Atlantis"}));
    assert_eq!(outcome.status, Status::ToolError);
    assert_eq!(outcome.detail, "the tool reported an error");
    assert_eq!(outcome.result, json!("no weather station near Atlantis"));
    assert_eq!(
        outcome.model_text(),
        "TOOL_ERROR: the tool reported an error\nno weather station near Atlantis"
    );
}

#[test]
fn an_oversized_result_is_truncated_with_a_marker_or_rejected_per_policy() {
    let big = |_: &Value, _: &toolwire::harness::CancelFlag| Ok(Some(json!("é".repeat(1000))));
    let (harness, _) = harness(vec![
        LocalTool::new("cut", "Long text, truncated.", object(), big)
            .options(ToolOptions::new().result_limit(ResultLimit::new(100, Overflow::Truncate))),
        LocalTool::new("strict", "Long text, refused.", object(), big)
            .options(ToolOptions::new().result_limit(ResultLimit::new(100, Overflow::Reject))),
        LocalTool::new("fits", "Short.", object(), |_, _| {
            Ok(Some(json!({"a": "x".repeat(50)})))
        })
        .options(ToolOptions::new().result_limit(ResultLimit::new(100, Overflow::Reject))),
    ]);
    let outcome = harness.call("cut", json!({}));
    assert_eq!(outcome.status, Status::Ok);
    let text = outcome.result.as_str().unwrap();
    assert!(text.starts_with(&"é".repeat(100)));
    assert!(text.ends_with("\n[truncated: showing 100 of 1000 characters]"));
    assert_eq!(
        outcome.detail,
        "the result was truncated to 100 of its 1000 characters"
    );

    let outcome = harness.call("strict", json!({}));
    assert_eq!(outcome.status, Status::ToolError);
    assert_eq!(outcome.result, Value::Null);
    assert!(
        outcome
            .detail
            .contains("the result is 1000 characters long, over this tool's limit of 100"),
        "{}",
        outcome.detail
    );
    // The run happened, so it cost an attempt.
    assert_eq!(outcome.attempts, 1);

    let outcome = harness.call("fits", json!({}));
    assert_eq!(outcome.status, Status::Ok);
    assert_eq!(outcome.detail, "");
}

#[test]
fn every_event_of_a_call_is_audited_with_its_internal_text() {
    let (harness, details) = harness(vec![LocalTool::new(
        "leaky",
        "Fails inside.",
        object(),
        |_, _| Err(ToolFailure::internal(SECRET)),
    )]);
    let outcome = harness.call("leaky", json!({}));
    assert_eq!(outcome.status, Status::ToolError);
    let details = details.lock().unwrap();
    let kinds: Vec<&str> = details
        .iter()
        .map(|detail| detail.split(':').next().unwrap())
        .collect();
    assert_eq!(kinds, ["received", "admitted", "returned", "finished"]);
    assert_eq!(details[2], format!("returned: the tool failed: {SECRET}"));
    assert!(!details[3].contains("hunter2"), "{}", details[3]);
}
