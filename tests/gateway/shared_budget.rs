//! A caller's budget across gateway instances: two `toolwire serve --http` children in front
//! of a stdio backend, sharing one real `redis-server` (`--state redis://…`, which `.ci/run`
//! installs), count one budget for a caller whichever instance its calls reach; the last
//! call past it is BUDGET on the other instance. The same with three instances behind
//! HAProxy (the shipped docs/deploy/haproxy.cfg, round robin): the caller, which behind a
//! balancer without authorization is the balancer's address, has one budget across all three.
#![cfg(all(feature = "cli", feature = "redis"))]

use crate::support::gateway as support;
use crate::support::redis::Redis;
use crate::support::{cli, mcp};

use std::process::Stdio;

use serde_json::json;
use toolwire::{HttpConfig, McpClient, McpConfig};

/// Starts `toolwire serve` over HTTP with the shared store: the child and its MCP URL.
fn serve(folder: &std::path::Path, state: &str) -> (cli::KillOnDrop, String) {
    serve_with(folder, state, &[])
}

/// As [`serve`], with the arguments `more`.
fn serve_with(folder: &std::path::Path, state: &str, more: &[&str]) -> (cli::KillOnDrop, String) {
    let config = folder.join("servers.json");
    let servers = json!({"mcpServers": {"alpha": support::tool_server_entry()}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let policy = folder.join("policy.json");
    std::fs::write(&policy, r#"{"calls_per_caller": 3, "budget_window": "1h"}"#).unwrap();
    let mut command = cli::toolwire(&[
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
        "--state",
        state,
    ]);
    command.args(more);
    command.stdin(Stdio::null());
    let (child, lines) = cli::spawn_with_stderr_lines(command);
    let seen = cli::read_until(&lines, |line| line.contains("listening on "));
    let url = seen
        .iter()
        .find_map(|line| line.split("listening on ").nth(1))
        .unwrap()
        .trim()
        .to_owned();
    // Keep reading its stderr so that it never blocks on a full pipe.
    std::thread::spawn(move || while lines.recv().is_ok() {});
    (child, url)
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh), and redis-server"]
fn a_callers_budget_is_one_count_across_instances_sharing_a_store() {
    let _peers = mcp::peers("a_callers_budget_is_one_count_across_instances_sharing_a_store");
    let redis = Redis::start("gateway-budget");
    let (mut a, a_url) = serve(&cli::scratch("shared-budget-a"), &redis.url());
    let (mut b, b_url) = serve(&cli::scratch("shared-budget-b"), &redis.url());
    let connect = |url: &str| {
        McpClient::connect_http(HttpConfig::new(url.to_owned()), McpConfig::default()).unwrap()
    };
    let (to_a, to_b) = (connect(&a_url), connect(&b_url));
    // The same caller (this address) on both instances: 3 calls in all, then BUDGET.
    for (n, client) in [&to_a, &to_b, &to_a].into_iter().enumerate() {
        let result = client
            .call_tool("mcp__alpha__echo", json!({"message": format!("call {n}")}))
            .unwrap();
        assert_eq!(result.text(), format!("call {n}"));
    }
    let spent = to_b
        .call_tool("mcp__alpha__echo", json!({"message": "one too many"}))
        .unwrap();
    assert!(spent.is_error);
    assert!(
        spent
            .text()
            .starts_with("BUDGET: the attempt budget of 3 per 3600 s is spent"),
        "{}",
        spent.text()
    );
    let spent = to_a
        .call_tool("mcp__alpha__echo", json!({"message": "and on A"}))
        .unwrap();
    assert!(spent.text().starts_with("BUDGET: "), "{}", spent.text());
    to_a.close().unwrap();
    to_b.close().unwrap();
    for child in [&mut a, &mut b] {
        cli::sigint(child.id());
        assert_eq!(cli::wait_bounded(child, cli::LIMIT), 0);
    }
}

/// HAProxy ended when dropped.
struct Haproxy(std::process::Child);

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// HAProxy with the shipped configuration in front of `addrs`: it and its front's address.
fn haproxy(folder: &std::path::Path, addrs: &[String]) -> (Haproxy, String) {
    let program = crate::support::distribution_program("haproxy", "TOOLWIRE_HAPROXY");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let front = format!("127.0.0.1:{port}");
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/deploy/haproxy.cfg");
    let mut text = std::fs::read_to_string(shipped).unwrap();
    text = text.replace("127.0.0.1:8080", &front);
    for (at, addr) in addrs.iter().enumerate() {
        let shipped = format!("127.0.0.1:{}", 8081 + at);
        assert!(text.contains(&shipped));
        text = text.replace(&shipped, addr);
    }
    let config = folder.join("haproxy.cfg");
    std::fs::write(&config, text).unwrap();
    let child = std::process::Command::new(&program)
        .arg("-f")
        .arg(&config)
        .arg("-db")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start {}: {error}", program.display()));
    let balancer = Haproxy(child);
    // Ready once every instance passed its /readyz check through it.
    let ready = crate::support::eventually(crate::support::LONG, || {
        std::net::TcpStream::connect(&front).is_ok()
            && crate::support::server::exchange(
                &format!("http://{front}/"),
                &format!("GET /readyz HTTP/1.1\r\nHost: {front}\r\nConnection: close\r\n"),
                "",
            )
            .status
                == 200
    });
    assert!(ready, "HAProxy at {front} never became ready");
    (balancer, front)
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh), haproxy and redis-server"]
fn through_haproxy_a_callers_budget_holds_across_three_instances() {
    let _peers = mcp::peers("through_haproxy_a_callers_budget_holds_across_three_instances");
    let redis = Redis::start("gateway-budget-haproxy");
    let mut children = Vec::new();
    let mut addrs = Vec::new();
    for name in ["a", "b", "c"] {
        let folder = cli::scratch(&format!("shared-budget-haproxy-{name}"));
        let (child, url) = serve_with(&folder, &redis.url(), &["--instance-id", name]);
        addrs.push(crate::support::server::authority(&url).to_owned());
        children.push(child);
    }
    let folder = cli::scratch("shared-budget-haproxy");
    let (_haproxy, front) = haproxy(&folder, &addrs);
    let url = format!("http://{front}/mcp");
    // Three clients: round robin gives each its own instance (a session, or each request).
    let clients: Vec<McpClient> = (0..3)
        .map(|_| {
            McpClient::connect_http(HttpConfig::new(url.clone()), McpConfig::default()).unwrap()
        })
        .collect();
    for (n, client) in clients.iter().enumerate() {
        let result = client
            .call_tool("mcp__alpha__echo", json!({"message": format!("call {n}")}))
            .unwrap();
        assert_eq!(result.text(), format!("call {n}"));
    }
    // The balancer's address has spent its 3: every instance says so.
    for client in &clients {
        let spent = client
            .call_tool("mcp__alpha__echo", json!({"message": "one too many"}))
            .unwrap();
        assert!(spent.is_error, "{}", spent.text());
        assert!(spent.text().starts_with("BUDGET: "), "{}", spent.text());
    }
    for client in clients {
        client.close().unwrap();
    }
    for child in &mut children {
        cli::sigint(child.id());
        assert_eq!(cli::wait_bounded(child, cli::LIMIT), 0);
    }
}
