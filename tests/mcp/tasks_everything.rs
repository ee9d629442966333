//! Tasks against the official `@modelcontextprotocol/server-everything` 2026.8.31 over stdio:
//! its `simulate-research-query` requires task augmentation (2025-11-25 tasks utility, four
//! stages of 1 s, polled every 1 s). A call runs to completion as a task; a cancelled handle
//! and a call that times out both leave the task `cancelled` on the server, which `tasks/get`
//! and `tasks/list` then show.
//!
//! These tests run when `TOOLWIRE_PEERS=1` (with the variables of peers.env in the
//! environment) or `TOOLWIRE_PEERS_DIR=DIR` is set, after `bash tests/peers/install.sh DIR`;
//! then missing peers fail them. Without either variable each test prints a note and passes.
use crate::support::mcp as support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{peers, Peers};
use toolwire::mcp::{TaskStatus, TaskSupport};
use toolwire::{CallOptions, McpClient, McpConfig, ProtocolMode, StdioConfig};

const RESEARCH: &str = "simulate-research-query";

fn connect(peers: &Peers) -> McpClient {
    let stdio = StdioConfig::new(peers.path("TOOLWIRE_NODE"))
        .arg(peers.path("TOOLWIRE_EVERYTHING_JS"))
        .arg("stdio");
    let config = McpConfig::default()
        .mode(ProtocolMode::Legacy)
        .request_timeout(Duration::from_secs(30));
    McpClient::connect_stdio(stdio, config).expect("connect to server-everything")
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_task_requiring_tool_runs_to_completion() {
    let peers = peers("the_task_requiring_tool_runs_to_completion");
    let client = connect(&peers);
    let tools = client.list_tools().unwrap();
    let research = tools.iter().find(|tool| tool.name == RESEARCH).unwrap();
    assert_eq!(research.task_support(), TaskSupport::Required);
    let result = client
        .call_tool(RESEARCH, json!({"topic": "rust"}))
        .unwrap();
    assert!(!result.is_error, "{:?}", result.raw);
    assert!(result.text().contains("rust"), "{}", result.text());
    let task_id = result.task_id.clone().expect("the call ran as a task");
    let task = client.get_task(&task_id).unwrap();
    assert_eq!(task.status, TaskStatus::Completed);
    client.close().unwrap();
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn a_cancelled_task_call_is_cancelled_on_the_server() {
    let peers = peers("a_cancelled_task_call_is_cancelled_on_the_server");
    let client = connect(&peers);
    let mut call = client
        .start_tool(RESEARCH, json!({"topic": "cancel me"}), CallOptions::new())
        .unwrap();
    let guard = Instant::now() + Duration::from_secs(20);
    while call.task().is_none() {
        assert!(Instant::now() < guard, "no task was created");
        assert!(call.wait_timeout(Duration::from_millis(50)).is_none());
    }
    let task_id = call.task().unwrap().task_id.clone();
    assert!(call.cancel());
    assert!(call.wait().is_err());
    let task = client.get_task(&task_id).unwrap();
    assert_eq!(task.status, TaskStatus::Cancelled, "{:?}", task.raw);
    let listed = client.list_tasks().unwrap();
    assert!(listed
        .iter()
        .any(|task| task.task_id == task_id && task.status == TaskStatus::Cancelled));
    client.close().unwrap();
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn a_task_call_that_times_out_cancels_the_task_on_the_server() {
    let peers = peers("a_task_call_that_times_out_cancels_the_task_on_the_server");
    let client = connect(&peers);
    client.list_tools().unwrap();
    let timeout = Duration::from_millis(1500);
    let started = Instant::now();
    let error = client
        .call_tool_with(
            RESEARCH,
            json!({"topic": "too slow"}),
            CallOptions::new().timeout(timeout),
        )
        .unwrap_err();
    assert!(error.is_timeout(), "{error:?}");
    assert!(started.elapsed() >= timeout);
    // The server was told: the task it keeps is cancelled.
    let listed = client.list_tasks().unwrap();
    assert!(
        listed
            .iter()
            .any(|task| task.status == TaskStatus::Cancelled),
        "{listed:?}"
    );
    client.close().unwrap();
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_harness_treats_a_task_like_any_call() {
    let peers = peers("the_harness_treats_a_task_like_any_call");
    use toolwire::harness::ToolTimeout;
    use toolwire::{Harness, HarnessConfig, McpImport, Status, ToolOptions, ToolRegistry};
    let client = connect(&peers);
    let mut registry = ToolRegistry::new();
    let fast = McpImport::new("slow").allow([RESEARCH]).tool_options(
        RESEARCH,
        ToolOptions::new().timeout(ToolTimeout::Custom(Duration::from_secs(1))),
    );
    registry.import_mcp(&client, &fast).unwrap();
    let whole = McpImport::new("whole").allow([RESEARCH]).tool_options(
        RESEARCH,
        ToolOptions::new().timeout(ToolTimeout::Custom(Duration::from_secs(30))),
    );
    registry.import_mcp(&client, &whole).unwrap();
    let harness = Harness::new(registry, HarnessConfig::default()).unwrap();
    // Within its tier's bound: OK with the report.
    let outcome = harness.call(
        &format!("mcp__whole__{RESEARCH}"),
        json!({"topic": "tasks"}),
    );
    assert_eq!(outcome.status, Status::Ok, "{outcome:?}");
    assert!(outcome.model_text().contains("tasks"));
    // Past it: TIMEOUT (the work may go on; the task was cancelled on the server).
    let started = Instant::now();
    let outcome = harness.call(&format!("mcp__slow__{RESEARCH}"), json!({"topic": "late"}));
    assert_eq!(outcome.status, Status::Timeout, "{outcome:?}");
    assert!(started.elapsed() >= Duration::from_secs(1));
    harness.close();
    client.close().unwrap();
}
