//! A timed-out local tool keeps running and keeps its worker: TIMEOUT after the bound, the
//! next call BUSY, and after the test releases the latch the first call's work completes.
//! Synchronised with latches and audit events only, never with sleeps.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver};
use serde_json::json;
use toolwire::harness::{AuditEvent, AuditKind, ToolTimeout};
use toolwire::{Harness, HarnessConfig, LocalTool, Status, ToolOptions, ToolRegistry};

use crate::support::SOON;
const BOUND: Duration = Duration::from_millis(150);

fn events() -> (HarnessConfig, Receiver<AuditEvent>) {
    let (tx, rx) = unbounded();
    let config = HarnessConfig::default().workers(1).observer(move |event| {
        let _ = tx.send(event.clone());
    });
    (config, rx)
}

fn wait_for(events: &Receiver<AuditEvent>, kind: AuditKind) -> AuditEvent {
    loop {
        let event = events
            .recv_timeout(SOON)
            .unwrap_or_else(|_| panic!("no {kind} event"));
        if event.kind == kind {
            return event;
        }
    }
}

#[test]
fn a_tool_that_ignores_interruption_times_out_holds_its_worker_and_completes_later() {
    let (release, latch) = bounded::<()>(1);
    let completed = Arc::new(AtomicUsize::new(0));
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let quick_runs = Arc::new(AtomicUsize::new(0));
    // When the stubborn tool itself started and ended.
    let ran = Arc::new(std::sync::Mutex::new(None::<(Instant, Instant)>));
    let mut registry = ToolRegistry::new();
    {
        let completed = Arc::clone(&completed);
        let saw_cancel = Arc::clone(&saw_cancel);
        let ran = Arc::clone(&ran);
        registry
            .register(
                LocalTool::new(
                    "stubborn",
                    "Ignores interruption until released.",
                    json!({"type": "object"}),
                    move |_, cancel| {
                        let began = Instant::now();
                        let _ = latch.recv_timeout(SOON);
                        *ran.lock().unwrap() = Some((began, Instant::now()));
                        saw_cancel.store(cancel.is_cancelled(), Ordering::SeqCst);
                        completed.fetch_add(1, Ordering::SeqCst);
                        Ok(Some(json!("done at last")))
                    },
                )
                .options(ToolOptions::new().timeout(ToolTimeout::Custom(BOUND))),
            )
            .unwrap();
    }
    {
        let quick_runs = Arc::clone(&quick_runs);
        registry
            .register(LocalTool::new(
                "quick",
                "Answers at once.",
                json!({"type": "object"}),
                move |_, _| {
                    quick_runs.fetch_add(1, Ordering::SeqCst);
                    Ok(Some(json!("quick")))
                },
            ))
            .unwrap();
    }
    let (config, events) = events();
    // A call that waited for the worker at the hand-off, instead of being refused, would wait
    // here until the stubborn tool lets go (which the test does only after the refusal).
    let config = config.hand_off_grace(Duration::from_secs(3600));
    let harness = Harness::new(registry, config).unwrap();

    let started = Instant::now();
    let outcome = harness.call("stubborn", json!({}));
    assert_eq!(outcome.status, Status::Timeout);
    let timed_out = Instant::now();
    assert!(started.elapsed() >= BOUND, "{:?}", started.elapsed());
    assert!(outcome.detail.contains("did not answer within 150ms"));
    assert!(outcome.detail.contains("may still be running"));
    assert_eq!(outcome.attempts, 1);
    assert_eq!(completed.load(Ordering::SeqCst), 0);
    assert_eq!(harness.busy_workers(), 1);

    // The only worker is still inside the stubborn tool: refused, not queued. The stubborn
    // tool holds the worker until the test releases its latch, after this call: a call that
    // waited for the worker would have run once the latch's own guard (SOON) let go, and
    // answered OK. BUSY with the stubborn tool still unfinished means it did not wait.
    let outcome = harness.call("quick", json!({}));
    assert_eq!(outcome.status, Status::Busy);
    assert_eq!(completed.load(Ordering::SeqCst), 0);
    assert_eq!(quick_runs.load(Ordering::SeqCst), 0);
    assert_eq!(harness.budget().used, 1);

    release.send(()).unwrap();
    let late = wait_for(&events, AuditKind::Late);
    assert_eq!(completed.load(Ordering::SeqCst), 1);
    assert!(
        saw_cancel.load(Ordering::SeqCst),
        "the cancel flag was not set"
    );
    assert_eq!(late.tool.as_deref(), Some("stubborn"));
    // The late event times the whole run, which went on past the caller's timeout. (The bound
    // counts from admission, so the tool itself may have started a moment later, by its
    // worker's wake-up: its run is not compared with BOUND.)
    let (began, ended) = ran.lock().unwrap().expect("the tool ran");
    assert!(ended >= timed_out);
    assert!(late.duration.unwrap() >= ended - began);
    assert!(late.detail.contains("discarded"), "{}", late.detail);

    // The worker is free again.
    assert_eq!(harness.busy_workers(), 0);
    let outcome = harness.call("quick", json!({}));
    assert_eq!(outcome.status, Status::Ok);
    assert_eq!(outcome.result, json!("quick"));
    harness.close();
}

#[test]
fn a_tool_that_honours_its_cancel_flag_frees_its_worker_soon_after_the_timeout() {
    let mut registry = ToolRegistry::new();
    registry
        .register(
            LocalTool::new(
                "polite",
                "Stops when asked.",
                json!({"type": "object"}),
                |_, cancel| {
                    // A tool's own work loop; the test does not sleep to synchronise.
                    while !cancel.is_cancelled() {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Ok(None)
                },
            )
            .options(ToolOptions::new().timeout(ToolTimeout::Custom(BOUND))),
        )
        .unwrap();
    let (config, events) = events();
    let harness = Harness::new(registry, config).unwrap();
    assert_eq!(harness.call("polite", json!({})).status, Status::Timeout);
    wait_for(&events, AuditKind::Late);
    assert!(harness.wait_idle(SOON));
    assert_eq!(harness.call("polite", json!({})).status, Status::Timeout);
    harness.close();
}

#[test]
fn close_raises_the_cancel_flag_of_running_tools() {
    let (entered_tx, entered) = bounded::<()>(1);
    let mut registry = ToolRegistry::new();
    registry
        .register(
            LocalTool::new(
                "loop",
                "Runs until cancelled.",
                json!({"type": "object"}),
                move |_, cancel| {
                    let _ = entered_tx.send(());
                    // A tool's own work loop. It gives up by itself after SOON (so a close
                    // that never raised the flag fails the test instead of hanging it), and
                    // says which of the two ended it.
                    let started = Instant::now();
                    while !cancel.is_cancelled() {
                        if started.elapsed() > SOON {
                            return Ok(Some(json!("never cancelled")));
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Ok(Some(json!("stopped")))
                },
            )
            .options(ToolOptions::new().timeout(ToolTimeout::Long)),
        )
        .unwrap();
    // With an hour of close grace, close() returns once the worker has ended, never because
    // the grace ran out.
    let config = HarnessConfig::default()
        .workers(1)
        .close_grace(Duration::from_secs(3600));
    let harness = Harness::new(registry, config).unwrap();
    let caller = {
        let harness = harness.clone();
        std::thread::spawn(move || harness.call("loop", json!({})))
    };
    entered.recv_timeout(SOON).unwrap();
    harness.close();
    // The tool saw its flag and returned; the caller got its answer.
    let outcome = caller.join().unwrap();
    assert_eq!(outcome.status, Status::Ok, "{outcome:?}");
    assert_eq!(outcome.result, json!("stopped"));
    assert_eq!(harness.busy_workers(), 0);
    let outcome = harness.call("loop", json!({}));
    assert_eq!(outcome.status, Status::Busy);
    assert_eq!(outcome.detail, "the harness is closed; nothing was run");
    harness.close();
}
