//! Numbers are never silently changed: an integer outside the 64-bit range in a model's
//! arguments is INVALID by name (a parser would round it into a float), and one beyond
//! ±(2^53 − 1) is INVALID with a repair message unless the tool opts out, since many JSON
//! readers cannot hold it; the tool never runs in either case.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolwire::{CallShape, Harness, HarnessConfig, LocalTool, Status, ToolOptions, ToolRegistry};

/// A harness with one tool, `store`, that keeps the arguments it was given.
fn harness(options: ToolOptions) -> (Harness, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let kept = Arc::clone(&seen);
    let mut registry = ToolRegistry::new();
    registry
        .register(
            LocalTool::new(
                "store",
                "Stores a number.",
                json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
                move |args, _cancel| {
                    kept.lock().unwrap().push(args.clone());
                    Ok(Some(json!("stored")))
                },
            )
            .options(options),
        )
        .expect("register");
    let harness = Harness::new(registry, HarnessConfig::default()).expect("harness");
    (harness, seen)
}

fn openai_call(arguments: &str) -> String {
    json!({"id": "call_1", "type": "function",
           "function": {"name": "store", "arguments": arguments}})
    .to_string()
}

#[test]
fn an_integer_outside_64_bits_is_invalid_by_name_and_the_tool_never_runs() {
    let (harness, seen) = harness(ToolOptions::new().allow_large_integers(true));
    let reply = harness.handle(
        CallShape::OpenAi,
        &openai_call(r#"{"n":18446744073709551616}"#),
    );
    assert_eq!(reply.outcome.status, Status::Invalid);
    assert!(
        reply.outcome.detail.contains("18446744073709551616 at /n"),
        "{}",
        reply.outcome.detail
    );
    let plain = r#"{"tool":"store","arguments":{"n":-99999999999999999999}}"#;
    let reply = harness.handle(CallShape::Plain, plain);
    assert_eq!(reply.outcome.status, Status::Invalid);
    assert!(
        reply.outcome.detail.contains("at /arguments/n"),
        "{}",
        reply.outcome.detail
    );
    assert!(seen.lock().unwrap().is_empty(), "the tool ran");
    assert_eq!(harness.budget().used, 0);
    harness.close();
}

#[test]
fn an_integer_beyond_2_53_is_invalid_unless_the_tool_opts_out() {
    let (strict, seen) = harness(ToolOptions::new());
    let reply = strict.handle(CallShape::OpenAi, &openai_call(r#"{"n":9007199254740993}"#));
    assert_eq!(reply.outcome.status, Status::Invalid);
    assert!(
        reply.outcome.detail.contains("9007199254740993 at /n"),
        "{}",
        reply.outcome.detail
    );
    // The largest safe integer, and its negative, pass.
    for n in ["9007199254740991", "-9007199254740991"] {
        let reply = strict.handle(CallShape::OpenAi, &openai_call(&format!(r#"{{"n":{n}}}"#)));
        assert_eq!(
            reply.outcome.status,
            Status::Ok,
            "{n}: {}",
            reply.outcome.detail
        );
    }
    assert_eq!(seen.lock().unwrap().len(), 2);
    strict.close();

    let (relaxed, seen) = harness(ToolOptions::new().allow_large_integers(true));
    let reply = relaxed.handle(CallShape::OpenAi, &openai_call(r#"{"n":9007199254740993}"#));
    assert_eq!(reply.outcome.status, Status::Ok, "{}", reply.outcome.detail);
    // Exactly the number the model sent, not a rounded neighbour.
    assert_eq!(
        seen.lock().unwrap()[0]["n"].as_u64(),
        Some(9_007_199_254_740_993)
    );
    relaxed.close();
}
