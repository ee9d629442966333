//! Remove-wins: a response and a timeout arriving together complete the call exactly once.
use crate::support::client as support;

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, RecvTimeoutError, Sender};
use serde_json::{json, Value};
use support::{memory_client, SOON};
use toolwire::jsonrpc::{Message, RequestId};
use toolwire::mcp::methods::CANCELLED;
use toolwire::mcp::McpDialect;
use toolwire::transport::MemoryPeer;
use toolwire::{CallHandle, CallOptions, ClientConfig, Error};

const TRIALS: usize = 10_000;
const WORKERS: usize = 4;
const TIMEOUT: Duration = Duration::from_millis(1);
/// Answers are spread over this window after the request arrives, so they land before, at and
/// after the moment the 1 ms deadline fires.
const JITTER_MICROS: u64 = 2_500;

/// The peer: answers every `race` request after a pseudo-random delay, tells the worker that
/// sent it once the answer is on its way, reports every cancellation, answers `ping` at once.
fn run_peer(peer: Arc<MemoryPeer>, answered: Vec<Sender<RequestId>>, cancels: Sender<i64>) {
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next_delay = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        Duration::from_micros(seed % JITTER_MICROS)
    };
    // (due, sequence, id, worker): a min-heap on the due time.
    let mut due: BinaryHeap<Reverse<(Instant, u64, i64, usize)>> = BinaryHeap::new();
    let mut sequence = 0u64;
    loop {
        while let Some(Reverse((at, _, _, _))) = due.peek() {
            if *at > Instant::now() {
                break;
            }
            let Reverse((_, _, id, worker)) = due.pop().expect("peeked");
            let id = RequestId::Number(id);
            support::answer(&peer, &id, json!({"answer": id.to_value()}));
            answered[worker]
                .send(id)
                .expect("the worker waits for its answer");
        }
        let line = match due.peek() {
            Some(Reverse((at, _, _, _))) => match peer.receiver().recv_deadline(*at) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            },
            None => match peer.receiver().recv() {
                Ok(line) => line,
                Err(_) => return,
            },
        };
        match toolwire::jsonrpc::parse_frame(line.as_bytes())
            .expect("the client sends valid frames")
        {
            toolwire::jsonrpc::Frame::Single(Message::Request(request))
                if request.method == "race" =>
            {
                let RequestId::Number(id) = request.id else {
                    panic!("the client uses numeric ids")
                };
                let worker = request.params.as_ref().expect("params")["worker"]
                    .as_u64()
                    .expect("worker") as usize;
                sequence += 1;
                due.push(Reverse((
                    Instant::now() + next_delay(),
                    sequence,
                    id,
                    worker,
                )));
            }
            toolwire::jsonrpc::Frame::Single(Message::Request(request))
                if request.method == "ping" =>
            {
                support::answer(&peer, &request.id, json!({}));
            }
            toolwire::jsonrpc::Frame::Single(Message::Notification(notification))
                if notification.method == CANCELLED =>
            {
                let params = notification.params.expect("params");
                cancels
                    .send(params["requestId"].as_i64().expect("numeric requestId"))
                    .expect("the test counts cancellations");
            }
            other => panic!("unexpected frame from the client: {other:?}"),
        }
    }
}

#[derive(Default)]
struct WorkerReport {
    ok: usize,
    timed_out: Vec<i64>,
    handles: Vec<CallHandle>,
}

#[test]
fn a_response_racing_the_timeout_completes_the_call_exactly_once() {
    let started = Instant::now();
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let peer = Arc::new(peer);
    let (answered_txs, answered_rxs): (Vec<_>, Vec<_>) =
        (0..WORKERS).map(|_| unbounded::<RequestId>()).unzip();
    let (cancel_tx, cancel_rx) = unbounded::<i64>();
    let peer_thread = {
        let peer = Arc::clone(&peer);
        thread::spawn(move || run_peer(peer, answered_txs, cancel_tx))
    };

    let workers: Vec<_> = answered_rxs
        .into_iter()
        .enumerate()
        .map(|(worker, answered)| {
            let client = client.clone();
            thread::spawn(move || {
                let mut report = WorkerReport::default();
                for trial in (worker..TRIALS).step_by(WORKERS) {
                    let mut handle = client
                        .start(
                            "race",
                            json!({"worker": worker, "trial": trial}),
                            CallOptions::new().timeout(TIMEOUT),
                        )
                        .expect("start");
                    let id = handle.id().clone();
                    let outcome = loop {
                        let event = handle
                            .receiver()
                            .recv_timeout(SOON)
                            .expect("every call gets an outcome");
                        if let Some(outcome) = handle.on_event(event) {
                            break outcome;
                        }
                    };
                    match outcome {
                        Ok(value) => {
                            assert_eq!(value, json!({"answer": id.to_value()}));
                            report.ok += 1;
                        }
                        Err(Error::Timeout { method, after }) => {
                            assert_eq!(method, "race");
                            assert!(after >= TIMEOUT, "timed out after only {after:?}");
                            let RequestId::Number(number) = id else {
                                unreachable!()
                            };
                            report.timed_out.push(number);
                        }
                        Err(other) => panic!("trial {trial}: unexpected outcome {other:?}"),
                    }
                    // Wait until the peer has certainly answered this request; whatever the
                    // outcome was, nothing more may follow it.
                    let sent = answered.recv_timeout(SOON).expect("the peer answers");
                    assert_eq!(sent, id);
                    assert!(
                        handle.receiver().try_recv().is_err(),
                        "trial {trial}: a second event arrived"
                    );
                    report.handles.push(handle);
                }
                report
            })
        })
        .collect();

    let mut ok = 0;
    let mut timed_out = BTreeSet::new();
    let mut handles = Vec::with_capacity(TRIALS);
    for worker in workers {
        let report = worker.join().expect("worker");
        ok += report.ok;
        timed_out.extend(report.timed_out);
        handles.extend(report.handles);
    }

    // Every answer was sent before this ping; frames are processed in order, so once it is
    // answered every answer has been processed (delivered or counted late).
    let ping = client
        .start("ping", Value::Null, CallOptions::new().timeout(SOON))
        .expect("ping");
    assert_eq!(ping.wait().expect("ping"), json!({}));

    for (index, handle) in handles.iter().enumerate() {
        assert!(
            handle.receiver().try_recv().is_err(),
            "call #{index} ({:?}) got a second event",
            handle.id()
        );
    }
    drop(handles);

    let stats = client.stats();
    assert_eq!(stats.in_flight, 0, "{stats:?}");
    assert_eq!(ok + timed_out.len(), TRIALS);
    assert_eq!(stats.timeouts as usize, timed_out.len(), "{stats:?}");
    assert_eq!(stats.timeouts as usize + ok, TRIALS, "{stats:?}");
    assert_eq!(
        stats.late_responses, stats.timeouts,
        "every timed-out request's answer arrived late: {stats:?}"
    );
    assert_eq!(stats.cancels, 0, "{stats:?}");
    assert_eq!(stats.received as usize, TRIALS + 1, "{stats:?}");
    // Both sides of the race really happened.
    assert!(
        ok > 0 && !timed_out.is_empty(),
        "ok {ok}, timeouts {}",
        timed_out.len()
    );

    // Each timeout told the peer, once, with the right id (they are sent right after the
    // outcome, so wait for them on the peer's channel).
    let mut cancelled = BTreeSet::new();
    while cancelled.len() < timed_out.len() {
        let id = cancel_rx
            .recv_timeout(SOON)
            .expect("a cancellation for every timeout");
        assert!(cancelled.insert(id), "cancelled {id} twice");
    }
    assert_eq!(cancelled, timed_out);

    support::finish(&client);
    drop(client);
    peer_thread.join().expect("peer");
    assert!(
        cancel_rx.try_recv().is_err(),
        "a cancellation for a call that succeeded"
    );
    eprintln!(
        "{TRIALS} trials: {ok} answered, {} timed out, in {:?}",
        timed_out.len(),
        started.elapsed()
    );
}
