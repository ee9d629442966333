//! A handler blocked on its own request to the client (an `elicitation/create` on the
//! handshake protocol) is woken by the client's `notifications/cancelled` for the call it
//! serves: the wait is on the answer and the cancellation together, not on the answer alone
//! until the client request timeout (issue #21 item 5, the server's side; the gateway's is
//! in tests/gateway/pipeline.rs). The server then cancels its own request to the client.

use std::sync::{mpsc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use toolwire::harness::LocalTool;
use toolwire::jsonrpc::{CallOptions, PeerRequests};
use toolwire::server::{
    CallToolResult, HandlerError, PeerTransport, RequestContext, Server, ServerConfig,
};
use toolwire::transport::MemoryTransport;
use toolwire::{Client, ClientConfig};

/// Far past the test's own waits: only the cancellation can end the handler's wait in time.
const CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// How long the test waits for any one event before it calls the server stuck.
const STUCK: Duration = Duration::from_secs(30);

#[test]
fn a_cancelled_call_wakes_its_handler_waiting_on_the_client_and_cancels_that_request() {
    let server = Server::new(
        ServerConfig::new("cancel-ask", "1").client_request_timeout(CLIENT_REQUEST_TIMEOUT),
    )
    .unwrap();
    let (told, outcomes) = mpsc::channel::<String>();
    let told = Mutex::new(told);
    server
        .add_tool(LocalTool::with_context(
            "ask",
            "Asks the user, then says what came of it.",
            json!({"type": "object"}),
            move |context, _| {
                let context = RequestContext::of(context).expect("served");
                let outcome = match context.elicit(
                    "name",
                    json!({"message": "Name?", "requestedSchema": {"type": "object"}}),
                ) {
                    Ok(answer) => format!("answered {answer}"),
                    Err(HandlerError::InputRequired(_)) => "input required".to_owned(),
                    Err(error) => format!("failed: {error}"),
                };
                let _ = told.lock().unwrap().send(outcome);
                Ok(CallToolResult::from_text("done"))
            },
        ))
        .unwrap();

    // The client keeps the server's requests unanswered and reports its notifications.
    let (asked, requests) = mpsc::channel::<toolwire::jsonrpc::Request>();
    let asked = Mutex::new(asked);
    let (noticed, notifications) = mpsc::channel::<(String, Value)>();
    let noticed = Mutex::new(noticed);
    let (client_end, server_end) = MemoryTransport::pair();
    let _connection = server
        .connect(PeerTransport::new(server_end))
        .expect("connect");
    let client = Client::with_config(
        client_end,
        ClientConfig::default()
            .dialect(toolwire::mcp::McpDialect)
            .request_sink(move |peer| {
                if let PeerRequests::One(request) = peer {
                    let _ = asked.lock().unwrap().send(request);
                }
            })
            .on_notification(move |notification| {
                let _ = noticed.lock().unwrap().send((
                    notification.method.clone(),
                    notification.params.clone().unwrap_or(Value::Null),
                ));
            }),
    )
    .expect("client");
    client
        .call(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                   "clientInfo": {"name": "t", "version": "1"}}),
        )
        .unwrap();
    client
        .notify("notifications/initialized", Value::Null)
        .unwrap();

    let call = client
        .start(
            "tools/call",
            json!({"name": "ask", "arguments": {}}),
            CallOptions::new().timeout(STUCK),
        )
        .unwrap();
    let elicitation = requests.recv_timeout(STUCK).expect("the handler asked");
    assert_eq!(elicitation.method, "elicitation/create");
    assert!(
        outcomes.try_recv().is_err(),
        "the handler waits for the answer"
    );
    assert!(call.cancel(), "the call was still open");

    // The handler is woken by the cancellation, long before its 600 s bound.
    let outcome = outcomes.recv_timeout(STUCK).expect("the handler was woken");
    assert!(
        outcome.starts_with("failed:") && outcome.contains("cancel"),
        "{outcome}"
    );
    // And the server withdrew its own request to the client.
    let withdrawn = loop {
        let (method, params) = notifications
            .recv_timeout(STUCK)
            .expect("the server cancels its request");
        if method == "notifications/cancelled" {
            break params;
        }
    };
    assert_eq!(
        withdrawn["requestId"],
        serde_json::to_value(&elicitation.id).unwrap(),
        "{withdrawn}"
    );
}
