//! A backend at its concurrency limit answers BUSY at once, queueing nothing, while another
//! backend keeps answering; the slot is free again once the call holding it ends (here, by
//! the front client's cancellation).
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use serde_json::json;
use support::{call, eventually, front, gateway, status_count, tool_server_entry};
use toolwire::CallOptions;

#[test]
fn a_backend_at_its_limit_is_busy_at_once_and_free_again_after() {
    let gateway = gateway(
        &[
            ("slow", tool_server_entry()),
            ("other", tool_server_entry()),
        ],
        r#"{"servers": {"slow": {"concurrency": 1}}}"#,
    );
    let (client, connection) = front(&gateway);
    // `hang` never answers: it holds the one slot until it is cancelled.
    let hanging = client
        .start_tool("mcp__slow__hang", json!({}), CallOptions::new())
        .unwrap();
    assert!(
        eventually(support::LONG, || gateway.stats()["backends"]["slow"]
            ["in_flight"]
            == json!(1)),
        "the hang call never took its slot: {}",
        gateway.stats()
    );
    let busy = call(&client, "mcp__slow__echo", json!({"message": "x"}));
    assert!(busy.is_error);
    assert!(busy.text().starts_with("BUSY: "), "{}", busy.text());
    assert!(busy.text().contains("1 calls in flight"), "{}", busy.text());
    // The limit is per backend: the other one answers.
    assert_eq!(
        call(&client, "mcp__other__echo", json!({"message": "y"})).text(),
        "y"
    );
    let stats = gateway.stats();
    assert_eq!(status_count(&stats, "slow", "BUSY"), 1, "{stats}");
    assert_eq!(
        stats["backends"]["slow"]["forwarded"],
        json!(1),
        "only the hang was forwarded: {stats}"
    );

    assert!(hanging.cancel());
    assert!(
        eventually(support::LONG, || gateway.stats()["backends"]["slow"]
            ["in_flight"]
            == json!(0)),
        "the cancelled call kept its slot: {}",
        gateway.stats()
    );
    assert_eq!(
        call(&client, "mcp__slow__echo", json!({"message": "z"})).text(),
        "z"
    );
    assert_eq!(gateway.stats()["backends"]["slow"]["cancelled"], json!(1));
    client.close().unwrap();
    connection.wait();
    gateway.close();
}
