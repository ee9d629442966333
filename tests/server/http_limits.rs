//! The bounds of the HTTP server: a body over the cap is refused (413) before it is read,
//! declared or chunked; a head with too many headers is 431; connections past the limit are
//! answered 503 at once and closed when every one is serving a request, and served again once
//! one ends; an unknown path is 404.

use crate::support::server as support;

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;

use serde_json::json;
use toolwire::server::{HttpServer, HttpServerConfig, Server, ServerConfig};

use support::{authority, exchange, read_response, stateless_headers, stateless_request, LONG};

fn serve(config: HttpServerConfig) -> HttpServer {
    let server = Server::new(ServerConfig::new("limits", "1")).unwrap();
    HttpServer::bind(&server, config).unwrap()
}

#[test]
fn an_oversize_body_is_refused_before_it_is_read() {
    let http = serve(HttpServerConfig::new().max_body_bytes(1024));
    let host = authority(&http.url()).to_owned();
    // Declared: the answer comes without a byte of the body sent.
    let mut stream = TcpStream::connect(&host).unwrap();
    stream.set_read_timeout(Some(LONG)).unwrap();
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let response = read_response(&mut BufReader::new(stream));
    assert_eq!(response.status, 413, "{response:?}");
    // Chunked: cut when the chunks pass the cap.
    let mut stream = TcpStream::connect(&host).unwrap();
    stream.set_read_timeout(Some(LONG)).unwrap();
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let chunk = format!("200\r\n{}\r\n", "x".repeat(0x200));
    let mut response = None;
    for _ in 0..8 {
        if stream.write_all(chunk.as_bytes()).is_err() {
            break;
        }
        let mut probe = [0u8; 12];
        stream
            .set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .unwrap();
        if let Ok(n) = stream.peek(&mut probe) {
            if n > 0 {
                stream.set_read_timeout(Some(LONG)).unwrap();
                response = Some(read_response(&mut BufReader::new(
                    stream.try_clone().unwrap(),
                )));
                break;
            }
        }
    }
    assert_eq!(response.expect("an answer").status, 413);
    // Many headers.
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\n");
    for i in 0..100 {
        head.push_str(&format!("X-{i}: v\r\n"));
    }
    let response = exchange(&http.url(), &head, "{}");
    assert_eq!(response.status, 431);
    // Not the endpoint.
    let response = exchange(
        &http.url(),
        &format!("POST /other HTTP/1.1\r\nHost: {host}\r\n"),
        "{}",
    );
    assert_eq!(response.status, 404);
    http.close().unwrap();
}

/// A connection whose request head is complete and whose body is still to come: it holds
/// its slot. Returns once the server has read the head (its `100 Continue` is the latch).
fn busy_connection(host: &str) -> TcpStream {
    let mut stream = TcpStream::connect(host).unwrap();
    stream.set_read_timeout(Some(LONG)).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Expect: 100-continue\r\nContent-Length: 10\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut line = [0u8; 25];
    stream.read_exact(&mut line).unwrap();
    assert_eq!(&line, b"HTTP/1.1 100 Continue\r\n\r\n");
    stream
}

#[test]
fn connections_past_the_limit_get_503_at_once() {
    let http = serve(HttpServerConfig::new().max_connections(2));
    let host = authority(&http.url()).to_owned();
    // Two connections being served (their heads are in) hold the two places; idle ones would
    // make room (tests/server/slots.rs).
    let first = busy_connection(&host);
    let second = busy_connection(&host);
    assert_eq!(http.connections(), 2);
    let mut third = TcpStream::connect(&host).unwrap();
    third.set_read_timeout(Some(LONG)).unwrap();
    let mut answer = String::new();
    third.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    assert!(answer.contains("Retry-After: 1"), "{answer:?}");
    drop(first);
    drop(second);
    assert!(support::eventually(support::LONG, || http.connections() == 0));
    let body = stateless_request(1, "server/discover", json!({}));
    let response = support::post(
        &http.url(),
        &stateless_headers("server/discover", None),
        &body,
    );
    assert_eq!(response.status, 200, "{response:?}");
    http.close().unwrap();
}
