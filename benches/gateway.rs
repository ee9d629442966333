//! The gateway's per-call overhead beside a baseline in the same run: sequential `tools/call`
//! of `echo` from toolwire's `McpClient`, straight to the backend, and through the gateway.
//!
//! - stdio: the client starts `examples/tool_server.rs` itself (direct), or `toolwire serve`
//!   over a config holding that tool server (through the gateway: two stdio hops).
//! - HTTP: an in-process `toolwire::server` echo server on Streamable HTTP (direct), or a
//!   gateway in this process serving HTTP in front of it (two HTTP hops).
//!
//! Each way runs two loads, in rounds that alternate direct and through the gateway
//! (medians of the rounds; each ratio the median of the rounds' ratios):
//! - sequential: one call at a time; microseconds per call each way and the gateway's added
//!   latency (through less direct);
//! - 64 in flight: one thread keeps 64 calls started (`McpClient::start_tool`), waiting on the
//!   oldest before starting the next; calls per second each way and their ratio.
//!
//! With each, the CPU time per call spent outside the load client, and the gateway's added
//! CPU per call (through less direct). Over stdio that is the server processes' own, read
//! from `/proc/PID/stat` (the tool server's direct; the gateway's and its backend's through)
//! over the measured calls only; over HTTP it is this process's less the load thread's own
//! (the backend, the gateway and the client's transport threads, the latter the same both
//! ways).
//!
//! With `TOOLWIRE_BENCH_REDIS=redis://HOST:PORT/DB` (a Redis of its own: it writes budget
//! keys under `toolwire-bench:`) also the HTTP gateway's time per call with its callers'
//! budgets in memory and in that Redis (`GatewayConfig::state_store`): the shared store's
//! cost per call.
//!
//! ```text
//! cargo bench --bench gateway --features cli     # TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! ```

#[path = "support/mod.rs"]
mod support;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{children, cpu_time, process_cpu, scale, thread_cpu};
use toolwire::config::LoadOptions;
use toolwire::gateway::{Gateway, GatewayConfig, Policy};
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig};
use toolwire::transport::StdioTransport;
use toolwire::{
    CallOptions, HttpConfig, McpClient, McpConfig, ProtocolMode, ServerConfigs, StdioConfig,
};

/// Builds a release artifact (`--example NAME` or `--bin NAME`) and returns its path.
fn built(kind: &str, name: &str, features: &[&str]) -> PathBuf {
    let exe = std::env::current_exe().expect("bench path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command.args(["build", "--quiet", "--release", kind, name]);
    for feature in features {
        command.args(["--features", feature]);
    }
    assert!(command.status().expect("cargo build").success());
    match kind {
        "--example" => profile_dir.join("examples").join(name),
        _ => profile_dir.join(name),
    }
}

fn config() -> McpConfig {
    McpConfig::default().mode(ProtocolMode::Legacy)
}

const ROUNDS: usize = 5;
const WINDOW: usize = 64;

/// Where the CPU time outside the load client is read.
enum Meter {
    /// A server process and its children, from `/proc`.
    Process(u32),
    /// This process less the calling (load) thread.
    InProcess,
}

impl Meter {
    fn read(&self) -> Duration {
        match self {
            Meter::Process(pid) => {
                process_cpu(*pid)
                    + children(*pid)
                        .into_iter()
                        .map(process_cpu)
                        .sum::<Duration>()
            }
            Meter::InProcess => cpu_time(libc::RUSAGE_SELF).saturating_sub(thread_cpu()),
        }
    }
}

/// One measured load: wall time and outside CPU time per call, in microseconds.
#[derive(Clone, Copy)]
struct Run {
    us: f64,
    cpu_us: f64,
}

/// `calls` calls of `tool` after a warm-up, `window` at a time (started together, the
/// oldest waited for before the next starts).
fn load(client: &McpClient, tool: &str, calls: usize, window: usize, meter: &Meter) -> Run {
    let arguments = json!({"message": "m"});
    for _ in 0..calls / 10 + 1 {
        client.call_tool(tool, &arguments).expect("warm-up call");
    }
    let check = |call: toolwire::ToolCall| {
        let result = call.wait().expect("call");
        assert!(!result.is_error, "{:?}", result.raw);
    };
    let cpu_before = meter.read();
    let started = Instant::now();
    let mut pending = VecDeque::with_capacity(window);
    for _ in 0..calls {
        if pending.len() == window {
            check(pending.pop_front().expect("a call"));
        }
        let call = client.start_tool(tool, &arguments, CallOptions::default());
        pending.push_back(call.expect("start"));
    }
    pending.into_iter().for_each(check);
    let elapsed = started.elapsed();
    let cpu = meter.read().saturating_sub(cpu_before);
    Run {
        us: elapsed.as_secs_f64() * 1e6 / calls as f64,
        cpu_us: cpu.as_secs_f64() * 1e6 / calls as f64,
    }
}

/// A client straight to the backend and one through the gateway, each with its meter.
struct Pair {
    path: &'static str,
    direct: (McpClient, Meter),
    through: (McpClient, Meter),
    _keep: Option<Box<dyn std::any::Any>>,
}

fn gateway_over(entry: serde_json::Value) -> Gateway {
    gateway_with(entry, GatewayConfig::new().http(wide()))
}

/// The HTTP servers' config here: room for the load's 64 connections from one address. With
/// the defaults (16 connections an address) the client's 64 POSTs in flight (its
/// `max_concurrent_posts` default) open more connections than the server keeps for one peer:
/// the server closes that peer's idlest connection to make room, which under this load is one
/// between two requests, and the next POST written on it fails with a broken pipe.
fn wide() -> HttpServerConfig {
    HttpServerConfig::new()
        .max_connections(256)
        .max_connections_per_address(256)
}

fn gateway_with(entry: serde_json::Value, options: GatewayConfig) -> Gateway {
    let text = json!({"mcpServers": {"backend": entry}}).to_string();
    let configs = ServerConfigs::parse(&text, &LoadOptions::new()).expect("config");
    let policy =
        Policy::parse(r#"{"calls_per_caller": 1000000, "concurrency": 64}"#).expect("policy");
    let gateway = Gateway::start(&configs, policy, options).expect("gateway");
    assert!(gateway.report().failed.is_empty(), "{:?}", gateway.report());
    gateway
}

fn stdio_pair() -> Pair {
    let tool_server = built("--example", "tool_server", &[]);
    let toolwire = built("--bin", "toolwire", &["cli"]);
    let transport = StdioTransport::spawn(StdioConfig::new(&tool_server)).expect("spawn");
    let direct_pid = transport.pid();
    let direct = McpClient::connect(transport, config()).expect("direct");
    let folder =
        std::env::temp_dir().join(format!("toolwire-bench-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("scratch");
    let file = folder.join("claude_desktop_config.json");
    let text = json!({"mcpServers": {"backend": {"command": tool_server, "args": []}},
                      "toolwire": {"calls_per_caller": 1000000, "concurrency": 64}});
    std::fs::write(&file, text.to_string()).expect("config");
    let transport = StdioTransport::spawn(
        StdioConfig::new(&toolwire)
            .args(["--quiet", "--log-level", "off", "serve", "--config"])
            .arg(&file),
    )
    .expect("spawn the gateway");
    let through_pid = transport.pid();
    let through = McpClient::connect(transport, config()).expect("through the gateway");
    let _ = std::fs::remove_dir_all(&folder);
    Pair {
        path: "stdio",
        direct: (direct, Meter::Process(direct_pid)),
        through: (through, Meter::Process(through_pid)),
        _keep: None,
    }
}

fn echo_backend() -> Server {
    let backend = Server::new(ServerConfig::new("echo", "1.0")).expect("server");
    backend
        .add_tool(
            LocalTool::with_context(
                "echo",
                "Returns the message.",
                json!({"type": "object", "required": ["message"],
                       "properties": {"message": {"type": "string"}}}),
                |_, args| {
                    Ok(CallToolResult::from_text(
                        args["message"].as_str().unwrap_or_default(),
                    ))
                },
            )
            .inline(true),
        )
        .expect("tool");
    backend
}

fn http_pair() -> Pair {
    let backend = echo_backend();
    let backend_http = HttpServer::bind(&backend, wide()).expect("bind");
    let direct =
        McpClient::connect_http(HttpConfig::new(backend_http.url()), config()).expect("direct");
    let gateway = gateway_over(json!({"url": backend_http.url()}));
    let front = gateway
        .serve_http("127.0.0.1:0".parse().expect("addr"))
        .expect("serve");
    let through = McpClient::connect_http(HttpConfig::new(front.url()), config()).expect("through");
    Pair {
        path: "HTTP",
        direct: (direct, Meter::InProcess),
        through: (through, Meter::InProcess),
        _keep: Some(Box::new((front, gateway, backend_http, backend))),
    }
}

/// The HTTP gateway's time per call with `options`' store, in front of an in-process echo
/// server.
fn through_http(calls: usize, options: GatewayConfig) -> Duration {
    let backend = echo_backend();
    let backend_http = HttpServer::bind(&backend, wide()).expect("bind");
    let gateway = gateway_with(json!({"url": backend_http.url()}), options.http(wide()));
    let front = gateway
        .serve_http("127.0.0.1:0".parse().expect("addr"))
        .expect("serve");
    let through = McpClient::connect_http(HttpConfig::new(front.url()), config()).expect("through");
    let run = load(&through, "mcp__backend__echo", calls, 1, &Meter::InProcess);
    let time = Duration::from_secs_f64(run.us / 1e6);
    through.close().expect("close");
    drop(front);
    gateway.close();
    time
}

/// Without the `redis` feature there is no shared store to measure.
#[cfg(not(feature = "redis"))]
fn store_cost(_calls: usize) {}

/// With `TOOLWIRE_BENCH_REDIS`: the HTTP gateway per call with budgets in memory, then in
/// Redis (the median of three runs each, alternated).
#[cfg(feature = "redis")]
fn store_cost(calls: usize) {
    let Ok(url) = std::env::var("TOOLWIRE_BENCH_REDIS") else {
        return;
    };
    let redis = || {
        let config = toolwire::server::RedisConfig::from_url(&url)
            .expect("TOOLWIRE_BENCH_REDIS")
            .prefix("toolwire-bench:");
        let store = toolwire::server::RedisStore::open(config).expect("redis store");
        GatewayConfig::new().state_store(std::sync::Arc::new(store))
    };
    let mut memory = Vec::new();
    let mut shared = Vec::new();
    for _ in 0..3 {
        memory.push(through_http(calls, GatewayConfig::new()));
        shared.push(through_http(calls, redis()));
    }
    memory.sort();
    shared.sort();
    let (memory, shared) = (memory[1].as_secs_f64() * 1e6, shared[1].as_secs_f64() * 1e6);
    println!();
    println!("the shared store's cost: {calls} sequential tools/call through the HTTP gateway, median of 3");
    println!("| callers' budgets | µs/call | cost µs/call |");
    println!("|---|---|---|");
    println!("| in memory (one instance) | {memory:.1} | |");
    println!(
        "| in Redis ({url}) | {shared:.1} | {:.1} |",
        shared - memory
    );
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    samples[samples.len() / 2]
}

/// One row: the medians over the rounds of `runs` (direct, through).
fn row(path: &str, window: usize, runs: &[(Run, Run)]) {
    let pick = |f: &dyn Fn(&(Run, Run)) -> f64| median(runs.iter().map(f).collect());
    let cpu = format!(
        "{:.1} | {:.1} | {:.1}",
        pick(&|(d, _)| d.cpu_us),
        pick(&|(_, t)| t.cpu_us),
        pick(&|(d, t)| t.cpu_us - d.cpu_us)
    );
    if window == 1 {
        println!(
            "| {path} | sequential | {:.1} µs | {:.1} µs | {:.2}× | {:+.1} µs | {cpu} |",
            pick(&|(d, _)| d.us),
            pick(&|(_, t)| t.us),
            pick(&|(d, t)| t.us / d.us),
            pick(&|(d, t)| t.us - d.us),
        );
    } else {
        println!(
            "| {path} | {window} in flight | {:.0}/s | {:.0}/s | {:.2}× | | {cpu} |",
            pick(&|(d, _)| 1e6 / d.us),
            pick(&|(_, t)| 1e6 / t.us),
            pick(&|(d, t)| d.us / t.us),
        );
    }
}

fn main() {
    let sequential = ((5000.0 * scale()) as usize).max(100);
    let in_flight = ((20000.0 * scale()) as usize).max(WINDOW * 4);
    let pairs = [stdio_pair(), http_pair()];
    let loads = [(1, sequential), (WINDOW, in_flight)];
    // runs[pair][load]: one (direct, through) per round.
    let mut runs = vec![vec![Vec::new(); loads.len()]; pairs.len()];
    for _ in 0..ROUNDS {
        for (pair, pair_runs) in pairs.iter().zip(&mut runs) {
            for (&(window, calls), load_runs) in loads.iter().zip(pair_runs.iter_mut()) {
                let (client, meter) = &pair.direct;
                let direct = load(client, "echo", calls, window, meter);
                let (client, meter) = &pair.through;
                let through = load(client, "mcp__backend__echo", calls, window, meter);
                load_runs.push((direct, through));
            }
        }
    }
    println!(
        "gateway overhead: tools/call of echo, McpClient (handshake era) straight to the backend \
         and through the gateway; {sequential} sequential calls, {in_flight} with {WINDOW} in \
         flight; medians of {ROUNDS} interleaved rounds, {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "| transport | load | direct | through the gateway | ratio | added latency | \
         CPU µs/call direct | CPU µs/call through | added CPU µs/call |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (pair, pair_runs) in pairs.iter().zip(&runs) {
        for (&(window, _), load_runs) in loads.iter().zip(pair_runs) {
            row(pair.path, window, load_runs);
        }
    }
    for pair in &pairs {
        pair.direct.0.close().expect("close");
        pair.through.0.close().expect("close");
    }
    drop(pairs);
    store_cost(sequential);
}
