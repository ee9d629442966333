//! The timer wheel: the cost to schedule and cancel a deadline beside plain collections, and the
//! lag when 10,000 and 100,000 deadlines pass at the same instant, beside a caller that watches
//! its own deadlines. Prints markdown tables; every ratio is measured in this one run.
//!
//! ```text
//! cargo bench                          # every benchmark, each printing its table
//! cargo bench --bench timer            # this one; TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! ```
//!
//! Lag is measured three ways, each with all N deadlines at one instant D:
//! * baseline: one thread holds N bare channels, sleeps until D itself, then looks at each
//!   channel in turn: the OS wake-up plus the cost of visiting N callers, with no timer thread;
//! * raw wheel: N tasks on a [`TimerWheel`], each recording when it ran; lag = run - D;
//! * caller wake-up: N calls started from one thread over the memory transport (the peer reads
//!   everything and never answers), each with deadline D; the same thread then waits on the
//!   handles in the order it started them, as a caller fanning out would, and lag = the moment
//!   `wait()` returned `Timeout` - the handle's deadline. This includes completing each call
//!   (pending-table removal, the slot's wake-up), whether the timer thread or the waiting
//!   caller itself gets to the entry first, and the `notifications/cancelled` of each call,
//!   which the timer thread sends after the wake-ups (on the same two cores);
//! * caller wake-up, no notices: the same with `cancel_on_timeout` off, the floor for the
//!   notices' share;
//! * caller wake-up, channel per call: the same with each handle asked for its `receiver()`
//!   at start, so every call owns a channel, as every call did before completion moved into
//!   the pending table's slots (the baseline of that change, in this run).

#[path = "support/mod.rs"]
mod support;

use std::collections::{BinaryHeap, HashMap};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use serde_json::Value;
use support::{median3, scaled};
use toolwire::jsonrpc::{TimerTask, TimerWheel};
use toolwire::mcp::McpDialect;
use toolwire::transport::MemoryTransport;
use toolwire::{CallOptions, Client, ClientConfig};

/// A fixed pseudo-random permutation of 0..n (an LCG-driven Fisher-Yates).
fn shuffled(n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..n).rev() {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let j = (state >> 33) as usize % (i + 1);
        order.swap(i, j);
    }
    order
}

fn ns_per(elapsed: Duration, ops: usize) -> f64 {
    elapsed.as_nanos() as f64 / ops as f64
}

// ---------------------------------------------------------------------------------------------
// Schedule and cancel
// ---------------------------------------------------------------------------------------------

/// (schedule ns/op, cancel ns/op) on a fresh wheel: `ops` deadlines spread over an hour from
/// now (so over every slot, none firing), then cancelled in a shuffled order.
fn wheel_schedule_cancel(ops: usize, order: &[usize]) -> (f64, f64) {
    let wheel = TimerWheel::new();
    let base = Instant::now() + Duration::from_secs(3600);
    let mut keys = Vec::with_capacity(ops);
    let started = Instant::now();
    for i in 0..ops {
        let task: TimerTask = Box::new(move || {
            black_box(i);
        });
        keys.push(wheel.schedule(base + Duration::from_micros(i as u64 * 37), task));
    }
    let scheduled = started.elapsed();
    let started = Instant::now();
    for &i in order {
        assert!(wheel.cancel(keys[i]));
    }
    let cancelled = started.elapsed();
    assert!(wheel.is_empty());
    (ns_per(scheduled, ops), ns_per(cancelled, ops))
}

/// The same boxed tasks inserted into and removed from a `HashMap` by key: the cost of the
/// pending table's own operations, with no ordering by time at all.
fn hashmap_insert_remove(ops: usize, order: &[usize]) -> (f64, f64) {
    let mut map: HashMap<u64, TimerTask> = HashMap::new();
    let started = Instant::now();
    for i in 0..ops {
        let task: TimerTask = Box::new(move || {
            black_box(i);
        });
        map.insert(i as u64, task);
    }
    let inserted = started.elapsed();
    let started = Instant::now();
    for &i in order {
        assert!(map.remove(&(i as u64)).is_some());
    }
    let removed = started.elapsed();
    (ns_per(inserted, ops), ns_per(removed, ops))
}

/// A binary heap ordered by deadline (what a timer without a wheel would use): push, then pop
/// in deadline order. Popping stands in for cancelling, which a heap cannot do by key.
fn heap_push_pop(ops: usize) -> (f64, f64) {
    struct Timed(Instant, u64, TimerTask);
    impl PartialEq for Timed {
        fn eq(&self, other: &Self) -> bool {
            (self.0, self.1) == (other.0, other.1)
        }
    }
    impl Eq for Timed {}
    impl PartialOrd for Timed {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Timed {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            (other.0, other.1).cmp(&(self.0, self.1))
        }
    }
    let base = Instant::now() + Duration::from_secs(3600);
    let mut heap = BinaryHeap::new();
    let spread = shuffled(ops);
    let started = Instant::now();
    for (i, &at) in spread.iter().enumerate() {
        let task: TimerTask = Box::new(move || {
            black_box(i);
        });
        heap.push(Timed(
            base + Duration::from_micros(at as u64 * 37),
            i as u64,
            task,
        ));
    }
    let pushed = started.elapsed();
    let started = Instant::now();
    while let Some(entry) = heap.pop() {
        black_box((&entry.1, &entry.2));
    }
    let popped = started.elapsed();
    (ns_per(pushed, ops), ns_per(popped, ops))
}

// ---------------------------------------------------------------------------------------------
// Lag
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, PartialOrd)]
struct Lag {
    p50: Duration,
    p99: Duration,
    max: Duration,
}

fn summarize(mut lags: Vec<Duration>) -> Lag {
    lags.sort();
    let n = lags.len();
    Lag {
        p50: lags[n / 2],
        p99: lags[(n * 99 / 100).min(n - 1)],
        max: lags[n - 1],
    }
}

fn median_lag(runs: [Lag; 3]) -> Lag {
    let pick = |f: fn(&Lag) -> Duration| {
        let mut values = runs.map(|lag| f(&lag));
        values.sort();
        values[1]
    };
    Lag {
        p50: pick(|lag| lag.p50),
        p99: pick(|lag| lag.p99),
        max: pick(|lag| lag.max),
    }
}

/// Time allowed for setting up `n` deadlines before they pass.
fn lead(n: usize) -> Duration {
    Duration::from_millis(300) + Duration::from_micros(15 * n as u64)
}

fn baseline_lag(n: usize) -> Lag {
    let channels: Vec<(Sender<()>, Receiver<()>)> = (0..n).map(|_| bounded::<()>(1)).collect();
    let deadline = Instant::now() + lead(n);
    thread::sleep(deadline.saturating_duration_since(Instant::now()));
    let mut lags = Vec::with_capacity(n);
    for (_, rx) in &channels {
        assert!(rx.try_recv().is_err());
        lags.push(Instant::now().saturating_duration_since(deadline));
    }
    summarize(lags)
}

fn raw_wheel_lag(n: usize) -> Lag {
    let wheel = TimerWheel::new();
    let origin = Instant::now();
    let ran: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    let count = Arc::new(AtomicUsize::new(0));
    let (done_tx, done_rx) = bounded::<()>(1);
    let deadline = Instant::now() + lead(n);
    for i in 0..n {
        let ran = Arc::clone(&ran);
        let count = Arc::clone(&count);
        let done_tx = done_tx.clone();
        wheel.schedule(
            deadline,
            Box::new(move || {
                ran[i].store(origin.elapsed().as_nanos() as u64, Ordering::Relaxed);
                if count.fetch_add(1, Ordering::Relaxed) + 1 == n {
                    let _ = done_tx.send(());
                }
            }),
        );
    }
    assert!(
        Instant::now() < deadline,
        "scheduling took longer than the lead"
    );
    done_rx
        .recv_timeout(lead(n) + Duration::from_secs(30))
        .expect("every task ran");
    let deadline_ns = (deadline - origin).as_nanos() as u64;
    let lags = ran
        .iter()
        .map(|at| {
            let at = at.load(Ordering::Relaxed);
            assert!(at >= deadline_ns, "a task ran before its deadline");
            Duration::from_nanos(at - deadline_ns)
        })
        .collect();
    summarize(lags)
}

fn caller_lag(n: usize) -> Lag {
    caller_lag_with(n, true, false).0
}

fn caller_lag_no_cancel(n: usize) -> Lag {
    caller_lag_with(n, false, false).0
}

fn caller_lag_channels(n: usize) -> Lag {
    caller_lag_with(n, true, true).0
}

/// [`caller_lag`], optionally without `notifications/cancelled` (`cancel_on_timeout` off);
/// also how long after the last deadline the timer thread was done (a task scheduled after
/// every call, at the last call's deadline, runs right after the last expiry). `channel`: each
/// handle is asked for its receiver (a channel per call).
fn caller_lag_with(n: usize, cancel_on_timeout: bool, channel: bool) -> (Lag, Duration) {
    let (transport, peer) = MemoryTransport::pair_with_capacity(2 * n + 1024);
    let mut config = ClientConfig::default().dialect(McpDialect);
    config = config.max_in_flight(2 * n);
    let wheel = TimerWheel::new();
    config = config.timer(wheel.clone());
    config = config.cancel_on_timeout(cancel_on_timeout);
    let client = Client::with_config(transport, config).expect("client");
    // The peer reads every frame (requests, then the cancellations) and never answers.
    let drain = thread::spawn(move || {
        let mut frames = 0usize;
        while peer.recv_line(Duration::from_secs(60)).is_some() {
            frames += 1;
        }
        frames
    });
    let deadline = Instant::now() + lead(n);
    let mut handles = Vec::with_capacity(n);
    for _ in 0..n {
        let timeout = deadline.saturating_duration_since(Instant::now());
        let handle = client
            .start("hang", Value::Null, CallOptions::new().timeout(timeout))
            .expect("start");
        if channel {
            let _ = handle.receiver();
        }
        handles.push(handle);
    }
    assert!(
        Instant::now() < deadline,
        "starting took longer than the lead"
    );
    let last_deadline = handles.last().expect("calls").deadline();
    let (done_tx, done_rx) = bounded::<Instant>(1);
    wheel.schedule(
        last_deadline,
        Box::new(move || {
            let _ = done_tx.send(Instant::now());
        }),
    );
    let mut lags = Vec::with_capacity(n);
    for handle in handles {
        let due = handle.deadline();
        let outcome = handle.wait();
        let now = Instant::now();
        assert!(
            matches!(outcome, Err(ref error) if error.is_timeout()),
            "{outcome:?}"
        );
        lags.push(now.saturating_duration_since(due));
    }
    let timer_done = done_rx
        .recv()
        .expect("the sentinel ran")
        .saturating_duration_since(last_deadline);
    assert_eq!(client.stats().in_flight, 0);
    assert_eq!(client.stats().timeouts, n as u64);
    client.close().expect("close");
    let frames = drain.join().expect("drain");
    assert!(frames >= n, "the peer saw {frames} frames");
    (summarize(lags), timer_done)
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1e3)
}

fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.1}×", a.as_secs_f64() / b.as_secs_f64().max(1e-9))
}

fn main() {
    // `cargo bench --bench timer -- caller-lag N` (or `caller-lag-no-cancel N`, `raw-lag N`):
    // one measurement, for a profiler.
    let args: Vec<String> = std::env::args().collect();
    let modes = [
        "caller-lag",
        "caller-lag-no-cancel",
        "caller-lag-channels",
        "raw-lag",
    ];
    if let Some(at) = args.iter().position(|arg| modes.contains(&arg.as_str())) {
        let n = args
            .get(at + 1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(10_000);
        let (lag, timer_done) = match args[at].as_str() {
            "caller-lag" => caller_lag_with(n, true, false),
            "caller-lag-no-cancel" => caller_lag_with(n, false, false),
            "caller-lag-channels" => caller_lag_with(n, true, true),
            _ => (raw_wheel_lag(n), Duration::ZERO),
        };
        println!(
            "{} {n}: p50 {} p99 {} max {}; timer thread done {} after the last deadline",
            args[at],
            ms(lag.p50),
            ms(lag.p99),
            ms(lag.max),
            ms(timer_done)
        );
        return;
    }
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    let ops = scaled(1_000_000, 10_000);
    let order = shuffled(ops);
    // Warm up the allocator and the code paths.
    wheel_schedule_cancel(ops / 10, &shuffled(ops / 10));
    hashmap_insert_remove(ops / 10, &shuffled(ops / 10));

    let wheel = median3(|| wheel_schedule_cancel(ops, &order));
    let map = median3(|| hashmap_insert_remove(ops, &order));
    let heap = median3(|| heap_push_pop(ops));

    println!("Timer wheel: schedule and cancel, {ops} deadlines (median of 3 runs, {cpus} CPUs)");
    println!();
    println!("| operation | toolwire wheel | HashMap (baseline) | BinaryHeap | wheel ÷ HashMap |");
    println!("|---|---|---|---|---|");
    println!(
        "| schedule (insert, push) | {:.0} ns/op | {:.0} ns/op | {:.0} ns/op | {:.2}× |",
        wheel.0,
        map.0,
        heap.0,
        wheel.0 / map.0
    );
    println!(
        "| cancel (remove; heap: pop) | {:.0} ns/op | {:.0} ns/op | {:.0} ns/op | {:.2}× |",
        wheel.1,
        map.1,
        heap.1,
        wheel.1 / map.1
    );
    println!();
    println!("Schedule includes boxing the task in every column; the wheel also takes its lock.");
    println!();

    println!("**Timer lag: N deadlines passing at one instant (median of 3 runs, {cpus} CPUs)**");
    println!();
    println!("| N | measure | baseline: own sleep, then N channels | raw wheel: task run | caller wake-up: handle returns Timeout | caller wake-up, no notices | caller wake-up, channel per call | caller ÷ baseline | target |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for n in [scaled(10_000, 1_000), scaled(100_000, 10_000)] {
        // Three rounds, each measuring every column once, so the machine's load falls on
        // every column alike.
        let mut rounds: Vec<[Lag; 5]> = Vec::with_capacity(3);
        for _ in 0..3 {
            rounds.push([
                baseline_lag(n),
                raw_wheel_lag(n),
                caller_lag(n),
                caller_lag_no_cancel(n),
                caller_lag_channels(n),
            ]);
        }
        let column = |at: usize| median_lag([rounds[0][at], rounds[1][at], rounds[2][at]]);
        let (base, raw, caller, quiet, channels) =
            (column(0), column(1), column(2), column(3), column(4));
        let ten_k = n == scaled(10_000, 1_000);
        for (name, pick, target) in [
            (
                "p50",
                (|lag: &Lag| lag.p50) as fn(&Lag) -> Duration,
                "≤ 2 ms",
            ),
            ("p99", |lag: &Lag| lag.p99, "—"),
            ("max", |lag: &Lag| lag.max, "≤ 10 ms"),
        ] {
            println!(
                "| {n} | {name} | {} | {} | {} | {} | {} | {} | {} |",
                ms(pick(&base)),
                ms(pick(&raw)),
                ms(pick(&caller)),
                ms(pick(&quiet)),
                ms(pick(&channels)),
                ratio(pick(&caller), pick(&base)),
                if ten_k { target } else { "—" }
            );
        }
    }
    println!();
    println!("The wheel fires each deadline at its own instant (its 1 ms tick only picks a slot), so lag is the wake-up plus the work for the entries due before it. The baseline is the floor for visiting N idle channels once: most of it is cache misses, as N channels do not fit in the cache.");
}
