//! Hostile Streamable HTTP servers: a session id that is not visible ASCII is refused, not
//! dropped; and a server that answers the GET stream with `retry: 0` and a fresh event id each
//! time, then closes, gets a floored delay and a capped number of reconnections, not a storm.
#![cfg(feature = "http")]

use crate::support::http_fake;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_fake::{initialize_result, FakeServer, Reply, Req};
use toolwire::transport::{HttpTransport, Transport};
use toolwire::{Error, HttpConfig, McpClient, McpConfig, ProtocolMode};

use crate::support::SOON;

fn legacy() -> McpConfig {
    McpConfig::default()
        .mode(ProtocolMode::Legacy)
        .initialize_timeout(SOON)
        .request_timeout(SOON)
}

#[test]
fn a_session_id_that_is_not_visible_ascii_is_an_error() {
    let server = FakeServer::start(|req: &Req, reply: &mut Reply<'_>| {
        match (req.method.as_str(), req.rpc().as_str()) {
            ("POST", "initialize") => reply.json(
                200,
                &initialize_result(req, "2025-11-25"),
                &[("Mcp-Session-Id", "two words")],
            ),
            _ => reply.send(405, "", &[], ""),
        }
    });
    let error = McpClient::connect_with(HttpConfig::new(&server.url).connector(), legacy())
        .expect_err("the session id is refused");
    match error {
        Error::Protocol(message) => assert!(message.contains("Mcp-Session-Id"), "{message}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

/// A server whose GET stream sends one fresh event id with `retry: 0`, then closes.
fn storming_server() -> FakeServer {
    let counter = Arc::new(Mutex::new(0u64));
    FakeServer::start(move |req: &Req, reply: &mut Reply<'_>| {
        match (req.method.as_str(), req.rpc().as_str()) {
            ("POST", "initialize") => reply.json(
                200,
                &initialize_result(req, "2025-11-25"),
                &[("Mcp-Session-Id", "s-1")],
            ),
            ("POST", _) => reply.accepted(),
            ("GET", _) => {
                let id = {
                    let mut counter = counter.lock().unwrap();
                    *counter += 1;
                    *counter
                };
                reply.sse_start(&[]);
                reply.sse_raw(&format!("id: e{id}\nretry: 0\n: nothing else\n\n"));
            }
            _ => reply.send(200, "", &[], ""),
        }
    })
}

/// Connects through a connector that keeps the transport for the test to look at.
fn connect(http: HttpConfig) -> (McpClient, Arc<HttpTransport>) {
    let kept: Arc<Mutex<Option<Arc<HttpTransport>>>> = Arc::default();
    let stash = Arc::clone(&kept);
    let client = McpClient::connect_with(
        Box::new(move || {
            let transport = Arc::new(HttpTransport::new(http.clone())?);
            *stash.lock().unwrap() = Some(Arc::clone(&transport));
            Ok(transport as Arc<dyn Transport>)
        }),
        legacy(),
    )
    .expect("connect");
    let transport = kept.lock().unwrap().clone().expect("the transport");
    (client, transport)
}

fn gets(server: &FakeServer) -> Vec<Instant> {
    server
        .requests()
        .iter()
        .filter(|req| req.method == "GET")
        .map(|req| req.at)
        .collect()
}

#[test]
fn a_reconnect_storm_is_floored_and_capped() {
    let server = storming_server();
    let floor = Duration::from_millis(50);
    let http = HttpConfig::new(&server.url)
        .min_retry(floor)
        .max_reconnects_per_minute(3);
    let (client, transport) = connect(http);
    // The stream is given up once no exchange is left; only a new POST could start another.
    let deadline = Instant::now() + SOON;
    while !(gets(&server).len() >= 4 && transport.open_exchanges() == 0) {
        assert!(
            Instant::now() < deadline,
            "the storm went on: {} GETs",
            gets(&server).len()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let times = gets(&server);
    assert_eq!(
        times.len(),
        4,
        "the first GET and three reconnections, then no more"
    );
    for pair in times.windows(2) {
        assert!(
            pair[1] - pair[0] >= floor,
            "reconnected after {:?}",
            pair[1] - pair[0]
        );
    }
    client.close().expect("close");
}
