//! A slow client cannot hold the server: a request head trickled byte by byte is cut at its
//! deadline (408, then the connection closes), so is a body that stalls; no worker is taken
//! meanwhile, other clients are served, and the connection's thread ends.

use crate::support::server as support;

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig};

use support::{authority, read_response, stateless_headers, stateless_request, LONG};

const HEAD_TIMEOUT: Duration = Duration::from_millis(400);
const BODY_TIMEOUT: Duration = Duration::from_millis(400);

fn serve() -> (Server, HttpServer) {
    let server = Server::new(ServerConfig::new("slow", "1")).unwrap();
    server
        .add_tool(LocalTool::with_context(
            "hi",
            "Says hi.",
            json!({"type": "object"}),
            |_, _| Ok(CallToolResult::from_text("hi")),
        ))
        .unwrap();
    let config = HttpServerConfig::new()
        .head_timeout(HEAD_TIMEOUT)
        .body_timeout(BODY_TIMEOUT);
    let http = HttpServer::bind(&server, config).unwrap();
    (server, http)
}

/// A call that must be answered while the slow client is there.
fn quick_call(url: &str) {
    let body = stateless_request(1, "tools/call", json!({"name": "hi"}));
    let response = support::post(url, &stateless_headers("tools/call", Some("hi")), &body);
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.messages()[0]["result"]["content"][0]["text"], "hi");
}

/// Reads to the end of the connection; what came.
fn rest(stream: &mut TcpStream) -> String {
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    text
}

#[test]
fn a_trickled_head_is_cut_at_its_deadline() {
    let (server, http) = serve();
    let mut slow = TcpStream::connect(authority(&http.url())).unwrap();
    slow.set_read_timeout(Some(LONG)).unwrap();
    let started = Instant::now();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nX-Slow: ",
        authority(&http.url())
    );
    // One byte every 50 ms: each read succeeds, only the whole head's deadline stops it.
    let mut answer = String::new();
    for byte in head.bytes().chain(std::iter::repeat(b'a')) {
        if slow.write_all(&[byte]).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        if started.elapsed() > HEAD_TIMEOUT && answer.is_empty() {
            quick_call(&http.url());
            answer = rest(&mut slow);
            break;
        }
    }
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(started.elapsed() >= HEAD_TIMEOUT);
    assert_eq!(server.busy_workers(), 0);
    assert!(
        support::eventually(support::LONG, || http.connections() == 0),
        "the slow connection's thread is still there"
    );
    http.close().unwrap();
}

#[test]
fn a_stalled_body_is_cut_at_its_deadline_and_takes_no_worker() {
    let (server, http) = serve();
    let mut slow = TcpStream::connect(authority(&http.url())).unwrap();
    slow.set_read_timeout(Some(LONG)).unwrap();
    let started = Instant::now();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
        authority(&http.url())
    );
    slow.write_all(head.as_bytes()).unwrap();
    quick_call(&http.url());
    assert_eq!(
        server.busy_workers(),
        0,
        "a request took a worker before its body was in"
    );
    let mut reader = BufReader::new(slow);
    let response = read_response(&mut reader);
    assert_eq!(response.status, 408);
    assert!(started.elapsed() >= BODY_TIMEOUT);
    assert!(support::eventually(support::LONG, || http.connections() == 0));
    http.close().unwrap();
}
