//! The attempt budget grows only when the executor admits: INVALID, UNKNOWN_TOOL and BUSY
//! cost nothing; NOT_FOUND, TOOL_ERROR, TIMEOUT and OK cost one each; a spent budget is
//! BUDGET before admission; nothing is retried by default.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;
use serde_json::json;
use toolwire::harness::{
    AuditKind, CallSettings, ToolFailure, ToolTimeout, MAX_CONVERSATION_ID_CHARS,
};
use toolwire::{CallShape, Harness, HarnessConfig, LocalTool, Status, ToolOptions, ToolRegistry};

/// An upper bound that only keeps a broken test from hanging.
use crate::support::SOON;

struct Fixture {
    harness: Harness,
    runs: Arc<AtomicUsize>,
    release: Sender<()>,
    late: Receiver<()>,
}

fn fixture(budget: u32) -> Fixture {
    let runs = Arc::new(AtomicUsize::new(0));
    let (release, latch) = bounded::<()>(1);
    let (late_tx, late) = bounded::<()>(8);
    let mut registry = ToolRegistry::new();
    let object = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let count = |runs: &Arc<AtomicUsize>| {
        let runs = Arc::clone(runs);
        move || runs.fetch_add(1, Ordering::SeqCst)
    };
    let counted = count(&runs);
    registry
        .register(LocalTool::new(
            "found",
            "Finds.",
            object.clone(),
            move |_, _| {
                counted();
                Ok(Some(json!("here")))
            },
        ))
        .unwrap();
    let counted = count(&runs);
    registry
        .register(LocalTool::new(
            "missing",
            "Finds nothing.",
            object.clone(),
            move |_, _| {
                counted();
                Ok(None)
            },
        ))
        .unwrap();
    let counted = count(&runs);
    registry
        .register(
            LocalTool::new("broken", "Fails.", object.clone(), move |_, _| {
                counted();
                Err(ToolFailure::transport("connection reset"))
            })
            // Idempotent, but without a retry policy: still one attempt.
            .options(ToolOptions::new().idempotent(true)),
        )
        .unwrap();
    let counted = count(&runs);
    registry
        .register(
            LocalTool::new("stuck", "Waits for the test.", object, move |_, _| {
                counted();
                let _ = latch.recv_timeout(SOON);
                Ok(Some(json!("late")))
            })
            .options(ToolOptions::new().timeout(ToolTimeout::Custom(Duration::from_millis(50)))),
        )
        .unwrap();
    let config = HarnessConfig::default()
        .workers(1)
        .attempt_budget(budget)
        .observer(move |event| {
            if event.kind == AuditKind::Late {
                let _ = late_tx.send(());
            }
        });
    Fixture {
        harness: Harness::new(registry, config).unwrap(),
        runs,
        release,
        late,
    }
}

impl Fixture {
    fn expect(&self, name: &str, args: serde_json::Value, status: Status, used: u32, runs: usize) {
        let outcome = self.harness.call(name, args);
        assert_eq!(outcome.status, status, "{name}: {outcome:?}");
        assert_eq!(
            outcome.attempts,
            u32::from(status.consumes_budget()),
            "{name}"
        );
        assert_eq!(self.harness.budget().used, used, "budget after {name}");
        assert_eq!(self.runs.load(Ordering::SeqCst), runs, "runs after {name}");
    }
}

#[test]
fn budget_accounting_follows_admission_exactly() {
    let fx = fixture(5);
    // Rejected before admission: free.
    fx.expect("found", json!({"n": "one"}), Status::Invalid, 0, 0);
    fx.expect("lost", json!({}), Status::UnknownTool, 0, 0);
    // TIMEOUT costs one; the stuck tool keeps the only worker, so the next call is BUSY,
    // which costs nothing.
    fx.expect("stuck", json!({}), Status::Timeout, 1, 1);
    fx.expect("found", json!({}), Status::Busy, 1, 1);
    fx.release.send(()).unwrap();
    fx.late
        .recv_timeout(SOON)
        .expect("the stuck tool's late end");
    // Each admitted attempt costs one, whatever it ends in.
    fx.expect("missing", json!({}), Status::NotFound, 2, 2);
    fx.expect("broken", json!({}), Status::ToolError, 3, 3);
    fx.expect("found", json!({}), Status::Ok, 4, 4);
    fx.expect("found", json!({"n": 2}), Status::Ok, 5, 5);
    // Spent: BUDGET, decided before admission, so the tool does not run.
    fx.expect("found", json!({}), Status::Budget, 5, 5);
    fx.expect("missing", json!({}), Status::Budget, 5, 5);
    // Checks still come first: a bad call is INVALID, an unknown one UNKNOWN_TOOL.
    fx.expect("found", json!({"n": []}), Status::Invalid, 5, 5);
    fx.expect("lost", json!({}), Status::UnknownTool, 5, 5);
    let state = fx.harness.budget();
    assert_eq!((state.used, state.limit, state.remaining()), (5, 5, 0));
    // A new task gets a new budget.
    fx.harness.reset_budget(1);
    fx.expect("found", json!({}), Status::Ok, 1, 6);
    fx.expect("found", json!({}), Status::Budget, 1, 6);
    fx.harness.close();
}

#[test]
fn a_budget_outcome_says_why_and_nothing_is_retried_by_default() {
    let fx = fixture(1);
    // `broken` fails with a transport failure and is idempotent, but has no retry policy.
    let outcome = fx.harness.call("broken", json!({}));
    assert_eq!(outcome.status, Status::ToolError);
    assert_eq!(outcome.attempts, 1);
    assert!(outcome.retry_delays.is_empty());
    assert_eq!(fx.runs.load(Ordering::SeqCst), 1);
    let outcome = fx.harness.call("found", json!({}));
    assert_eq!(outcome.status, Status::Budget);
    assert_eq!(
        outcome.detail,
        "the attempt budget of 1 is spent; nothing was run"
    );
    assert_eq!(outcome.model_text(), format!("BUDGET: {}", outcome.detail));
}

#[test]
fn racing_calls_never_overspend_the_budget() {
    let fx = fixture(3);
    let harness = fx.harness.clone();
    std::thread::scope(|scope| {
        for _ in 0..8 {
            let harness = harness.clone();
            scope.spawn(move || {
                for _ in 0..5 {
                    let status = harness.call("found", json!({})).status;
                    assert!(
                        matches!(status, Status::Ok | Status::Busy | Status::Budget),
                        "{status}"
                    );
                }
            });
        }
    });
    assert_eq!(fx.harness.budget().used, 3);
    assert_eq!(fx.runs.load(Ordering::SeqCst), 3);
}

/// A scope with a window, measured on a clock the test moves: its count starts over once the
/// window its first call began has ended, not before, and the BUDGET answer says when.
#[test]
fn a_scope_with_a_window_starts_over_when_its_window_ends() {
    let fx = fixture(100);
    let now = Arc::new(std::sync::Mutex::new(std::time::Instant::now()));
    let read = Arc::clone(&now);
    let scopes = toolwire::harness::BudgetScopes::with_window(2, Duration::from_secs(60), 16)
        .clock(move || *read.lock().unwrap());
    let scope = scopes.scope("caller");
    let call = || {
        fx.harness
            .call_in(&scopes.scope("caller"), "found", json!({}))
    };
    assert_eq!(call().status, Status::Ok);
    *now.lock().unwrap() += Duration::from_secs(20);
    assert_eq!(call().status, Status::Ok);
    let spent = call();
    assert_eq!(spent.status, Status::Budget);
    assert_eq!(
        spent.detail,
        "the attempt budget of 2 per 60 s is spent (it starts over in 40 s); nothing was run"
    );
    // One millisecond before the window ends: still spent.
    *now.lock().unwrap() += Duration::from_millis(39_999);
    assert_eq!(call().status, Status::Budget);
    assert_eq!(scope.resets_in(), Some(Duration::from_millis(1)));
    *now.lock().unwrap() += Duration::from_millis(1);
    assert_eq!(call().status, Status::Ok);
    assert_eq!(scope.state().used, 1, "a new window, begun by this call");
    assert_eq!(scope.resets_in(), Some(Duration::from_secs(60)));
    // Only the scope's budget was spent, and only by admitted calls.
    assert_eq!(fx.harness.budget().used, 0);
    assert_eq!(fx.runs.load(Ordering::SeqCst), 3);
    fx.harness.close();
}

/// A harness with one tool, `found`, whose finished calls' scopes the observer keeps.
fn conversations(budget: u32, max: usize) -> (Harness, Arc<Mutex<Vec<Option<String>>>>) {
    let scopes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&scopes);
    let mut registry = ToolRegistry::new();
    registry
        .register(LocalTool::new(
            "found",
            "Finds.",
            json!({"type": "object"}),
            |_, _| Ok(Some(json!("here"))),
        ))
        .unwrap();
    let config = HarnessConfig::default()
        .workers(2)
        .attempt_budget(budget)
        .max_budget_scopes(max)
        .observer(move |event| {
            if event.kind == AuditKind::Finished {
                seen.lock().push(event.scope.clone());
            }
        });
    (Harness::new(registry, config).unwrap(), scopes)
}

#[test]
fn each_conversation_spends_its_own_budget_under_its_own_id() {
    let (harness, scopes) = conversations(2, 8);
    let alice = harness.conversation("alice").unwrap();
    // Two parallel calls of one whole Chat Completions message spend alice's two attempts.
    let message = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "found", "arguments": "{}"}},
        {"id": "call_2", "type": "function", "function": {"name": "found", "arguments": "{}"}}]});
    let reply = alice
        .handle_message(CallShape::OpenAi, &message.to_string())
        .unwrap();
    let statuses: Vec<Status> = reply.replies.iter().map(|r| r.outcome.status).collect();
    assert_eq!(statuses, [Status::Ok, Status::Ok]);
    assert_eq!(alice.budget().used, 2);
    assert_eq!(alice.call("found", json!({})).status, Status::Budget);
    let raw = r#"{"type": "tool_use", "id": "toolu_1", "name": "found", "input": {}}"#;
    assert_eq!(
        alice.handle(CallShape::Anthropic, raw).outcome.status,
        Status::Budget
    );
    // Another conversation, the harness's own budget and a clone of alice's handle.
    let bob = harness.conversation("bob").unwrap();
    assert_eq!(bob.call("found", json!({})).status, Status::Ok);
    assert_eq!(bob.budget().used, 1);
    assert_eq!(
        harness.budget().used,
        0,
        "no conversation spent the harness's own"
    );
    assert_eq!(harness.call("found", json!({})).status, Status::Ok);
    let again = harness.conversation("alice").unwrap();
    assert_eq!(
        again.budget().used,
        2,
        "the same id is the same conversation"
    );
    // A budget scope in the settings does not move a conversation's call elsewhere.
    let elsewhere = CallSettings::new().budget(harness.scope("carol"));
    assert_eq!(
        alice.call_with("found", json!({}), &elsewhere).status,
        Status::Budget
    );
    alice.reset_budget(3);
    assert_eq!(alice.call("found", json!({})).status, Status::Ok);
    let alice = Some("alice".to_owned());
    let bob = Some("bob".to_owned());
    assert_eq!(
        *scopes.lock(),
        [
            alice.clone(),
            alice.clone(),
            alice.clone(),
            alice.clone(),
            bob,
            None,
            alice.clone(),
            alice
        ],
        "every call is recorded under its conversation's id"
    );
    harness.close();
}

#[test]
fn conversations_are_bounded_and_their_ids_checked() {
    let (harness, _) = conversations(1, 2);
    let first = harness.conversation("first").unwrap();
    assert_eq!(first.call("found", json!({})).status, Status::Ok);
    assert_eq!(first.id(), "first");
    harness.conversation("second").unwrap();
    harness.conversation("third").unwrap();
    // The harness holds two; the least recently used, "first", was forgotten, so it starts
    // over when asked for again, while the handle still held keeps its count.
    assert_eq!(first.budget().used, 1);
    let fresh = harness.conversation("first").unwrap();
    assert_eq!(fresh.budget().used, 0);
    assert_eq!(first.call("found", json!({})).status, Status::Budget);
    for id in [String::new(), "x".repeat(MAX_CONVERSATION_ID_CHARS + 1)] {
        let error = harness.conversation(&id).unwrap_err();
        assert!(matches!(error, toolwire::Error::Config(_)), "{error}");
    }
    assert!(harness
        .conversation(&"x".repeat(MAX_CONVERSATION_ID_CHARS))
        .is_ok());
    harness.close();
}
