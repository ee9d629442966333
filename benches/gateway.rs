//! The gateway's per-call overhead beside a baseline in the same run: sequential `tools/call`
//! of `echo` from toolwire's `McpClient`, straight to the backend, and through the gateway.
//!
//! - stdio: the client starts `examples/tool_server.rs` itself (direct), or `toolwire serve`
//!   over a config holding that tool server (through the gateway: two stdio hops).
//! - HTTP: an in-process `toolwire::server` echo server on Streamable HTTP (direct), or a
//!   gateway in this process serving HTTP in front of it (two HTTP hops).
//!
//! Prints a table: microseconds per call each way, the ratio, and the overhead per call.
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

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use support::scale;
use toolwire::config::LoadOptions;
use toolwire::gateway::{Gateway, GatewayConfig, Policy};
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig};
use toolwire::{HttpConfig, McpClient, McpConfig, ProtocolMode, ServerConfigs, StdioConfig};

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

/// Mean time per sequential call of `tool` after a warm-up.
fn per_call(client: &McpClient, tool: &str, calls: usize) -> Duration {
    let arguments = json!({"message": "m"});
    for _ in 0..calls / 10 + 1 {
        client.call_tool(tool, &arguments).expect("warm-up call");
    }
    let started = Instant::now();
    for _ in 0..calls {
        let result = client.call_tool(tool, &arguments).expect("call");
        assert!(!result.is_error, "{:?}", result.raw);
    }
    started.elapsed() / calls as u32
}

fn gateway_over(entry: serde_json::Value) -> Gateway {
    gateway_with(entry, GatewayConfig::new())
}

fn gateway_with(entry: serde_json::Value, options: GatewayConfig) -> Gateway {
    let text = json!({"mcpServers": {"backend": entry}}).to_string();
    let configs = ServerConfigs::parse(&text, &LoadOptions::new()).expect("config");
    let policy = Policy::parse(r#"{"calls_per_caller": 1000000}"#).expect("policy");
    let gateway = Gateway::start(&configs, policy, options).expect("gateway");
    assert!(gateway.report().failed.is_empty(), "{:?}", gateway.report());
    gateway
}

struct Row {
    path: &'static str,
    direct: Duration,
    through: Duration,
}

fn stdio(calls: usize) -> Row {
    let tool_server = built("--example", "tool_server", &[]);
    let toolwire = built("--bin", "toolwire", &["cli"]);
    let direct =
        McpClient::connect_stdio(StdioConfig::new(&tool_server), config()).expect("direct");
    let direct_time = per_call(&direct, "echo", calls);
    direct.close().expect("close");
    let folder =
        std::env::temp_dir().join(format!("toolwire-bench-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("scratch");
    let file = folder.join("claude_desktop_config.json");
    let text = json!({"mcpServers": {"backend": {"command": tool_server, "args": []}},
                      "toolwire": {"calls_per_caller": 1000000}});
    std::fs::write(&file, text.to_string()).expect("config");
    let through = McpClient::connect_stdio(
        StdioConfig::new(&toolwire)
            .args(["--quiet", "--log-level", "off", "serve", "--config"])
            .arg(&file),
        config(),
    )
    .expect("through the gateway");
    let through_time = per_call(&through, "mcp__backend__echo", calls);
    through.close().expect("close");
    let _ = std::fs::remove_dir_all(&folder);
    Row {
        path: "stdio",
        direct: direct_time,
        through: through_time,
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

fn http(calls: usize) -> Row {
    let backend = echo_backend();
    let backend_http = HttpServer::bind(&backend, HttpServerConfig::new()).expect("bind");
    let direct =
        McpClient::connect_http(HttpConfig::new(backend_http.url()), config()).expect("direct");
    let direct_time = per_call(&direct, "echo", calls);
    direct.close().expect("close");
    let gateway = gateway_over(json!({"url": backend_http.url()}));
    let front = gateway
        .serve_http("127.0.0.1:0".parse().expect("addr"))
        .expect("serve");
    let through = McpClient::connect_http(HttpConfig::new(front.url()), config()).expect("through");
    let through_time = per_call(&through, "mcp__backend__echo", calls);
    through.close().expect("close");
    drop(front);
    gateway.close();
    Row {
        path: "HTTP",
        direct: direct_time,
        through: through_time,
    }
}

/// The HTTP gateway's time per call with `options`' store, in front of an in-process echo
/// server.
fn through_http(calls: usize, options: GatewayConfig) -> Duration {
    let backend = echo_backend();
    let backend_http = HttpServer::bind(&backend, HttpServerConfig::new()).expect("bind");
    let gateway = gateway_with(json!({"url": backend_http.url()}), options);
    let front = gateway
        .serve_http("127.0.0.1:0".parse().expect("addr"))
        .expect("serve");
    let through = McpClient::connect_http(HttpConfig::new(front.url()), config()).expect("through");
    let time = per_call(&through, "mcp__backend__echo", calls);
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

fn main() {
    let calls = ((2000.0 * scale()) as usize).max(50);
    let rows = [stdio(calls), http(calls)];
    println!("gateway overhead: {calls} sequential tools/call of echo each way, McpClient (handshake era)");
    println!(
        "| transport | direct µs/call | through the gateway µs/call | ratio | overhead µs/call |"
    );
    println!("|---|---|---|---|---|");
    for row in rows {
        let direct = row.direct.as_secs_f64() * 1e6;
        let through = row.through.as_secs_f64() * 1e6;
        println!(
            "| {} | {direct:.1} | {through:.1} | {:.2}x | {:.1} |",
            row.path,
            through / direct,
            through - direct
        );
    }
    store_cost(calls);
}
