use crate::support as common;
use serde_json::json;
use toolwire::mcp::McpDialect;
use toolwire::ClientConfig;

#[test]
fn smoke() {
    let (client, _pid) = common::tool_server_client(ClientConfig::default().dialect(McpDialect));
    assert_eq!(
        client.call("add", json!({"a": 2, "b": 3})).unwrap(),
        json!(5)
    );
    assert_eq!(
        client.call("echo", json!({"x": [1]})).unwrap(),
        json!({"x": [1]})
    );
    client.close().unwrap();
}
