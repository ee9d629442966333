//! HTTP round trips through toolwire's Streamable HTTP transport beside a raw ureq POST loop,
//! against the same in-process server on 127.0.0.1, in one run. Prints a table of ratios.
//!
//! ```text
//! cargo bench --bench http             # TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! ```

#[path = "support/mod.rs"]
mod support;

#[path = "../tests/support/http_fake.rs"]
mod http_fake;

use std::time::{Duration, Instant};

use http_fake::FakeServer;
use serde_json::{json, Value};
use support::scale;
use toolwire::transport::HttpTransport;
use toolwire::{Client, HttpConfig};

/// Answers every request with its own params as the result, as JSON (keep-alive).
fn echo_server() -> FakeServer {
    FakeServer::start(|request, reply| {
        let body = request.json();
        match body.get("id") {
            Some(id) => reply.json(
                200,
                &json!({"jsonrpc": "2.0", "id": id, "result": body.get("params").cloned().unwrap_or(Value::Null)}),
                &[],
            ),
            None => reply.accepted(),
        }
    })
}

fn raw_ureq(url: &str, count: usize) -> Duration {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let started = Instant::now();
    for id in 0..count {
        let body = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"echo\",\"params\":{{\"n\":{id}}}}}"
        );
        let mut response = agent
            .post(url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .send(body.as_bytes())
            .expect("POST");
        let text = response.body_mut().read_to_string().expect("body");
        debug_assert!(text.contains("\"n\""));
    }
    started.elapsed()
}

fn toolwire(url: &str, count: usize) -> Duration {
    let client =
        Client::new(HttpTransport::new(HttpConfig::new(url)).expect("transport")).expect("client");
    let started = Instant::now();
    for id in 0..count {
        let result = client.call("echo", json!({"n": id})).expect("call");
        debug_assert_eq!(result["n"], json!(id));
    }
    let elapsed = started.elapsed();
    client.close().expect("close");
    elapsed
}

fn median(runs: usize, mut measure: impl FnMut() -> Duration) -> Duration {
    let mut samples: Vec<Duration> = (0..runs).map(|_| measure()).collect();
    samples.sort();
    samples[runs / 2]
}

fn main() {
    let server = echo_server();
    let url = server.url.clone();
    let count = ((5_000.0 * scale()) as usize).max(100);
    raw_ureq(&url, 200);
    toolwire(&url, 200);
    let raw = median(3, || raw_ureq(&url, count));
    let ours = median(3, || toolwire(&url, count));
    let per_call = |total: Duration| total.as_secs_f64() * 1e6 / count as f64;
    println!("HTTP round trip against an in-process server on 127.0.0.1 (median of 3 runs)");
    println!("| measure | raw ureq POST loop | toolwire | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| sequential, {count} calls | {:.1} µs/call | {:.1} µs/call | {:.2}× the raw time |",
        per_call(raw),
        per_call(ours),
        ours.as_secs_f64() / raw.as_secs_f64()
    );
}
