//! Start-up: every backend starts in parallel with a deadline each; one that cannot start (a
//! missing command, a server that never answers, a bad config entry) is reported with its
//! error and left out, and the others serve.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use std::time::Duration;

use serde_json::json;
use support::{call, front, gateway_with, tool_server_entry};
use toolwire::gateway::GatewayConfig;

#[test]
fn a_backend_that_fails_to_start_is_reported_and_the_others_serve() {
    let gateway = gateway_with(
        &[
            ("good", tool_server_entry()),
            (
                "missing",
                json!({"command": "/nonexistent/toolwire-no-such-server"}),
            ),
            // Starts, but never says a word: its deadline passes.
            ("silent", json!({"command": "sleep", "args": ["600"]})),
            ("broken", json!({"command": 5})),
        ],
        "{}",
        GatewayConfig::new().start_timeout(Duration::from_secs(2)),
    );
    let report = gateway.report();
    let started: Vec<&str> = report
        .started
        .iter()
        .map(|backend| backend.name.as_str())
        .collect();
    assert_eq!(started, ["good"], "{report:?}");
    let failed = |name: &str| {
        report
            .failed
            .iter()
            .find(|failed| failed.name == name)
            .unwrap_or_else(|| panic!("{name} is not reported: {report:?}"))
            .error
            .clone()
    };
    assert!(
        failed("missing").contains("/nonexistent/toolwire-no-such-server"),
        "{}",
        failed("missing")
    );
    assert!(!failed("silent").is_empty());
    assert!(failed("broken").contains("command"), "{}", failed("broken"));
    assert_eq!(report.failed.len(), 3, "{report:?}");

    let (client, connection) = front(&gateway);
    let names: Vec<String> = client
        .list_tools()
        .unwrap()
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    assert!(
        names.iter().all(|name| name.starts_with("mcp__good__")),
        "{names:?}"
    );
    assert_eq!(
        call(&client, "mcp__good__echo", json!({"message": "served"})).text(),
        "served"
    );
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn a_gateway_with_no_backend_that_starts_still_serves_its_stats() {
    let gateway = gateway_with(
        &[(
            "missing",
            json!({"command": "/nonexistent/toolwire-no-such-server"}),
        )],
        "{}",
        GatewayConfig::new(),
    );
    assert!(gateway.report().started.is_empty());
    let (client, connection) = front(&gateway);
    assert!(client.list_tools().unwrap().is_empty());
    let stats = client
        .request("toolwire/stats", json!({}), toolwire::CallOptions::new())
        .unwrap();
    assert_eq!(stats["calls"], json!(0), "{stats}");
    client.close().unwrap();
    connection.wait();
}

/// A fresh folder for one test's files.
fn folder(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("toolwire-gwstart-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A config entry for the bundled tool server that starts only once the test writes a line
/// into the FIFO it returns (its latch: opening the FIFO to write blocks until the entry's
/// shell has it open to read, and the line lets it go on).
fn latched_entry(dir: &std::path::Path) -> (serde_json::Value, std::path::PathBuf) {
    let fifo = dir.join("latch");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let script = format!(
        "read line < '{}' && exec '{}'",
        fifo.display(),
        support::tool_server().display()
    );
    (json!({"command": "sh", "args": ["-c", script]}), fifo)
}

/// Lets a [`latched_entry`] start.
fn release(fifo: &std::path::Path) {
    use std::io::Write;
    let mut latch = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
    latch.write_all(b"go\n").unwrap();
}

/// A front client on the handshake protocol whose notifications' methods go to a channel.
fn watched(
    gateway: &toolwire::gateway::Gateway,
) -> (
    toolwire::McpClient,
    toolwire::server::ServerConnection,
    std::sync::mpsc::Receiver<String>,
) {
    let (sender, receiver) = std::sync::mpsc::channel();
    let sender = std::sync::Mutex::new(sender);
    let config = toolwire::McpConfig::default()
        .mode(toolwire::ProtocolMode::Legacy)
        .on_notification(move |notification| {
            let _ = sender.lock().unwrap().send(notification.method.clone());
        });
    let (client, connection) = support::front_with(gateway, config);
    (client, connection, receiver)
}

fn tool_names(client: &toolwire::McpClient) -> Vec<String> {
    client
        .refresh_tools()
        .unwrap()
        .iter()
        .map(|tool| tool.name.clone())
        .collect()
}

#[test]
fn initialize_is_answered_while_a_backend_hangs_and_a_slow_one_joins_when_ready() {
    let dir = folder("hung");
    let (slow, latch) = latched_entry(&dir);
    let timeout = Duration::from_secs(8);
    let gateway = toolwire::gateway::Gateway::launch(
        &support::configs(&[
            ("good", tool_server_entry()),
            // Starts, but never answers `initialize`.
            ("hung", json!({"command": "sleep", "args": ["600"]})),
            ("slow", slow),
        ]),
        toolwire::gateway::Policy::new(),
        GatewayConfig::new().start_timeout(timeout),
    )
    .unwrap();
    let asked = std::time::Instant::now();
    let (client, connection, notifications) = watched(&gateway);
    let took = asked.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "initialize took {took:?} while a backend hangs"
    );
    let report = gateway.report();
    for name in ["hung", "slow"] {
        assert!(report.starting.iter().any(|n| n == name), "{report:?}");
    }
    std::thread::scope(|scope| {
        // A call of a tool not served yet waits for the backends still starting.
        let early = scope.spawn(|| call(&client, "mcp__slow__echo", json!({"message": "early"})));
        release(&latch);
        // The slow backend joins: the front client is told (the good one's joining may have
        // told it first).
        let told = notifications
            .recv_timeout(support::LONG)
            .expect("the front client was told the tools changed");
        assert_eq!(told, "notifications/tools/list_changed");
        assert_eq!(early.join().unwrap().text(), "early");
    });
    assert!(
        support::eventually(support::LONG, || gateway
            .report()
            .started
            .iter()
            .any(|backend| backend.name == "slow")),
        "{:?}",
        gateway.report()
    );
    // A listing waits for the backends still starting (the hung one, until its deadline):
    // a host that lists once sees every backend that started in time.
    let names = tool_names(&client);
    for wanted in ["mcp__good__echo", "mcp__slow__echo"] {
        assert!(names.iter().any(|name| name == wanted), "{names:?}");
    }
    assert!(gateway.report().starting.is_empty());
    assert_eq!(
        call(&client, "mcp__slow__echo", json!({"message": "late"})).text(),
        "late"
    );
    assert!(gateway.wait_started());
    let report = gateway.report();
    let started: Vec<&str> = report.started.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(started, ["good", "slow"], "{report:?}");
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert_eq!(report.failed[0].name, "hung");
    assert!(report.failed[0].error.contains("within 8s"), "{report:?}");
    assert!(report.starting.is_empty(), "{report:?}");
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn a_backend_that_joins_late_is_judged_by_the_policys_names() {
    let dir = folder("late-typo");
    let (slow, latch) = latched_entry(&dir);
    let gateway = toolwire::gateway::Gateway::launch(
        &support::configs(&[("slow", slow), ("good", tool_server_entry())]),
        toolwire::gateway::Policy::parse(r#"{"servers": {"slow": {"deny": ["ecoh"]}}}"#).unwrap(),
        GatewayConfig::new().start_timeout(support::LONG),
    )
    .unwrap();
    let (client, connection) = front(&gateway);
    release(&latch);
    assert!(gateway.wait_started());
    let report = gateway.report();
    let started: Vec<&str> = report.started.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(started, ["good"], "{report:?}");
    let error = &report.failed[0].error;
    assert_eq!(report.failed[0].name, "slow");
    assert!(
        error.contains(r#"deny "ecoh" (did you mean "echo"?)"#),
        "{error}"
    );
    let names = tool_names(&client);
    assert!(
        names.iter().any(|name| name.starts_with("mcp__good__")),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|name| name.starts_with("mcp__slow__")),
        "{names:?}"
    );
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

/// Code written against the old name keeps building and starting a gateway for one release.
#[test]
#[allow(deprecated)]
fn the_deprecated_gateway_options_name_still_configures_a_gateway() {
    let options: toolwire::gateway::GatewayOptions =
        toolwire::gateway::GatewayOptions::new().name("old-name");
    let gateway = gateway_with(&[], "{}", options);
    let (client, connection) = front(&gateway);
    assert_eq!(client.session_info().unwrap().server.name, "old-name");
    client.close().unwrap();
    connection.wait();
}
