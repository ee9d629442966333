//! toolwire beside rmcp, each in its own process against the same fast echo server over stdio
//! (src/bin/echo_server.rs), phase by phase, rounds interleaved; prints a markdown table of
//! medians and ranges. Run it with `bench/compare/run.sh` (it builds, pins to one core, runs).
//!
//! ```text
//! toolwire-compare run [ROUNDS]              # every client and phase, ROUNDS rounds (3)
//! toolwire-compare child CLIENT PHASE        # one measurement, printed as `RESULT a b`
//! ```
//!
//! Phases (N from `COMPARE_SCALE`, 1 by default):
//! * `seq`: 5,000 sequential `tools/call`, µs per call;
//! * `par`: 64 calls in flight, 50,000 in all, calls/s (toolwire: one thread keeping 64
//!   `ToolCall`s; rmcp: 64 tasks);
//! * `rss`: resident set once connected, then with 10,000 never-answered calls in flight
//!   (their frames read by the server), MB;
//! * `instant`: 10,000 calls whose deadlines all pass at one instant D, waited in start order
//!   from one thread (rmcp: one task per call, as its timeout runs only while awaited), lag =
//!   when the timeout came back − D, p50 and max in ms;
//! * `spread`: the same with the deadlines spread over one second;
//! * `http-seq`, `http-par`: `seq` and `par` over Streamable HTTP (toolwire's HTTP client, on
//!   ureq, beside rmcp's streamable HTTP client, on reqwest), against the same server in its
//!   HTTP mode;
//! * `par64-threads` (its own table): 64 OS threads each making blocking sequential calls
//!   through one shared client, 50,000 in all, calls/s: toolwire's `McpClient` (cloned into
//!   each thread), the minimal thread-per-caller client (`minimal.rs`), rmcp with 64 tasks.
//!
//! `toolwire-compare servers [ROUNDS] [FILTER]` runs the servers side by side instead
//! (`servers.rs`: one load client, `load.rs`, against toolwire's, rmcp's, the TypeScript and
//! Python SDKs' servers and the limits).

#[allow(dead_code)] // what only the gateways' comparison calls (src/bin/gateways.rs includes it)
mod load;
mod minimal;
mod servers;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CLIENTS: [&str; 2] = ["toolwire", "rmcp"];
const PHASES: [&str; 7] = [
    "seq", "par", "rss", "instant", "spread", "http-seq", "http-par",
];
use load::{scaled, WINDOW};

fn server() -> PathBuf {
    std::env::current_exe()
        .expect("own path")
        .with_file_name("echo_server")
}

/// The echo server in its HTTP mode, and its URL; killed when dropped.
struct HttpServer(std::process::Child, String);

impl HttpServer {
    fn start() -> HttpServer {
        use std::io::BufRead;
        let mut child = Command::new(server())
            .arg("http")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn the HTTP server");
        let mut port = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut port)
            .expect("the port");
        let url = format!("http://127.0.0.1:{}/mcp", port.trim());
        HttpServer(child, url)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("VmRSS");
    kib * 1024.0 / 1e6
}

/// (p50, max) of lags, in ms.
fn lag_summary(mut lags: Vec<Duration>) -> (f64, f64) {
    lags.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(lags[lags.len() / 2]), ms(lags[lags.len() - 1]))
}

/// Deadlines for the timeout phases: all at `at`, or spread over a second after it.
fn deadlines(n: usize, spread: bool) -> Vec<Instant> {
    let at = Instant::now() + Duration::from_millis(500) + Duration::from_micros(20 * n as u64);
    (0..n)
        .map(|i| {
            if spread {
                at + Duration::from_secs(1) * i as u32 / n as u32
            } else {
                at
            }
        })
        .collect()
}

mod toolwire_client {
    use super::*;
    use serde_json::json;
    use toolwire::{
        CallOptions, ClientConfig, HttpConfig, McpClient, McpConfig, ProtocolMode, StdioConfig,
    };

    fn connect(http: Option<&HttpServer>) -> McpClient {
        let config = McpConfig::default()
            .mode(ProtocolMode::Legacy)
            .rpc(ClientConfig::default().max_in_flight(100_000));
        match http {
            Some(server) => McpClient::connect_http(HttpConfig::new(&server.1), config),
            None => McpClient::connect_stdio(StdioConfig::new(server()), config),
        }
        .expect("connect")
    }

    pub fn run(phase: &str) -> (f64, f64) {
        let http = phase.starts_with("http-").then(HttpServer::start);
        let phase = phase.trim_start_matches("http-");
        let client = connect(http.as_ref());
        let echo = json!({"text": "hello"});
        let out = match phase {
            "seq" => {
                let n = scaled(5_000);
                let started = Instant::now();
                for _ in 0..n {
                    client.call_tool("echo", &echo).expect("echo");
                }
                (started.elapsed().as_secs_f64() * 1e6 / n as f64, 0.0)
            }
            "par64-threads" => {
                let per_thread = scaled(50_000) / WINDOW;
                let start = Arc::new(std::sync::Barrier::new(WINDOW + 1));
                let threads: Vec<_> = (0..WINDOW)
                    .map(|_| {
                        let (client, start, echo) = (client.clone(), start.clone(), echo.clone());
                        std::thread::spawn(move || {
                            start.wait();
                            for _ in 0..per_thread {
                                client.call_tool("echo", &echo).expect("echo");
                            }
                        })
                    })
                    .collect();
                start.wait();
                let started = Instant::now();
                for thread in threads {
                    thread.join().expect("a caller");
                }
                let calls = (per_thread * WINDOW) as f64;
                (calls / started.elapsed().as_secs_f64(), 0.0)
            }
            "par" => {
                let n = scaled(50_000);
                let mut window = VecDeque::with_capacity(WINDOW);
                let started = Instant::now();
                let (mut sent, mut done) = (0, 0);
                while done < n {
                    while sent < n && window.len() < WINDOW {
                        window.push_back(
                            client
                                .start_tool("echo", &echo, CallOptions::new())
                                .expect("start"),
                        );
                        sent += 1;
                    }
                    window.pop_front().expect("a call").wait().expect("echo");
                    done += 1;
                }
                (n as f64 / started.elapsed().as_secs_f64(), 0.0)
            }
            "rss" => {
                client.call_tool("echo", &echo).expect("warm");
                let idle = rss_mb();
                let calls: Vec<_> = (0..10_000)
                    .map(|_| {
                        client
                            .start_tool(
                                "hang",
                                json!({}),
                                CallOptions::new().timeout(Duration::from_secs(3600)),
                            )
                            .expect("start")
                    })
                    .collect();
                // The server answers in order: this echo back means every frame was read.
                client.call_tool("echo", &echo).expect("settle");
                let busy = rss_mb();
                drop(calls);
                (idle, busy)
            }
            "instant" | "spread" => {
                let n = scaled(10_000);
                let due = deadlines(n, phase == "spread");
                let calls: Vec<_> = due
                    .iter()
                    .map(|at| {
                        let timeout = at.saturating_duration_since(Instant::now());
                        client
                            .start_tool("hang", json!({}), CallOptions::new().timeout(timeout))
                            .expect("start")
                    })
                    .collect();
                let lags = calls
                    .into_iter()
                    .map(|call| {
                        let at = call.deadline();
                        let outcome = call.wait();
                        assert!(
                            matches!(outcome, Err(ref e) if e.is_timeout()),
                            "{outcome:?}"
                        );
                        Instant::now().saturating_duration_since(at)
                    })
                    .collect();
                lag_summary(lags)
            }
            other => panic!("unknown phase {other}"),
        };
        client.close().expect("close");
        out
    }
}

mod rmcp_client {
    use super::*;
    use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt, PeerRequestOptions};
    use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};

    fn echo() -> CallToolRequestParams {
        let mut params = CallToolRequestParams::new("echo");
        let mut arguments = serde_json::Map::new();
        arguments.insert("text".into(), "hello".into());
        params.arguments = Some(arguments);
        params
    }

    fn hang_request() -> ClientRequest {
        ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new("hang")))
    }

    pub fn run(phase: &str) -> (f64, f64) {
        // One worker, as a client embedded in a synchronous program would run it.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let http = phase.starts_with("http-").then(HttpServer::start);
        let phase = phase.trim_start_matches("http-");
        runtime.block_on(async move {
            let client = match &http {
                Some(server) => {
                    let transport = StreamableHttpClientTransport::from_uri(server.1.as_str());
                    ().serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
                        .await
                }
                None => {
                    let transport = TokioChildProcess::new(tokio::process::Command::new(server()))
                        .expect("spawn");
                    ().serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
                        .await
                }
            }
            .expect("connect");
            let peer = client.peer().clone();
            let out = match phase {
                "seq" => {
                    let n = scaled(5_000);
                    let started = Instant::now();
                    for _ in 0..n {
                        peer.call_tool(echo()).await.expect("echo");
                    }
                    (started.elapsed().as_secs_f64() * 1e6 / n as f64, 0.0)
                }
                // rmcp's `par` is already 64 tasks each calling one after the other.
                "par" | "par64-threads" => {
                    let n = scaled(50_000) / WINDOW * WINDOW;
                    let started = Instant::now();
                    let tasks: Vec<_> = (0..WINDOW)
                        .map(|_| {
                            let peer = peer.clone();
                            tokio::spawn(async move {
                                for _ in 0..n / WINDOW {
                                    peer.call_tool(echo()).await.expect("echo");
                                }
                            })
                        })
                        .collect();
                    for task in tasks {
                        task.await.expect("task");
                    }
                    (n as f64 / started.elapsed().as_secs_f64(), 0.0)
                }
                "rss" => {
                    peer.call_tool(echo()).await.expect("warm");
                    let idle = rss_mb();
                    let queued = Arc::new(AtomicUsize::new(0));
                    let tasks: Vec<_> = (0..10_000)
                        .map(|_| {
                            let peer = peer.clone();
                            let queued = Arc::clone(&queued);
                            tokio::spawn(async move {
                                let handle = peer
                                    .send_request_with_option(
                                        hang_request(),
                                        PeerRequestOptions::with_timeout(Duration::from_secs(3600)),
                                    )
                                    .await
                                    .expect("send");
                                queued.fetch_add(1, Ordering::Release);
                                let _ = handle.await_response().await;
                            })
                        })
                        .collect();
                    while queued.load(Ordering::Acquire) < 10_000 {
                        tokio::task::yield_now().await;
                    }
                    // Queued behind the 10,000: its answer means the server read them all.
                    peer.call_tool(echo()).await.expect("settle");
                    let busy = rss_mb();
                    for task in tasks {
                        task.abort();
                    }
                    (idle, busy)
                }
                "instant" | "spread" => {
                    let n = scaled(10_000);
                    let tasks: Vec<_> = deadlines(n, phase == "spread")
                        .into_iter()
                        .map(|at| {
                            let peer = peer.clone();
                            tokio::spawn(async move {
                                let handle = peer
                                    .send_request_with_option(
                                        hang_request(),
                                        PeerRequestOptions::with_timeout(
                                            at.saturating_duration_since(Instant::now()),
                                        ),
                                    )
                                    .await
                                    .expect("send");
                                // rmcp's timeout runs from here (while awaited).
                                let timeout = at.saturating_duration_since(Instant::now());
                                let mut handle = handle;
                                handle.options.timeout = Some(timeout);
                                let outcome = handle.await_response().await;
                                assert!(outcome.is_err(), "a hang call was answered");
                                (Instant::now(), at)
                            })
                        })
                        .collect();
                    let mut lags = Vec::with_capacity(n);
                    for task in tasks {
                        let (done, at) = task.await.expect("task");
                        lags.push(done.saturating_duration_since(at));
                    }
                    lag_summary(lags)
                }
                other => panic!("unknown phase {other}"),
            };
            let _ = client.cancel().await;
            out
        })
    }
}

fn child(client: &str, phase: &str) {
    let (a, b) = match client {
        "toolwire" => toolwire_client::run(phase),
        "rmcp" => rmcp_client::run(phase),
        "minimal" => (minimal::run(WINDOW, scaled(50_000) / WINDOW), 0.0),
        other => panic!("unknown client {other}"),
    };
    println!("RESULT {a} {b}");
}

fn measure(client: &str, phase: &str) -> (f64, f64) {
    let output = Command::new(std::env::current_exe().expect("own path"))
        .args(["child", client, phase])
        .output()
        .expect("run a child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{client} {phase} failed: {}\n{stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let numbers: Vec<f64> = stdout
        .lines()
        .find_map(|line| line.strip_prefix("RESULT "))
        .expect("a RESULT line")
        .split_whitespace()
        .map(|n| n.parse().expect("a number"))
        .collect();
    (numbers[0], numbers[1])
}

/// "median (min–max)".
fn spread_of(mut values: Vec<f64>, digits: usize) -> String {
    values.sort_by(|a, b| a.partial_cmp(b).expect("a number"));
    let median = values[values.len() / 2];
    format!(
        "{median:.digits$} ({:.digits$}–{:.digits$})",
        values[0],
        values[values.len() - 1]
    )
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).expect("a number"));
    values[values.len() / 2]
}

fn run(rounds: usize) {
    // results[client][phase] = one (a, b) per round.
    let mut results = vec![vec![Vec::new(); PHASES.len()]; CLIENTS.len()];
    for round in 0..rounds {
        for (p, phase) in PHASES.iter().enumerate() {
            for (c, client) in CLIENTS.iter().enumerate() {
                let sample = measure(client, phase);
                eprintln!("round {round}: {client} {phase}: {sample:?}");
                results[c][p].push(sample);
            }
        }
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "toolwire beside rmcp 3.11.0, one echo server (stdio; HTTP in its last two columns) (median (min–max) of {rounds} rounds, affinity {cpus} CPU)"
    );
    println!();
    println!("| client | sequential µs/call | 64 in flight calls/s | RSS idle → 10,000 in flight (MB) | 10,000 at one instant: lag p50 / max ms | 10,000 spread over 1 s: lag p50 / max ms | HTTP sequential µs/call | HTTP 64 in flight calls/s |");
    println!("|---|---|---|---|---|---|---|---|");
    let first = |c: usize, p: usize| results[c][p].iter().map(|s: &(f64, f64)| s.0).collect();
    let second = |c: usize, p: usize| results[c][p].iter().map(|s: &(f64, f64)| s.1).collect();
    for (c, client) in CLIENTS.iter().enumerate() {
        println!(
            "| {client} | {} | {} | {} → {} | {} / {} | {} / {} | {} | {} |",
            spread_of(first(c, 0), 1),
            spread_of(first(c, 1), 0),
            spread_of(first(c, 2), 1),
            spread_of(second(c, 2), 1),
            spread_of(first(c, 3), 2),
            spread_of(second(c, 3), 2),
            spread_of(first(c, 4), 2),
            spread_of(second(c, 4), 2),
            spread_of(first(c, 5), 1),
            spread_of(first(c, 6), 0),
        );
    }
    let ratio = |p: usize, pick: &dyn Fn(usize, usize) -> Vec<f64>| {
        median(pick(1, p)) / median(pick(0, p)).max(1e-9)
    };
    let growth = |c: usize| median(second(c, 2)) - median(first(c, 2));
    println!();
    println!(
        "Ratios (rmcp ÷ toolwire, medians): sequential time {:.2}×; 64 in flight rate {:.2}× (toolwire {:.2}× rmcp's rate); RSS growth {:.1} MB vs {:.1} MB; lag p50 at one instant {:.1}×; HTTP sequential time {:.2}×, HTTP 64 in flight toolwire {:.2}× rmcp's rate.",
        ratio(0, &first),
        ratio(1, &first),
        1.0 / ratio(1, &first),
        growth(1),
        growth(0),
        ratio(3, &first),
        ratio(5, &first),
        1.0 / ratio(6, &first),
    );
}

/// The `par64-threads` phase, its clients interleaved in each round, as its own table.
fn run_threads(rounds: usize) {
    const THREADED: [&str; 3] = ["toolwire", "minimal", "rmcp"];
    let mut rates = vec![Vec::new(); THREADED.len()];
    for round in 0..rounds {
        for (c, client) in THREADED.iter().enumerate() {
            let (rate, _) = measure(client, "par64-threads");
            eprintln!("round {round}: {client} par64-threads: {rate:.0}");
            rates[c].push(rate);
        }
    }
    println!();
    println!("64 threads each making blocking calls through one client, one echo server over stdio (calls/s, median (min–max) of {rounds} rounds; ratios the median of each round's)");
    println!();
    println!("| client | calls/s | ÷ minimal thread-per-caller | ÷ rmcp (64 tasks) |");
    println!("|---|---|---|---|");
    let names = [
        "toolwire `McpClient`, 64 threads",
        "minimal thread-per-caller, 64 threads",
        "rmcp 3.11.0, 64 tasks",
    ];
    for (c, name) in names.iter().enumerate() {
        let ratio =
            |other: usize| median((0..rounds).map(|r| rates[c][r] / rates[other][r]).collect());
        println!(
            "| {name} | {} | {:.2}× | {:.2}× |",
            spread_of(rates[c].clone(), 0),
            ratio(1),
            ratio(2)
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("servers") => servers::run(
            args.get(2).and_then(|n| n.parse().ok()).unwrap_or(5),
            args.get(3).map_or("", String::as_str),
        ),
        Some("child") => child(&args[2], &args[3]),
        Some("run") | None => {
            let rounds = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(3);
            run(rounds);
            run_threads(rounds);
        }
        Some(other) => panic!("unknown command {other}"),
    }
}
