//! The HTTP transport's threads all end with `close()`, streams open or not. In the `process`
//! binary, under its lock, so no other test's threads are counted.
#![cfg(feature = "http")]

use crate::support::http_fake;

use std::thread;
use std::time::{Duration, Instant};

use crate::support::SOON;
use http_fake::{initialize_result, result, text_result, FakeServer};
use serde_json::json;
use toolwire::{CallOptions, HttpConfig, McpClient, McpConfig, ProtocolMode};

// Thread names as the kernel keeps them (cut to 15 bytes).
use crate::support::threads_named;

#[test]
fn close_ends_every_http_thread() {
    let _serial = crate::support::serial();
    let server = FakeServer::start(
        |req, reply| match (req.method.as_str(), req.rpc().as_str()) {
            ("POST", "initialize") => reply.json(
                200,
                &initialize_result(req, "2025-11-25"),
                &[("Mcp-Session-Id", "s-9")],
            ),
            ("POST", "notifications/initialized") => reply.accepted(),
            ("GET", _) => {
                // Pings until the client closes the stream (the pause is the server's pace).
                reply.sse_start(&[]);
                while reply.sse_raw(": ping\n\n") {
                    thread::sleep(Duration::from_millis(50));
                }
            }
            ("DELETE", _) => reply.send(405, "", &[], ""),
            ("POST", "tools/list") => reply.json(200, &result(req, json!({"tools": []})), &[]),
            ("POST", "quick/one") => {
                reply.sse_start(&[]);
                reply.sse_message(&text_result(req, "ok"));
            }
            _ => {
                // Open until the client closes it: longer than the poll below waits, so only
                // close() can end the thread that reads it in time.
                reply.sse_start(&[]);
                reply.client_closed_within(3 * SOON);
            }
        },
    );
    let config = McpConfig::default().mode(ProtocolMode::Legacy);
    let client = McpClient::connect_with(HttpConfig::new(&server.url).connector(), config).unwrap();
    client.list_tools().unwrap();
    client
        .request("quick/one", json!({}), CallOptions::new())
        .unwrap();
    let _hanging = client
        .rpc()
        .unwrap()
        .start("hang/forever", json!({}), CallOptions::new())
        .unwrap();
    server.wait_for(SOON, |req| req.rpc() == "hang/forever");
    assert!(
        threads_named("toolwire-http").len() >= 2,
        "the GET stream and the hanging POST: {:?}",
        threads_named("toolwire-http")
    );
    client.close().unwrap();
    // A joined thread's /proc entry can outlive `join` by a moment: poll, with a bound that
    // only keeps a broken test from hanging.
    let deadline = Instant::now() + SOON;
    while !threads_named("toolwire-http").is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(threads_named("toolwire-http"), Vec::<String>::new());
    // DELETE was answered 405, which is fine.
    assert!(server.labels().contains(&"DELETE".to_owned()));
}
