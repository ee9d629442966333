//! `RequestContext::peer_address`: the client's socket address over HTTP, for a 2026-07-28
//! request and in a handshake-era session alike, and none in memory.

use serde_json::json;
use toolwire::harness::LocalTool;
use toolwire::server::{
    CallToolResult, HttpServer, HttpServerConfig, PeerTransport, RequestContext, Server,
    ServerConfig,
};
use toolwire::transport::MemoryTransport;
use toolwire::{HttpConfig, McpClient, McpConfig, ProtocolMode};

fn server() -> Server {
    let server = Server::new(ServerConfig::new("peers", "1")).unwrap();
    server
        .add_tool(LocalTool::with_context(
            "whoami",
            "Says the caller's address.",
            json!({"type": "object"}),
            |context, _| {
                let address = RequestContext::of(context).and_then(|c| c.peer_address());
                Ok(CallToolResult::from_text(match address {
                    Some(address) => address.ip().to_string(),
                    None => "none".to_owned(),
                }))
            },
        ))
        .unwrap();
    server
}

fn whoami(client: &McpClient) -> String {
    client.call_tool("whoami", json!({})).unwrap().text()
}

#[test]
fn a_handler_sees_the_http_clients_address_and_none_in_memory() {
    let server = server();
    for addr in ["127.0.0.1:0", "[::1]:0"] {
        let http =
            HttpServer::bind(&server, HttpServerConfig::new().addr(addr.parse().unwrap())).unwrap();
        let ip = http.local_addr().ip().to_string();
        for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
            let client = McpClient::connect_http(
                HttpConfig::new(http.url()),
                McpConfig::default().mode(mode),
            )
            .unwrap();
            assert_eq!(whoami(&client), ip, "{mode:?} at {addr}");
            assert_eq!(whoami(&client), ip, "{mode:?} at {addr}, again");
            client.close().unwrap();
        }
        http.close().unwrap();
    }
    let (client_end, server_end) = MemoryTransport::pair();
    let connection = server.connect(PeerTransport::new(server_end)).unwrap();
    let client =
        McpClient::connect(client_end, McpConfig::default().mode(ProtocolMode::Legacy)).unwrap();
    assert_eq!(whoami(&client), "none");
    client.close().unwrap();
    connection.wait();
}
