//! The demo: toolwire against the example tool server, told in plain words.
//!
//! ```text
//! cargo run --example demo
//! ```
//!
//! It starts `tool_server` (built next to this example) as a child process, calls it from
//! several threads at once, follows a long call's progress, lets a call time out while the
//! server keeps running, and closes everything cleanly. Every step asserts what it shows, so a
//! run that finishes is a run that worked.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use toolwire::mcp::McpDialect;
use toolwire::transport::StdioTransport;
use toolwire::{CallOptions, Client, ClientConfig, Error, StdioConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = tool_server_path()?;
    println!(
        "1. Starting the example tool server as a child process:\n   {}",
        server.display()
    );
    let transport = StdioTransport::spawn(StdioConfig::new(&server))?;
    let pid = transport.pid();
    // MCP's progress and cancellation conventions: the tool server speaks them.
    let client = Client::with_config(transport, ClientConfig::default().dialect(McpDialect))?;
    println!("   It runs as pid {pid}, in a process group of its own.\n");

    println!("2. Eight threads share one client and make 250 calls each, all at once.");
    let started = Instant::now();
    let workers: Vec<_> = (0..8)
        .map(|worker| {
            let client = client.clone();
            thread::spawn(move || -> Result<(), Error> {
                for index in 0..250i64 {
                    let sum = client.call("add", json!({"a": worker, "b": index}))?;
                    assert_eq!(
                        sum,
                        json!(worker + index),
                        "every caller gets its own answer"
                    );
                }
                Ok(())
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker thread")?;
    }
    println!(
        "   2,000 answers, each matched to its caller, in {:.0?}.\n",
        started.elapsed()
    );

    println!("3. A slow call reports progress; the callback runs on the caller's own thread.");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let result = client.call_with(
        "sleep",
        json!({"ms": 500, "progress": 5}),
        CallOptions::new().on_progress(move |progress| {
            println!(
                "   progress {}/{}: {}",
                progress.progress,
                progress.total.unwrap_or(0.0),
                progress.message.as_deref().unwrap_or("")
            );
            record.lock().unwrap().push(progress.progress);
        }),
    )?;
    assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    println!("   The call finished with {result}.\n");

    println!("4. A call to `hang` (which never answers) with a 300 ms deadline.");
    let started = Instant::now();
    let outcome = client.call_with(
        "hang",
        json!({}),
        CallOptions::new().timeout(Duration::from_millis(300)),
    );
    let waited = started.elapsed();
    match &outcome {
        Err(error @ Error::Timeout { .. }) => {
            println!("   The caller is free after {waited:.0?}: {error}.")
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(waited >= Duration::from_millis(300));
    let still = client.call("pid", json!({}))?;
    assert_eq!(still, json!(pid));
    println!("   The server was not killed: it still answers (pid {still}).");
    let cancellations = wait_for_cancellation(&client)?;
    println!("   It was told the request was given up: notifications/cancelled {cancellations}.\n");

    println!("5. A 1.2 s job with a 400 ms deadline that each progress report pushes back.");
    let result = client.call_with(
        "sleep",
        json!({"ms": 1200, "progress": 6}),
        CallOptions::new()
            .timeout(Duration::from_millis(400))
            .reset_on_progress(true)
            .max_total(Duration::from_secs(5)),
    )?;
    println!("   It finished: {result}. Without the resets it would have timed out.\n");

    let stats = client.stats();
    println!(
        "6. Closing. Counters: {} sent, {} received, {} timeout(s), {} in flight.",
        stats.sent, stats.received, stats.timeouts, stats.in_flight
    );
    let started = Instant::now();
    client.close()?;
    println!(
        "   Closed in {:.0?}: stdin closed, the server exited on its own, threads joined.",
        started.elapsed()
    );
    assert!(client.call("ping", json!({})).unwrap_err().is_closed());
    println!("   Calls after close fail at once with a clear error. Done.");
    Ok(())
}

/// Asks the server which cancellations it saw, until the one sent by the timer thread is there.
fn wait_for_cancellation(client: &Client) -> Result<serde_json::Value, Error> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let seen = client.call("cancellations", json!({}))?;
        if seen["cancelled"]
            .as_array()
            .is_some_and(|ids| !ids.is_empty())
            || Instant::now() > deadline
        {
            return Ok(seen);
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// `tool_server` is built next to this example; build it when it is missing.
fn tool_server_path() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().ok_or("no parent directory")?;
    let path = dir.join("tool_server");
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "--quiet", "--example", "tool_server"]);
        if dir
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|n| n == "release")
        {
            build.arg("--release");
        }
        if !build.status()?.success() {
            return Err("building tool_server failed".into());
        }
    }
    Ok(path)
}
