//! The hand-off between a caller and a worker (per-worker slots, workers that spin briefly
//! and then park, callers that spin briefly on the answer and then park with their deadline):
//! a parked worker is woken by the next call, a caller leaves at its deadline while its tool
//! keeps a worker spinning, a harness closes with parked workers and leaves none behind, and
//! many short calls from several threads all complete (no lost wake-up), with zero-queue
//! admission kept throughout.

use crate::support as common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::unbounded;
use serde_json::json;
use toolwire::harness::{AuditKind, ToolTimeout};
use toolwire::{CallShape, Harness, HarnessConfig, LocalTool, Status, ToolOptions, ToolRegistry};

use common::{eventually, serial, threads_named, SOON};

/// Long enough never to pass in a healthy run; reaching it fails the test instead of hanging
/// it.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// Worker threads are named `toolwire-harness-N`; Linux keeps 15 characters of a name.
const WORKER_PREFIX: &str = "toolwire-harnes";

fn echo_registry() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry
        .register(LocalTool::new(
            "echo",
            "Returns its number.",
            json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}),
            |args, _| Ok(Some(args["n"].clone())),
        ))
        .unwrap();
    registry
}

fn echo(harness: &Harness, n: u64) -> Status {
    let raw = json!({"tool": "echo", "arguments": {"n": n}}).to_string();
    let reply = harness.handle(CallShape::Plain, &raw);
    if reply.outcome.status == Status::Ok {
        assert_eq!(reply.outcome.result, json!(n), "another call's answer");
    }
    reply.outcome.status
}

/// The scheduler states of this process's worker threads (Linux: `R` running, `S` sleeping).
fn worker_states() -> Vec<char> {
    let mut states = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with(WORKER_PREFIX) {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // The state follows the name in parentheses.
        if let Some(state) = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next())
        {
            states.push(state);
        }
    }
    states
}

/// Waits until `count` workers exist and all of them sleep (parked, past their spin).
fn all_parked(count: usize) -> bool {
    eventually(SOON, || {
        let states = worker_states();
        states.len() == count && states.iter().all(|state| *state == 'S')
    })
}

#[test]
fn a_parked_worker_is_woken_by_the_next_call() {
    let _serial = serial();
    let harness = Harness::new(echo_registry(), HarnessConfig::default().workers(1)).unwrap();
    for round in 0..5 {
        // The worker has spun, yielded and parked: the call must wake it.
        assert!(all_parked(1), "round {round}: the worker never parked");
        assert_eq!(echo(&harness, round), Status::Ok, "round {round}");
    }
    harness.close();
}

#[test]
fn a_caller_leaves_at_its_deadline_while_its_tool_spins_on_the_worker() {
    let _serial = serial();
    let release = Arc::new(AtomicBool::new(false));
    let spinning = Arc::new(AtomicUsize::new(0));
    let mut registry = echo_registry();
    let (tool_release, tool_spinning) = (Arc::clone(&release), Arc::clone(&spinning));
    registry
        .register(
            LocalTool::new(
                "spin",
                "Keeps its worker's CPU busy until released; ignores its cancel flag.",
                json!({"type": "object"}),
                move |_, _| {
                    tool_spinning.fetch_add(1, Ordering::SeqCst);
                    let began = Instant::now();
                    while !tool_release.load(Ordering::SeqCst) && began.elapsed() < HANG_GUARD {
                        std::hint::spin_loop();
                    }
                    Ok(Some(json!("spun")))
                },
            )
            .options(ToolOptions::new().timeout(ToolTimeout::Custom(Duration::from_millis(50)))),
        )
        .unwrap();
    let (late_tx, late) = unbounded();
    let config = HarnessConfig::default().workers(1).observer(move |event| {
        if event.kind == AuditKind::Late {
            let _ = late_tx.send(event.call);
        }
    });
    let harness = Harness::new(registry, config).unwrap();
    // The tool's own bound: the caller leaves at 50 ms although the worker never stops.
    let started = Instant::now();
    let reply = harness.handle(CallShape::Plain, r#"{"tool": "spin", "arguments": {}}"#);
    assert_eq!(reply.outcome.status, Status::Timeout, "{:?}", reply.outcome);
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(spinning.load(Ordering::SeqCst), 1);
    // The worker is still held: the next call is BUSY at once, not queued behind it.
    assert_eq!(harness.busy_workers(), 1);
    assert_eq!(echo(&harness, 1), Status::Busy);
    release.store(true, Ordering::SeqCst);
    late.recv_timeout(HANG_GUARD)
        .expect("the late result is reported");
    assert!(harness.wait_idle(HANG_GUARD));
    // The caller's deadline, shorter than the tool's bound, while the tool spins again.
    release.store(false, Ordering::SeqCst);
    let started = Instant::now();
    let deadline = started + Duration::from_millis(20);
    let replies = harness.handle_all_until(
        CallShape::Plain,
        &[r#"{"tool": "spin", "arguments": {}}"#],
        deadline,
    );
    assert_eq!(replies[0].outcome.status, Status::Timeout);
    assert!(Instant::now() >= deadline);
    assert_eq!(spinning.load(Ordering::SeqCst), 2);
    release.store(true, Ordering::SeqCst);
    late.recv_timeout(HANG_GUARD)
        .expect("the second late result");
    assert!(harness.wait_idle(HANG_GUARD));
    assert_eq!(echo(&harness, 2), Status::Ok);
    harness.close();
}

#[test]
fn close_with_parked_workers_leaves_no_worker_behind() {
    let _serial = serial();
    let harness = Harness::new(echo_registry(), HarnessConfig::default().workers(4)).unwrap();
    let calls: Vec<String> = (0..4)
        .map(|n| json!({"tool": "echo", "arguments": {"n": n}}).to_string())
        .collect();
    for reply in harness.handle_all(CallShape::Plain, &calls) {
        assert_eq!(reply.outcome.status, Status::Ok);
    }
    assert!(
        all_parked(4),
        "the workers never parked: {:?}",
        worker_states()
    );
    harness.close();
    // A parked worker that close failed to wake would stay listed forever. (Polled: a
    // joined thread can be listed for a moment after its join returns.)
    assert!(
        no_workers(),
        "workers left after close: {:?}",
        threads_named(WORKER_PREFIX)
    );
    assert_eq!(echo(&harness, 9), Status::Busy);
    // A harness dropped with parked workers (no close) ends them too.
    let dropped = Harness::new(echo_registry(), HarnessConfig::default().workers(3)).unwrap();
    assert!(all_parked(3));
    drop(dropped);
    assert!(no_workers(), "{:?}", threads_named(WORKER_PREFIX));
}

/// True once no worker thread of this process is listed.
fn no_workers() -> bool {
    eventually(SOON, || threads_named(WORKER_PREFIX).is_empty())
}

/// Several threads making short calls, some back to back (the worker still spinning), some
/// after a pause long enough for the workers to park. Every call must come back; with as
/// many workers as threads none may be `BUSY` (a worker in the tail of its last job is
/// waited for, it does not refuse), and with fewer each is `OK` or `BUSY`, never lost.
fn stress(workers: usize, threads: usize, calls: u64) -> (usize, usize) {
    let config = HarnessConfig::default()
        .workers(workers)
        .attempt_budget(u32::MAX)
        .hand_off_grace(Duration::from_secs(3600));
    let harness = Harness::new(echo_registry(), config).unwrap();
    let (done_tx, done) = unbounded::<(usize, usize)>();
    let spawned: Vec<_> = (0..threads)
        .map(|thread| {
            let harness = harness.clone();
            let done_tx = done_tx.clone();
            std::thread::spawn(move || {
                let (mut ok, mut busy) = (0, 0);
                for call in 0..calls {
                    if call % 64 == 63 {
                        // Not for correctness: lets the workers park, so that wake-ups of
                        // parked workers are exercised too.
                        std::thread::sleep(Duration::from_micros(500));
                    }
                    match echo(&harness, (thread as u64) << 32 | call) {
                        Status::Ok => ok += 1,
                        Status::Busy => busy += 1,
                        other => panic!("call {call} of thread {thread}: {other:?}"),
                    }
                }
                let _ = done_tx.send((ok, busy));
            })
        })
        .collect();
    let (mut ok, mut busy) = (0, 0);
    for _ in 0..threads {
        let (thread_ok, thread_busy) = done
            .recv_timeout(HANG_GUARD)
            .expect("a caller never came back: a lost wake-up");
        ok += thread_ok;
        busy += thread_busy;
    }
    for thread in spawned {
        thread.join().unwrap();
    }
    assert_eq!(ok + busy, threads * calls as usize);
    assert_eq!(
        harness.budget().used as usize,
        ok,
        "only admissions are counted"
    );
    assert!(harness.wait_idle(HANG_GUARD));
    assert_eq!(harness.busy_workers(), 0);
    harness.close();
    assert!(no_workers(), "{:?}", threads_named(WORKER_PREFIX));
    (ok, busy)
}

#[test]
fn many_short_calls_from_several_threads_all_complete() {
    let _serial = serial();
    let (ok, busy) = stress(4, 4, 2_000);
    assert_eq!((ok, busy), (8_000, 0), "a free worker refused a call");
    let (ok, busy) = stress(2, 6, 1_000);
    assert_eq!(ok + busy, 6_000);
    assert!(ok > 0);
}
