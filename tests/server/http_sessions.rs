//! Handshake-era sessions over Streamable HTTP: `initialize` opens one (its id visible ASCII),
//! a request's events go on its own POST stream, a stream the client lost is resumed from the
//! replay buffer with `Last-Event-ID` (the answer the handler gave meanwhile comes on the
//! GET), the session's GET stream carries what belongs to no request, DELETE ends the session
//! and its id is then unknown (404), and a disconnect on this era is not a cancellation.

use crate::support::server as support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

use crossbeam_channel::{bounded, Receiver};
use serde_json::{json, Value};
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig};

use support::{authority, read_response, LONG};

fn server(release: Receiver<()>) -> Server {
    let server = Server::new(ServerConfig::new("sessions", "1")).unwrap();
    server
        .add_tool(LocalTool::with_context(
            "slow",
            "Reports, then waits for the test.",
            json!({"type": "object"}),
            move |context, _| {
                context.report_progress(1.0, Some(2.0), Some("half"));
                let _ = release.recv_timeout(LONG);
                if context.is_cancelled() {
                    return Ok(CallToolResult::error("cancelled"));
                }
                Ok(CallToolResult::from_text("finished"))
            },
        ))
        .unwrap();
    server
}

fn headers(session: Option<&str>) -> String {
    let mut headers = String::from("MCP-Protocol-Version: 2025-11-25\r\n");
    if let Some(session) = session {
        headers.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
    }
    headers
}

fn initialize(url: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}});
    let response = support::post(url, "", &body);
    assert_eq!(response.status, 200, "{response:?}");
    let session = response
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    assert!(
        session.bytes().all(|b| (0x21..=0x7e).contains(&b)),
        "{session:?}"
    );
    let initialized = support::post(
        url,
        &headers(Some(&session)),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(initialized.status, 202);
    session
}

/// The `id:` and `data:` of the next SSE event on `reader`.
fn next_event(reader: &mut BufReader<TcpStream>) -> (Option<String>, String) {
    let mut id = None;
    let mut data = String::new();
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        let line = line.trim_end();
        if let Some(value) = line.strip_prefix("id: ") {
            id = Some(value.to_owned());
        } else if let Some(value) = line.strip_prefix("data: ") {
            data = value.to_owned();
        } else if line.is_empty() && (id.is_some() || !data.is_empty()) {
            return (id, data);
        }
        // Chunk sizes, `event:`, `retry:` and comments are skipped.
    }
}

#[test]
fn an_answer_sent_as_json_is_not_kept_for_a_resumption() {
    let (_release_tx, release) = bounded::<()>(1);
    let server = server(release);
    let http = HttpServer::bind(&server, HttpServerConfig::new()).unwrap();
    let url = http.url();
    let session = initialize(&url);
    let ping = support::post(
        &url,
        &headers(Some(&session)),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
    );
    assert_eq!(ping.status, 200, "{ping:?}");
    assert_eq!(ping.header("content-type"), Some("application/json"));
    // A session numbers its streams from 1: `initialize`'s, then the ping's. Both were
    // answered with a JSON body, which carries no event id: nothing of them is kept to be
    // sent again (an idle session would hold its last answers, up to the replay buffer's
    // bytes, for nobody).
    for stream_id in 1..=2 {
        let head = format!(
            "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n{}Last-Event-ID: {stream_id}-0\r\n\r\n",
            authority(&url),
            headers(Some(&session)),
        );
        let mut stream = TcpStream::connect(authority(&url)).unwrap();
        stream.set_read_timeout(Some(LONG)).unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        let response = read_response(&mut BufReader::new(stream));
        assert_eq!(response.status, 200);
        assert_eq!(
            response.messages(),
            Vec::<Value>::new(),
            "stream {stream_id}"
        );
    }
    http.close().unwrap();
}

#[test]
fn a_lost_stream_is_resumed_with_last_event_id() {
    let (release_tx, release) = bounded::<()>(1);
    let server = server(release);
    let http = HttpServer::bind(&server, HttpServerConfig::new()).unwrap();
    let url = http.url();
    let session = initialize(&url);
    assert_eq!(http.sessions(), 1);

    // The call's stream: the priming event (an id, no data), then the progress event.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "slow", "_meta": {"progressToken": "tok"}}})
    .to_string();
    let mut stream = TcpStream::connect(authority(&url)).unwrap();
    stream.set_read_timeout(Some(LONG)).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{}Content-Length: {}\r\n\r\n{body}",
        authority(&url),
        headers(Some(&session)),
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let (priming, data) = next_event(&mut reader);
    assert!(priming.is_some() && data.is_empty(), "{priming:?} {data:?}");
    let (progress_id, progress) = next_event(&mut reader);
    assert!(progress.contains("notifications/progress"), "{progress}");
    // The client loses the stream; on this era that is no cancellation: the handler finishes.
    drop(reader);
    release_tx.send(()).unwrap();
    assert!(server.wait_idle(LONG));

    // Resumed after the progress event: the answer comes from the replay buffer.
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n{}Last-Event-ID: {}\r\n\r\n",
        authority(&url),
        headers(Some(&session)),
        progress_id.unwrap()
    );
    let mut stream = TcpStream::connect(authority(&url)).unwrap();
    stream.set_read_timeout(Some(LONG)).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let response = read_response(&mut BufReader::new(stream));
    assert_eq!(response.status, 200);
    let messages = response.messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["id"], 2);
    assert_eq!(messages[0]["result"]["content"][0]["text"], "finished");

    // The session ends with DELETE; its id is unknown after.
    let delete = support::exchange(
        &url,
        &format!(
            "DELETE /mcp HTTP/1.1\r\nHost: {}\r\n{}",
            authority(&url),
            headers(Some(&session))
        ),
        "",
    );
    assert_eq!(delete.status, 200);
    assert_eq!(http.sessions(), 0);
    let after = support::post(
        &url,
        &headers(Some(&session)),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    );
    assert_eq!(after.status, 404);
    http.close().unwrap();
}

#[test]
fn the_get_stream_carries_what_belongs_to_no_request() {
    let (_release_tx, release) = bounded::<()>(1);
    let server = server(release);
    let http = HttpServer::bind(&server, HttpServerConfig::new()).unwrap();
    let url = http.url();
    let session = initialize(&url);
    let mut stream = TcpStream::connect(authority(&url)).unwrap();
    stream.set_read_timeout(Some(LONG)).unwrap();
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n{}\r\n",
        authority(&url),
        headers(Some(&session))
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let (priming, _) = next_event(&mut reader);
    assert!(priming.is_some());
    // A second GET stream for the same session is refused.
    let second = support::exchange(&url, &head[..head.len() - 2], "");
    assert_eq!(second.status, 409, "{second:?}");
    // A tool added now: the session's client hears of it on the GET stream.
    server
        .add_tool(LocalTool::with_context(
            "new",
            "New.",
            json!({"type": "object"}),
            |_, _| Ok(CallToolResult::from_text("new")),
        ))
        .unwrap();
    let (_, data) = next_event(&mut reader);
    let notification: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(notification["method"], "notifications/tools/list_changed");
    http.close().unwrap();
}

#[test]
fn requests_without_a_session_or_with_a_bad_version_are_refused() {
    let (_release_tx, release) = bounded::<()>(1);
    let server = server(release);
    let http = HttpServer::bind(&server, HttpServerConfig::new()).unwrap();
    let url = http.url();
    let no_session = support::post(
        &url,
        &headers(None),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    assert_eq!(no_session.status, 400, "{no_session:?}");
    let session = initialize(&url);
    let bad = support::post(
        &url,
        &format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 1999-01-01\r\n"),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    assert_eq!(bad.status, 400, "{bad:?}");
    let listed = support::post(
        &url,
        &headers(Some(&session)),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    );
    assert_eq!(listed.status, 200);
    assert_eq!(listed.messages()[0]["result"]["tools"][0]["name"], "slow");
    // Not JSON: 400 with a parse error.
    let garbage = support::exchange(
        &url,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n",
            authority(&url)
        ),
        "{nope",
    );
    assert_eq!(garbage.status, 400);
    assert_eq!(garbage.messages()[0]["error"]["code"], -32700);
    http.close().unwrap();
}
