//! The harness's overhead: a call through the registry, the checks (strict parse, name,
//! schema), the admission executor and the budget, beside a direct call of the same local
//! tool and beside the hand-off the harness used before (a rendezvous channel to a worker and
//! a channel back), in one run. Prints a table per-call times, medians and ranges over the
//! rounds.
//!
//! ```text
//! cargo bench --bench harness          # TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! cargo bench --bench harness -- 9     # 9 rounds (default 5)
//! cargo bench --bench harness -- harness-only   # only the harness row, for perf record
//! ```
//!
//! Rows:
//! - **direct**: what a caller does without the harness: parse the model's arguments, run.
//! - **channel hand-off (previous)**: the direct call run on a worker thread the way the
//!   harness's executor did it until the slot hand-off: the job through
//!   `crossbeam_channel::bounded(0)` to a waiting worker, the answer back through a
//!   `bounded(1)` channel waited on with a deadline. No checks, no audit: the hand-off alone.
//! - **the harness without the hand-off**: the same call through a harness whose attempt
//!   budget is spent: the parse, every check, the audit events and the admission attempt,
//!   refused `BUDGET` before anything is handed to a worker. The difference between this row
//!   and the next is the hand-off and the wake-up back.
//! - **through the harness**: `Harness::handle` of an OpenAI tool call (raw text): the strict
//!   parse, the name and schema checks, the budget, the audit events, the slot hand-off to a
//!   worker and the answer back.

#[path = "support/mod.rs"]
mod support;

use std::hint::black_box;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Sender};
use serde_json::{json, Value};
use support::scale;
use toolwire::harness::{CancelFlag, ToolFailure};
use toolwire::{CallShape, Harness, HarnessConfig, LocalTool, Status, ToolRegistry};

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
    config = config.attempt_budget(u32::try_from(count).unwrap_or(u32::MAX));
    Harness::new(registry, config).expect("harness")
}

fn arguments_text(index: usize) -> String {
    format!("{{\"a\":{index},\"b\":1}}")
}

/// An OpenAI tool call of `add`, as the model writes it (the arguments are a JSON string).
fn openai_call(index: usize) -> String {
    format!(
        "{{\"id\":\"call_{index}\",\"type\":\"function\",\"function\":{{\"name\":\"add\",\"arguments\":\"{{\\\"a\\\":{index},\\\"b\\\":1}}\"}}}}"
    )
}

fn direct(count: usize) -> Duration {
    let cancel = CancelFlag::new();
    let started = Instant::now();
    for index in 0..count {
        // The same work a caller does without the harness: parse the model's arguments, run.
        let arguments: Value = serde_json::from_str(&arguments_text(index)).expect("json");
        black_box(add(&arguments, &cancel).expect("add"));
    }
    started.elapsed()
}

type ChannelJob = Box<dyn FnOnce() + Send>;

/// The previous hand-off: one worker behind a zero-capacity channel, the answer back on a
/// one-slot channel per call, waited on with a deadline.
struct ChannelHandOff {
    jobs: Option<Sender<ChannelJob>>,
    worker: Option<JoinHandle<()>>,
}

impl ChannelHandOff {
    fn start() -> ChannelHandOff {
        let (jobs, inbox) = bounded::<ChannelJob>(0);
        let worker = std::thread::spawn(move || {
            for job in inbox.iter() {
                job();
            }
        });
        ChannelHandOff {
            jobs: Some(jobs),
            worker: Some(worker),
        }
    }

    fn run(&self, count: usize) -> Duration {
        let jobs = self.jobs.as_ref().expect("running");
        let started = Instant::now();
        for index in 0..count {
            let arguments: Value = serde_json::from_str(&arguments_text(index)).expect("json");
            let (reply, answer) = bounded(1);
            let job: ChannelJob = Box::new(move || {
                let _ = reply.send(add(&arguments, &CancelFlag::new()));
            });
            // As the executor did: try_send, else a bounded wait for the worker on its way back.
            if let Err(error) = jobs.try_send(job) {
                jobs.send_timeout(error.into_inner(), Duration::from_secs(1))
                    .expect("worker");
            }
            let ran = answer
                .recv_deadline(Instant::now() + Duration::from_secs(60))
                .expect("answer");
            black_box(ran.expect("add"));
        }
        started.elapsed()
    }
}

impl Drop for ChannelHandOff {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

fn through_harness(harness: &Harness, count: usize) -> Duration {
    let started = Instant::now();
    for index in 0..count {
        let raw = openai_call(index);
        let reply = harness.handle(CallShape::OpenAi, &raw);
        assert_eq!(reply.outcome.status, Status::Ok, "{:?}", reply.outcome);
        black_box(reply);
    }
    started.elapsed()
}

/// The harness's work without the hand-off: every check, the audit events and the admission
/// attempt of a call, refused `BUDGET` because the budget is spent (so nothing is handed to a
/// worker).
fn harness_without_hand_off(harness: &Harness, count: usize) -> Duration {
    let started = Instant::now();
    for index in 0..count {
        let raw = openai_call(index);
        let reply = harness.handle(CallShape::OpenAi, &raw);
        assert_eq!(reply.outcome.status, Status::Budget, "{:?}", reply.outcome);
        black_box(reply);
    }
    started.elapsed()
}

/// Per-call µs of each round: (median, min, max).
fn spread(mut samples: Vec<f64>) -> (f64, f64, f64) {
    samples.sort_by(f64::total_cmp);
    (
        samples[samples.len() / 2],
        samples[0],
        samples[samples.len() - 1],
    )
}

fn main() {
    let count = ((50_000.0 * scale()) as usize).max(1_000);
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(5)
        .max(1);
    let spent = harness(0);
    let harness = harness((count + 1_000) * rounds);
    let channel = ChannelHandOff::start();
    // Warm-up: caches, the allocator, the workers started.
    direct(1_000);
    channel.run(1_000);
    through_harness(&harness, 1_000);
    harness_without_hand_off(&spent, 1_000);
    let per_call = |total: Duration| total.as_secs_f64() * 1e6 / count as f64;
    let (mut plain, mut channeled, mut checked, mut unhanded) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // Interleaved, so that a noisy moment of the machine spreads over every row.
    // `harness-only`: just the harness rows' work, for a profile (`perf record`).
    let only = std::env::args().any(|arg| arg == "harness-only");
    for _ in 0..rounds {
        if !only {
            plain.push(per_call(direct(count)));
            channeled.push(per_call(channel.run(count)));
            unhanded.push(per_call(harness_without_hand_off(&spent, count)));
        }
        checked.push(per_call(through_harness(&harness, count)));
    }
    if only {
        let (median, low, high) = spread(checked);
        println!("through the harness: {median:.2} µs/call ({low:.2}–{high:.2}), {rounds} rounds");
        return;
    }
    let (plain, channeled, checked, unhanded) = (
        spread(plain),
        spread(channeled),
        spread(checked),
        spread(unhanded),
    );
    println!(
        "harness overhead on a local tool: {count} calls of `add` per round, median of \
         {rounds} rounds (min–max)"
    );
    println!("| measure | µs/call | overhead over direct | ratio to direct |");
    println!("|---|---|---|---|");
    for (name, (median, low, high)) in [
        ("direct call (parse the arguments, run `add`)", plain),
        (
            "previous channel hand-off to a worker (no checks, no audit)",
            channeled,
        ),
        (
            "the harness without the hand-off (checks, audit; refused BUDGET)",
            unhanded,
        ),
        (
            "through the harness (checks, audit, slot hand-off)",
            checked,
        ),
    ] {
        println!(
            "| {name} | {median:.2} ({low:.2}–{high:.2}) | {:.2} µs | {:.1}× |",
            median - plain.0,
            median / plain.0
        );
    }
}
