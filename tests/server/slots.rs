//! Connection slots cannot be held by idle sockets or by one peer: when the server is full,
//! the connections still waiting for a request head are closed first (the idlest first), so
//! a client that sends a request is served while a flood of idle sockets stays open on the
//! flooder's side; and one address holds at most its cap of connections (loopback exempt by
//! default), past which its own idlest one makes room, or, when all of them are serving, the
//! newcomer gets 503.

use crate::support::server as support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;
use toolwire::server::{HttpServer, HttpServerConfig, Server, ServerConfig};

use support::{authority, stateless_headers, stateless_request, LONG};

/// Far beyond the test: only the slot rules, never this deadline, can close an idle socket.
const HEAD_TIMEOUT: Duration = Duration::from_secs(120);

fn serve(config: HttpServerConfig) -> HttpServer {
    let server = Server::new(ServerConfig::new("slots", "1")).unwrap();
    HttpServer::bind(&server, config.head_timeout(HEAD_TIMEOUT)).unwrap()
}

fn discover(url: &str) -> support::RawResponse {
    let body = stateless_request(1, "server/discover", json!({}));
    support::post(url, &stateless_headers("server/discover", None), &body)
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

/// Reads what the server sends until it closes the connection.
fn until_closed(stream: &mut TcpStream) -> String {
    stream.set_read_timeout(Some(LONG)).unwrap();
    let mut text = String::new();
    stream
        .read_to_string(&mut text)
        .expect("closed by the server");
    text
}

#[test]
fn a_flood_of_idle_sockets_does_not_lock_a_client_out() {
    let http = serve(HttpServerConfig::new().max_connections(16));
    let host = authority(&http.url()).to_owned();
    // More idle sockets than slots, all from 127.0.0.1, held open by the flooder.
    let mut flood: Vec<TcpStream> = (0..24)
        .map(|_| TcpStream::connect(&host).unwrap())
        .collect();
    let response = discover(&http.url());
    assert_eq!(response.status, 200, "{response:?}");
    assert!(http.connections() <= 16, "{}", http.connections());
    // The oldest idle socket was the first to make room: closed without a word.
    assert_eq!(until_closed(&mut flood[0]), "");
    // Served again and again while the flood holds on.
    for _ in 0..3 {
        assert_eq!(discover(&http.url()).status, 200);
    }
    drop(flood);
    http.close().unwrap();
}

#[test]
fn connections_being_served_keep_their_slots() {
    let http = serve(HttpServerConfig::new().max_connections(3));
    let host = authority(&http.url()).to_owned();
    let busy: Vec<TcpStream> = (0..2).map(|_| busy_connection(&host)).collect();
    let mut idle = TcpStream::connect(&host).unwrap();
    // Full: the idle one makes room, the busy ones stay.
    let mut third = busy_connection(&host);
    assert_eq!(until_closed(&mut idle), "");
    // Every slot busy: 503 at once.
    let mut refused = TcpStream::connect(&host).unwrap();
    let answer = until_closed(&mut refused);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    assert!(answer.contains("connections at once"), "{answer:?}");
    // The busy ones are still served: a body completes its request.
    third.write_all(b"{\"x\":1}   ").unwrap();
    let mut status = [0u8; 12];
    third.read_exact(&mut status).unwrap();
    assert_eq!(&status, b"HTTP/1.1 400");
    drop(busy);
    http.close().unwrap();
}

#[test]
fn one_address_holds_at_most_its_cap() {
    // Loopback capped too (the list of exempt addresses emptied).
    let http = serve(
        HttpServerConfig::new()
            .max_connections(16)
            .max_connections_per_address(2)
            .per_address_exempt([]),
    );
    let host = authority(&http.url()).to_owned();
    let first = busy_connection(&host);
    let mut idle = TcpStream::connect(&host).unwrap();
    // At the cap: the address's idle connection makes room for its new one.
    let second = busy_connection(&host);
    assert_eq!(until_closed(&mut idle), "");
    // Both of its connections serving: the third is refused although the server has room.
    let mut refused = TcpStream::connect(&host).unwrap();
    let answer = until_closed(&mut refused);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    assert!(answer.contains("from one address"), "{answer:?}");
    drop((first, second));
    http.close().unwrap();
}

#[test]
fn loopback_is_exempt_from_the_address_cap_by_default() {
    let http = serve(
        HttpServerConfig::new()
            .max_connections(16)
            .max_connections_per_address(1),
    );
    let host = authority(&http.url()).to_owned();
    let busy: Vec<TcpStream> = (0..3).map(|_| busy_connection(&host)).collect();
    assert_eq!(discover(&http.url()).status, 200);
    assert!(http.connections() >= 3, "{}", http.connections());
    drop(busy);
    http.close().unwrap();
}
