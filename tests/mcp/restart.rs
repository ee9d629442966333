//! The opt-in restart of a dead stdio server: with a policy the next call runs on a fresh
//! process after the lifecycle is redone; without one the client stays closed and says so;
//! past the budget it stays closed too.
use crate::support as common;

use std::time::Duration;

use common::{tool_server_path, SOON};
use serde_json::{json, Value};
use toolwire::mcp::McpDialect;
use toolwire::mcp::RestartPolicy;
use toolwire::{CallOptions, ClientConfig, Error, McpClient, McpConfig, ProtocolMode, StdioConfig};

fn config(restart: Option<RestartPolicy>) -> McpConfig {
    let mut config = McpConfig::default().mode(ProtocolMode::Legacy);
    config = config.rpc(
        ClientConfig::default()
            .dialect(McpDialect)
            .request_timeout(SOON),
    );
    match restart {
        Some(policy) => config.restart(policy),
        None => config,
    }
}

fn small_policy(max_restarts: u32) -> RestartPolicy {
    let mut policy = RestartPolicy::default();
    policy = policy.max_restarts(max_restarts);
    policy = policy.window(Duration::from_secs(60));
    policy = policy.initial_backoff(Duration::from_millis(10));
    policy = policy.max_backoff(Duration::from_millis(50));
    policy
}

fn connect(config: McpConfig) -> McpClient {
    McpClient::connect_stdio(StdioConfig::new(tool_server_path()), config)
        .expect("connect to tool_server")
}

fn pid(client: &McpClient) -> toolwire::Result<u64> {
    client
        .request("pid", Value::Null, CallOptions::new())
        .map(|pid| pid.as_u64().expect("a pid"))
}

/// Makes the server exit; the call in flight fails at once with `Closed`.
fn crash(client: &McpClient) {
    let error = client
        .call_tool_with("crash", json!({"code": 7}), CallOptions::new())
        .expect_err("the server died under the call");
    let closed = error
        .closed()
        .unwrap_or_else(|| panic!("expected Closed, got {error:?}"));
    assert!(
        closed.stderr_tail.contains("crashing with code 7"),
        "{closed:?}"
    );
    // The child was reaped before the close was reported.
    assert_eq!(closed.exit_status.as_deref(), Some("exit status: 7"));
}

#[test]
fn with_a_policy_the_next_call_runs_on_a_fresh_process() {
    let client = connect(config(Some(small_policy(5))));
    let first = pid(&client).expect("pid");
    // Learn the tools, so the restart must also forget them.
    assert_eq!(client.list_tools().expect("tools").len(), 9);
    crash(&client);

    let second = pid(&client).expect("the next call restarts the server");
    assert_ne!(first, second);
    assert!(!common::process_alive(u32::try_from(first).expect("pid")));
    let sum = client
        .call_tool_with("add", json!({"a": 1, "b": 2}), CallOptions::new())
        .expect("tools work on the fresh process");
    assert_eq!(sum.structured_content, Some(json!({"sum": 3})));
    let info = client.session_info().expect("the lifecycle was redone");
    assert_eq!(info.protocol_version, "2025-11-25");

    let rpc = client.rpc().expect("rpc");
    assert_eq!(rpc.stats().in_flight, 0);
    client.close().expect("close");
    // Closed by the caller: no restart after that.
    let error = pid(&client).expect_err("closed");
    assert!(error.is_closed(), "{error:?}");
    assert!(common::eventually(SOON, || !common::process_alive(
        u32::try_from(second).expect("pid")
    )));
}

#[test]
fn without_a_policy_the_client_stays_closed_and_says_so() {
    let client = connect(config(None));
    let first = pid(&client).expect("pid");
    crash(&client);
    for _ in 0..2 {
        let error = pid(&client).expect_err("no restart without a policy");
        match &error {
            Error::Closed(closed) => {
                assert!(closed.reason.contains("no restart policy"), "{error}");
                // The reason the server died is still there.
                assert_eq!(closed.exit_status.as_deref(), Some("exit status: 7"));
            }
            other => panic!("expected Closed, got {other:?}"),
        }
        assert!(error.to_string().contains("no restart policy"), "{error}");
    }
    assert!(!common::process_alive(u32::try_from(first).expect("pid")));
    client.close().expect("close");
}

#[test]
fn restarts_past_the_budget_leave_the_client_closed() {
    let client = connect(config(Some(small_policy(1))));
    let first = pid(&client).expect("pid");
    crash(&client);
    let second = pid(&client).expect("the one restart in the budget");
    assert_ne!(first, second);
    crash(&client);
    let error = pid(&client).expect_err("over the budget");
    match &error {
        Error::Closed(closed) => assert!(closed.reason.contains("not restarting"), "{error}"),
        other => panic!("expected Closed, got {other:?}"),
    }
    client.close().expect("close");
}

#[test]
fn the_restart_handler_is_told_of_each_restart_and_of_nothing_else() {
    let restarts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&restarts);
    let client = connect(config(Some(small_policy(3))).on_restart(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }));
    let before = pid(&client).unwrap();
    assert_eq!(restarts.load(std::sync::atomic::Ordering::SeqCst), 0);
    crash(&client);
    let after = pid(&client).unwrap();
    assert_ne!(before, after);
    assert_eq!(restarts.load(std::sync::atomic::Ordering::SeqCst), 1);
    pid(&client).unwrap();
    assert_eq!(restarts.load(std::sync::atomic::Ordering::SeqCst), 1);
    client.close().unwrap();
}
