//! A handler past its bound is abandoned: the client is answered at once (a tool error for a
//! tool, -32001 for anything else), the handler's cancel flag is set, its late answer is
//! dropped, and it keeps its worker until it returns (cancellation is not termination).

use crate::support::server as support;

use std::time::Duration;

use crossbeam_channel::bounded;
use serde_json::{json, Value};
use toolwire::harness::{LocalTool, ToolOptions, ToolTimeout};
use toolwire::server::{CallToolResult, Method, Server, ServerConfig, REQUEST_TIMEOUT};
use toolwire::Error;

use support::{memory_client, LONG};

#[test]
fn a_handler_past_its_bound_is_abandoned_but_keeps_its_worker() {
    let (release_tx, release) = bounded::<()>(0);
    let (flag_tx, flag) = bounded::<bool>(4);
    let server = Server::new(ServerConfig::new("bounds", "1").workers(1)).unwrap();
    let (tool_release, tool_flag) = (release.clone(), flag_tx.clone());
    server
        .add_tool(
            LocalTool::with_context(
                "stuck",
                "Ignores its flag.",
                json!({"type": "object"}),
                move |context, _| {
                    let _ = tool_release.recv_timeout(LONG);
                    let _ = tool_flag.send(context.is_cancelled());
                    Ok(CallToolResult::from_text("late"))
                },
            )
            .options(ToolOptions::new().timeout(ToolTimeout::Custom(Duration::from_millis(100)))),
        )
        .unwrap();
    server
        .add_method(
            Method::new("slow", move |context, _| {
                let _ = release.recv_timeout(LONG);
                let _ = flag_tx.send(context.is_cancelled());
                Ok(json!("late"))
            })
            .timeout(Duration::from_millis(100)),
        )
        .unwrap();
    let (client, connection) = memory_client(&server);
    let result = client.call("tools/call", json!({"name": "stuck"})).unwrap();
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did not answer within"),
        "{result}"
    );
    // Abandoned, not stopped: the worker is still taken, so the next call is refused.
    assert_eq!(server.busy_workers(), 1);
    let busy = client.call("slow", Value::Null);
    assert!(
        matches!(&busy, Err(Error::Rpc(error)) if error.code.0 == -32000),
        "{busy:?}"
    );
    release_tx.send(()).unwrap();
    assert_eq!(
        flag.recv_timeout(LONG),
        Ok(true),
        "the handler's flag was not set"
    );
    assert!(server.wait_idle(LONG));
    // The late answer went nowhere: the next request's answer is the next frame.
    match client.call("slow", Value::Null) {
        Err(Error::Rpc(error)) => assert_eq!(error.code, REQUEST_TIMEOUT),
        other => panic!("expected -32001, got {other:?}"),
    }
    release_tx.send(()).unwrap();
    assert_eq!(flag.recv_timeout(LONG), Ok(true));
    assert!(server.wait_idle(LONG));
    assert_eq!(client.stats().late_responses, 0);
    assert_eq!(connection.in_flight(), 0);
    client.close().unwrap();
    connection.wait();
}
