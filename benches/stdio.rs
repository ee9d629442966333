//! stdio round trips through toolwire beside a raw pipe loop and the minimal thread-per-caller
//! shape, against the same server, in one run. Prints a table of ratios; absolute times only
//! for context.
//!
//! Columns:
//! * raw pipe loop: one thread, a blocking pipe, no ids looked at (the floor);
//! * minimal threads: a reader thread routing each response by its hand-parsed id to the
//!   caller's own channel, callers writing under a mutex and waiting in `recv_timeout` (the
//!   least a multi-caller client must do); 64 in flight is 64 such callers;
//! * minimal threads + writer hop: the same with every frame handed to a writer thread over a
//!   channel, as toolwire's stdin was written before callers wrote their own frames: the
//!   cost of that hop, in this run;
//! * toolwire: `Client::call` (sequential), one thread keeping 64 handles in flight;
//! * toolwire, 64 blocking callers: 64 threads sharing one `Client`, each making its calls
//!   one at a time with `Client::call` (the shape of a blocking program), beside the minimal
//!   shape's 64 callers in the same round;
//! * toolwire, channel per call: the same, each handle asked for its `receiver()` before the
//!   wait, so every call gets a channel as every call did before completion moved into the
//!   pending table's slots.
//!
//! ```text
//! cargo bench                          # every benchmark, each printing its table
//! cargo bench --bench stdio            # TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! ```

#[path = "support/mod.rs"]
mod support;

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Sender};

use serde_json::json;
use support::scale;
use toolwire::transport::StdioTransport;
use toolwire::{CallOptions, Client, StdioConfig};

const WINDOW: usize = 64;

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

/// The id of a response line, parsed by hand.
fn response_id(line: &str) -> Option<u64> {
    let at = line.find("\"id\":")? + 5;
    let digits: String = line[at..]
        .chars()
        .skip_while(|c| *c == ' ')
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// How the minimal shape's callers get their frames into the pipe.
enum Writer {
    /// Each caller writes under the mutex.
    Locked(Mutex<ChildStdin>),
    /// Each caller hands the frame to the writer thread.
    Thread(Sender<Vec<u8>>),
}

/// The minimal thread-per-caller shape (see the module docs): `callers` threads each make
/// `count / callers` calls, one at a time.
fn minimal_threads(server: &PathBuf, count: usize, callers: usize, hop: bool) -> Duration {
    let mut child = Command::new(server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let pending: Arc<Mutex<HashMap<u64, Sender<String>>>> = Arc::default();
    let reader = {
        let pending = Arc::clone(&pending);
        thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if let Some(id) = response_id(&line) {
                    if let Some(tx) = pending.lock().unwrap().remove(&id) {
                        let _ = tx.send(line);
                    }
                }
            }
        })
    };
    let (writer, writer_thread) = if hop {
        let (tx, rx) = unbounded::<Vec<u8>>();
        let thread = thread::spawn(move || {
            for frame in rx {
                stdin.write_all(&frame).unwrap();
                stdin.flush().unwrap();
            }
        });
        (Writer::Thread(tx), Some(thread))
    } else {
        (Writer::Locked(Mutex::new(stdin)), None)
    };
    let writer = Arc::new(writer);
    let per_caller = count / callers;
    let started = Instant::now();
    let threads: Vec<_> = (0..callers)
        .map(|caller| {
            let pending = Arc::clone(&pending);
            let writer = Arc::clone(&writer);
            thread::spawn(move || {
                for n in 0..per_caller {
                    let id = (caller * per_caller + n) as u64;
                    let (tx, rx) = bounded(1);
                    pending.lock().unwrap().insert(id, tx);
                    let frame = request(id as usize).into_bytes();
                    match &*writer {
                        Writer::Locked(stdin) => {
                            let mut stdin = stdin.lock().unwrap();
                            stdin.write_all(&frame).unwrap();
                            stdin.flush().unwrap();
                        }
                        Writer::Thread(tx) => tx.send(frame).unwrap(),
                    }
                    let line = rx.recv_timeout(Duration::from_secs(30)).expect("response");
                    debug_assert!(line.contains("\"n\""));
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let elapsed = started.elapsed();
    // Closing stdin ends the server, then its stdout, then the reader.
    drop(writer);
    if let Some(thread) = writer_thread {
        thread.join().unwrap();
    }
    child.wait().unwrap();
    reader.join().unwrap();
    elapsed
}

fn client(server: &PathBuf) -> Client {
    Client::new(StdioTransport::spawn(StdioConfig::new(server)).expect("spawn")).expect("client")
}

/// `channel`: each handle is asked for its receiver first (a channel per call).
fn toolwire_sequential(server: &PathBuf, count: usize, channel: bool) -> Duration {
    let client = client(server);
    let started = Instant::now();
    for id in 0..count {
        let result = if channel {
            let handle = client
                .start("echo", json!({"n": id}), CallOptions::new())
                .unwrap();
            let _ = handle.receiver();
            handle.wait().unwrap()
        } else {
            client.call("echo", json!({"n": id})).unwrap()
        };
        debug_assert_eq!(result["n"], json!(id));
    }
    let elapsed = started.elapsed();
    client.close().unwrap();
    elapsed
}

/// `callers` threads share one client, each making `count / callers` blocking calls.
fn toolwire_callers(server: &PathBuf, count: usize, callers: usize) -> Duration {
    let client = client(server);
    let per_caller = count / callers;
    let started = Instant::now();
    let threads: Vec<_> = (0..callers)
        .map(|caller| {
            let client = client.clone();
            thread::spawn(move || {
                for n in 0..per_caller {
                    let id = caller * per_caller + n;
                    let result = client.call("echo", json!({ "n": id })).unwrap();
                    debug_assert_eq!(result["n"], json!(id));
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let elapsed = started.elapsed();
    client.close().unwrap();
    elapsed
}

/// One thread keeps `WINDOW` call handles in flight.
fn toolwire_pipelined(server: &PathBuf, count: usize, channel: bool) -> Duration {
    let client = client(server);
    let mut window = VecDeque::with_capacity(WINDOW);
    let started = Instant::now();
    let mut next = 0;
    let mut done = 0;
    while done < count {
        while next < count && window.len() < WINDOW {
            let handle = client
                .start("echo", json!({"n": next}), CallOptions::new())
                .unwrap();
            if channel {
                let _ = handle.receiver();
            }
            window.push_back(handle);
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

fn per_call(total: Duration, count: usize) -> f64 {
    total.as_secs_f64() * 1e6 / count as f64
}

fn main() {
    let server = tool_server();
    let sequential = ((20_000.0 * scale()) as usize).max(100);
    let pipelined = ((100_000.0 * scale()) as usize / WINDOW).max(16) * WINDOW;
    // Warm the page cache and the allocator.
    raw_loop(&server, 500, 1);
    toolwire_sequential(&server, 500, false);

    // Rounds interleave the shapes, so load from other work on the machine falls on all alike.
    let rounds = 3;
    let mut seq: [Vec<Duration>; 5] = Default::default();
    let mut pipe: [Vec<Duration>; 5] = Default::default();
    let mut callers: Vec<Duration> = Vec::new();
    for _ in 0..rounds {
        seq[0].push(raw_loop(&server, sequential, 1));
        seq[1].push(minimal_threads(&server, sequential, 1, false));
        seq[2].push(minimal_threads(&server, sequential, 1, true));
        seq[3].push(toolwire_sequential(&server, sequential, false));
        seq[4].push(toolwire_sequential(&server, sequential, true));
        pipe[0].push(raw_loop(&server, pipelined, WINDOW));
        pipe[1].push(minimal_threads(&server, pipelined, WINDOW, false));
        pipe[2].push(minimal_threads(&server, pipelined, WINDOW, true));
        pipe[3].push(toolwire_pipelined(&server, pipelined, false));
        pipe[4].push(toolwire_pipelined(&server, pipelined, true));
        callers.push(toolwire_callers(&server, pipelined, WINDOW));
    }
    let callers = median(callers);
    let seq = seq.map(median);
    let pipe = pipe.map(median);
    let us = |total: Duration| per_call(total, sequential);
    let rate = |total: Duration| pipelined as f64 / total.as_secs_f64();
    println!(
        "stdio round trip against tool_server (median of {rounds} interleaved rounds, {} CPUs)",
        available_cpus()
    );
    println!("| measure | raw pipe loop | minimal threads | minimal threads + writer hop | toolwire | toolwire, channel per call | toolwire ÷ minimal | toolwire ÷ raw | target |");
    println!("|---|---|---|---|---|---|---|---|---|");
    println!(
        "| sequential, {sequential} calls (µs/call) | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2}× the time | {:.2}× the time | ≤ 1.2× minimal |",
        us(seq[0]),
        us(seq[1]),
        us(seq[2]),
        us(seq[3]),
        us(seq[4]),
        seq[3].as_secs_f64() / seq[1].as_secs_f64(),
        seq[3].as_secs_f64() / seq[0].as_secs_f64(),
    );
    println!(
        "| {WINDOW} in flight, {pipelined} calls (calls/s) | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2}× the rate | {:.2}× the rate | ≥ 0.7× raw |",
        rate(pipe[0]),
        rate(pipe[1]),
        rate(pipe[2]),
        rate(pipe[3]),
        rate(pipe[4]),
        rate(pipe[3]) / rate(pipe[1]),
        rate(pipe[3]) / rate(pipe[0]),
    );
    println!(
        "| {WINDOW} blocking callers, {pipelined} calls (calls/s) | — | {:.0} | {:.0} | {:.0} | — | {:.2}× the rate | {:.2}× the rate | ≥ 1.0× minimal |",
        rate(pipe[1]),
        rate(pipe[2]),
        rate(callers),
        rate(callers) / rate(pipe[1]),
        rate(callers) / rate(pipe[0]),
    );
    println!();
    println!("The minimal threads' column of both \"{WINDOW}\" rows is the same measurement: its {WINDOW} callers each block on one call at a time.");
}

/// The median of a round's samples.
fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
