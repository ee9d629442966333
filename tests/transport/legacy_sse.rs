//! The legacy HTTP+SSE transport (2024-11-05) against a fake server on 127.0.0.1: the GET
//! stream names the endpoint, every message is POSTed there (202) and answered on the
//! stream. The faults of the Streamable HTTP transport again: a stream that drops (pending
//! calls fail at once), an endpoint on another origin (refused, nothing POSTed), a slow
//! server (the call's deadline), an oversize event (skipped, the stream goes on), an error
//! status (the call fails at once with it).
#![cfg(feature = "http")]

use crate::support::http_fake as fake;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, Sender};
use fake::{within, FakeServer, Reply, Req};
use serde_json::{json, Value};
use toolwire::mcp::McpDialect;
use toolwire::transport::LegacySseTransport;
use toolwire::{CallOptions, ClientConfig, Error, HttpConfig, McpClient, McpConfig, ProtocolMode};

/// What the fake does with a POSTed request, by method.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// The stream ends once the tool is called.
    DropOnCall,
    /// The tool call is accepted and never answered.
    SlowCall,
    /// An event larger than the client's cap comes before the call's answer.
    Oversize,
    /// The tool call's POST gets 500.
    ErrorStatus,
}

struct Fake {
    server: FakeServer,
    port: u16,
}

/// A legacy server: GET /sse streams `endpoint` then whatever the POSTs put on `events`.
fn start(fault: Fault, endpoint: Option<String>) -> Fake {
    let (events, stream): (Sender<Option<String>>, Receiver<Option<String>>) = unbounded();
    let stream = Arc::new(Mutex::new(Some(stream)));
    let server = FakeServer::start(move |req: &Req, reply: &mut Reply<'_>| {
        if req.method == "GET" {
            let Some(stream) = stream.lock().unwrap().take() else {
                return reply.send(409, "", &[], "one stream at a time");
            };
            reply.sse_start(&[]);
            let endpoint = endpoint
                .clone()
                .unwrap_or_else(|| "/messages/?session_id=abc".to_owned());
            reply.sse_raw(&format!(": hello\n\nevent: endpoint\ndata: {endpoint}\n\n"));
            while let Ok(Some(event)) = stream.recv() {
                if !reply.sse_raw(&event) {
                    return;
                }
            }
            return;
        }
        assert_eq!(
            req.path, "/messages/?session_id=abc",
            "POSTs go to the endpoint"
        );
        let message = req.json();
        let method = req.rpc();
        if method == "tools/call" && fault == Fault::ErrorStatus {
            return reply.send(500, "text/plain", &[], "the backend is down");
        }
        reply.accepted();
        let Some(id) = message.get("id").cloned() else {
            return;
        };
        let result = match method.as_str() {
            "initialize" => json!({"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                                   "serverInfo": {"name": "legacy", "version": "1"}}),
            "tools/list" => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
            "tools/call" => match fault {
                Fault::DropOnCall => {
                    let _ = events.send(None);
                    return;
                }
                Fault::SlowCall => return,
                Fault::Oversize => {
                    let big = "x".repeat(4096);
                    let _ = events.send(Some(format!("event: message\ndata: \"{big}\"\n\n")));
                    json!({"content": [{"type": "text", "text": "after the big one"}]})
                }
                _ => json!({"content": [{"type": "text", "text":
                        message["params"]["arguments"]["message"].clone()}]}),
            },
            _ => json!({}),
        };
        let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
        let _ = events.send(Some(format!("event: message\ndata: {response}\n\n")));
    });
    let port = server
        .url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    Fake { server, port }
}

fn sse_url(fake: &Fake) -> String {
    format!("http://127.0.0.1:{}/sse", fake.port)
}

fn connect(fake: &Fake, http: HttpConfig) -> toolwire::Result<McpClient> {
    let config = McpConfig::default().mode(ProtocolMode::Legacy).rpc(
        ClientConfig::default()
            .dialect(McpDialect)
            .request_timeout(Duration::from_secs(60)),
    );
    let _ = fake;
    McpClient::connect_with(http.legacy_sse_connector(), config)
}

#[test]
fn messages_go_to_the_endpoint_and_answers_come_on_the_stream() {
    let fake = start(Fault::None, None);
    let client = connect(&fake, HttpConfig::new(sse_url(&fake))).unwrap();
    assert_eq!(
        client.session_info().unwrap().protocol_version,
        "2024-11-05"
    );
    assert_eq!(client.list_tools().unwrap()[0].name, "echo");
    let result = client.call_tool("echo", json!({"message": "hi"})).unwrap();
    assert_eq!(result.text(), "hi");
    let labels = fake.server.labels();
    assert_eq!(labels[0], "GET");
    assert!(
        labels.contains(&"POST notifications/initialized".to_owned()),
        "{labels:?}"
    );
    let get = &fake.server.requests()[0];
    assert_eq!(get.header("Accept"), Some("text/event-stream"));
    client.close().unwrap();
}

#[test]
fn a_stream_that_drops_fails_the_pending_calls_at_once() {
    let fake = start(Fault::DropOnCall, None);
    let client = connect(&fake, HttpConfig::new(sse_url(&fake))).unwrap();
    let caller = client.clone();
    // The call's own deadline is 60 s: ending within the hang guard, Closed, proves "at once".
    let error = within("the call on a dropped stream", move || {
        caller
            .call_tool("echo", json!({"message": "lost"}))
            .unwrap_err()
    });
    assert!(error.is_closed(), "{error:?}");
    assert!(error.to_string().contains("ended"), "{error}");
    assert!(client.call_tool("echo", json!({})).unwrap_err().is_closed());
    client.close().unwrap();
}

#[test]
fn an_endpoint_on_another_origin_is_refused_and_nothing_is_posted_there() {
    let fake = start(Fault::None, Some("http://127.0.0.2:1/messages".into()));
    let error = connect(&fake, HttpConfig::new(sse_url(&fake))).unwrap_err();
    assert!(error.to_string().contains("another origin"), "{error}");
    assert_eq!(fake.server.labels(), ["GET"], "nothing was POSTed");
}

#[test]
fn a_slow_server_ends_the_call_at_its_deadline_and_close_is_bounded() {
    let fake = start(Fault::SlowCall, None);
    let client = connect(&fake, HttpConfig::new(sse_url(&fake))).unwrap();
    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    let error = client
        .call_tool_with("echo", json!({}), CallOptions::new().timeout(timeout))
        .unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error:?}");
    assert!(started.elapsed() >= timeout);
    // The cancellation notice went out as a POST.
    fake.server.wait_for(Duration::from_secs(10), |req| {
        req.rpc() == "notifications/cancelled"
    });
    within("close", move || client.close().unwrap());
}

#[test]
fn an_oversize_event_is_skipped_and_the_stream_goes_on() {
    let fake = start(Fault::Oversize, None);
    let client = connect(&fake, HttpConfig::new(sse_url(&fake)).max_event_bytes(1024)).unwrap();
    let result = client.call_tool("echo", json!({})).unwrap();
    assert_eq!(result.text(), "after the big one");
    assert_eq!(client.rpc().unwrap().stats().oversized_frames, 1);
    client.close().unwrap();
}

#[test]
fn an_error_status_fails_the_call_at_once_with_it() {
    let fake = start(Fault::ErrorStatus, None);
    let client = connect(
        &fake,
        HttpConfig::new(sse_url(&fake)).bearer_token("s3cret-token"),
    )
    .unwrap();
    let caller = client.clone();
    let error = within("the refused call", move || {
        caller.call_tool("echo", json!({})).unwrap_err()
    });
    let http = error.http().unwrap_or_else(|| panic!("{error:?}"));
    assert_eq!(http.status, 500);
    assert!(http.body_excerpt.contains("backend is down"));
    assert!(!format!("{error} {error:?}").contains("s3cret-token"));
    // The token went with every request.
    let posts: Vec<Req> = fake.server.requests();
    assert!(posts
        .iter()
        .all(|req| req.header("Authorization") == Some("Bearer s3cret-token")));
    client.close().unwrap();
}

#[test]
fn the_transport_reports_its_endpoint() {
    let fake = start(Fault::None, None);
    let transport = Arc::new(LegacySseTransport::new(HttpConfig::new(sse_url(&fake))).unwrap());
    let made = Arc::clone(&transport);
    let slot = Mutex::new(Some(made as Arc<dyn toolwire::transport::Transport>));
    let config = McpConfig::default().mode(ProtocolMode::Legacy);
    let client = McpClient::connect_with(
        Box::new(move || {
            slot.lock()
                .unwrap()
                .take()
                .ok_or_else(|| Error::Config("once".into()))
        }),
        config,
    )
    .unwrap();
    assert_eq!(
        transport.endpoint().as_deref(),
        Some(format!("http://127.0.0.1:{}/messages/?session_id=abc", fake.port).as_str())
    );
    assert!(transport.posts_sent() >= 1);
    client.close().unwrap();
    let _: Value = json!(null);
}
