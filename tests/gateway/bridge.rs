//! A handshake-era backend's requests during a 2026-07-28 front client's call, bridged into
//! input rounds: elicitation, sampling and roots answered through rounds and the call
//! completed with the answers; two rounds in one call; a round and its retries are one call
//! for the budget and the audit; a retry whose held call is gone is refused (-32602) with
//! the advice to start again, whether it was answered already, waited past its bound, or the
//! gateway closed; the held calls are bounded; and the backend's log messages and progress
//! after a round reach the retry waiting on the call then.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{eventually, LONG};
use serde_json::{json, Value};
use support::{gateway_with, http_backend, url_entry};
use toolwire::gateway::{Gateway, GatewayConfig, STATS_METHOD};
use toolwire::harness::{AuditKind, LocalTool, Transcript};
use toolwire::jsonrpc::ErrorCode;
use toolwire::mcp::{ElicitResult, Root};
use toolwire::server::{CallToolResult, HttpServer, Server, ServerConfig};
use toolwire::{CallOptions, Error, HttpConfig, McpClient, McpConfig, ProtocolMode};

const NAME_QUESTION: &str = "Your name?";

/// A backend tool's body: its context and the request params it asks with; its text.
type Asking = fn(&dyn toolwire::harness::ToolContext, &Value) -> String;

/// A backend on the handshake protocol only, whose tools ask their client during the call:
/// `greet` (elicitation), `summarize` (sampling), `where` (roots), `twice` (elicitation, then
/// sampling).
fn asking_backend() -> Server {
    let server = Server::new(ServerConfig::new("asker", "1.0").stateless(false)).unwrap();
    let elicit = json!({"message": NAME_QUESTION, "requestedSchema": {"type": "object",
        "properties": {"name": {"type": "string"}}, "required": ["name"]}});
    let sample = json!({"messages": [{"role": "user",
        "content": {"type": "text", "text": "Summarize: bridges"}}], "maxTokens": 20});
    let tool = |name: &str, run: Asking, params: Value| {
        LocalTool::with_context(
            name,
            "Asks its client.",
            json!({"type": "object", "properties": {}}),
            move |context, _| Ok(CallToolResult::from_text(run(context, &params))),
        )
    };
    let greet: Asking =
        |context, params| match context.request_input("name", "elicitation/create", params.clone())
        {
            Ok(answer) => format!(
                "Hello, {}!",
                answer["content"]["name"].as_str().unwrap_or("?")
            ),
            Err(failure) => format!("not asked: {}", failure.message()),
        };
    server
        .add_tool(tool("greet", greet, elicit.clone()))
        .unwrap();
    let summarize: Asking = |context, params| match context.request_input(
        "s",
        "sampling/createMessage",
        params.clone(),
    ) {
        Ok(answer) => format!(
            "model said: {}",
            answer["content"]["text"].as_str().unwrap_or("?")
        ),
        Err(failure) => format!("not sampled: {}", failure.message()),
    };
    server
        .add_tool(tool("summarize", summarize, sample.clone()))
        .unwrap();
    let roots: Asking = |context, _| match context.request_input("r", "roots/list", json!({})) {
        Ok(answer) => {
            let uris: Vec<&str> = answer["roots"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|root| root["uri"].as_str())
                .collect();
            format!("roots: {}", uris.join(","))
        }
        Err(failure) => format!("no roots: {}", failure.message()),
    };
    server.add_tool(tool("where", roots, Value::Null)).unwrap();
    let twice: Asking = |context, params| {
        let name =
            match context.request_input("name", "elicitation/create", params["elicit"].clone()) {
                Ok(answer) => answer["content"]["name"].as_str().unwrap_or("?").to_owned(),
                Err(failure) => return format!("not asked: {}", failure.message()),
            };
        match context.request_input("s", "sampling/createMessage", params["sample"].clone()) {
            Ok(answer) => format!(
                "{name} / {}",
                answer["content"]["text"].as_str().unwrap_or("?")
            ),
            Err(failure) => format!("not sampled: {}", failure.message()),
        }
    };
    server
        .add_tool(tool(
            "twice",
            twice,
            json!({"elicit": elicit, "sample": sample}),
        ))
        .unwrap();
    server
}

/// A gateway over HTTP in front of `backends` asking backends (their names).
struct Bridged {
    gateway: Gateway,
    http: HttpServer,
    _backends: Vec<HttpServer>,
}

fn bridged(names: &[&str], policy: &str, config: GatewayConfig) -> Bridged {
    let servers = names.iter().map(|name| (*name, asking_backend())).collect();
    bridged_with(servers, policy, config)
}

/// [`bridged`] in front of `servers`.
fn bridged_with(servers: Vec<(&str, Server)>, policy: &str, config: GatewayConfig) -> Bridged {
    let mut backends = Vec::new();
    let mut entries = Vec::new();
    for (name, server) in servers {
        let (http, url) = http_backend(&server);
        backends.push(http);
        entries.push((name, url_entry(&url)));
    }
    let gateway = gateway_with(&entries, policy, config);
    let http = gateway.serve_http("127.0.0.1:0".parse().unwrap()).unwrap();
    Bridged {
        gateway,
        http,
        _backends: backends,
    }
}

/// What the 2026-07-28 front client was asked, in order.
type Asked = Arc<Mutex<Vec<(String, Value)>>>;

/// A 2026-07-28 front client that answers elicitation ("Ada"), sampling ("a short summary")
/// and roots (`file:///work`), recording each request.
fn modern_front(http: &HttpServer) -> (McpClient, Asked) {
    let asked: Asked = Arc::default();
    let (elicited, sampled, rooted) = (Arc::clone(&asked), Arc::clone(&asked), Arc::clone(&asked));
    let config = McpConfig::default()
        .mode(ProtocolMode::Modern)
        .elicitation(move |request| {
            elicited
                .lock()
                .unwrap()
                .push(("elicitation".into(), request.raw.clone()));
            ElicitResult::Accept(json!({"name": "Ada"}))
        })
        .sampling(move |params| {
            sampled
                .lock()
                .unwrap()
                .push(("sampling".into(), params.clone()));
            Ok(json!({"role": "assistant", "model": "test",
                "content": {"type": "text", "text": "a short summary"}}))
        })
        .roots(move || {
            rooted.lock().unwrap().push(("roots".into(), Value::Null));
            vec![Root {
                uri: "file:///work".into(),
                name: Some("work".into()),
            }]
        });
    let client = McpClient::connect_http(HttpConfig::new(http.url()), config).unwrap();
    (client, asked)
}

fn held_rounds(client: &McpClient) -> u64 {
    let stats = client
        .request(STATS_METHOD, json!({}), CallOptions::new())
        .unwrap();
    stats["held_rounds"]
        .as_u64()
        .expect("held_rounds in the stats")
}

/// The params of a raw `tools/call` of `name` that declares every client capability.
fn call_params(name: &str) -> Value {
    json!({"name": name, "arguments": {},
        "_meta": {"io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {}, "sampling": {}, "roots": {}}}})
}

/// `params` as the retry of `round` with `answers`.
fn retry_of(params: &Value, round: &Value, answers: Value) -> Value {
    let mut retry = params.clone();
    retry["inputResponses"] = answers;
    retry["requestState"] = round["requestState"].clone();
    retry
}

fn invalid_params(result: Result<Value, Error>) -> String {
    match result {
        Err(Error::Rpc(error)) if error.code == ErrorCode::INVALID_PARAMS => error.message,
        other => panic!("not a -32602 refusal: {other:?}"),
    }
}

#[test]
fn an_elicitation_is_bridged_and_the_round_with_its_retry_is_one_call() {
    let folder = std::env::temp_dir().join(format!("toolwire-bridge-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("audit.jsonl");
    let transcript = Arc::new(Transcript::create(&path).unwrap());
    let setup = bridged(
        &["asker"],
        r#"{"calls_per_caller": 1, "namespace": "{tool}"}"#,
        GatewayConfig::new().transcript(transcript),
    );
    let (client, asked) = modern_front(&setup.http);
    let result = client.call_tool("greet", json!({})).unwrap();
    assert_eq!(result.text(), "Hello, Ada!", "{:?}", result.raw);
    // The front client was asked the backend's own question, as the backend sent it.
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].0, "elicitation");
    assert_eq!(asked[0].1["message"], json!(NAME_QUESTION));
    // One budget unit: the budget of one is spent now.
    let over = client.call_tool("greet", json!({})).unwrap();
    assert!(over.text().starts_with("BUDGET: "), "{:?}", over.raw);
    assert_eq!(held_rounds(&client), 0);
    client.close().unwrap();
    setup.gateway.close();
    // One call in the audit: one sending, every line with one call_id; the second call was
    // refused (BUDGET) before any sending.
    let events = Transcript::replay(&path).unwrap();
    let greet: Vec<_> = events
        .iter()
        .filter(|event| event.tool.as_deref() == Some("greet"))
        .collect();
    let sent: Vec<_> = greet
        .iter()
        .filter(|event| event.kind == AuditKind::Request)
        .collect();
    assert_eq!(sent.len(), 1, "{greet:?}");
    let first: Vec<_> = greet
        .iter()
        .filter(|event| event.call == sent[0].call)
        .collect();
    assert!(first.len() >= 3, "{first:?}");
    assert!(sent[0].call_id.is_some(), "{first:?}");
    assert!(
        first.iter().all(|event| event.call_id == sent[0].call_id),
        "{first:?}"
    );
    let _ = std::fs::remove_dir_all(&folder);
}

#[test]
fn sampling_and_roots_are_bridged_and_two_rounds_fit_in_one_call() {
    let setup = bridged(
        &["asker"],
        r#"{"calls_per_caller": 3, "namespace": "{tool}"}"#,
        GatewayConfig::new(),
    );
    let (client, asked) = modern_front(&setup.http);
    let sampled = client.call_tool("summarize", json!({})).unwrap();
    assert_eq!(
        sampled.text(),
        "model said: a short summary",
        "{:?}",
        sampled.raw
    );
    let rooted = client.call_tool("where", json!({})).unwrap();
    assert_eq!(rooted.text(), "roots: file:///work", "{:?}", rooted.raw);
    let both = client.call_tool("twice", json!({})).unwrap();
    assert_eq!(both.text(), "Ada / a short summary", "{:?}", both.raw);
    let kinds: Vec<String> = asked
        .lock()
        .unwrap()
        .iter()
        .map(|(kind, _)| kind.clone())
        .collect();
    assert_eq!(kinds, ["sampling", "roots", "elicitation", "sampling"]);
    let sampling = &asked.lock().unwrap()[0].1;
    assert_eq!(sampling["maxTokens"], json!(20), "{sampling}");
    // Three calls, three units: a fourth is over the budget.
    let over = client.call_tool("greet", json!({})).unwrap();
    assert!(over.text().starts_with("BUDGET: "), "{:?}", over.raw);
    assert_eq!(held_rounds(&client), 0);
    client.close().unwrap();
}

#[test]
fn a_round_on_the_wire_names_the_backends_request_and_a_spent_state_is_refused() {
    let setup = bridged(
        &["asker"],
        r#"{"namespace": "{tool}"}"#,
        GatewayConfig::new(),
    );
    let (client, _) = modern_front(&setup.http);
    let params = call_params("twice");
    let first = client
        .request_passing("tools/call", params.clone(), CallOptions::new())
        .unwrap();
    assert_eq!(first["resultType"], json!("input_required"), "{first}");
    let request = &first["inputRequests"]["elicitation-1"];
    assert_eq!(request["method"], json!("elicitation/create"), "{first}");
    assert_eq!(
        request["params"]["message"],
        json!(NAME_QUESTION),
        "{first}"
    );
    assert!(first["requestState"].is_string(), "{first}");
    assert_eq!(held_rounds(&client), 1);
    // A retry without the answer is refused, and the round stays held.
    let message = invalid_params(client.request_passing(
        "tools/call",
        retry_of(&params, &first, json!({})),
        CallOptions::new(),
    ));
    assert!(message.contains("elicitation-1"), "{message}");
    let answer = json!({"elicitation-1": {"action": "accept", "content": {"name": "Lin"}}});
    let second = client
        .request_passing(
            "tools/call",
            retry_of(&params, &first, answer.clone()),
            CallOptions::new(),
        )
        .unwrap();
    assert_eq!(second["resultType"], json!("input_required"), "{second}");
    assert_eq!(
        second["inputRequests"]["sampling-2"]["method"],
        json!("sampling/createMessage"),
        "{second}"
    );
    // The first round's state again: that round was answered, nothing holds it.
    let message = invalid_params(client.request_passing(
        "tools/call",
        retry_of(&params, &first, answer),
        CallOptions::new(),
    ));
    assert!(message.contains("call the tool again"), "{message}");
    let sampled = json!({"sampling-2": {"role": "assistant", "model": "m",
        "content": {"type": "text", "text": "brief"}}});
    let done = client
        .request_passing(
            "tools/call",
            retry_of(&params, &second, sampled),
            CallOptions::new(),
        )
        .unwrap();
    assert_eq!(done["content"][0]["text"], json!("Lin / brief"), "{done}");
    assert_eq!(held_rounds(&client), 0);
    client.close().unwrap();
}

#[test]
fn a_round_past_its_bound_is_dropped_and_its_retry_told_to_start_again() {
    let setup = bridged(
        &["asker"],
        r#"{"namespace": "{tool}"}"#,
        GatewayConfig::new().bridge_round_timeout(Duration::from_millis(200)),
    );
    let (client, _) = modern_front(&setup.http);
    let params = call_params("greet");
    let started = Instant::now();
    let round = client
        .request_passing("tools/call", params.clone(), CallOptions::new())
        .unwrap();
    assert_eq!(round["resultType"], json!("input_required"), "{round}");
    // The held call is dropped when its bound passes, not before.
    assert!(
        eventually(LONG, || held_rounds(&client) == 0),
        "the round is still held"
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
    let answer = json!({"elicitation-1": {"action": "accept", "content": {"name": "Late"}}});
    let message = invalid_params(client.request_passing(
        "tools/call",
        retry_of(&params, &round, answer),
        CallOptions::new(),
    ));
    assert!(message.contains("no longer held"), "{message}");
    // A new call is served as usual.
    let again = client.call_tool("greet", json!({})).unwrap();
    assert_eq!(again.text(), "Hello, Ada!", "{:?}", again.raw);
    client.close().unwrap();
}

#[test]
fn held_calls_are_bounded_and_closing_the_gateway_drops_them() {
    let setup = bridged(
        &["one", "two"],
        "{}",
        GatewayConfig::new().max_bridged_rounds(1),
    );
    let (client, _) = modern_front(&setup.http);
    let params = call_params("mcp__one__greet");
    let round = client
        .request_passing("tools/call", params.clone(), CallOptions::new())
        .unwrap();
    assert_eq!(round["resultType"], json!("input_required"), "{round}");
    // The second backend's question finds the table full: a clear BUSY, nothing hangs.
    let refused = client
        .request_passing(
            "tools/call",
            call_params("mcp__two__greet"),
            CallOptions::new(),
        )
        .unwrap();
    assert_eq!(refused["isError"], json!(true), "{refused}");
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("BUSY: ") && text.contains("holds 1 call"),
        "{text}"
    );
    assert_eq!(held_rounds(&client), 1);
    // The first round is still answered.
    let answer = json!({"elicitation-1": {"action": "accept", "content": {"name": "Kay"}}});
    let done = client
        .request_passing(
            "tools/call",
            retry_of(&params, &round, answer.clone()),
            CallOptions::new(),
        )
        .unwrap();
    assert_eq!(done["content"][0]["text"], json!("Hello, Kay!"), "{done}");
    // Closing the gateway drops a held call.
    let round = client
        .request_passing("tools/call", params.clone(), CallOptions::new())
        .unwrap();
    assert_eq!(held_rounds(&client), 1);
    setup.gateway.close();
    assert_eq!(held_rounds(&client), 0);
    let message = invalid_params(client.request_passing(
        "tools/call",
        retry_of(&params, &round, answer),
        CallOptions::new(),
    ));
    assert!(message.contains("no longer held"), "{message}");
    client.close().unwrap();
}

#[test]
fn a_cancelled_front_request_cancels_the_bridged_call() {
    // `gated` waits for the test's word, then asks: the front request is cancelled first.
    let (open, gate) = crossbeam_channel::bounded::<()>(1);
    let server = asking_backend();
    server
        .add_tool(LocalTool::with_context(
            "gated",
            "Waits, then asks.",
            json!({"type": "object", "properties": {}}),
            move |context, _| {
                let _ = gate.recv();
                let asked = context.request_input("name", "elicitation/create", json!({}));
                Ok(CallToolResult::from_text(format!("{:?}", asked.is_ok())))
            },
        ))
        .unwrap();
    let setup = bridged_with(
        vec![("asker", server)],
        r#"{"namespace": "{tool}"}"#,
        GatewayConfig::new(),
    );
    let (client, _) = modern_front(&setup.http);
    let in_flight = || setup.gateway.stats()["backends"]["asker"]["in_flight"].clone();
    let call = client
        .start_tool("gated", json!({}), CallOptions::new())
        .unwrap();
    assert!(
        eventually(LONG, || in_flight() == json!(1)),
        "{}",
        setup.gateway.stats()
    );
    assert!(call.cancel());
    // The call ends while the backend's tool still waits: nothing is held, the slot is free.
    assert!(
        eventually(LONG, || setup.gateway.stats()["backends"]["asker"]
            ["cancelled"]
            == json!(1)),
        "{}",
        setup.gateway.stats()
    );
    assert!(
        eventually(LONG, || in_flight() == json!(0)),
        "{}",
        setup.gateway.stats()
    );
    assert_eq!(held_rounds(&client), 0);
    open.send(()).unwrap();
    let again = client.call_tool("greet", json!({})).unwrap();
    assert_eq!(again.text(), "Hello, Ada!", "{:?}", again.raw);
    client.close().unwrap();
}

#[test]
fn log_messages_and_progress_after_a_round_reach_the_retry_waiting_then() {
    // `careful` logs a warning, elicits, then logs a warning and reports progress.
    let server = asking_backend();
    server
        .add_tool(LocalTool::with_context(
            "careful",
            "Logs, asks, logs and reports.",
            json!({"type": "object", "properties": {}}),
            |context, _| {
                context.log_message(log::Level::Warn, "before the question");
                let asked = context.request_input("name", "elicitation/create", json!({}));
                context.log_message(log::Level::Warn, "after the answer");
                context.report_progress(1.0, Some(2.0), Some("half"));
                Ok(CallToolResult::from_text(format!(
                    "asked: {}",
                    asked.is_ok()
                )))
            },
        ))
        .unwrap();
    let setup = bridged_with(
        vec![("asker", server)],
        r#"{"namespace": "{tool}"}"#,
        GatewayConfig::new(),
    );
    // What the front client heard, in order: log messages on the reader thread (before the
    // response that follows them), progress on the thread waiting for the call.
    let heard: Arc<Mutex<Vec<String>>> = Arc::default();
    let (logged, elicited) = (Arc::clone(&heard), Arc::clone(&heard));
    let config = McpConfig::default()
        .mode(ProtocolMode::Modern)
        .on_log_in_order(move |message| {
            let text = message.data.as_str().unwrap_or("?");
            logged
                .lock()
                .unwrap()
                .push(format!("{} {text}", message.level));
        })
        .elicitation(move |_| {
            elicited.lock().unwrap().push("asked".into());
            ElicitResult::Accept(json!({"name": "Ada"}))
        });
    let client = McpClient::connect_http(HttpConfig::new(setup.http.url()), config).unwrap();
    client.set_logging_level("warning").unwrap();
    let progressed = Arc::clone(&heard);
    let options = CallOptions::new().on_progress(move |report| {
        progressed.lock().unwrap().push(format!(
            "progress {}/{} {}",
            report.progress,
            report.total.unwrap_or(0.0),
            report.message.as_deref().unwrap_or("")
        ));
    });
    let result = client
        .call_tool_with("careful", json!({}), options)
        .unwrap();
    assert_eq!(result.text(), "asked: true", "{:?}", result.raw);
    // The first warning reached the first request; the round was asked; what came after the
    // answer reached the retry, before its result.
    let heard = heard.lock().unwrap().clone();
    assert_eq!(heard.len(), 4, "{heard:?}");
    assert_eq!(
        heard[..2],
        ["warning before the question", "asked"],
        "{heard:?}"
    );
    let mut after = heard[2..].to_vec();
    after.sort();
    assert_eq!(
        after,
        ["progress 1/2 half", "warning after the answer"],
        "{heard:?}"
    );
    assert_eq!(held_rounds(&client), 0);
    client.close().unwrap();
}
