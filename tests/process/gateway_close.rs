//! Nothing is left behind: closing the gateway ends every backend's process, and the threads
//! that started the backends are gone. In the `process` binary, under its lock, so the
//! process's children and threads are this test's alone.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use crate::support::threads_named;
use serde_json::json;
use support::{call, eventually, front, gateway, tool_server_entry};

/// The pids of this process's children running the tool server.
fn tool_server_children() -> Vec<u32> {
    let me = std::process::id().to_string();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let Some((head, tail)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = tail.split_whitespace().collect();
        if head.ends_with("(tool_server") && fields.get(1) == Some(&me.as_str()) && fields[0] != "Z"
        {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn closing_the_gateway_ends_every_backend_and_leaves_no_starting_thread() {
    let _serial = crate::support::serial();
    let gateway = gateway(
        &[("one", tool_server_entry()), ("two", tool_server_entry())],
        "{}",
    );
    assert_eq!(
        tool_server_children().len(),
        2,
        "{:?}",
        tool_server_children()
    );
    let (client, connection) = front(&gateway);
    assert_eq!(
        call(&client, "mcp__two__echo", json!({"message": "x"})).text(),
        "x"
    );
    client.close().unwrap();
    connection.wait();
    assert!(
        eventually(support::LONG, || threads_named("toolwire-gatewa")
            .is_empty()),
        "a starting thread is left"
    );
    gateway.close();
    assert!(
        eventually(support::LONG, || tool_server_children().is_empty()),
        "backends still running: {:?}",
        tool_server_children()
    );
    drop(gateway);
}
