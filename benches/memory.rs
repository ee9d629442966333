//! Memory of 10,000 calls in flight through call handles, started from one thread, beside a
//! baseline of 10,000 bare channel entries in a `HashMap`. Prints a markdown table; every
//! ratio is measured in this one run.
//!
//! ```text
//! cargo bench                          # every benchmark, each printing its table
//! cargo bench --bench memory           # this one; TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! ```
//!
//! Resident memory is per process, so each measurement runs in a child process: the bench
//! re-executes itself with `--child MODE N [SERVER]`, the child reports its resident set
//! (`VmRSS`) just before and just after making its N entries and its peak (`VmHWM`), and the
//! parent prints the median of three children per mode. The growth (after - before) is what
//! the entries cost; it is the number held to the target (10,000 in flight ≤ 5 MB).
//!
//! Modes:
//! * `channels`: N `crossbeam_channel::bounded(1)` channels, senders in a
//!   `HashMap<RequestId, Sender<CallEvent>>`, receivers in a `Vec`: the least a pending table
//!   of waiting callers can hold;
//! * `stdio`: N `hang` calls (one-hour timeout) to tool_server over stdio, handles kept; the
//!   count is taken once an `echo` sent after them has come back, so every request has left the
//!   send queue;
//! * `memory`: the same over the in-memory transport, with a peer that reads every frame and
//!   never answers;
//! * `memory-channels`: the same with each handle asked for its `receiver()`, so every call
//!   owns a channel, as every call did before completion moved into the pending table's
//!   slots (the baseline of that change, in this run);
//! * `mcp`: N `hang` tool calls through `McpClient::start_tool` to tool_server over stdio (a
//!   handshake session: tool_server does not serve 2026-07-28), the `ToolCall`s kept: what
//!   `McpClient` adds per call over the bare `Client` of `stdio`.

#[path = "support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use serde_json::json;
use support::scale;
use toolwire::jsonrpc::{CallEvent, RequestId};
use toolwire::transport::{MemoryTransport, StdioTransport};
use toolwire::{
    CallHandle, CallOptions, Client, McpClient, McpConfig, ProtocolMode, StdioConfig, ToolCall,
};

const HOUR: Duration = Duration::from_secs(3600);

/// A field of /proc/self/status in KiB (`VmRSS`, `VmHWM`).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"))
}

struct Sample {
    before_kib: u64,
    after_kib: u64,
    peak_kib: u64,
}

impl Sample {
    fn growth_kib(&self) -> u64 {
        self.after_kib.saturating_sub(self.before_kib)
    }
}

fn report(sample: &Sample) {
    println!(
        "RESULT {} {} {}",
        sample.before_kib, sample.after_kib, sample.peak_kib
    );
}

// ---- children ----

fn child_channels(n: usize) -> Sample {
    // Warm the allocator the way the other modes are warmed.
    drop(black_box(
        (0..100)
            .map(|_| bounded::<CallEvent>(1))
            .collect::<Vec<_>>(),
    ));
    let before_kib = status_kib("VmRSS");
    let mut table: HashMap<RequestId, Sender<CallEvent>> = HashMap::new();
    let mut receivers: Vec<Receiver<CallEvent>> = Vec::new();
    for i in 0..n {
        let (tx, rx) = bounded(1);
        table.insert(RequestId::Number(i as i64 + 1), tx);
        receivers.push(rx);
    }
    let after_kib = status_kib("VmRSS");
    black_box((&table, &receivers));
    Sample {
        before_kib,
        after_kib,
        peak_kib: status_kib("VmHWM"),
    }
}

/// Warms up, then starts `n` never-answered calls from this thread and measures.
fn in_flight(
    client: &Client,
    n: usize,
    channel: bool,
    settle: impl Fn(&Client),
) -> (Sample, Vec<CallHandle>) {
    // Warm up: the timer thread, the pending table's first growth, the code paths.
    let warm: Vec<CallHandle> = (0..100)
        .map(|_| {
            client
                .start(
                    "hang",
                    json!({}),
                    CallOptions::new().timeout(Duration::from_millis(5)),
                )
                .expect("start")
        })
        .collect();
    for handle in warm {
        assert!(handle.wait().is_err());
    }
    settle(client);
    let before_kib = status_kib("VmRSS");
    let handles: Vec<CallHandle> = (0..n)
        .map(|_| {
            let handle = client
                .start("hang", json!({}), CallOptions::new().timeout(HOUR))
                .expect("start");
            if channel {
                let _ = handle.receiver();
            }
            handle
        })
        .collect();
    settle(client);
    let after_kib = status_kib("VmRSS");
    assert_eq!(client.stats().in_flight, n);
    (
        Sample {
            before_kib,
            after_kib,
            peak_kib: status_kib("VmHWM"),
        },
        handles,
    )
}

fn child_stdio(n: usize, server: &Path) -> Sample {
    let transport = StdioTransport::spawn(StdioConfig::new(server)).expect("spawn tool_server");
    let client = Client::new(transport).expect("client");
    // tool_server answers in order: once an echo sent last is back, it has read everything.
    let settle = |client: &Client| {
        client.call("echo", json!({"sync": true})).expect("echo");
    };
    let (sample, handles) = in_flight(&client, n, false, settle);
    client.close().expect("close");
    drop(handles);
    sample
}

fn child_memory(n: usize, channel: bool) -> Sample {
    let (transport, peer) = MemoryTransport::pair();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let drain = thread::spawn(move || {
        while peer.recv_line(Duration::from_secs(600)).is_some() {
            counter.fetch_add(1, Ordering::Release);
        }
    });
    let client = Client::new(transport).expect("client");
    let settle = |client: &Client| {
        let sent = client.stats().sent as usize;
        let limit = Instant::now() + Duration::from_secs(60);
        while seen.load(Ordering::Acquire) < sent {
            assert!(Instant::now() < limit, "the peer stopped reading");
            thread::sleep(Duration::from_millis(1));
        }
    };
    let (sample, handles) = in_flight(&client, n, channel, settle);
    client.close().expect("close");
    drop(handles);
    drain.join().expect("drain");
    sample
}

/// `n` never-answered tool calls through `McpClient` over stdio (see the module docs).
fn child_mcp(n: usize, server: &Path) -> Sample {
    let config = McpConfig::default().mode(ProtocolMode::Legacy);
    let client =
        McpClient::connect_stdio(StdioConfig::new(server), config).expect("connect to tool_server");
    // tool_server reads in order: once an echo sent last is back, it has read everything.
    let settle = || {
        client
            .call_tool("echo", json!({"sync": true}))
            .expect("echo");
    };
    let warm: Vec<ToolCall> = (0..100)
        .map(|_| {
            client
                .start_tool(
                    "hang",
                    json!({}),
                    CallOptions::new().timeout(Duration::from_millis(5)),
                )
                .expect("start")
        })
        .collect();
    for call in warm {
        assert!(call.wait().is_err());
    }
    settle();
    let before_kib = status_kib("VmRSS");
    let calls: Vec<ToolCall> = (0..n)
        .map(|_| {
            client
                .start_tool("hang", json!({}), CallOptions::new().timeout(HOUR))
                .expect("start")
        })
        .collect();
    settle();
    let after_kib = status_kib("VmRSS");
    let sample = Sample {
        before_kib,
        after_kib,
        peak_kib: status_kib("VmHWM"),
    };
    black_box(&calls);
    client.close().expect("close");
    drop(calls);
    sample
}

// ---- parent ----

fn tool_server() -> PathBuf {
    let exe = std::env::current_exe().expect("bench path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--release", "--example", "tool_server"])
        .status()
        .expect("cargo build");
    assert!(status.success(), "building tool_server failed");
    profile_dir.join("examples").join("tool_server")
}

fn run_child(mode: &str, n: usize, server: &Path) -> Sample {
    let output = Command::new(std::env::current_exe().expect("bench path"))
        .arg("--child")
        .arg(mode)
        .arg(n.to_string())
        .arg(server)
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "child {mode} failed: {}\n{stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let numbers: Vec<u64> = stdout
        .lines()
        .find_map(|line| line.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("no RESULT from child {mode}: {stdout}"))
        .split_whitespace()
        .map(|n| n.parse().expect("a number"))
        .collect();
    Sample {
        before_kib: numbers[0],
        after_kib: numbers[1],
        peak_kib: numbers[2],
    }
}

/// The run whose growth is the median of three.
fn median_child(mode: &str, n: usize, server: &Path) -> Sample {
    let mut runs: Vec<Sample> = (0..3).map(|_| run_child(mode, n, server)).collect();
    runs.sort_by_key(Sample::growth_kib);
    runs.swap_remove(1)
}

fn mb(kib: u64) -> String {
    format!("{:.1} MB", kib as f64 * 1024.0 / 1e6)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|arg| arg == "--child") {
        let mode = args[at + 1].as_str();
        let n: usize = args[at + 2].parse().expect("N");
        let sample = match mode {
            "channels" => child_channels(n),
            "stdio" => child_stdio(n, Path::new(&args[at + 3])),
            "memory" => child_memory(n, false),
            "memory-channels" => child_memory(n, true),
            "mcp" => child_mcp(n, Path::new(&args[at + 3])),
            other => panic!("unknown mode {other}"),
        };
        report(&sample);
        return;
    }

    let n = ((10_000.0 * scale()) as usize).max(1_000);
    // Issue #16: 10,000 in flight grow the resident set by 5 MB at most.
    let target_kib = (5_000_000.0 / 1024.0 * n as f64 / 10_000.0) as u64;
    let server = tool_server();
    let base = median_child("channels", n, &server);
    let stdio = median_child("stdio", n, &server);
    let memory = median_child("memory", n, &server);
    let channels = median_child("memory-channels", n, &server);
    let mcp = median_child("mcp", n, &server);
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());

    println!(
        "Memory: {n} calls in flight from one thread (median of 3 child processes, {cpus} CPUs)"
    );
    println!();
    println!(
        "| what | RSS growth | per entry | ratio to baseline | process peak (VmHWM) | target |"
    );
    println!("|---|---|---|---|---|---|");
    let row = |name: &str, sample: &Sample, target: &str| {
        println!(
            "| {name} | {} | {:.0} B | {:.1}× | {} | {target} |",
            mb(sample.growth_kib()),
            sample.growth_kib() as f64 * 1024.0 / n as f64,
            sample.growth_kib() as f64 / base.growth_kib().max(1) as f64,
            mb(sample.peak_kib),
        );
    };
    row(
        &format!("baseline: {n} bare `bounded(1)` channels in a HashMap"),
        &base,
        "—",
    );
    let target = format!("≤ {} growth", mb(target_kib));
    row(
        &format!("toolwire: {n} `hang` calls over stdio (tool_server)"),
        &stdio,
        &target,
    );
    row(
        &format!("toolwire: {n} calls over the memory transport"),
        &memory,
        &target,
    );
    row(
        "toolwire: the same, a channel per call (`receiver()` asked)",
        &channels,
        "—",
    );
    row(
        &format!("toolwire `McpClient`: {n} `hang` tool calls over stdio (`ToolCall`s kept)"),
        &mcp,
        &target,
    );
    println!();
    println!("Growth is VmRSS after the N entries exist minus just before; the peak is the whole process's.");
    let worst = stdio
        .growth_kib()
        .max(memory.growth_kib())
        .max(mcp.growth_kib());
    if worst > target_kib {
        println!("TARGET MISSED: {} > {}", mb(worst), mb(target_kib));
    }
}
