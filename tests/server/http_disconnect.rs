//! A client that hangs up in the middle of a call on the 2026-07-28 protocol: closing the
//! response stream is the cancellation, so the handler sees its flag, whether the answer was
//! to be JSON or an event stream had begun; nothing is left behind (no worker, connection or
//! request in flight).

use crate::support::server as support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig};

use support::{authority, stateless_headers, stateless_request, LONG};

fn server(seen: mpsc::Sender<&'static str>) -> Server {
    let server = Server::new(ServerConfig::new("disconnect", "1").workers(4)).unwrap();
    let seen = std::sync::Mutex::new(seen);
    server
        .add_tool(LocalTool::with_context(
            "block",
            "Waits to be cancelled.",
            json!({"type": "object"}),
            move |context, _| {
                // A first report opens an event stream when the client asked for progress.
                context.report_progress(1.0, None, Some("started"));
                while !context.is_cancelled() {
                    std::thread::sleep(Duration::from_millis(2));
                }
                let _ = seen.lock().unwrap().send("cancelled");
                Ok(CallToolResult::from_text("too late"))
            },
        ))
        .unwrap();
    server
}

/// Sends a `tools/call` of `block` and returns the open connection.
fn start_block(url: &str, progress: bool) -> TcpStream {
    let mut params = json!({"name": "block", "arguments": {}});
    let mut body = stateless_request(7, "tools/call", params.take());
    if progress {
        body["params"]["_meta"]["progressToken"] = json!("p");
    }
    let body = body.to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{}Content-Length: {}\r\n\r\n",
        authority(url),
        stateless_headers("tools/call", Some("block")),
        body.len()
    );
    let mut stream = TcpStream::connect(authority(url)).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    stream
}

#[test]
fn hanging_up_cancels_the_call_and_leaves_nothing_behind() {
    let (tx, rx) = mpsc::channel();
    let server = server(tx);
    let http = HttpServer::bind(&server, HttpServerConfig::new()).unwrap();
    // JSON answer pending: nothing was written when the client goes.
    let stream = start_block(&http.url(), false);
    assert!(
        support::eventually(support::LONG, || server.busy_workers() == 1),
        "the call did not start"
    );
    drop(stream);
    assert_eq!(rx.recv_timeout(LONG), Ok("cancelled"));

    // An event stream under way: its first event arrived, then the client goes.
    let stream = start_block(&http.url(), true);
    stream.set_read_timeout(Some(LONG)).unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    while !line.contains("notifications/progress") {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the stream ended early"
        );
    }
    drop(reader);
    assert_eq!(rx.recv_timeout(LONG), Ok("cancelled"));

    // Many times over: every worker and connection comes back.
    for _ in 0..50 {
        drop(start_block(&http.url(), false));
        assert_eq!(rx.recv_timeout(LONG), Ok("cancelled"));
    }
    assert!(server.wait_idle(LONG), "a worker is still busy");
    assert!(
        support::eventually(support::LONG, || http.connections() == 0),
        "{} connections left",
        http.connections()
    );
    assert_eq!(http.sessions(), 0);
    http.close().unwrap();
}
