//! Waiting on N calls in completion order: a `CallSet` beside two baselines, per completion,
//! for growing N. Prints a markdown table; every figure is from this one run.
//!
//! ```text
//! cargo bench --bench call_set            # TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! ```
//!
//! Each round starts N calls over the in-memory transport; the peer reads them all, then
//! answers all of them at once; the clock runs from the first answer to the last completion
//! taken by the waiting thread, so a figure is the whole per-completion path (the reader
//! thread's parse and table removal, the hand-off, the waiter's wake-up), divided by N.
//!
//! * `call set`: the members of one `CallSet`, taken with `next()` as they complete;
//! * `handles in start order`: one `CallHandle` per call, waited in the order they were
//!   started (the peer answers in that order too): O(1) per completion, but it can only wait
//!   in an order fixed in advance, so it is the floor, not an alternative;
//! * `handles + select`: one `CallHandle` per call, taken in completion order with a
//!   `crossbeam_channel::Select` over the receivers still pending: what waiting in completion
//!   order cost before `CallSet`; each wake-up scans every pending receiver, so a completion
//!   costs O(N) (run only up to the size where it stays under a few seconds).

#[path = "support/mod.rs"]
mod support;

use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Select;
use serde_json::json;
use support::scale;
use toolwire::jsonrpc::{CallSet, Message, Request, Response};
use toolwire::transport::{MemoryPeer, MemoryTransport};
use toolwire::{CallHandle, CallOptions, Client, ClientConfig};

const HOUR: Duration = Duration::from_secs(3600);

/// Reads `n` requests, waits for the go signal, answers them all in order, and reports when
/// it started answering.
fn serve(peer: MemoryPeer, n: usize) -> thread::JoinHandle<(Instant, MemoryPeer)> {
    thread::spawn(move || {
        let mut requests: Vec<Request> = Vec::with_capacity(n);
        while requests.len() < n {
            match peer.recv_message(HOUR) {
                Some(Message::Request(request)) => requests.push(request),
                other => panic!("expected a request, got {other:?}"),
            }
        }
        let started = Instant::now();
        for request in requests {
            peer.send(&Message::Response(Response::ok(request.id, json!(1))));
        }
        (started, peer)
    })
}

fn options() -> CallOptions {
    CallOptions::new().timeout(HOUR)
}

/// Nanoseconds per completion for one mode at size `n` (the median of three rounds).
fn measure(mode: &str, n: usize) -> f64 {
    let mut samples: Vec<f64> = (0..3).map(|_| round(mode, n)).collect();
    samples.sort_by(f64::total_cmp);
    samples[1]
}

fn round(mode: &str, n: usize) -> f64 {
    let (transport, peer) = MemoryTransport::pair_with_capacity(n.max(1));
    let config = ClientConfig::default().max_in_flight(n + 1);
    let client = Client::with_config(transport, config).expect("client");
    let server = serve(peer, n);
    let finished = match mode {
        "set" => {
            let mut set = CallSet::new();
            for i in 0..n {
                set.start(&client, i, "echo", json!({}), options())
                    .expect("start");
            }
            let mut taken = 0;
            for (_, outcome) in set.by_ref() {
                outcome.expect("result");
                taken += 1;
            }
            assert_eq!(taken, n);
            Instant::now()
        }
        "in-order" => {
            let handles: Vec<CallHandle> = (0..n)
                .map(|_| client.start("echo", json!({}), options()).expect("start"))
                .collect();
            for handle in handles {
                handle.wait().expect("result");
            }
            Instant::now()
        }
        "select" => {
            let mut handles: Vec<CallHandle> = (0..n)
                .map(|_| client.start("echo", json!({}), options()).expect("start"))
                .collect();
            while !handles.is_empty() {
                let mut select = Select::new();
                for handle in &handles {
                    select.recv(handle.receiver());
                }
                let operation = select.select();
                let index = operation.index();
                let event = operation.recv(handles[index].receiver()).expect("an event");
                let mut handle = handles.swap_remove(index);
                match handle.on_event(event) {
                    Some(outcome) => {
                        outcome.expect("result");
                    }
                    None => handles.push(handle),
                }
            }
            Instant::now()
        }
        other => panic!("unknown mode {other}"),
    };
    let (started, _peer) = server.join().expect("server");
    client.close().expect("close");
    finished.duration_since(started).as_nanos() as f64 / n as f64
}

fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let scale = scale();
    let sizes: Vec<usize> = [1_000usize, 10_000, 100_000]
        .iter()
        .map(|&n| ((n as f64 * scale) as usize).max(100))
        .collect();
    let select_limit = ((10_000.0 * scale) as usize).max(100);
    println!("Waiting on N calls in completion order (ns per completion, median of 3 rounds)");
    println!();
    println!("| N | call set | handles in start order (floor) | handles + select | set ÷ floor |");
    println!("|---|---|---|---|---|");
    let mut set_per = Vec::new();
    let mut floor_per = Vec::new();
    for &n in &sizes {
        let set = measure("set", n);
        let floor = measure("in-order", n);
        let select = if n <= select_limit {
            format!("{:.0}", measure("select", n))
        } else {
            "— (O(N) per completion)".to_owned()
        };
        set_per.push(set);
        floor_per.push(floor);
        println!(
            "| {n} | {set:.0} | {floor:.0} | {select} | {:.2}× |",
            set / floor
        );
    }
    let growth = |per: &[f64]| per.last().copied().unwrap_or(0.0) / per[0].max(1.0);
    println!();
    println!(
        "From the smallest N to the largest ({}× more calls) the call set's cost per completion \
         grows {:.2}× and the O(1) floor's {:.2}× (caches: more calls, more memory touched); \
         with select, a completion costs O(N).",
        sizes.last().copied().unwrap_or(0) / sizes[0].max(1),
        growth(&set_per),
        growth(&floor_per)
    );
}
