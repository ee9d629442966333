//! Retries are opt-in, only for idempotent tools, only after transport failures or BUSY (and
//! TIMEOUT only when asked), with growing back-off; each admitted attempt costs budget.
//! The back-off goes through a recording sleeper, so no test waits for real.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender};
use serde_json::json;
use toolwire::harness::{AuditKind, RetryPolicy, Sleeper, ToolFailure, ToolTimeout};
use toolwire::{Harness, HarnessConfig, LocalTool, Status, ToolOptions, ToolRegistry};

use crate::support::{Recorder, SOON};

fn policy() -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(4)
        .delays(Duration::from_millis(100), Duration::from_secs(30))
        .multiplier(2.0)
        .jitter(0.5)
}

/// A tool that fails with a transport failure `failures` times, then answers.
fn flaky(name: &str, failures: usize, runs: &Arc<AtomicUsize>) -> LocalTool {
    let runs = Arc::clone(runs);
    LocalTool::new(
        name,
        "Fetches, over a flaky link.",
        json!({"type": "object"}),
        move |_, _| {
            let run = runs.fetch_add(1, Ordering::SeqCst);
            if run < failures {
                Err(ToolFailure::transport(format!(
                    "connection reset (run {run})"
                )))
            } else {
                Ok(Some(json!("fetched")))
            }
        },
    )
}

#[test]
fn an_idempotent_tool_is_retried_after_transport_failures_with_growing_delays() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut registry = ToolRegistry::new();
    registry
        .register(
            flaky("fetch", 3, &runs).options(ToolOptions::new().idempotent(true).retry(policy())),
        )
        .unwrap();
    let recorder = Recorder::default();
    let harness =
        Harness::new(registry, HarnessConfig::default().sleeper(recorder.clone())).unwrap();
    let outcome = harness.call("fetch", json!({}));
    assert_eq!(outcome.status, Status::Ok, "{outcome:?}");
    assert_eq!(outcome.result, json!("fetched"));
    assert_eq!(outcome.attempts, 4);
    assert_eq!(runs.load(Ordering::SeqCst), 4);
    assert_eq!(harness.budget().used, 4, "each attempt costs budget");
    let delays = recorder.delays();
    assert_eq!(delays, outcome.retry_delays);
    assert_eq!(delays.len(), 3);
    for pair in delays.windows(2) {
        assert!(pair[0] < pair[1], "the delays do not grow: {delays:?}");
    }
    // Each within its jitter band: 100, 200, 400 ms at most, half that at least.
    for (delay, base) in delays.iter().zip([100u64, 200, 400]) {
        let base = Duration::from_millis(base);
        assert!(
            *delay <= base && *delay >= base / 2,
            "{delay:?} vs {base:?}"
        );
    }
    assert_eq!(outcome.detail, "after 4 tries");
}

#[test]
fn retries_stop_at_the_bound_and_the_model_reads_a_generic_failure() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut registry = ToolRegistry::new();
    registry
        .register(
            flaky("fetch", usize::MAX, &runs).options(
                ToolOptions::new()
                    .idempotent(true)
                    .retry(policy().max_attempts(3)),
            ),
        )
        .unwrap();
    let recorder = Recorder::default();
    let harness =
        Harness::new(registry, HarnessConfig::default().sleeper(recorder.clone())).unwrap();
    let outcome = harness.call("fetch", json!({}));
    assert_eq!(outcome.status, Status::ToolError);
    assert_eq!(outcome.attempts, 3);
    assert_eq!(recorder.delays().len(), 2);
    assert!(outcome.detail.starts_with("the tool could not be reached"));
    assert!(
        outcome.detail.ends_with("(after 3 tries)"),
        "{}",
        outcome.detail
    );
    assert!(!outcome.detail.contains("connection reset"));
}

#[test]
fn a_retry_that_meets_a_spent_budget_ends_in_budget() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut registry = ToolRegistry::new();
    registry
        .register(
            flaky("fetch", usize::MAX, &runs)
                .options(ToolOptions::new().idempotent(true).retry(policy())),
        )
        .unwrap();
    let harness = Harness::new(
        registry,
        HarnessConfig::default()
            .sleeper(Recorder::default())
            .attempt_budget(2),
    )
    .unwrap();
    let outcome = harness.call("fetch", json!({}));
    assert_eq!(outcome.status, Status::Budget);
    assert!(
        outcome.detail.starts_with(
            "the attempt budget of 2 is spent, so no further attempt was run; the last \
             attempt ended with TOOL_ERROR: the tool could not be reached"
        ),
        "{}",
        outcome.detail
    );
    assert_eq!(outcome.attempts, 2);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[test]
fn a_non_idempotent_tool_is_never_retried() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut registry = ToolRegistry::new();
    // The same policy, on a tool not marked idempotent: inert.
    registry
        .register(flaky("charge-card", 1, &runs).options(ToolOptions::new().retry(policy())))
        .unwrap();
    let recorder = Recorder::default();
    let harness =
        Harness::new(registry, HarnessConfig::default().sleeper(recorder.clone())).unwrap();
    let outcome = harness.call("charge-card", json!({}));
    assert_eq!(outcome.status, Status::ToolError);
    assert_eq!(outcome.attempts, 1);
    assert!(outcome.retry_delays.is_empty());
    assert!(recorder.delays().is_empty());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(!harness.registry().tool("charge-card").unwrap().idempotent);
}

#[test]
fn timeouts_are_retried_only_when_the_policy_allows() {
    let mut registry = ToolRegistry::new();
    let polite = |_: &serde_json::Value, cancel: &toolwire::harness::CancelFlag| {
        // A tool's own work loop, which stops when cancelled.
        while !cancel.is_cancelled() {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(None)
    };
    let bound = ToolTimeout::Custom(Duration::from_millis(30));
    for (name, after_timeout) in [("slow", false), ("slow-retried", true)] {
        let options = ToolOptions::new()
            .timeout(bound)
            .idempotent(true)
            .retry(policy().max_attempts(2).after_timeout(after_timeout));
        registry
            .register(
                LocalTool::new(name, "Slow.", json!({"type": "object"}), polite).options(options),
            )
            .unwrap();
    }
    let recorder = Recorder::default();
    // Two workers, so the retry finds one although the first may still be stopping.
    let harness = Harness::new(
        registry,
        HarnessConfig::default()
            .workers(2)
            .sleeper(recorder.clone()),
    )
    .unwrap();
    let outcome = harness.call("slow", json!({}));
    assert_eq!(outcome.status, Status::Timeout);
    assert_eq!(outcome.attempts, 1);
    assert!(harness.wait_idle(SOON));
    let outcome = harness.call("slow-retried", json!({}));
    assert_eq!(outcome.status, Status::Timeout);
    assert_eq!(outcome.attempts, 2);
    assert_eq!(recorder.delays().len(), 1);
}

/// A sleeper that, on its first sleep, releases the tool holding the only worker and waits
/// until that worker is free again (the `late` event), so the retry finds it free.
struct FreeTheWorker {
    release: Sender<()>,
    late: Receiver<()>,
    delays: Recorder,
}

impl Sleeper for FreeTheWorker {
    fn sleep(&self, delay: Duration) {
        self.delays.sleep(delay);
        let _ = self.release.try_send(());
        self.late
            .recv_timeout(SOON)
            .expect("the held worker to come free");
    }
}

#[test]
fn busy_is_retried_for_an_idempotent_tool_and_costs_nothing() {
    let (release, latch) = bounded::<()>(1);
    let (late_tx, late) = bounded::<()>(4);
    let runs = Arc::new(AtomicUsize::new(0));
    let mut registry = ToolRegistry::new();
    registry
        .register(
            LocalTool::new(
                "hold",
                "Holds the worker.",
                json!({"type": "object"}),
                move |_, _| {
                    let _ = latch.recv_timeout(SOON);
                    Ok(Some(json!("held")))
                },
            )
            .options(ToolOptions::new().timeout(ToolTimeout::Custom(Duration::from_millis(20)))),
        )
        .unwrap();
    registry
        .register(
            flaky("fetch", 0, &runs).options(ToolOptions::new().idempotent(true).retry(policy())),
        )
        .unwrap();
    let delays = Recorder::default();
    let sleeper = FreeTheWorker {
        release,
        late,
        delays: delays.clone(),
    };
    let config = HarnessConfig::default()
        .workers(1)
        .sleeper(sleeper)
        .observer(move |event| {
            if event.kind == AuditKind::Late {
                let _ = late_tx.try_send(());
            }
        });
    let harness = Harness::new(registry, config).unwrap();
    assert_eq!(harness.call("hold", json!({})).status, Status::Timeout);
    let outcome = harness.call("fetch", json!({}));
    assert_eq!(outcome.status, Status::Ok, "{outcome:?}");
    // BUSY, a delay, then admitted once.
    assert_eq!(outcome.attempts, 1);
    assert_eq!(delays.delays().len(), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(harness.budget().used, 2);
}
