//! The minimal thread-per-caller client of the `par64-threads` phase (ported from
//! `benches/stdio.rs`'s `minimal_threads`, with std's channels): one pipe to the echo server,
//! callers writing their frames under a mutex, one reader thread routing each response by its
//! hand-parsed id to the caller's own channel. The least a client that many threads share
//! must do.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

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

fn frame(id: u64) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"hello\"}}}}}}\n"
    )
}

/// `callers` threads each make `per_caller` blocking calls: calls per second.
pub fn run(callers: usize, per_caller: usize) -> f64 {
    let mut child = Command::new(super::server())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    type Pending = Mutex<HashMap<u64, SyncSender<String>>>;
    let pending: Arc<Pending> = Arc::default();
    let reader = {
        let pending = Arc::clone(&pending);
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if let Some(id) = response_id(&line) {
                    if let Some(tx) = pending.lock().expect("pending").remove(&id) {
                        let _ = tx.send(line);
                    }
                }
            }
        })
    };
    let writer = Arc::new(Mutex::new(stdin));
    let call = move |pending: &Pending, writer: &Mutex<std::process::ChildStdin>, id: u64| {
        let (tx, rx) = sync_channel(1);
        pending.lock().expect("pending").insert(id, tx);
        let frame = frame(id);
        {
            let mut stdin = writer.lock().expect("writer");
            stdin.write_all(frame.as_bytes()).expect("write");
            stdin.flush().expect("flush");
        }
        let line = rx.recv_timeout(Duration::from_secs(30)).expect("response");
        assert!(line.contains("\"result\""), "{line}");
    };
    // The handshake a client makes, untimed.
    {
        let (tx, rx) = sync_channel(1);
        pending.lock().expect("pending").insert(0, tx);
        let mut stdin = writer.lock().expect("writer");
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"minimal\",\"version\":\"0\"}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .expect("write");
        stdin.flush().expect("flush");
        drop(stdin);
        rx.recv_timeout(Duration::from_secs(30))
            .expect("initialize");
    }
    let start = Arc::new(Barrier::new(callers + 1));
    let threads: Vec<_> = (0..callers)
        .map(|caller| {
            let (pending, writer, start) = (pending.clone(), writer.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for n in 0..per_caller {
                    call(&pending, &writer, (1 + caller * per_caller + n) as u64);
                }
            })
        })
        .collect();
    start.wait();
    let started = Instant::now();
    for thread in threads {
        thread.join().expect("caller");
    }
    let rate = (callers * per_caller) as f64 / started.elapsed().as_secs_f64();
    // Closing stdin ends the server, then its stdout, then the reader.
    drop(writer);
    child.wait().expect("wait");
    reader.join().expect("reader");
    rate
}
