//! DNS-rebinding protection: a request whose Host or Origin names another site is refused
//! (421 for the Host, 403 for the Origin) before anything is dispatched; the loopback names
//! with any port pass, and so do the names the server is configured with.

use crate::support::server as support;

use serde_json::json;
use toolwire::server::{HttpServer, HttpServerConfig, Server, ServerConfig};

use support::{authority, exchange};

fn initialize(url: &str, host: &str, origin: Option<&str>) -> u16 {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n"
    );
    if let Some(origin) = origin {
        head.push_str(&format!("Origin: {origin}\r\n"));
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}});
    exchange(url, &head, &body.to_string()).status
}

#[test]
fn another_sites_host_or_origin_is_refused() {
    let server = Server::new(ServerConfig::new("rebinding", "1")).unwrap();
    let http = HttpServer::bind(&server, HttpServerConfig::new().max_sessions(8)).unwrap();
    let url = http.url();
    let port = http.local_addr().port();
    assert_eq!(initialize(&url, "evil.example.com", None), 421);
    assert_eq!(
        initialize(
            &url,
            &format!("evil.example.com:{port}"),
            Some("http://evil.example.com")
        ),
        421
    );
    assert_eq!(
        initialize(&url, authority(&url), Some("http://evil.example.com")),
        403
    );
    assert_eq!(initialize(&url, authority(&url), Some("null")), 403);
    assert_eq!(http.sessions(), 0, "a refused request opened a session");
    assert_eq!(
        initialize(
            &url,
            authority(&url),
            Some(&format!("http://localhost:{port}"))
        ),
        200
    );
    assert_eq!(initialize(&url, &format!("localhost:{port}"), None), 200);
    assert_eq!(initialize(&url, &format!("[::1]:{port}"), None), 200);
    http.close().unwrap();
    let allowed = HttpServer::bind(
        &server,
        HttpServerConfig::new().allowed_hosts(["mcp.internal"]),
    )
    .unwrap();
    assert_eq!(
        initialize(
            &allowed.url(),
            "mcp.internal:8443",
            Some("https://mcp.internal")
        ),
        200
    );
    allowed.close().unwrap();
}
