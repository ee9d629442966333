//! A caller's budget across gateway instances: two `toolwire serve --http` children in front
//! of a stdio backend, sharing one real `redis-server` (`--state redis://…`, which `.ci/run`
//! installs), count one budget for a caller whichever instance its calls reach; the last
//! call past it is BUDGET on the other instance.
#![cfg(all(feature = "cli", feature = "redis"))]

use crate::support::gateway as support;
use crate::support::redis::Redis;
use crate::support::{cli, mcp};

use std::process::Stdio;

use serde_json::json;
use toolwire::{HttpConfig, McpClient, McpConfig};

/// Starts `toolwire serve` over HTTP with the shared store: the child and its MCP URL.
fn serve(folder: &std::path::Path, state: &str) -> (cli::KillOnDrop, String) {
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
