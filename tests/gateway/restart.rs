//! A backend that dies is started again on its next call, under the restart policy, while
//! the other backends keep answering.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use serde_json::json;
use support::{call, front, gateway, status_count, tool_server_entry};

#[test]
fn a_killed_backend_is_restarted_while_the_other_keeps_answering() {
    let gateway = gateway(
        &[
            ("fragile", tool_server_entry()),
            ("steady", tool_server_entry()),
        ],
        "{}",
    );
    let (client, connection) = front(&gateway);
    assert_eq!(
        call(&client, "mcp__fragile__echo", json!({"message": "before"})).text(),
        "before"
    );
    // `crash` makes the server exit at once, without an answer.
    let crashed = call(&client, "mcp__fragile__crash", json!({"code": 9}));
    assert!(crashed.is_error);
    assert!(
        crashed.text().starts_with("TOOL_ERROR: "),
        "{}",
        crashed.text()
    );
    assert!(
        !crashed.text().contains("crashing with code"),
        "the backend's stderr stays with the operator: {}",
        crashed.text()
    );
    assert_eq!(
        call(&client, "mcp__steady__echo", json!({"message": "steady"})).text(),
        "steady"
    );
    // The next call starts the dead one again.
    assert_eq!(
        call(&client, "mcp__fragile__echo", json!({"message": "after"})).text(),
        "after"
    );
    assert_eq!(
        call(&client, "mcp__steady__echo", json!({"message": "still"})).text(),
        "still"
    );
    let stats = gateway.stats();
    assert_eq!(status_count(&stats, "fragile", "TOOL_ERROR"), 1, "{stats}");
    assert_eq!(status_count(&stats, "fragile", "OK"), 2, "{stats}");
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn an_idempotent_call_that_met_a_death_is_sent_once_more_and_others_are_not() {
    // `crash` marked idempotent (which it is not) shows the retry: each attempt kills the
    // server, so the first is retried on the restarted server and the call still fails.
    let gateway = gateway(
        &[
            ("retried", tool_server_entry()),
            ("once", tool_server_entry()),
        ],
        r#"{"servers": {"retried": {"tools": {"crash": {"idempotent": true}}}}}"#,
    );
    let (client, connection) = front(&gateway);
    assert!(call(&client, "mcp__retried__crash", json!({}))
        .text()
        .starts_with("TOOL_ERROR: "));
    assert!(call(&client, "mcp__once__crash", json!({}))
        .text()
        .starts_with("TOOL_ERROR: "));
    let stats = gateway.stats();
    assert_eq!(
        stats["backends"]["retried"]["forwarded"],
        json!(2),
        "{stats}"
    );
    assert_eq!(stats["backends"]["once"]["forwarded"], json!(1), "{stats}");
    // Both are back for the next call.
    assert_eq!(
        call(&client, "mcp__retried__echo", json!({"message": "a"})).text(),
        "a"
    );
    assert_eq!(
        call(&client, "mcp__once__echo", json!({"message": "b"})).text(),
        "b"
    );
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

/// A stdio entry whose first process is the tool server with its catalog (resources,
/// prompts, and the tools `log` and `ask`) and whose later ones are the plain tool server.
fn shrinking_entry(test: &str) -> serde_json::Value {
    let folder =
        std::env::temp_dir().join(format!("toolwire-gateway-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    let marker = folder.join("started-once");
    let script = folder.join("backend.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ -e '{marker}' ]; then exec '{server}'; fi\n: > '{marker}'\n\
             exec '{server}' --catalog\n",
            marker = marker.display(),
            server = support::tool_server().display()
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&script, permissions).unwrap();
    json!({"command": script.display().to_string(), "args": []})
}

#[test]
fn a_restarted_backend_is_listed_again_and_its_old_lists_go() {
    let gateway = gateway(&[("shrinking", shrinking_entry("relist"))], "{}");
    let report = gateway.report();
    let started = &report.started[0];
    assert!(
        started.tools.contains(&"mcp__shrinking__log".to_owned()),
        "{started:?}"
    );
    assert_eq!(started.prompts, ["mcp__shrinking__greet"]);
    let (changed, changes) = std::sync::mpsc::channel();
    let changed = std::sync::Mutex::new(changed);
    let (client, connection) = support::front_with(
        &gateway,
        toolwire::McpConfig::default()
            .mode(toolwire::ProtocolMode::Legacy)
            .on_notification(move |notification| {
                let _ = changed.lock().unwrap().send(notification.method.clone());
            }),
    );
    assert!(call(&client, "mcp__shrinking__crash", json!({}))
        .text()
        .starts_with("TOOL_ERROR: "));
    // The next call starts it again, without its catalog.
    assert_eq!(
        call(&client, "mcp__shrinking__echo", json!({"message": "back"})).text(),
        "back"
    );
    // The prompts are listed after the tools: once they changed, both have.
    loop {
        match changes.recv_timeout(support::LONG) {
            Ok(method) if method == "notifications/prompts/list_changed" => break,
            Ok(_) => continue,
            Err(_) => panic!("the restarted backend was never listed again"),
        }
    }
    let tools: Vec<String> = client
        .refresh_tools()
        .unwrap()
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    assert!(
        tools.contains(&"mcp__shrinking__echo".to_owned()),
        "{tools:?}"
    );
    assert!(
        !tools.contains(&"mcp__shrinking__log".to_owned()),
        "{tools:?}"
    );
    assert!(call(&client, "mcp__shrinking__log", json!({}))
        .text()
        .starts_with("UNKNOWN_TOOL: "));
    assert!(client.list_prompts().unwrap().is_empty());
    assert!(client.list_resources().unwrap().is_empty());
    client.close().unwrap();
    connection.wait();
    gateway.close();
}
