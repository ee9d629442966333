//! The HTTP server over TLS (`HttpServerConfig::tls`) and behind a trusted proxy
//! (`HttpServerConfig::trusted_proxies`): an MCP client that trusts the test's self-signed
//! certificate lists and calls in both eras, one that does not is refused, plain HTTP at the
//! TLS port is told to use https, a client that stalls or trickles its handshake is cut at the
//! head deadline while others are served; a proxy's `X-Forwarded-*` headers are believed from
//! its address only; a bearer token in clear from a peer that may not send one is refused
//! before any handler runs.
#![cfg(all(feature = "rustls", feature = "oauth"))]

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolwire::harness::LocalTool;
use toolwire::server::{
    Authorization, CallToolResult, HttpServer, HttpServerConfig, RequestContext, Server,
    ServerConfig, StaticTokens,
};
use toolwire::{HttpConfig, McpClient, McpConfig, ProtocolMode};

use crate::support::hex_sha256;
use crate::support::server::{exchange, stateless_headers, stateless_request, LONG};
use crate::support::tls::{self, client_hello, exchange_from, self_signed, server_tls};

const RESOURCE: &str = "https://mcp.example/mcp";
const HEAD_TIMEOUT: Duration = Duration::from_millis(400);
const OTHER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// A server whose `whoami` says the caller's subject and address, counting its runs.
fn server(runs: &Arc<AtomicUsize>) -> Server {
    let server = Server::new(ServerConfig::new("tls", "1")).unwrap();
    let counted = Arc::clone(runs);
    server
        .add_tool(LocalTool::with_context(
            "whoami",
            "Says who called, from where.",
            json!({"type": "object"}),
            move |context, _| {
                counted.fetch_add(1, Ordering::SeqCst);
                let context = RequestContext::of(context);
                let subject = context
                    .and_then(|c| c.caller())
                    .map_or("nobody".to_owned(), |c| c.subject().to_owned());
                let from = context
                    .and_then(|c| c.peer_address())
                    .map_or("none".to_owned(), |a| a.ip().to_string());
                Ok(CallToolResult::from_text(format!("{subject} {from}")))
            },
        ))
        .unwrap();
    server
}

fn authorization() -> Authorization {
    let tokens = StaticTokens::new()
        .with(&hex_sha256("ann-secret"), "ann", &[])
        .unwrap();
    Authorization::static_tokens(RESOURCE, tokens)
}

/// The head of a 2026-07-28 `tools/call whoami` to `host`, with `extra` headers.
fn call_head(host: &str, extra: &str) -> (String, String) {
    let headers = stateless_headers("tools/call", Some("whoami"));
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}{extra}"
    );
    let body = stateless_request(1, "tools/call", json!({"name": "whoami", "arguments": {}}));
    (head, body.to_string())
}

#[test]
fn an_mcp_client_that_trusts_the_certificate_is_served_over_tls_and_others_are_refused() {
    let (cert, key) = self_signed();
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs);
    // Tokens in clear are taken from nobody: over TLS they are taken from anyone.
    let config = HttpServerConfig::new()
        .tls(server_tls(&cert, &key))
        .authorization(authorization())
        .loopback_plain_tokens(false);
    let http = HttpServer::bind(&server, config).unwrap();
    assert!(
        http.url().starts_with("https://127.0.0.1:"),
        "{}",
        http.url()
    );
    let url = http.url().replace("127.0.0.1", "localhost");
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let client = McpClient::connect_http(
            HttpConfig::new(&url)
                .root_certificates_pem(cert.as_bytes())
                .bearer_token("ann-secret"),
            McpConfig::default().mode(mode),
        )
        .unwrap();
        assert_eq!(client.list_tools().unwrap().len(), 1, "{mode:?}");
        let text = client.call_tool("whoami", json!({})).unwrap().text();
        assert_eq!(text, "ann 127.0.0.1", "{mode:?}");
        client.close().unwrap();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // By its IP address too (the certificate names it).
    let client = McpClient::connect_http(
        HttpConfig::new(http.url())
            .root_certificates_pem(cert.as_bytes())
            .bearer_token("ann-secret"),
        McpConfig::default().mode(ProtocolMode::Modern),
    )
    .unwrap();
    assert_eq!(client.list_tools().unwrap().len(), 1);
    client.close().unwrap();

    // A client with the built-in web roots does not trust a self-signed certificate.
    let untrusting = McpClient::connect_http(
        HttpConfig::new(&url).bearer_token("ann-secret"),
        McpConfig::default().mode(ProtocolMode::Modern),
    );
    let Err(error) = untrusting else {
        panic!("an untrusted certificate is refused");
    };
    let message = error.to_string();
    assert!(!message.contains("ann-secret"), "{message}");
    // Root certificates that are not PEM certificates are a config error.
    let bad = McpClient::connect_http(
        HttpConfig::new(&url).root_certificates_pem(key.as_bytes()),
        McpConfig::default().mode(ProtocolMode::Modern),
    );
    assert!(
        matches!(bad, Err(toolwire::Error::Config(_))),
        "{:?}",
        bad.err()
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2, "no handler ran for them");

    // Plain HTTP at the TLS port is told, in plain HTTP, to use https.
    let plain_url = format!("http://{}/mcp", http.local_addr());
    let (head, body) = call_head(&http.local_addr().to_string(), "");
    let answer = exchange(&plain_url, &head, &body);
    assert_eq!(answer.status, 400, "{answer:?}");
    assert!(answer.body.contains("https://"), "{answer:?}");
    assert_eq!(answer.header("connection"), Some("close"));
    // The server still serves TLS clients afterwards.
    let (head, body) = call_head("localhost", "Authorization: Bearer ann-secret\r\n");
    let answer = tls::exchange(http.local_addr(), &cert, &head, &body);
    assert_eq!(answer.status, 200, "{answer:?}");
    http.close().unwrap();
}

/// Writes `bytes` to `socket` one at a time, `every` apart, until the server closes it;
/// returns when the server's close was seen (a write or read failing, or the end of input).
fn trickle_until_closed(mut socket: TcpStream, bytes: &[u8], every: Duration) {
    socket.set_read_timeout(Some(every)).unwrap();
    let mut probe = [0u8; 64];
    for byte in bytes.iter().cycle() {
        if socket.write_all(&[*byte]).is_err() {
            return;
        }
        match socket.read(&mut probe) {
            Ok(0) => return,
            // An alert or anything else the server sends before it closes.
            Ok(_) => {}
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

#[test]
fn a_client_that_stalls_or_trickles_its_handshake_is_cut_at_the_head_deadline() {
    let (cert, key) = self_signed();
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs);
    let config = HttpServerConfig::new()
        .tls(server_tls(&cert, &key))
        .head_timeout(HEAD_TIMEOUT);
    let http = HttpServer::bind(&server, config).unwrap();
    let hello = client_hello(&cert);

    // Stalls: all of its ClientHello but the last byte, then nothing.
    let started = Instant::now();
    let mut stalled = TcpStream::connect(http.local_addr()).unwrap();
    stalled.write_all(&hello[..hello.len() - 1]).unwrap();
    stalled.set_read_timeout(Some(LONG)).unwrap();
    let mut rest = Vec::new();
    let _ = stalled.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(waited >= HEAD_TIMEOUT, "closed after {waited:?}");
    assert!(waited < LONG, "the stalled handshake was never cut");

    // Trickles: one byte of its ClientHello every 50 ms, over and over, while another client
    // is served.
    let started = Instant::now();
    let trickler = TcpStream::connect(http.local_addr()).unwrap();
    let trickling = std::thread::spawn(move || {
        trickle_until_closed(trickler, &hello, Duration::from_millis(50));
        started.elapsed()
    });
    let (head, body) = call_head("localhost", "");
    let answer = tls::exchange(http.local_addr(), &cert, &head, &body);
    assert_eq!(answer.status, 200, "{answer:?}");
    let waited = crate::support::within(LONG, move || trickling.join().unwrap());
    assert!(waited >= HEAD_TIMEOUT, "closed after {waited:?}");
    assert!(
        crate::support::eventually(LONG, || http.connections() == 0),
        "every connection thread ended"
    );
    http.close().unwrap();
}

#[test]
fn a_trusted_proxys_headers_are_believed_from_its_address_only() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs);
    let config = HttpServerConfig::new()
        .authorization(authorization())
        .trusted_proxies([IpAddr::V4(Ipv4Addr::LOCALHOST)])
        .per_address_exempt([]);
    let http = HttpServer::bind(&server, config).unwrap();
    let addr = http.local_addr();
    let proxy = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let bearer = "Authorization: Bearer ann-secret\r\n";

    // From the proxy: the forwarded host is the one checked, the forwarded client is the
    // caller's address.
    let forwarded = format!(
        "{bearer}X-Forwarded-Host: evil.example\r\nX-Forwarded-Proto: https\r\n\
         X-Forwarded-For: 203.0.113.9\r\n"
    );
    let (head, body) = call_head("localhost", &forwarded);
    let answer = exchange_from(proxy, addr, &head, &body);
    assert_eq!(answer.status, 421, "{answer:?}");
    let forwarded = format!(
        "{bearer}X-Forwarded-Host: localhost\r\nX-Forwarded-Proto: https\r\n\
         X-Forwarded-For: 198.51.100.1, 203.0.113.9\r\n"
    );
    let (head, body) = call_head("internal-name", &forwarded);
    let answer = exchange_from(proxy, addr, &head, &body);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        answer.messages()[0]["result"]["content"][0]["text"],
        "ann 203.0.113.9"
    );
    // The proxy says its client came in clear from afar: the token is refused unread.
    let forwarded = format!("{bearer}X-Forwarded-Proto: http\r\nX-Forwarded-For: 203.0.113.9\r\n");
    let (head, body) = call_head("localhost", &forwarded);
    let answer = exchange_from(proxy, addr, &head, &body);
    assert_eq!(answer.status, 401, "{answer:?}");
    let challenge = answer.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"invalid_request\"") && challenge.contains("plain HTTP"),
        "{challenge}"
    );
    assert!(!answer.body.contains("ann-secret") && !challenge.contains("ann-secret"));
    let served = runs.load(Ordering::SeqCst);
    assert_eq!(served, 1);

    // From another address the same headers are ignored: its Host is checked, its own
    // address is the caller's, and its clear token (loopback) is taken.
    let forwarded = format!(
        "{bearer}X-Forwarded-Host: evil.example\r\nX-Forwarded-Proto: http\r\n\
         X-Forwarded-For: 203.0.113.9\r\n"
    );
    let (head, body) = call_head("localhost", &forwarded);
    let answer = exchange_from(OTHER, addr, &head, &body);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        answer.messages()[0]["result"]["content"][0]["text"],
        "ann 127.0.0.2"
    );
    let (head, body) = call_head(
        "evil.example",
        &format!("{bearer}X-Forwarded-Host: localhost\r\n"),
    );
    let answer = exchange_from(OTHER, addr, &head, &body);
    assert_eq!(answer.status, 421, "{answer:?}");
    http.close().unwrap();
}

#[test]
fn a_trusted_proxy_has_no_per_address_cap_and_other_addresses_keep_theirs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs);
    let config = HttpServerConfig::new()
        .trusted_proxies([IpAddr::V4(Ipv4Addr::LOCALHOST)])
        .per_address_exempt([])
        .max_connections_per_address(1);
    let http = HttpServer::bind(&server, config).unwrap();
    let addr = http.local_addr();
    let (head, body) = call_head("localhost", "");
    let request = format!("{head}Content-Length: {}\r\n\r\n{body}", body.len());
    let answered = |socket: &TcpStream| {
        socket.set_read_timeout(Some(LONG)).unwrap();
        let mut writer = socket.try_clone().unwrap();
        writer.write_all(request.as_bytes()).unwrap();
        let mut reader = std::io::BufReader::new(socket.try_clone().unwrap());
        crate::support::server::read_response(&mut reader).status
    };
    // Two idle connections from the proxy, then a request on the second and one on the
    // first: both are served.
    let first = tls::connect_from(IpAddr::V4(Ipv4Addr::LOCALHOST), addr);
    let second = tls::connect_from(IpAddr::V4(Ipv4Addr::LOCALHOST), addr);
    assert_eq!(answered(&second), 200);
    assert_eq!(answered(&first), 200);
    // From another address, the second connection takes the idle first one's place.
    let mut first = tls::connect_from(OTHER, addr);
    let second = tls::connect_from(OTHER, addr);
    assert_eq!(answered(&second), 200);
    first.set_read_timeout(Some(LONG)).unwrap();
    let mut rest = Vec::new();
    let closed = first.read_to_end(&mut rest);
    assert!(
        matches!(closed, Ok(0)) || closed.is_err(),
        "the idle connection was closed: {closed:?} {rest:?}"
    );
    http.close().unwrap();
}

#[test]
fn a_bearer_token_in_clear_from_a_peer_that_may_not_send_one_is_refused_before_any_handler() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs);
    // `loopback_plain_tokens(false)`: this peer is as one on another machine.
    let config = HttpServerConfig::new()
        .authorization(authorization())
        .loopback_plain_tokens(false);
    let http = HttpServer::bind(&server, config).unwrap();
    let (head, body) = call_head("localhost", "Authorization: Bearer ann-secret\r\n");
    let answer = exchange(&http.url(), &head, &body);
    assert_eq!(answer.status, 401, "{answer:?}");
    let challenge = answer.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"invalid_request\"")
            && challenge.contains("not accepted over plain HTTP")
            && challenge.contains("resource_metadata="),
        "{challenge}"
    );
    assert!(!answer.body.contains("ann-secret") && !challenge.contains("ann-secret"));
    // The MCP client gets the same refusal.
    let client = McpClient::connect_http(
        HttpConfig::new(http.url()).bearer_token("ann-secret"),
        McpConfig::default().mode(ProtocolMode::Modern),
    );
    assert!(client.is_err());
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no handler ran");
    http.close().unwrap();

    // By default a loopback peer (here 127.0.0.2, not 127.0.0.1) may send its token in clear.
    let http = HttpServer::bind(
        &server,
        HttpServerConfig::new().authorization(authorization()),
    )
    .unwrap();
    let answer = exchange_from(OTHER, http.local_addr(), &head, &body);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    http.close().unwrap();
}

#[test]
fn certificate_and_key_errors_say_what_is_wrong() {
    let (cert, key) = self_signed();
    let (other_cert, _) = self_signed();
    let error = |cert: &str, key: &str| {
        toolwire::server::ServerTls::from_pem(cert.as_bytes(), key.as_bytes())
            .unwrap_err()
            .to_string()
    };
    assert!(
        error("", &key).contains("no certificate"),
        "{}",
        error("", &key)
    );
    assert!(
        error(&cert, "").contains("no PEM private key"),
        "{}",
        error(&cert, "")
    );
    let mismatch = error(&other_cert, &key);
    assert!(mismatch.contains("does not go with"), "{mismatch}");
    let missing = toolwire::server::ServerTls::from_pem_files(
        std::path::Path::new("/nonexistent/cert.pem"),
        std::path::Path::new("/nonexistent/key.pem"),
    )
    .unwrap_err()
    .to_string();
    assert!(missing.contains("/nonexistent/cert.pem"), "{missing}");
}
