//! What tracing costs a call (issue #26): `McpClient::call_tool` to `tool_server` over stdio,
//! sequentially, with no exporter configured (the instrumentation compiled in, no tracer:
//! one atomic load per place) beside the same calls with the standard `OTEL_*` variables set
//! for client and server, exporting every span (the client's CLIENT span, the server's
//! SERVER span) over OTLP/HTTP protobuf to a local sink that answers 200 at once. Each
//! measurement runs in a child process of this benchmark (the process's tracer is decided
//! once), in interleaved rounds; the median of each column is printed, with the cost of the
//! disabled check itself.
//!
//! ```text
//! cargo bench --bench telemetry          # TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! ```

#[path = "support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolwire::{McpClient, McpConfig, StdioConfig};

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
    assert!(status.success());
    profile_dir.join("examples").join("tool_server")
}

/// The child: `count` sequential calls; prints the µs per call.
fn child(server: &str, count: usize) {
    let client =
        McpClient::connect_stdio(StdioConfig::new(server), McpConfig::default()).expect("connect");
    for _ in 0..100 {
        client
            .call_tool("echo", json!({"message": "warm"}))
            .unwrap();
    }
    let started = Instant::now();
    for id in 0..count {
        let result = client
            .call_tool("echo", json!({"message": format!("m{id}")}))
            .unwrap();
        assert!(!result.is_error);
    }
    let per_call = started.elapsed().as_secs_f64() * 1e6 / count as f64;
    client.close().unwrap();
    // The spans still queued are sent before the process ends (not timed).
    toolwire::telemetry::flush(Duration::from_secs(5));
    println!("{per_call}");
}

/// A sink for OTLP/HTTP posts: answers 200 to each and counts the bodies' bytes.
fn sink() -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let bytes = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&bytes);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let counted = Arc::clone(&counted);
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    let mut header = String::new();
                    loop {
                        header.clear();
                        if reader.read_line(&mut header).unwrap_or(0) == 0 {
                            return;
                        }
                        if header == "\r\n" {
                            break;
                        }
                        if let Some(value) =
                            header.to_ascii_lowercase().strip_prefix("content-length:")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    counted.fetch_add(length as u64, Ordering::Relaxed);
                    if writer
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (url, bytes)
}

/// One child run: µs per call.
fn run(server: &std::path::Path, count: usize, endpoint: Option<&str>) -> f64 {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(["--child", server.to_str().unwrap(), &count.to_string()]);
    for (name, _) in std::env::vars() {
        if name.starts_with("OTEL_") {
            command.env_remove(name);
        }
    }
    if let Some(endpoint) = endpoint {
        command
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
            .env("OTEL_SERVICE_NAME", "bench")
            .env("OTEL_BSP_SCHEDULE_DELAY", "1000");
    }
    let output = command.output().expect("run the child");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("µs per call")
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        child(&args[2], args[3].parse().unwrap());
        return;
    }
    if args.iter().any(|arg| arg == "--list" || arg == "--test") {
        return;
    }
    let server = tool_server();
    let count = support::scaled(20_000, 2_000);
    let (endpoint, bytes) = sink();
    let rounds = 3;
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        off.push(run(&server, count, None));
        on.push(run(&server, count, Some(&endpoint)));
    }
    let (off, on) = (median(off), median(on));
    // The disabled path itself: what every instrumented place pays with no tracer.
    let checks = 100_000_000u64;
    let started = Instant::now();
    let mut seen = 0u64;
    for _ in 0..checks {
        seen += u64::from(std::hint::black_box(toolwire::telemetry::tracer()).is_some());
    }
    let check_ns = started.elapsed().as_secs_f64() * 1e9 / checks as f64;
    assert_eq!(seen, 0, "the bench's own process must have no tracer");
    let exported = bytes.load(Ordering::Relaxed);
    println!(
        "\n**Tracing's cost per call: call_tool to tool_server over stdio, sequential \
         (median of {rounds} interleaved rounds)**\n"
    );
    println!("| measure | no exporter | exporting to a local sink | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| {count} calls (µs/call) | {off:.1} | {on:.1} | {:.2}× the time (+{:.1} µs) |",
        on / off,
        on - off
    );
    println!(
        "| the disabled check (`telemetry::tracer()`, ns) | {check_ns:.2} | | {:.5}% of a call |",
        check_ns / (off * 1000.0) * 100.0
    );
    println!(
        "\nOTLP bytes the sink received in the exporting runs: {exported} ({:.0} per call, \
         client and server spans together).",
        exported as f64 / ((count + 100) * rounds) as f64
    );
}
