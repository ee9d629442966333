//! stdio round trips through toolwire beside a raw pipe loop, against the same server, in one
//! run. Prints a table of ratios; absolute times only for context.
//!
//! ```text
//! cargo bench                          # every benchmark, each printing its table
//! cargo bench --bench stdio            # TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! ```

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use toolwire::transport::StdioTransport;
use toolwire::{CallOptions, Client, StdioConfig};

const WINDOW: usize = 64;

fn scale() -> f64 {
    std::env::var("TOOLWIRE_BENCH_SCALE")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1.0)
}

fn tool_server() -> PathBuf {
    let exe = std::env::current_exe().expect("bench path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir");
    let path = profile_dir.join("examples").join("tool_server");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--release", "--example", "tool_server"])
        .status()
        .expect("cargo build");
    assert!(status.success());
    path
}

fn request(id: usize) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"echo\",\"params\":{{\"n\":{id}}}}}\n")
}

/// A single thread keeps `window` requests in the pipe, writing one each time it reads one;
/// a window of 1 is the plain write-a-line, read-a-line loop.
fn raw_loop(server: &PathBuf, count: usize, window: usize) -> Duration {
    let mut child = Command::new(server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let started = Instant::now();
    let mut next = 0;
    while next < window.min(count) {
        stdin.write_all(request(next).as_bytes()).unwrap();
        next += 1;
    }
    stdin.flush().unwrap();
    for _ in 0..count {
        line.clear();
        stdout.read_line(&mut line).unwrap();
        debug_assert!(line.contains("\"n\""));
        if next < count {
            stdin.write_all(request(next).as_bytes()).unwrap();
            stdin.flush().unwrap();
            next += 1;
        }
    }
    let elapsed = started.elapsed();
    drop(stdin);
    child.wait().unwrap();
    elapsed
}

fn client(server: &PathBuf) -> Client {
    Client::new(StdioTransport::spawn(StdioConfig::new(server)).expect("spawn")).expect("client")
}

fn toolwire_sequential(server: &PathBuf, count: usize) -> Duration {
    let client = client(server);
    let started = Instant::now();
    for id in 0..count {
        let result = client.call("echo", json!({"n": id})).unwrap();
        debug_assert_eq!(result["n"], json!(id));
    }
    let elapsed = started.elapsed();
    client.close().unwrap();
    elapsed
}

/// One thread keeps `WINDOW` call handles in flight.
fn toolwire_pipelined(server: &PathBuf, count: usize) -> Duration {
    let client = client(server);
    let mut window = VecDeque::with_capacity(WINDOW);
    let started = Instant::now();
    let mut next = 0;
    let mut done = 0;
    while done < count {
        while next < count && window.len() < WINDOW {
            window.push_back(
                client
                    .start("echo", json!({"n": next}), CallOptions::new())
                    .unwrap(),
            );
            next += 1;
        }
        let handle = window.pop_front().unwrap();
        handle.wait().unwrap();
        done += 1;
    }
    let elapsed = started.elapsed();
    client.close().unwrap();
    elapsed
}

/// The median of `runs` measurements.
fn median(runs: usize, mut measure: impl FnMut() -> Duration) -> Duration {
    let mut samples: Vec<Duration> = (0..runs).map(|_| measure()).collect();
    samples.sort();
    samples[runs / 2]
}

fn per_call(total: Duration, count: usize) -> f64 {
    total.as_secs_f64() * 1e6 / count as f64
}

fn main() {
    let server = tool_server();
    let sequential = ((20_000.0 * scale()) as usize).max(100);
    let pipelined = ((100_000.0 * scale()) as usize).max(1000);
    // Warm the page cache and the allocator.
    raw_loop(&server, 500, 1);
    toolwire_sequential(&server, 500);

    let raw_seq = median(3, || raw_loop(&server, sequential, 1));
    let tw_seq = median(3, || toolwire_sequential(&server, sequential));
    let raw_pipe = median(3, || raw_loop(&server, pipelined, WINDOW));
    let tw_pipe = median(3, || toolwire_pipelined(&server, pipelined));

    let seq_ratio = tw_seq.as_secs_f64() / raw_seq.as_secs_f64();
    let raw_rate = pipelined as f64 / raw_pipe.as_secs_f64();
    let tw_rate = pipelined as f64 / tw_pipe.as_secs_f64();
    println!(
        "stdio round trip against tool_server (median of 3 runs, {} CPUs)",
        available_cpus()
    );
    println!("| measure | raw pipe loop | toolwire | ratio | target |");
    println!("|---|---|---|---|---|");
    println!(
        "| sequential, {sequential} calls | {:.1} µs/call | {:.1} µs/call | {:.2}× the raw time | ≤ 2.6× |",
        per_call(raw_seq, sequential),
        per_call(tw_seq, sequential),
        seq_ratio
    );
    println!(
        "| {WINDOW} in flight, {pipelined} calls | {:.0} calls/s | {:.0} calls/s | {:.2}× the raw rate | ≥ 0.2× |",
        raw_rate,
        tw_rate,
        tw_rate / raw_rate
    );
}

fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
