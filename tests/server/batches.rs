//! A JSON-RPC batch to the server is answered as one array, each request answered as it
//! would be alone (inline and pooled ones together), notifications never.

use crate::support::server as support;

use serde_json::{json, Value};
use toolwire::harness::LocalTool;
use toolwire::jsonrpc::BatchEntry;
use toolwire::server::{CallToolResult, Method, Server, ServerConfig};
use toolwire::CallOptions;

use support::memory_client;

#[test]
fn a_batch_is_answered_as_one_array() {
    let server = Server::new(ServerConfig::new("batches", "1")).unwrap();
    server
        .add_method(
            Method::new("double", |_, params| {
                Ok(json!(params["n"].as_i64().unwrap_or(0) * 2))
            })
            .inline(true),
        )
        .unwrap();
    server
        .add_tool(LocalTool::with_context(
            "slow",
            "Pooled.",
            json!({"type": "object"}),
            |_, _| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                Ok(CallToolResult::from_text("slow"))
            },
        ))
        .unwrap();
    let (client, connection) = memory_client(&server);
    let request = |method: &str, params: Value| BatchEntry::Request {
        method: method.into(),
        params,
    };
    let outcomes = client
        .batch(
            vec![
                request("double", json!({"n": 21})),
                BatchEntry::Notification {
                    method: "notifications/initialized".into(),
                    params: Value::Null,
                },
                request("tools/call", json!({"name": "slow"})),
                request("ping", Value::Null),
                request("nope", Value::Null),
            ],
            CallOptions::new(),
        )
        .unwrap();
    assert_eq!(outcomes.len(), 4);
    assert_eq!(outcomes[0].as_ref().unwrap(), &json!(42));
    assert_eq!(outcomes[1].as_ref().unwrap()["content"][0]["text"], "slow");
    assert_eq!(outcomes[2].as_ref().unwrap(), &json!({}));
    assert!(matches!(&outcomes[3], Err(toolwire::Error::Rpc(error)) if error.code.0 == -32601));
    assert_eq!(client.stats().late_responses, 0);
    client.close().unwrap();
    connection.wait();
}
