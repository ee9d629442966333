//! 2026-07-28 input rounds and JSON-RPC errors through the gateway: a backend's
//! `input_required` result reaches a 2026-07-28 front client with its requests as sent, the
//! retry's answers and the backend's `requestState` go back to it untouched (a changed state
//! is refused), and a round and its retry are one call for the budget; a backend's JSON-RPC
//! error reaches the front client with its code, message and data, in both eras; a
//! backend's log messages during a call reach the front client of that call at its level.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use support::{gateway, http_backend, url_entry};
use toolwire::gateway::Gateway;
use toolwire::harness::LocalTool;
use toolwire::jsonrpc::{ErrorCode, ErrorObject};
use toolwire::mcp::ElicitResult;
use toolwire::server::{CallToolResult, HandlerError, HttpServer, Server, ServerConfig};
use toolwire::{CallOptions, Error, HttpConfig, McpClient, McpConfig, ProtocolMode};

/// A backend with `greet` (asks the user's name in an input round, or with a request on the
/// handshake protocol) and `refuse` (a JSON-RPC error with data).
fn backend() -> Server {
    backend_with(ServerConfig::new("asker", "1.0"))
}

/// [`backend`] with its settings (to serve one era only).
fn backend_with(config: ServerConfig) -> Server {
    let server = Server::new(config).unwrap();
    server
        .add_tool(
            LocalTool::with_context(
                "greet",
                "Asks for a name.",
                json!({"type": "object", "properties": {}}),
                |context, _| {
                    let answer = context.request_input(
                        "name",
                        "elicitation/create",
                        json!({"message": "Your name?", "requestedSchema": {"type": "object",
                            "properties": {"name": {"type": "string"}}, "required": ["name"]}}),
                    )?;
                    let name = answer["content"]["name"].as_str().unwrap_or("?").to_owned();
                    Ok(CallToolResult::from_text(format!("Hello, {name}!")))
                },
            )
            .requires("elicitation"),
        )
        .unwrap();
    server
        .add_tool(LocalTool::with_context(
            "refuse",
            "Refuses with a JSON-RPC error.",
            json!({"type": "object", "properties": {}}),
            |_, _| {
                Err(HandlerError::Rpc(
                    ErrorObject::new(ErrorCode(-32050), "not today")
                        .with_data(json!({"retryAfter": 3})),
                )
                .into_failure())
            },
        ))
        .unwrap();
    server
        .add_tool(LocalTool::with_context(
            "chatty",
            "Logs while it works.",
            json!({"type": "object", "properties": {}}),
            |context, _| {
                context.log_message(log::Level::Debug, "detail");
                context.log_message(log::Level::Warn, "careful");
                Ok(CallToolResult::from_text("done"))
            },
        ))
        .unwrap();
    server
}

fn front(http: &HttpServer, config: McpConfig) -> McpClient {
    McpClient::connect_http(HttpConfig::new(http.url()), config).expect("front client over HTTP")
}

/// A 2026-07-28 front client that answers elicitations with the name "Ada", recording them.
fn modern_front(http: &HttpServer) -> (McpClient, Arc<Mutex<Vec<Value>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&asked);
    let client = front(
        http,
        McpConfig::default()
            .mode(ProtocolMode::Modern)
            .elicitation(move |request| {
                record.lock().unwrap().push(request.raw.clone());
                ElicitResult::Accept(json!({"name": "Ada"}))
            }),
    );
    (client, asked)
}

fn started(policy: &str) -> (Gateway, HttpServer, HttpServer) {
    started_with(backend(), policy)
}

fn started_with(backend: Server, policy: &str) -> (Gateway, HttpServer, HttpServer) {
    let (backend_http, url) = http_backend(&backend);
    let gateway = gateway(&[("asker", url_entry(&url))], policy);
    let front_http = gateway.serve_http("127.0.0.1:0".parse().unwrap()).unwrap();
    (gateway, backend_http, front_http)
}

#[test]
fn a_backends_input_round_reaches_a_modern_front_client_and_is_one_call() {
    let (_gateway, _backend, http) = started(r#"{"calls_per_caller": 1, "namespace": "{tool}"}"#);
    let (client, asked) = modern_front(&http);
    let result = client.call_tool("greet", json!({})).unwrap();
    assert_eq!(result.text(), "Hello, Ada!", "{:?}", result.raw);
    // The front client answered the backend's own request, as the backend sent it.
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["message"], json!("Your name?"));
    // The round and its retry were one call: the budget of one is spent now.
    let over = client.call_tool("greet", json!({})).unwrap();
    assert!(over.text().starts_with("BUDGET: "), "{:?}", over.raw);
    client.close().unwrap();
}

#[test]
fn the_retry_goes_back_untouched_and_a_changed_state_is_refused() {
    let (_gateway, _backend, http) = started(r#"{"namespace": "{tool}"}"#);
    let (client, _) = modern_front(&http);
    let params = json!({"name": "greet", "arguments": {},
        "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
    let round = client
        .request_passing("tools/call", params.clone(), CallOptions::new())
        .unwrap();
    assert_eq!(round["resultType"], json!("input_required"), "{round}");
    assert_eq!(
        round["inputRequests"]["name"]["method"],
        json!("elicitation/create")
    );
    let state = round["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned();
    let answer = json!({"name": {"action": "accept", "content": {"name": "Grace"}}});
    let retry = |state: &str| {
        let mut retry = params.clone();
        retry["inputResponses"] = answer.clone();
        retry["requestState"] = json!(state);
        client.request_passing("tools/call", retry, CallOptions::new())
    };
    let mut changed = state.clone().into_bytes();
    changed[2] = if changed[2] == b'A' { b'B' } else { b'A' };
    let refused = retry(std::str::from_utf8(&changed).unwrap()).unwrap_err();
    assert!(
        matches!(&refused, Error::Rpc(error) if error.code == ErrorCode::INVALID_PARAMS),
        "{refused}"
    );
    let done = retry(&state).unwrap();
    assert_eq!(done["content"][0]["text"], json!("Hello, Grace!"), "{done}");
    client.close().unwrap();
}

#[test]
fn a_backends_json_rpc_error_reaches_the_front_client_in_both_eras() {
    let (_gateway, _backend, http) = started(r#"{"namespace": "{tool}"}"#);
    for mode in [ProtocolMode::Modern, ProtocolMode::Legacy] {
        let client = front(&http, McpConfig::default().mode(mode));
        let error = client.call_tool("refuse", json!({})).unwrap_err();
        let Error::Rpc(error) = error else {
            panic!("{mode:?}: not a JSON-RPC error: {error}");
        };
        assert_eq!(error.code, ErrorCode(-32050), "{mode:?}");
        assert_eq!(error.message, "not today", "{mode:?}");
        assert_eq!(error.data, Some(json!({"retryAfter": 3})), "{mode:?}");
        client.close().unwrap();
    }
}

#[test]
fn a_modern_backends_input_round_is_an_ordinary_request_to_a_handshake_era_front_client() {
    // The backend serves 2026-07-28 only: its question can only come as an input round.
    let modern_only =
        backend_with(ServerConfig::new("asker", "1.0").handshake_versions(Vec::<String>::new()));
    let (_gateway, _backend, http) = started_with(modern_only, r#"{"namespace": "{tool}"}"#);
    let asked = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&asked);
    let client = front(
        &http,
        McpConfig::default()
            .mode(ProtocolMode::Legacy)
            .elicitation(move |request| {
                record.lock().unwrap().push(request.raw.clone());
                ElicitResult::Accept(json!({"name": "Lin"}))
            }),
    );
    let result = client.call_tool("greet", json!({})).unwrap();
    assert_eq!(result.text(), "Hello, Lin!", "{:?}", result.raw);
    // Asked once, with the backend's own elicitation, as an ordinary request.
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["message"], json!("Your name?"));
    client.close().unwrap();
}

#[test]
fn a_backends_log_messages_reach_the_front_client_of_the_call_at_its_level() {
    let (_gateway, _backend, http) = started(r#"{"namespace": "{tool}"}"#);
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&heard);
        let client = front(
            &http,
            // In order, on the reader thread: the message is recorded before the call's
            // response is handled (`on_log` runs on the dispatch thread, which may come later).
            McpConfig::default()
                .mode(mode)
                .on_log_in_order(move |message| {
                    record.lock().unwrap().push(message.clone());
                }),
        );
        client.set_logging_level("info").unwrap();
        let result = client.call_tool("chatty", json!({})).unwrap();
        assert_eq!(result.text(), "done", "{mode:?}");
        let heard = heard.lock().unwrap().clone();
        // The warning as the backend sent it; the debug line is below the front's level.
        assert_eq!(heard.len(), 1, "{mode:?}: {heard:?}");
        assert_eq!(heard[0].level, "warning", "{mode:?}");
        assert_eq!(heard[0].data, json!("careful"), "{mode:?}");
        client.close().unwrap();
    }
}

#[test]
fn a_round_and_its_retry_are_one_call_in_the_audit() {
    use toolwire::harness::{AuditKind, Transcript};
    let folder = std::env::temp_dir().join(format!(
        "toolwire-gw-rounds-audit-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("audit.jsonl");
    let transcript = Arc::new(Transcript::create(&path).unwrap());
    let backend = backend();
    let (_backend_http, url) = http_backend(&backend);
    let gateway = support::gateway_with(
        &[("asker", url_entry(&url))],
        r#"{"namespace": "{tool}"}"#,
        toolwire::gateway::GatewayConfig::new().transcript(transcript),
    );
    let http = gateway.serve_http("127.0.0.1:0".parse().unwrap()).unwrap();
    let (client, asked) = modern_front(&http);
    let result = client.call_tool("greet", json!({})).unwrap();
    assert_eq!(result.text(), "Hello, Ada!", "{:?}", result.raw);
    assert_eq!(asked.lock().unwrap().len(), 1, "one round was asked");
    client.close().unwrap();
    drop(http);
    gateway.close();
    let events = Transcript::replay(&path).unwrap();
    let greet: Vec<_> = events
        .iter()
        .filter(|event| event.tool.as_deref() == Some("greet"))
        .collect();
    // The first request (answered with the round) and its retry both ran through the
    // pipeline: two requests to the backend, one call id for both.
    let requests = greet
        .iter()
        .filter(|event| event.kind == AuditKind::Request)
        .count();
    assert_eq!(requests, 2, "the request and its retry: {greet:#?}");
    let ids: std::collections::BTreeSet<_> =
        greet.iter().map(|event| event.call_id.clone()).collect();
    assert_eq!(
        ids.len(),
        1,
        "one call id for the round and its retry: {ids:?}"
    );
    let id = ids.into_iter().next().unwrap().expect("a call id");
    assert!(id.starts_with("round "), "{id}");
    // The first leg ends as a round passed on (not as a tool that found nothing), the retry
    // with the result.
    let finished: Vec<_> = greet
        .iter()
        .filter(|event| event.kind == AuditKind::Finished)
        .collect();
    assert_eq!(finished.len(), 2, "{greet:#?}");
    assert_eq!(
        finished[0].status,
        Some(toolwire::harness::Status::Ok),
        "{greet:#?}"
    );
    assert!(
        finished[0]
            .detail
            .contains("an input round of 1 request(s)"),
        "{greet:#?}"
    );
    assert_eq!(
        finished[1].status,
        Some(toolwire::harness::Status::Ok),
        "{greet:#?}"
    );
    assert_eq!(finished[1].size, Some("Hello, Ada!".len()), "{greet:#?}");
    let _ = std::fs::remove_dir_all(&folder);
}
