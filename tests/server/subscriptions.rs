//! 2026-07-28's `subscriptions/listen`: the acknowledgement comes first and says what the
//! server agreed to send; list changes reach only the subscriptions that asked for them, each
//! tagged with the subscription's id; a cancelled subscription gets nothing more; over HTTP
//! the subscription is a stream that ends when the client closes it.

use crate::support::server as support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

use serde_json::{json, Value};
use toolwire::harness::LocalTool;
use toolwire::jsonrpc::Message;
use toolwire::server::{
    CallToolResult, HttpServer, HttpServerConfig, PeerTransport, PromptResult, Server,
    ServerConfig, ServerPrompt,
};
use toolwire::transport::MemoryTransport;

use support::{authority, meta, stateless_headers, LONG};

fn server() -> Server {
    let server = Server::new(ServerConfig::new("subscriptions", "1")).unwrap();
    server
        .add_tool(LocalTool::with_context(
            "a",
            "A.",
            json!({"type": "object"}),
            |_, _| Ok(CallToolResult::from_text("a")),
        ))
        .unwrap();
    server
        .add_prompt(ServerPrompt::new("p", "P.", |_, _| {
            Ok(PromptResult::new().user_text("p"))
        }))
        .unwrap();
    server
}

fn tool(name: &str) -> LocalTool {
    LocalTool::with_context(name, "New.", json!({"type": "object"}), |_, _| {
        Ok(CallToolResult::from_text("new"))
    })
}

#[test]
fn a_subscription_gets_what_it_asked_for_tagged_with_its_id() {
    let server = server();
    // A raw exchange through the memory pair keeps every frame in view.
    let (transport, peer) = MemoryTransport::pair();
    let connection = server.connect(PeerTransport::new(peer)).unwrap();
    let listen = json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true, "resourcesListChanged": true},
                   "_meta": meta(json!({}))}});
    let raw = toolwire::jsonrpc::parse_frame(listen.to_string().as_bytes()).unwrap();
    let toolwire::jsonrpc::Frame::Single(Message::Request(request)) = raw else {
        panic!()
    };
    let (frames_tx, frames) = crossbeam_channel::unbounded::<Value>();
    let client = toolwire::Client::with_config(
        transport,
        toolwire::ClientConfig::default()
            .dialect(toolwire::mcp::McpDialect)
            .on_notification(move |notification| {
                let _ = frames_tx
                    .send(json!({"method": notification.method, "params": notification.params}));
            }),
    )
    .unwrap();
    let handle = client
        .start(
            &request.method,
            request.params.unwrap(),
            toolwire::CallOptions::new().timeout(LONG),
        )
        .unwrap();
    let ack = frames.recv_timeout(LONG).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    // Resources are not served here: only tools were agreed to.
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    let id = ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone();
    assert!(id.is_i64(), "{ack}");
    server
        .add_prompt(ServerPrompt::new("q", "Q.", |_, _| {
            Ok(PromptResult::new().user_text("q"))
        }))
        .unwrap();
    server.add_tool(tool("b")).unwrap();
    let changed = frames.recv_timeout(LONG).unwrap();
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "the prompt change leaked: {changed}"
    );
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );
    // Cancelled: nothing more.
    assert!(handle.cancel());
    assert!(support::eventually(support::LONG, || connection
        .in_flight()
        == 0));
    server.add_tool(tool("c")).unwrap();
    // A notification would have been on its way before the answer to this.
    let listed = client
        .call("tools/list", json!({"_meta": meta(json!({}))}))
        .unwrap();
    assert_eq!(listed["tools"].as_array().unwrap().len(), 3);
    assert!(
        frames.try_recv().is_err(),
        "a cancelled subscription still hears"
    );
    client.close().unwrap();
    connection.wait();
}

#[test]
fn over_http_a_subscription_is_a_stream_until_the_client_closes_it() {
    let server = server();
    let http = HttpServer::bind(&server, HttpServerConfig::new()).unwrap();
    let discover = support::post(
        &http.url(),
        &stateless_headers("server/discover", None),
        &support::stateless_request(1, "server/discover", json!({})),
    );
    assert_eq!(
        discover.messages()[0]["result"]["capabilities"]["tools"]["listChanged"],
        true
    );
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
        "params": {"notifications": {"promptsListChanged": true}, "_meta": meta(json!({}))}})
    .to_string();
    let mut stream = TcpStream::connect(authority(&http.url())).unwrap();
    stream.set_read_timeout(Some(LONG)).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{}Content-Length: {}\r\n\r\n{body}",
        authority(&http.url()),
        stateless_headers("subscriptions/listen", None),
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut next = || loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        if let Some(data) = line.trim_end().strip_prefix("data: ") {
            return serde_json::from_str::<Value>(data).unwrap();
        }
    };
    let ack = next();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    server.add_tool(tool("b")).unwrap();
    server
        .add_prompt(ServerPrompt::new("q", "Q.", |_, _| {
            Ok(PromptResult::new().user_text("q"))
        }))
        .unwrap();
    let changed = next();
    assert_eq!(
        changed["method"], "notifications/prompts/list_changed",
        "{changed}"
    );
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    drop(reader);
    assert!(support::eventually(support::LONG, || http.connections() == 0));
    http.close().unwrap();
}
