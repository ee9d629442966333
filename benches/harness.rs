//! The harness's overhead: a call through the registry, the checks (strict parse, name,
//! schema), the admission executor and the budget, beside a direct call of the same local
//! tool, in one run. Prints a table of ratios.
//!
//! ```text
//! cargo bench --bench harness          # TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolwire::harness::{CancelFlag, ToolFailure};
use toolwire::{CallShape, Harness, HarnessConfig, LocalTool, Status, ToolRegistry};

fn scale() -> f64 {
    std::env::var("TOOLWIRE_BENCH_SCALE")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1.0)
}

fn add(arguments: &Value, _cancel: &CancelFlag) -> Result<Option<Value>, ToolFailure> {
    let a = arguments["a"].as_i64().unwrap_or(0);
    let b = arguments["b"].as_i64().unwrap_or(0);
    Ok(Some(json!(a + b)))
}

fn harness(count: usize) -> Harness {
    let mut registry = ToolRegistry::new();
    registry
        .register(LocalTool::new(
            "add",
            "Adds two integers.",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"], "additionalProperties": false}),
            add,
        ))
        .expect("register");
    let mut config = HarnessConfig::default();
    config = config.attempt_budget(u32::try_from(count * 4).unwrap_or(u32::MAX));
    Harness::new(registry, config).expect("harness")
}

fn direct(count: usize) -> Duration {
    let cancel = CancelFlag::new();
    let started = Instant::now();
    for index in 0..count as i64 {
        // The same work a caller does without the harness: parse the model's arguments, run.
        let arguments: Value =
            serde_json::from_str(&format!("{{\"a\":{index},\"b\":1}}")).expect("json");
        black_box(add(&arguments, &cancel).expect("add"));
    }
    started.elapsed()
}

fn through_harness(harness: &Harness, count: usize) -> Duration {
    let started = Instant::now();
    for index in 0..count {
        let raw = format!(
            "{{\"id\":\"call_{index}\",\"type\":\"function\",\"function\":{{\"name\":\"add\",\"arguments\":\"{{\\\"a\\\":{index},\\\"b\\\":1}}\"}}}}"
        );
        let reply = harness.handle(CallShape::OpenAi, &raw);
        assert_eq!(reply.outcome.status, Status::Ok, "{:?}", reply.outcome);
        black_box(reply);
    }
    started.elapsed()
}

fn median(runs: usize, mut measure: impl FnMut() -> Duration) -> Duration {
    let mut samples: Vec<Duration> = (0..runs).map(|_| measure()).collect();
    samples.sort();
    samples[runs / 2]
}

fn main() {
    let count = ((50_000.0 * scale()) as usize).max(1_000);
    let harness = harness(count * 5);
    direct(1_000);
    through_harness(&harness, 1_000);
    let plain = median(3, || direct(count));
    let checked = median(3, || through_harness(&harness, count));
    let per_call = |total: Duration| total.as_secs_f64() * 1e6 / count as f64;
    println!("harness overhead on a local tool (median of 3 runs)");
    println!("| measure | direct call | through the harness | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| {count} OpenAI tool calls of `add` | {:.2} µs/call | {:.2} µs/call | {:.1}× |",
        per_call(plain),
        per_call(checked),
        checked.as_secs_f64() / plain.as_secs_f64()
    );
}
