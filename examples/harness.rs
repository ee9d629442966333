//! The harness in one run: every one of the eight statuses, each asserted.
//!
//! ```text
//! cargo run --example harness
//! ```
//!
//! One worker and an attempt budget of four make BUSY and BUDGET easy to reach; a tool that
//! waits for a latch shows that a timed-out tool keeps its worker.

use std::time::Duration;

use crossbeam_channel::bounded;
use serde_json::json;
use toolwire::harness::{AuditKind, ToolFailure, ToolTimeout};
use toolwire::{
    CallShape, Harness, HarnessConfig, LocalTool, Status, ToolOptions, ToolRegistry, ToolReply,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (release, latch) = bounded::<()>(1);
    let (late_tx, late) = bounded::<()>(1);

    let mut registry = ToolRegistry::new();
    registry.register(
        LocalTool::new(
            "add",
            "Adds two integers.",
            json!({"type": "object", "additionalProperties": false, "required": ["a", "b"],
                   "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
            |args, _cancel| {
                let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                Ok(Some(json!(sum)))
            },
        )
        .options(
            ToolOptions::new()
                .timeout(ToolTimeout::Fast)
                .idempotent(true),
        ),
    )?;
    registry.register(LocalTool::new(
        "find-city",
        "Finds the country of a city.",
        json!({"type": "object", "required": ["city"],
               "properties": {"city": {"type": "string"}}}),
        |args, _cancel| match args["city"].as_str() {
            Some("Lisbon") => Ok(Some(json!("Portugal"))),
            _ => Ok(None),
        },
    ))?;
    registry.register(LocalTool::new(
        "charge-card",
        "Charges a card.",
        json!({"type": "object"}),
        |_, _cancel| {
            Err(ToolFailure::internal(
                "gateway 10.0.0.7: TLS handshake failed (key /etc/pay/secret.pem)",
            ))
        },
    ))?;
    registry.register(
        LocalTool::new(
            "slow-report",
            "Writes a report, slowly.",
            json!({"type": "object"}),
            move |_, _cancel| {
                // Ignores its cancel flag until the latch opens.
                let _ = latch.recv();
                Ok(Some(json!("report")))
            },
        )
        .options(ToolOptions::new().timeout(ToolTimeout::Custom(Duration::from_millis(200)))),
    )?;

    let config = HarnessConfig::default()
        .workers(1)
        .attempt_budget(4)
        .observer(move |event| {
            if event.kind == AuditKind::Late {
                let _ = late_tx.try_send(());
            }
        });
    let harness = Harness::new(registry, config)?;
    println!(
        "{} tools offered to the model: {}",
        harness.registry().len(),
        harness.registry().names().join(", ")
    );
    println!();

    let mut seen = Vec::new();
    let mut show = |what: &str, reply: ToolReply| {
        println!("{:<13}{what}", reply.outcome.status.to_string());
        println!("{:<13}the model reads: {}", "", reply.message());
        seen.push(reply.outcome.status);
    };

    let call = r#"{"id":"call_1","type":"function",
                   "function":{"name":"add","arguments":"{\"a\":2,\"b\":3}"}}"#;
    show(
        "add 2 and 3 (an OpenAI tool call)",
        harness.handle(CallShape::OpenAi, call),
    );

    let call = r#"{"tool":"add","arguments":{"a":2,"a":40,"b":3}}"#;
    show(
        "add with the key \"a\" twice",
        harness.handle(CallShape::Plain, call),
    );

    let call = r#"{"type":"tool_use","id":"toolu_1","name":"delete-everything","input":{}}"#;
    show(
        "a tool nobody registered (an Anthropic tool_use)",
        harness.handle(CallShape::Anthropic, call),
    );

    let call = r#"{"tool":"find-city","arguments":{"city":"Atlantis"}}"#;
    show(
        "find a city that is not there",
        harness.handle(CallShape::Plain, call),
    );

    let call = r#"{"tool":"slow-report","arguments":{}}"#;
    show(
        "a tool slower than its 200 ms bound",
        harness.handle(CallShape::Plain, call),
    );

    let call = r#"{"tool":"add","arguments":{"a":1,"b":1}}"#;
    show(
        "add while the slow tool still holds the only worker",
        harness.handle(CallShape::Plain, call),
    );

    release.send(())?;
    late.recv_timeout(Duration::from_secs(10))?;
    println!(
        "{:<13}the slow tool finished late; its worker is free again",
        ""
    );

    let call = r#"{"tool":"charge-card","arguments":{}}"#;
    show(
        "a tool that fails inside (its text is withheld)",
        harness.handle(CallShape::Plain, call),
    );

    show(
        "add once the budget of 4 attempts is spent",
        harness.handle(CallShape::Plain, call),
    );

    let expected = [
        Status::Ok,
        Status::Invalid,
        Status::UnknownTool,
        Status::NotFound,
        Status::Timeout,
        Status::Busy,
        Status::ToolError,
        Status::Budget,
    ];
    assert_eq!(seen, expected);
    let mut all = seen.clone();
    all.sort();
    assert_eq!(all, Status::ALL, "every status, once each");
    assert_eq!(harness.budget().used, 4);
    harness.close();
    println!();
    println!(
        "all eight statuses seen: {}",
        seen.iter()
            .map(Status::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(())
}
