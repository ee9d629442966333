//! Front names two backends give (`"namespace": "{tool}"`): the first backend in the config's
//! order serves the name whenever the backends join. Here the first joins after the second
//! already serves the name, and takes it; the clash is in the stats and the report.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use serde_json::{json, Value};
use support::LONG;
use toolwire::gateway::{Gateway, GatewayConfig, Policy};
use toolwire::CallOptions;
use toolwire::ProtocolMode;

fn forwarded(gateway: &Gateway, backend: &str) -> u64 {
    gateway.stats()["backends"][backend]["forwarded"]
        .as_u64()
        .unwrap_or(0)
}

#[test]
fn a_name_two_backends_give_is_served_by_the_first_in_the_config_whenever_it_joins() {
    let dir = std::env::temp_dir().join(format!("toolwire-gwnames-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let gate = dir.join("gate");
    let made = std::process::Command::new("mkfifo")
        .arg(&gate)
        .status()
        .unwrap();
    assert!(made.success());
    // `first` starts only once the test opens the gate: `second` joins before it.
    let script = format!(
        "head -c 1 '{}' >/dev/null; exec '{}'",
        gate.display(),
        support::tool_server().display()
    );
    let configs = support::configs(&[
        ("first", json!({"command": "sh", "args": ["-c", script]})),
        ("second", support::tool_server_entry()),
    ]);
    let policy = Policy::parse(r#"{"namespace": "{tool}"}"#).unwrap();
    let gateway =
        Gateway::launch(&configs, policy, GatewayConfig::new().start_timeout(LONG)).unwrap();
    assert!(
        support::eventually(LONG, || gateway
            .report()
            .started
            .iter()
            .any(|started| started.name == "second")),
        "{:?}",
        gateway.report()
    );
    assert_eq!(gateway.report().starting, ["first"]);
    let (client, connection) = support::front_with(
        &gateway,
        toolwire::McpConfig::default().mode(ProtocolMode::Legacy),
    );
    // Sent as it is: a client that lists first would wait for `first`.
    let call = || -> Value {
        client
            .request(
                "tools/call",
                json!({"name": "echo", "arguments": {"message": "hi"}}),
                CallOptions::new(),
            )
            .unwrap()
    };
    assert_eq!(call()["content"][0]["text"], json!("hi"));
    assert_eq!(
        (forwarded(&gateway, "first"), forwarded(&gateway, "second")),
        (0, 1)
    );

    std::fs::write(&gate, "go").unwrap();
    assert!(gateway.wait_started());
    assert_eq!(call()["content"][0]["text"], json!("hi"));
    assert_eq!(
        (forwarded(&gateway, "first"), forwarded(&gateway, "second")),
        (1, 1)
    );
    let clashes = gateway.stats()["clashes"].clone();
    assert!(
        clashes.as_array().unwrap().contains(
            &json!({"kind": "tool", "name": "echo", "server": "second", "served_by": "first"})
        ),
        "{clashes}"
    );
    let report = gateway.report();
    let second = report
        .started
        .iter()
        .find(|started| started.name == "second")
        .unwrap();
    assert!(!second.tools.contains(&"echo".to_owned()), "{second:?}");
    assert!(
        second
            .clashes
            .iter()
            .any(|clash| clash.key == "echo" && clash.served_by == "first"),
        "{second:?}"
    );
    let first = report
        .started
        .iter()
        .find(|started| started.name == "first")
        .unwrap();
    assert!(first.tools.contains(&"echo".to_owned()), "{first:?}");
    // The list holds each name once.
    let tools = client.list_tools().unwrap();
    assert_eq!(tools.iter().filter(|tool| tool.name == "echo").count(), 1);
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn the_config_files_order_decides_a_clash_not_the_names_sorted() {
    // `zulu` comes first in the file and last in name order: it serves the name.
    let configs = support::configs(&[
        ("zulu", support::tool_server_entry()),
        ("alpha", support::tool_server_entry()),
    ]);
    assert_eq!(
        configs.names_in_file_order().collect::<Vec<_>>(),
        ["zulu", "alpha"]
    );
    assert_eq!(configs.names().collect::<Vec<_>>(), ["alpha", "zulu"]);
    let policy = Policy::parse(r#"{"namespace": "{tool}"}"#).unwrap();
    let gateway =
        Gateway::launch(&configs, policy, GatewayConfig::new().start_timeout(LONG)).unwrap();
    assert!(gateway.wait_started());
    let (client, connection) = support::front_with(
        &gateway,
        toolwire::McpConfig::default().mode(ProtocolMode::Legacy),
    );
    let echoed = client.call_tool("echo", json!({"message": "hi"})).unwrap();
    assert_eq!(echoed.text(), "hi");
    assert_eq!(
        (forwarded(&gateway, "zulu"), forwarded(&gateway, "alpha")),
        (1, 0)
    );
    let clashes = gateway.stats()["clashes"].clone();
    let echo = clashes
        .as_array()
        .unwrap()
        .iter()
        .find(|clash| clash["name"] == json!("echo"))
        .unwrap_or_else(|| panic!("{clashes}"));
    assert_eq!(echo["server"], json!("alpha"), "{clashes}");
    assert_eq!(echo["served_by"], json!("zulu"), "{clashes}");
    assert!(
        clashes
            .as_array()
            .unwrap()
            .iter()
            .all(|clash| clash["server"] == "alpha" && clash["served_by"] == "zulu"),
        "{clashes}"
    );
    assert_eq!(gateway.stats()["backends"]["alpha"]["tools"], json!(0));
    client.close().unwrap();
    drop(connection);
    gateway.close();
}
