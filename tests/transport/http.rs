//! The Streamable HTTP transport against an in-process fake server on 127.0.0.1: sessions and
//! their expiry, error statuses, event streams that break, overflow or resume, timeouts,
//! notifications, 2026-07-28 headers and cancellation, and a bounded close.
#![cfg(feature = "http")]

use crate::support::http_fake;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::support::SOON;
use crossbeam_channel::{bounded, unbounded, Receiver};
use http_fake::{initialize_result, result, text_result, within, FakeServer, Reply, Req};
use serde_json::{json, Value};
use toolwire::{CallOptions, Error, HttpConfig, McpClient, McpConfig, ProtocolMode};

fn legacy() -> McpConfig {
    let mut config = McpConfig::default().mode(ProtocolMode::Legacy);
    config = config.request_timeout(Duration::from_secs(5));
    config = config.initialize_timeout(Duration::from_secs(5));
    config
}

fn connect(http: HttpConfig, config: McpConfig) -> McpClient {
    McpClient::connect_with(http.connector(), config).expect("connect")
}

/// Answers the handshake, a refused GET stream and DELETE; true when it did.
fn handshake(req: &Req, reply: &mut Reply<'_>, session: &str) -> bool {
    match (req.method.as_str(), req.rpc().as_str()) {
        ("POST", "initialize") => {
            reply.json(
                200,
                &initialize_result(req, "2025-06-18"),
                &[("Mcp-Session-Id", session)],
            );
        }
        ("POST", "notifications/initialized" | "notifications/cancelled") => reply.accepted(),
        ("GET", _) => reply.send(405, "", &[], ""),
        ("DELETE", _) => reply.send(200, "", &[], ""),
        _ => return false,
    }
    true
}

fn tools_list(req: &Req) -> Value {
    result(
        req,
        json!({"tools": [{"name": "slow", "inputSchema": {"type": "object"}}]}),
    )
}

#[test]
fn session_headers_progress_over_sse_and_delete_on_close() {
    let server = FakeServer::start(|req, reply| {
        if handshake(req, reply, "s-1") {
            return;
        }
        match req.rpc().as_str() {
            "tools/list" => reply.json(200, &tools_list(req), &[]),
            "tools/call" => {
                reply.sse_start(&[]);
                let token = req.json()["params"]["_meta"]["progressToken"].clone();
                for step in 1..=3 {
                    reply.sse_message(
                        &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": step, "total": 3}}),
                    );
                }
                reply.sse_message(&text_result(req, "done"));
            }
            _ => reply.send(400, "text/plain", &[], "unexpected"),
        }
    });
    let http = HttpConfig::new(&server.url)
        .bearer_token("t0k")
        .header("X-Team", "blue");
    let client = connect(http, legacy());
    client.list_tools().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let result = client
        .call_tool_with(
            "slow",
            json!({}),
            CallOptions::new()
                .on_progress(move |progress| sink.lock().unwrap().push(progress.progress)),
        )
        .unwrap();
    assert_eq!(result.text(), "done");
    assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0, 3.0]);
    client.close().unwrap();

    let requests = server.requests();
    let labels: Vec<String> = requests.iter().map(Req::label).collect();
    assert_eq!(
        labels,
        [
            "POST initialize",
            "POST notifications/initialized",
            "GET",
            "POST tools/list",
            "POST tools/call",
            "DELETE"
        ]
    );
    for req in &requests {
        assert_eq!(
            req.header("authorization"),
            Some("Bearer t0k"),
            "{}",
            req.label()
        );
        assert_eq!(req.header("x-team"), Some("blue"));
        assert_eq!(
            req.header("mcp-method"),
            None,
            "no 2026 headers in a 2025 session"
        );
        if req.method == "POST" {
            assert_eq!(req.header("content-type"), Some("application/json"));
            assert_eq!(
                req.header("accept"),
                Some("application/json, text/event-stream")
            );
        }
        if req.rpc() == "initialize" {
            assert_eq!(req.header("mcp-session-id"), None);
            assert_eq!(req.header("mcp-protocol-version"), None);
        } else {
            assert_eq!(req.header("mcp-session-id"), Some("s-1"), "{}", req.label());
            assert_eq!(req.header("mcp-protocol-version"), Some("2025-06-18"));
        }
    }
    assert_eq!(requests[2].header("accept"), Some("text/event-stream"));
}

/// A server whose sessions expire on demand, answering like the Python SDK (404) or like
/// server-everything (400).
fn expiring_server(status: u16, expire_every_time: bool) -> (FakeServer, Arc<AtomicBool>) {
    let sessions = Arc::new(AtomicUsize::new(0));
    let valid = Arc::new(Mutex::new(String::new()));
    let expire = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&expire);
    let server = FakeServer::start(move |req, reply| {
        let session = req.header("mcp-session-id").unwrap_or("").to_owned();
        match (req.method.as_str(), req.rpc().as_str()) {
            ("POST", "initialize") => {
                let name = format!("s-{}", sessions.fetch_add(1, Ordering::SeqCst) + 1);
                *valid.lock().unwrap() = name.clone();
                reply.json(
                    200,
                    &initialize_result(req, "2025-11-25"),
                    &[("Mcp-Session-Id", &name)],
                );
            }
            ("GET", _) => reply.send(405, "", &[], ""),
            _ => {
                if flag.load(Ordering::SeqCst) {
                    if !expire_every_time {
                        flag.store(false, Ordering::SeqCst);
                    }
                    *valid.lock().unwrap() = String::new();
                }
                if session != *valid.lock().unwrap() {
                    let message = if status == 404 {
                        "Session not found"
                    } else {
                        "Bad Request: No valid session ID provided"
                    };
                    let body = json!({"jsonrpc": "2.0", "id": null,
                        "error": {"code": -32000, "message": message}});
                    return reply.json(status, &body, &[]);
                }
                match req.rpc().as_str() {
                    "tools/list" => reply.json(200, &tools_list(req), &[]),
                    "notifications/initialized" => reply.accepted(),
                    _ if req.method == "DELETE" => reply.send(200, "", &[], ""),
                    _ => reply.send(400, "", &[], ""),
                }
            }
        }
    });
    (server, expire)
}

#[test]
fn http_404_on_a_session_reinitializes_once_and_retries() {
    let (server, expire) = expiring_server(404, false);
    let client = connect(HttpConfig::new(&server.url), legacy());
    expire.store(true, Ordering::SeqCst);
    let tools = client.list_tools().unwrap();
    assert_eq!(tools[0].name, "slow");
    let requests = server.requests();
    let labels: Vec<String> = requests.iter().map(Req::label).collect();
    assert_eq!(
        labels,
        [
            "POST initialize",
            "POST notifications/initialized",
            "GET",
            "POST tools/list",
            "POST initialize",
            "POST notifications/initialized",
            "POST tools/list"
        ]
    );
    // The replay is the same request, without the dead session.
    assert_eq!(requests[4].body, requests[0].body);
    assert_eq!(requests[4].header("mcp-session-id"), None);
    assert_eq!(requests[3].header("mcp-session-id"), Some("s-1"));
    assert_eq!(requests[5].header("mcp-session-id"), Some("s-2"));
    assert_eq!(requests[6].header("mcp-session-id"), Some("s-2"));
    assert_eq!(
        requests[6].body, requests[3].body,
        "the same request, retried"
    );
    assert_eq!(
        requests[6].header("mcp-protocol-version"),
        Some("2025-11-25")
    );
    // The session keeps working.
    client.refresh_tools().unwrap();
    client.close().unwrap();
}

#[test]
fn a_second_404_after_the_new_session_is_the_callers_error() {
    let (server, expire) = expiring_server(404, true);
    let client = connect(HttpConfig::new(&server.url), legacy());
    expire.store(true, Ordering::SeqCst);
    let error = client.list_tools().unwrap_err();
    let http = error.http().unwrap_or_else(|| panic!("{error}"));
    assert_eq!(http.status, 404);
    assert!(http.body_excerpt.contains("Session not found"), "{http}");
    let initializes = server
        .labels()
        .iter()
        .filter(|label| *label == "POST initialize")
        .count();
    assert_eq!(initializes, 2, "one renewal only: {:?}", server.labels());
    let _ = client.close();
}

#[test]
fn a_400_naming_the_session_is_an_expired_session_too() {
    let (server, expire) = expiring_server(400, false);
    let client = connect(HttpConfig::new(&server.url), legacy());
    expire.store(true, Ordering::SeqCst);
    client.list_tools().unwrap();
    let initializes = server
        .labels()
        .iter()
        .filter(|label| *label == "POST initialize")
        .count();
    assert_eq!(initializes, 2);
    client.close().unwrap();

    // Without the allowance a 400 is just an error.
    let (server, expire) = expiring_server(400, false);
    let mut http = HttpConfig::new(&server.url);
    http = http.session_expired_on_400(false);
    let client = connect(http, legacy());
    expire.store(true, Ordering::SeqCst);
    let error = client.list_tools().unwrap_err();
    assert_eq!(error.http().map(|http| http.status), Some(400), "{error}");
    let _ = client.close();
}

#[test]
fn http_500_with_a_json_body_carries_the_status_and_an_excerpt() {
    let server = FakeServer::start(|req, reply| {
        if handshake(req, reply, "s-1") {
            return;
        }
        match req.rpc().as_str() {
            "tools/list" => reply.json(
                500,
                &json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32603, "message": "the database is on fire"}}),
                &[],
            ),
            _ => reply.send(500, "text/plain", &[], &"x".repeat(100_000)),
        }
    });
    let client = connect(HttpConfig::new(&server.url), legacy());
    // The 500 fails the call at once: it is neither retried nor left to the 5 s deadline,
    // which would have ended it with `Timeout` rather than this `Http` error.
    let error = client.list_tools().unwrap_err();
    assert!(
        error.rpc().is_none(),
        "a local failure carries no JSON-RPC code"
    );
    let http = error.http().unwrap_or_else(|| panic!("{error}"));
    assert_eq!(http.status, 500);
    let posts = server
        .labels()
        .iter()
        .filter(|label| *label == "POST tools/list")
        .count();
    assert_eq!(posts, 1, "sent once, not retried: {:?}", server.labels());
    assert_eq!(http.what, "tools/list");
    assert_eq!(http.content_type.as_deref(), Some("application/json"));
    assert!(http.body_excerpt.contains("the database is on fire"));
    assert!(error.to_string().contains("HTTP 500"), "{error}");
    // A huge error body is cut to the excerpt bound.
    let error = client
        .request("prompts/list", Value::Null, CallOptions::new())
        .unwrap_err();
    let http = error.http().unwrap();
    assert!(
        http.body_excerpt.len() <= 1024 + 3,
        "{}",
        http.body_excerpt.len()
    );
    client.close().unwrap();
}

#[test]
fn a_json_rpc_error_in_an_error_status_reaches_the_caller_as_the_peers_error() {
    // 2026-07-28 servers answer an unknown method with 404 and a JSON-RPC error for the id.
    let (server, _) = modern_server();
    let client = connect(
        HttpConfig::new(&server.url),
        McpConfig::default().mode(ProtocolMode::Modern),
    );
    let error = client
        .request("nope/nothing", Value::Null, CallOptions::new())
        .unwrap_err();
    assert_eq!(error.rpc().map(|rpc| rpc.code.0), Some(-32601), "{error}");
    client.close().unwrap();
}

#[test]
fn a_truncated_event_stream_drops_the_partial_event_and_fails_the_call_at_once() {
    let server = FakeServer::start(|req, reply| {
        if handshake(req, reply, "s-1") {
            return;
        }
        match req.rpc().as_str() {
            "tools/list" => reply.json(200, &tools_list(req), &[]),
            _ => {
                reply.sse_start(&[]);
                let token = req.json()["params"]["_meta"]["progressToken"].clone();
                reply.sse_message(
                    &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1}}),
                );
                // The response, cut off mid-event: no blank line, no event id to resume.
                let id = req.id();
                reply.sse_raw(&format!(
                    "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\""
                ));
            }
        }
    });
    let client = connect(HttpConfig::new(&server.url), legacy());
    client.list_tools().unwrap();
    let progress = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&progress);
    let error = client
        .call_tool_with(
            "slow",
            json!({}),
            CallOptions::new()
                .timeout(Duration::from_secs(60))
                .on_progress(move |_| {
                    count.fetch_add(1, Ordering::SeqCst);
                }),
        )
        .unwrap_err();
    // Nothing can resume the stream (no event id), so the caller learns it now, not at its
    // deadline a minute away: that deadline would have ended the call with `Timeout`, not
    // with the stream's loss.
    match &error {
        toolwire::Error::Io(io) => {
            assert_eq!(io.kind(), std::io::ErrorKind::ConnectionAborted, "{error}");
            assert!(
                io.to_string().contains("no event id to resume from"),
                "{error}"
            );
        }
        other => panic!("expected the stream loss, got {other:?}"),
    }
    assert_eq!(progress.load(Ordering::SeqCst), 1);
    let stats = client.rpc().unwrap().stats();
    assert_eq!(
        stats.skipped_lines, 0,
        "the partial event was never handed over"
    );
    client.close().unwrap();
}

#[test]
fn an_event_over_the_cap_is_skipped_and_the_stream_goes_on() {
    let server = FakeServer::start(|req, reply| {
        if handshake(req, reply, "s-1") {
            return;
        }
        match req.rpc().as_str() {
            "tools/list" => reply.json(200, &tools_list(req), &[]),
            _ => {
                reply.sse_start(&[]);
                reply.sse_message(&json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "y".repeat(10_000)}}));
                reply.sse_message(&text_result(req, "after the big one"));
            }
        }
    });
    let client = connect(HttpConfig::new(&server.url).max_event_bytes(2048), legacy());
    client.list_tools().unwrap();
    let result = client
        .call_tool_with("slow", json!({}), CallOptions::new())
        .unwrap();
    assert_eq!(result.text(), "after the big one");
    assert_eq!(client.rpc().unwrap().stats().oversized_frames, 1);
    client.close().unwrap();
}

#[test]
fn a_server_slower_than_the_timeout_gives_the_caller_a_timeout() {
    // The server sends the headers of `prompts/list` only when the test lets it, which is
    // after the caller got its timeout; it reports whether it was let go (true) or gave up
    // waiting (false: the caller waited for the answer instead of its deadline).
    let (release, released) = bounded::<()>(1);
    let (answered_tx, answered) = bounded::<bool>(1);
    // Whether the client closed the silent stream (true) or the server gave up on it first.
    let (closed_tx, closed) = bounded::<bool>(1);
    let server = FakeServer::start(move |req, reply| {
        if handshake(req, reply, "s-1") {
            return;
        }
        match req.rpc().as_str() {
            "tools/list" => reply.json(200, &tools_list(req), &[]),
            "prompts/list" => {
                let let_go = released.recv_timeout(SOON).is_ok();
                reply.json(200, &result(req, json!({"prompts": []})), &[]);
                let _ = answered_tx.try_send(let_go);
            }
            _ => {
                // Headers at once, then silence until the client closes the stream.
                reply.sse_start(&[]);
                let _ = closed_tx.try_send(reply.client_closed_within(SOON));
            }
        }
    });
    let client = connect(HttpConfig::new(&server.url), legacy());
    let error = client
        .request(
            "prompts/list",
            Value::Null,
            CallOptions::new().timeout(Duration::from_millis(300)),
        )
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");
    release.send(()).unwrap();
    assert!(
        answered.recv_timeout(SOON).expect("the server answered"),
        "the caller's timeout came only after the server gave up on the test's release"
    );

    client.list_tools().unwrap();
    let error = client
        .call_tool_with(
            "slow",
            json!({}),
            CallOptions::new().timeout(Duration::from_millis(300)),
        )
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");
    // A 2025 session is told with notifications/cancelled.
    let cancel = server.wait_for(SOON, |req| req.rpc() == "notifications/cancelled");
    assert_eq!(cancel.header("mcp-session-id"), Some("s-1"));
    // Nothing more is wanted from the stream, so it was closed as well: by the client, while
    // the server still held it open (so the timeout did not wait for the stream either).
    assert!(
        closed.recv_timeout(2 * SOON).expect("the stream ended"),
        "the server gave up on the stream before the client closed it"
    );
    client.close().unwrap();
}

#[test]
fn a_200_with_a_body_in_reply_to_a_notification_is_ignored() {
    let server = FakeServer::start(
        |req, reply| match (req.method.as_str(), req.rpc().as_str()) {
            ("POST", "initialize") => reply.json(200, &initialize_result(req, "2025-06-18"), &[]),
            ("POST", "tools/list") => reply.json(200, &tools_list(req), &[]),
            // What the conformance `initialize` scenario does for everything else.
            _ => reply.json(200, &json!({"jsonrpc": "2.0", "result": {}}), &[]),
        },
    );
    let client = connect(HttpConfig::new(&server.url), legacy());
    client.list_tools().unwrap();
    client.notify_roots_changed().unwrap();
    let stats = client.rpc().unwrap().stats();
    assert_eq!(stats.late_responses, 0, "the body was never handed over");
    assert_eq!(stats.skipped_lines, 0);
    assert!(server
        .labels()
        .contains(&"POST notifications/roots/list_changed".to_owned()));
    client.close().unwrap();
}

#[test]
fn a_response_sent_only_on_the_resumed_get_stream_arrives() {
    let pending = Arc::new(Mutex::new(Value::Null));
    let slot = Arc::clone(&pending);
    let server = FakeServer::start(move |req, reply| {
        if req.method == "GET" {
            if req.header("last-event-id") == Some("e-7") {
                reply.sse_start(&[]);
                reply.sse_raw("id: e-8\ndata: \n\n");
                let id = slot.lock().unwrap().clone();
                reply.sse_raw(&format!(
                    "event: message\nid: e-9\ndata: {}\n\n",
                    json!({"jsonrpc": "2.0", "id": id,
                        "result": {"content": [{"type": "text", "text": "resumed"}]}})
                ));
            } else {
                reply.send(405, "", &[], "");
            }
            return;
        }
        if handshake(req, reply, "s-1") {
            return;
        }
        match req.rpc().as_str() {
            "tools/list" => reply.json(200, &tools_list(req), &[]),
            _ => {
                *slot.lock().unwrap() = req.id();
                reply.sse_start(&[]);
                // A priming event, then a clean close before the response. The pause is the
                // server's behaviour, part of the lower bound checked below (20 + 150 ms).
                reply.sse_raw("id: e-7\nretry: 150\ndata: \n\n");
                thread::sleep(Duration::from_millis(20));
            }
        }
    });
    // Without the server's `retry: 150` the client would wait an hour before resuming, and
    // the call would end with its 5 s timeout instead of the resumed answer.
    let http = HttpConfig::new(&server.url).default_retry(Duration::from_secs(3600));
    let client = connect(http, legacy());
    client.list_tools().unwrap();
    let result = client
        .call_tool_with("slow", json!({}), CallOptions::new())
        .unwrap();
    assert_eq!(result.text(), "resumed");
    let requests = server.requests();
    let call = requests
        .iter()
        .find(|req| req.rpc() == "tools/call")
        .unwrap();
    let resume = requests
        .iter()
        .find(|req| req.header("last-event-id").is_some())
        .unwrap();
    assert_eq!(resume.method, "GET");
    assert_eq!(resume.header("last-event-id"), Some("e-7"));
    assert_eq!(resume.header("mcp-session-id"), Some("s-1"));
    assert_eq!(resume.header("accept"), Some("text/event-stream"));
    let waited = resume.at.duration_since(call.at);
    assert!(
        waited >= Duration::from_millis(160),
        "the retry interval: {waited:?}"
    );
    client.close().unwrap();
}

#[test]
fn a_json_reply_without_the_response_fails_the_call_at_once() {
    let server = FakeServer::start(|req, reply| {
        if handshake(req, reply, "s-1") {
            return;
        }
        reply.json(200, &json!({"jsonrpc": "2.0", "result": {}}), &[]);
    });
    let client = connect(HttpConfig::new(&server.url), legacy());
    // `Protocol` now, where waiting for the 5 s deadline would have given `Timeout`.
    let error = client.list_tools().unwrap_err();
    assert!(matches!(error, Error::Protocol(_)), "{error}");
    client.close().unwrap();
}

#[test]
fn a_server_request_on_the_response_stream_is_answered_by_post() {
    let answered = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&answered);
    // The POST carrying the client's answer signals the stream, which goes on only then (or,
    // in a broken test, after SOON, and the flag below fails it).
    let (answer_tx, answer_rx) = bounded::<()>(1);
    let server = FakeServer::start(move |req, reply| {
        if handshake(req, reply, "s-1") {
            return;
        }
        let body = req.json();
        if body.get("method").is_none() && body.get("id") == Some(&json!("srv-1")) {
            assert_eq!(body["result"], json!({}));
            flag.store(true, Ordering::SeqCst);
            let _ = answer_tx.try_send(());
            return reply.accepted();
        }
        match req.rpc().as_str() {
            "tools/list" => reply.json(200, &tools_list(req), &[]),
            _ => {
                reply.sse_start(&[]);
                reply.sse_message(&json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}));
                let _ = answer_rx.recv_timeout(SOON);
                reply.sse_message(&text_result(req, "pinged"));
            }
        }
    });
    let client = connect(HttpConfig::new(&server.url), legacy());
    client.list_tools().unwrap();
    let result = client
        .call_tool_with("slow", json!({}), CallOptions::new())
        .unwrap();
    assert_eq!(result.text(), "pinged");
    assert!(answered.load(Ordering::SeqCst));
    client.close().unwrap();
}

/// How a `slow` call's stream ended on the server's side.
#[derive(Debug, PartialEq)]
enum StreamEnd {
    /// The client closed it: that is the cancellation.
    ClientClosed,
    /// The server gave up after [`SOON`] of progress nobody stopped.
    ServerGaveUp,
}

/// A 2026-07-28 server; it reports how each `slow` call's stream ended.
fn modern_server() -> (FakeServer, Receiver<StreamEnd>) {
    let (ended_tx, ended) = unbounded();
    let server = FakeServer::start(move |req, reply| {
        match req.rpc().as_str() {
        "server/discover" => reply.json(
            200,
            &result(
                req,
                json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "1"}}}),
            ),
            &[],
        ),
        "tools/list" => reply.json(
            200,
            &result(
                req,
                json!({"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "private"}),
            ),
            &[],
        ),
        "tools/call" if req.json()["params"]["name"] == "slow" => {
            reply.sse_start(&[]);
            let token = req.json()["params"]["_meta"]["progressToken"].clone();
            let started = std::time::Instant::now();
            let mut step = 0;
            // A report every 50 ms (the pause is the server's behaviour), until the client
            // closes the stream or, if it never does, for SOON.
            while started.elapsed() < SOON {
                step += 1;
                let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": step}});
                if !reply.sse_message(&note) || reply.client_closed_within(Duration::from_millis(50))
                {
                    let _ = ended_tx.send(StreamEnd::ClientClosed);
                    return;
                }
            }
            let _ = ended_tx.send(StreamEnd::ServerGaveUp);
        }
        "tools/call" => reply.json(200, &text_result(req, "fast"), &[]),
        _ => reply.json(
            404,
            &json!({"jsonrpc": "2.0", "id": req.id(),
                "error": {"code": -32601, "message": "Method not found"}}),
            &[],
        ),
    }
    });
    (server, ended)
}

#[test]
fn stateless_requests_carry_the_2026_headers_and_cancel_by_closing_the_stream() {
    let (server, stream_ends) = modern_server();
    let mut config = McpConfig::default().mode(ProtocolMode::Modern);
    config = config.validate_output(false);
    let client = connect(HttpConfig::new(&server.url), config);
    let result = client
        .call_tool_with("héllo wörld", json!({}), CallOptions::new())
        .unwrap();
    assert_eq!(result.text(), "fast");

    let mut call = client
        .start_tool("slow", json!({}), CallOptions::new().want_progress(true))
        .unwrap();
    // The first report shows the stream is open and flowing; the cancel comes after it.
    match call.handle().receiver().recv_timeout(SOON) {
        Ok(toolwire::jsonrpc::CallEvent::Progress(progress)) => {
            assert_eq!(progress.progress, 1.0)
        }
        other => panic!("expected progress, got {other:?}"),
    }
    assert!(call.cancel());
    assert!(matches!(call.wait(), Err(Error::Cancelled { .. })));
    // The client closed the stream, while the server would still have gone on for SOON.
    assert_eq!(
        stream_ends.recv_timeout(2 * SOON),
        Ok(StreamEnd::ClientClosed),
        "the cancel did not close the stream"
    );
    client.close().unwrap();

    let requests = server.requests();
    let labels: Vec<String> = requests.iter().map(Req::label).collect();
    assert_eq!(
        labels,
        ["POST server/discover", "POST tools/call", "POST tools/call"],
        "no notifications/cancelled, no GET stream, no DELETE"
    );
    for req in &requests {
        assert_eq!(req.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(req.header("mcp-method"), Some(req.rpc().as_str()));
        assert_eq!(req.header("mcp-session-id"), None);
    }
    assert_eq!(requests[0].header("mcp-name"), None);
    assert_eq!(
        requests[1].header("mcp-name"),
        Some("=?base64?aMOpbGxvIHfDtnJsZA==?=")
    );
    assert_eq!(requests[2].header("mcp-name"), Some("slow"));
}

#[test]
fn auto_mode_falls_back_to_initialize_when_the_probe_is_refused() {
    let server = FakeServer::start(|req, reply| {
        if req.rpc() == "server/discover" {
            assert_eq!(req.header("mcp-protocol-version"), Some("2026-07-28"));
            assert_eq!(req.header("mcp-method"), Some("server/discover"));
            return reply.send(400, "text/plain", &[], "Unsupported protocol version");
        }
        if !handshake(req, reply, "s-1") {
            reply.json(200, &tools_list(req), &[]);
        }
    });
    let client = connect(HttpConfig::new(&server.url), McpConfig::default());
    assert_eq!(
        client.session_info().unwrap().protocol_version,
        "2025-06-18"
    );
    client.list_tools().unwrap();
    client.close().unwrap();
    assert_eq!(
        server.labels()[..3],
        [
            "POST server/discover",
            "POST initialize",
            "POST notifications/initialized"
        ]
    );
}

#[test]
fn close_is_bounded_while_streams_are_open() {
    // Whether the client closed the call's stream (true) or the server gave up on it first.
    let (closed_tx, closed) = bounded::<bool>(1);
    let server = FakeServer::start(move |req, reply| {
        if req.method == "GET" {
            // The standalone stream stays open, sending keep-alive comments (the pause is the
            // server's behaviour) until the client closes it.
            reply.sse_start(&[]);
            while reply.sse_raw(": keep-alive\n\n") {
                thread::sleep(Duration::from_millis(50));
            }
            return;
        }
        if handshake(req, reply, "s-1") {
            return;
        }
        match req.rpc().as_str() {
            "tools/list" => reply.json(200, &tools_list(req), &[]),
            _ => {
                // Open until the client closes it (or, if it never does, for 3 x SOON).
                reply.sse_start(&[]);
                let _ = closed_tx.try_send(reply.client_closed_within(3 * SOON));
            }
        }
    });
    // An hour for the DELETE and for the threads to end: neither bound can end this close, so
    // a close that returns (within the guard) did so because the streams were closed by it,
    // not because a bound ran out.
    let http = HttpConfig::new(&server.url)
        .close_timeout(Duration::from_secs(3600))
        .thread_join_grace(Duration::from_secs(3600));
    let client = connect(http, legacy());
    let call = client
        .start_tool("slow", json!({}), CallOptions::new())
        .unwrap();
    server.wait_for(SOON, |req| req.rpc() == "tools/call");
    let closer = client.clone();
    within("close", move || closer.close()).unwrap();
    assert!(call.wait().unwrap_err().is_closed());
    assert!(server.labels().contains(&"DELETE".to_owned()));
    // The call's stream was closed by the client, long before the server would have ended it.
    assert!(
        closed.recv_timeout(SOON).expect("the stream ended"),
        "the server ended the stream before the client closed it"
    );
}

#[test]
fn a_refused_connection_fails_connect_with_an_io_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    // Every bound an hour away: a connect that retried the refused connection until some
    // deadline would still be retrying when the guard fails it; the refusal itself ends it.
    let hour = Duration::from_secs(3600);
    let http = HttpConfig::new(url).connect_timeout(hour);
    let config = legacy().initialize_timeout(hour).request_timeout(hour);
    let error = within("connect", move || {
        McpClient::connect_with(http.connector(), config).unwrap_err()
    });
    assert!(matches!(error, Error::Io(_)), "{error}");
}

#[test]
fn bad_urls_and_headers_are_config_errors() {
    use toolwire::transport::HttpTransport;
    for url in ["ftp://x/mcp", "not a url"] {
        let error = HttpTransport::new(HttpConfig::new(url)).unwrap_err();
        assert!(matches!(error, Error::Config(_)), "{url}: {error}");
    }
    let error =
        HttpTransport::new(HttpConfig::new("http://127.0.0.1:1/mcp").header("bad header", "x"))
            .unwrap_err();
    assert!(error.to_string().contains("bad header"), "{error}");
    #[cfg(not(feature = "rustls"))]
    {
        let error = HttpTransport::new(HttpConfig::new("https://example.com/mcp")).unwrap_err();
        assert!(error.to_string().contains("rustls"), "{error}");
    }
}

#[test]
fn concurrent_calls_share_a_bounded_set_of_workers() {
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (now, most) = (Arc::clone(&active), Arc::clone(&peak));
    let server = FakeServer::start(move |req, reply| {
        if handshake(req, reply, "s-1") {
            return;
        }
        let running = now.fetch_add(1, Ordering::SeqCst) + 1;
        most.fetch_max(running, Ordering::SeqCst);
        thread::sleep(Duration::from_millis(30));
        now.fetch_sub(1, Ordering::SeqCst);
        let n = req.json()["params"]["n"].clone();
        if n.as_i64().unwrap_or(0) % 2 == 0 {
            reply.json(200, &result(req, json!({"n": n})), &[]);
        } else {
            reply.sse_start(&[]);
            reply.sse_message(&result(req, json!({"n": n})));
        }
    });
    let mut http = HttpConfig::new(&server.url);
    http = http.max_concurrent_posts(4);
    let client = connect(http, legacy());
    let callers: Vec<_> = (0..24)
        .map(|n| {
            let client = client.clone();
            thread::spawn(move || {
                client
                    .request("echo/n", json!({"n": n}), CallOptions::new())
                    .unwrap()
            })
        })
        .collect();
    for (n, caller) in callers.into_iter().enumerate() {
        assert_eq!(caller.join().unwrap(), json!({"n": n}));
    }
    assert!(
        peak.load(Ordering::SeqCst) <= 4,
        "{}",
        peak.load(Ordering::SeqCst)
    );
    client.close().unwrap();
}
