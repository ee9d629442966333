//! A send queue that stays full: the call times out at its deadline instead of blocking; and
//! when the deadline passes while the frame waits for room, one side decides the call's end:
//! a caller told it timed out is never written after, a frame never written is never
//! cancelled, and a notice never goes out before its request.
use crate::support::client as support;

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use serde_json::json;
use support::{next_notification, round_trip, SOON};
use toolwire::jsonrpc::{Message, RequestId, TimerWheel};
use toolwire::mcp::methods::CANCELLED;
use toolwire::mcp::McpDialect;
use toolwire::transport::{Inbound, MemoryTransport, OutFrame, Outgoing, Transport};
use toolwire::{CallHandle, CallOptions, Client, ClientConfig, Error, Result};

#[test]
fn a_call_that_cannot_be_queued_times_out_at_its_deadline() {
    let (transport, peer) = MemoryTransport::pair_with_capacity(1);
    let client = Client::with_config(transport, ClientConfig::default().dialect(McpDialect))
        .expect("client");
    // The peer does not read: one frame fills the queue.
    client
        .notify("notifications/fill", json!({}))
        .expect("the first frame fits");
    let timeout = Duration::from_millis(50);
    // Several times: the send giving up and the call's own deadline race each other, and
    // either way the caller must see a timeout.
    for attempt in 0..8 {
        let started = Instant::now();
        let outcome = client.call_with(
            "tools/stuck",
            json!({"attempt": attempt}),
            CallOptions::new().timeout(timeout),
        );
        let waited = started.elapsed();
        match outcome {
            Err(Error::Timeout { method, after }) => {
                assert_eq!(method, "tools/stuck");
                assert!(after >= timeout, "attempt {attempt}: after {after:?}");
            }
            other => panic!("attempt {attempt}: expected a timeout, got {other:?}"),
        }
        assert!(
            waited >= timeout,
            "attempt {attempt}: returned after {waited:?}"
        );
        assert_eq!(client.stats().in_flight, 0);
    }
    let stats = client.stats();
    assert_eq!(stats.timeouts, 8, "{stats:?}");
    assert_eq!(stats.cancels, 0, "{stats:?}");
    assert_eq!(stats.sent, 1, "{stats:?}");
    // Once the peer reads, the connection works again.
    assert_eq!(next_notification(&peer).method, "notifications/fill");
    // A cancellation that was tried while the queue was full is lost, never queued later.
    round_trip(&client, &peer);
    support::finish(&client);
}

/// A transport whose requests wait for the test's verdict: each request's send reports its
/// deadline, then the frame is taken, or refused as a queue that stayed full until that
/// deadline refuses it. Everything else is taken at once. Every frame taken goes to `taken`,
/// in order.
struct Gate {
    waiting: Sender<Instant>,
    verdicts: Receiver<bool>,
    taken: Sender<Message>,
}

impl Transport for Gate {
    fn start(&self, _inbound: Arc<dyn Inbound>) -> Result<()> {
        Ok(())
    }

    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()> {
        let OutFrame::Single(message) = message.frame else {
            panic!("this test sends no batches");
        };
        if let Message::Request(_) = &message {
            let deadline = deadline.expect("a request is sent with its deadline");
            self.waiting.send(deadline).expect("the test waits for it");
            let take = self
                .verdicts
                .recv_timeout(SOON)
                .expect("the test gives a verdict");
            if !take {
                // A full queue gives up at the deadline, not before.
                if let Some(left) = deadline.checked_duration_since(Instant::now()) {
                    thread::sleep(left);
                }
                return Err(Error::Busy { limit: 1 });
            }
        }
        self.taken
            .send(message)
            .expect("the test reads what is taken");
        Ok(())
    }

    fn close(&self) -> Result<()> {
        Ok(())
    }

    fn describe(&self) -> String {
        "a gate the test opens".into()
    }
}

/// How a request's hand-off to the transport and its deadline interleave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// The timer has run for the deadline while the frame waits; then the transport takes it.
    DeadlineThenTaken,
    /// The timer has run for the deadline while the frame waits; then the transport gives up.
    DeadlineThenRefused,
    /// The transport gives up at the deadline while the timer is held back.
    RefusedThenDeadline,
    /// The transport takes the frame before the deadline; then the deadline passes.
    TakenThenDeadline,
}

const ORDERS: [Order; 4] = [
    Order::DeadlineThenTaken,
    Order::DeadlineThenRefused,
    Order::RefusedThenDeadline,
    Order::TakenThenDeadline,
];

/// Holds the wheel's thread until the returned sender is dropped; returns once it is held, so
/// no deadline scheduled after this is handled before the release.
fn hold(wheel: &TimerWheel) -> Sender<()> {
    let (held_tx, held) = bounded::<()>(1);
    let (release, released) = bounded::<()>(0);
    wheel.schedule(
        Instant::now(),
        Box::new(move || {
            let _ = held_tx.send(());
            let _ = released.recv_timeout(SOON);
        }),
    );
    held.recv_timeout(SOON).expect("the wheel runs the hold");
    release
}

/// Returns once the wheel has handled everything due at `deadline` that was scheduled before
/// this call (entries due together fire in the order they were scheduled).
fn timer_passes(wheel: &TimerWheel, deadline: Instant) {
    let (passed_tx, passed) = bounded::<()>(1);
    wheel.schedule(
        deadline,
        Box::new(move || {
            let _ = passed_tx.send(());
        }),
    );
    passed.recv_timeout(SOON).expect("the deadline passes");
}

#[test]
fn a_deadline_during_the_hand_off_ends_the_call_once_in_every_order() {
    const ATTEMPTS: u64 = 1_000;
    let timeout = Duration::from_millis(1);
    let wheel = TimerWheel::new();
    let (waiting_tx, waiting) = unbounded();
    let (verdict, verdicts) = unbounded();
    let (taken_tx, taken) = unbounded();
    let gate = Gate {
        waiting: waiting_tx,
        verdicts,
        taken: taken_tx,
    };
    let client = Client::with_config(
        gate,
        ClientConfig::default()
            .dialect(McpDialect)
            .timer(wheel.clone()),
    )
    .expect("client");
    // The caller's thread makes one call per attempt and reports how it ended.
    let (attempt_tx, attempts) = unbounded::<u64>();
    let (outcome_tx, outcomes) = unbounded();
    let caller = {
        let client = client.clone();
        thread::spawn(move || {
            for attempt in attempts {
                let outcome = client
                    .start(
                        "tools/stuck",
                        json!({"attempt": attempt}),
                        CallOptions::new().timeout(timeout),
                    )
                    .and_then(CallHandle::wait);
                outcome_tx.send(outcome).expect("the test waits for it");
            }
        })
    };
    let started = Instant::now();
    let mut frames = 0;
    for attempt in 0..ATTEMPTS {
        let order = ORDERS[(attempt % 4) as usize];
        let mut held = matches!(order, Order::RefusedThenDeadline | Order::TakenThenDeadline)
            .then(|| hold(&wheel));
        attempt_tx.send(attempt).expect("the caller runs");
        let deadline = waiting
            .recv_timeout(SOON)
            .expect("the request reaches the transport");
        if matches!(order, Order::DeadlineThenTaken | Order::DeadlineThenRefused) {
            timer_passes(&wheel, deadline);
        }
        let take = matches!(order, Order::DeadlineThenTaken | Order::TakenThenDeadline);
        verdict.send(take).expect("the transport waits for it");
        let mut sent_id = None;
        if take {
            // The request comes first: nothing about it (a notice) was sent before it.
            match taken.recv_timeout(SOON).expect("the request is taken") {
                Message::Request(request) => {
                    assert_eq!(request.method, "tools/stuck", "{order:?}");
                    assert_eq!(
                        request.params.as_ref().expect("params")["attempt"],
                        json!(attempt),
                        "{order:?}"
                    );
                    sent_id = Some(request.id);
                }
                other => {
                    panic!("attempt {attempt} ({order:?}): expected its request, got {other:?}")
                }
            }
            frames += 1;
        }
        if order == Order::TakenThenDeadline {
            // The transport has the frame: the deadline may pass now, and the timer (or the
            // caller's own backstop) ends the call.
            drop(held.take());
        }
        let outcome = outcomes.recv_timeout(SOON).expect("the call ends");
        match outcome {
            Err(Error::Timeout { method, after }) => {
                assert_eq!(method, "tools/stuck");
                assert!(
                    after >= timeout,
                    "attempt {attempt} ({order:?}): after {after:?}"
                );
            }
            other => panic!("attempt {attempt} ({order:?}): expected a timeout, got {other:?}"),
        }
        if let Some(id) = sent_id {
            // The request reached the peer: its cancellation follows.
            expect_cancel(&taken, &id, attempt, order);
            frames += 1;
        }
        assert_eq!(client.stats().in_flight, 0, "attempt {attempt} ({order:?})");
        // Refused with the timer held: the wheel goes on only once the call has ended.
        drop(held);
    }
    drop(attempt_tx);
    caller.join().expect("the caller's thread");
    // Closing sends every notice still owed: a refused request must have none.
    client.close().expect("close");
    if let Ok(frame) = taken.try_recv() {
        panic!("a frame after the last attempt: {frame:?}");
    }
    let stats = client.stats();
    assert_eq!(stats.timeouts, ATTEMPTS, "{stats:?}");
    assert_eq!(stats.cancels, 0, "{stats:?}");
    assert_eq!(stats.sent, frames, "{stats:?}");
    assert!(
        started.elapsed() < SOON,
        "{ATTEMPTS} attempts took {:?}",
        started.elapsed()
    );
}

/// The next frame taken is `notifications/cancelled` for `id`.
fn expect_cancel(taken: &Receiver<Message>, id: &RequestId, attempt: u64, order: Order) {
    match taken.recv_timeout(SOON).expect("the notice is sent") {
        Message::Notification(notice) if notice.method == CANCELLED => {
            let params = notice.params.expect("params");
            assert_eq!(
                params["requestId"],
                id.to_value(),
                "attempt {attempt} ({order:?})"
            );
        }
        other => panic!("attempt {attempt} ({order:?}): expected its notice, got {other:?}"),
    }
}
