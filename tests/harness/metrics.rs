//! The harness's metrics (`HarnessConfig::metrics`): calls by status word, BUSY refusals,
//! retries and the budget left, with a tool's name as a label only when the registry has it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::bounded;
use serde_json::json;
use toolwire::harness::{RetryPolicy, ToolFailure};
use toolwire::metrics::Metrics;
use toolwire::{Harness, HarnessConfig, LocalTool, Status, ToolOptions, ToolRegistry};

use crate::support::{Recorder, SOON};

/// The value of the sample line that starts with `series` (name and labels, as written).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.parse().expect("a number"))
}

#[test]
fn calls_are_counted_by_status_with_busy_refusals_retries_and_the_budget_left() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (entered_tx, entered_rx) = bounded::<()>(1);
    let (release_tx, release_rx) = bounded::<()>(1);
    let mut registry = ToolRegistry::new();
    let counted = Arc::clone(&runs);
    let policy = RetryPolicy::new()
        .max_attempts(3)
        .delays(Duration::from_millis(10), Duration::from_secs(1));
    registry
        .register(
            LocalTool::new(
                "fetch",
                "Fetches.",
                json!({"type": "object"}),
                move |_, _| {
                    if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                        Err(ToolFailure::transport("connection reset"))
                    } else {
                        Ok(Some(json!("fetched")))
                    }
                },
            )
            .options(ToolOptions::new().idempotent(true).retry(policy)),
        )
        .unwrap();
    registry
        .register(LocalTool::new(
            "hold",
            "Holds.",
            json!({"type": "object"}),
            move |_, _| {
                let _ = entered_tx.send(());
                let _ = release_rx.recv_timeout(SOON);
                Ok(Some(json!("held")))
            },
        ))
        .unwrap();
    registry
        .register(LocalTool::new(
            "quick",
            "Quick.",
            json!({"type": "object"}),
            |_, _| Ok(Some(json!("quick"))),
        ))
        .unwrap();
    let metrics = Metrics::new();
    let config = HarnessConfig::default()
        .workers(1)
        .attempt_budget(10)
        .sleeper(Recorder::default())
        .metrics(metrics.clone());
    let harness = Arc::new(Harness::new(registry, config).unwrap());

    assert_eq!(harness.call("fetch", json!({})).status, Status::Ok);
    assert_eq!(
        harness.call("invented-name", json!({})).status,
        Status::UnknownTool
    );
    let holding = Arc::clone(&harness);
    let held = std::thread::spawn(move || holding.call("hold", json!({})));
    entered_rx
        .recv_timeout(SOON)
        .expect("the hold tool started");
    assert_eq!(harness.call("quick", json!({})).status, Status::Busy);
    release_tx.send(()).unwrap();
    assert_eq!(held.join().unwrap().status, Status::Ok);

    let text = metrics.render();
    let calls = |labels: &str| sample(&text, &format!("toolwire_harness_calls_total{{{labels}}}"));
    assert_eq!(
        calls("gen_ai_tool_name=\"fetch\",status=\"OK\""),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        calls("gen_ai_tool_name=\"hold\",status=\"OK\""),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        calls("gen_ai_tool_name=\"quick\",status=\"BUSY\""),
        Some(1.0),
        "{text}"
    );
    assert_eq!(calls("status=\"UNKNOWN_TOOL\""), Some(1.0), "{text}");
    assert!(
        !text.contains("invented-name"),
        "a name the registry lacks became a label: {text}"
    );
    assert_eq!(
        sample(
            &text,
            "toolwire_harness_busy_total{gen_ai_tool_name=\"quick\"}"
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "toolwire_harness_retries_total{gen_ai_tool_name=\"fetch\"}"
        ),
        Some(1.0),
        "{text}"
    );
    let left = harness.budget().remaining();
    assert_eq!(left, 7, "fetch took two attempts and hold one");
    assert_eq!(
        sample(&text, "toolwire_harness_budget_remaining"),
        Some(f64::from(left))
    );
}
