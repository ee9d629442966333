//! 2026-07-28 `InputRequiredResult`: the client answers the server's input requests through
//! the user's handlers and retries with `inputResponses` and the echoed `requestState`, under
//! a new id each round, at most `max_input_rounds` times.
use crate::support::mcp as support;

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use support::*;
use toolwire::mcp::{ElicitRequest, ElicitResult, Root};
use toolwire::{CallOptions, Error, ProtocolMode};

fn elicitation_request() -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": "Which account?",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "account": {"type": "string", "default": "main"},
                    "limit": {"type": "integer", "default": 10},
                    "confirm": {"type": "boolean"}
                },
                "required": ["account"]
            }
        }
    })
}

fn input_required(state: &str) -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": {
            "k1": elicitation_request(),
            "k2": {"method": "roots/list", "params": {}}
        },
        "requestState": state
    })
}

#[test]
fn input_required_is_answered_and_retried_with_a_new_id() {
    let asked: Arc<Mutex<Vec<ElicitRequest>>> = Arc::default();
    let mut handlers = config(ProtocolMode::Modern)
        .roots(|| {
            vec![Root {
                uri: "file:///srv".into(),
                name: Some("srv".into()),
            }]
        })
        .elicitation({
            let asked = Arc::clone(&asked);
            move |request| {
                asked.lock().unwrap().push(request.clone());
                ElicitResult::accept_defaults(request)
            }
        });
    handlers = handlers.validate_output(false);
    let capabilities = json!({"roots": {"listChanged": true}, "elicitation": {"form": {}}});
    let (client, peer) = connect_modern(handlers);

    // The state is opaque: any bytes, echoed exactly.
    let state = "opaque\u{1f512}=={\"not\":\"json\"}";
    let (outcome, (first, retry)) = exchange(
        &peer,
        || client.call_tool_with("transfer", json!({"amount": 5}), CallOptions::new()),
        |peer| {
            let first = serve(peer, "tools/call", input_required(state));
            let retry = serve(
                peer,
                "tools/call",
                json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]}),
            );
            (first, retry)
        },
    );
    let result = outcome.expect("the call completes after one input round");
    assert_eq!(result.text(), "done");

    assert_ne!(first.id, retry.id, "each round is a new request");
    let first = params(&first);
    let retry = params(&retry);
    assert!(first.get("inputResponses").is_none(), "{first}");
    assert_eq!(retry["name"], "transfer");
    assert_eq!(retry["arguments"], json!({"amount": 5}));
    assert_eq!(retry["requestState"], state);
    assert_eq!(
        retry["inputResponses"]["k1"],
        json!({"action": "accept", "content": {"account": "main", "limit": 10}})
    );
    assert_eq!(
        retry["inputResponses"]["k2"],
        json!({"roots": [{"uri": "file:///srv", "name": "srv"}]})
    );
    // A tool call also declares the tasks extension (a server may answer with a task).
    let mut with_tasks = capabilities.clone();
    with_tasks["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    assert_stamped(&retry, &with_tasks);

    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].message, "Which account?");
    finish(&client, &peer);
}

#[test]
fn input_rounds_are_capped() {
    let mut capped = config(ProtocolMode::Modern).elicitation(ElicitResult::accept_defaults);
    capped = capped.max_input_rounds(2);
    let (client, peer) = connect_modern(capped);
    let (outcome, ids) = exchange(
        &peer,
        || client.request("prompts/get", json!({"name": "p"}), CallOptions::new()),
        |peer| {
            // The first request and two retries, each asking for input again.
            (0..3)
                .map(|round| {
                    let request = expect_request(peer, "prompts/get");
                    answer(
                        peer,
                        &request.id,
                        json!({
                            "resultType": "input_required",
                            "inputRequests": {"k1": elicitation_request()},
                            "requestState": format!("round-{round}"),
                        }),
                    );
                    if round > 0 {
                        let expected = format!("round-{}", round - 1);
                        assert_eq!(params(&request)["requestState"], json!(expected));
                    }
                    request.id
                })
                .collect::<Vec<_>>()
        },
    );
    match outcome {
        Err(Error::Protocol(message)) => assert!(message.contains("2 rounds"), "{message}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
    let mut unique = ids.clone();
    unique.sort_by_key(ToString::to_string);
    unique.dedup();
    assert_eq!(unique.len(), 3, "{ids:?}");
    // `finish` proves no fourth request was sent.
    finish(&client, &peer);
}

#[test]
fn an_input_request_without_a_handler_is_a_protocol_error() {
    let (client, peer) = connect_modern(config(ProtocolMode::Modern));
    let (outcome, _) = exchange(
        &peer,
        || client.request("prompts/get", json!({"name": "p"}), CallOptions::new()),
        |peer| {
            serve(
                peer,
                "prompts/get",
                json!({
                    "resultType": "input_required",
                    "inputRequests": {"s": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}},
                    "requestState": "x",
                }),
            )
        },
    );
    match outcome {
        Err(Error::Protocol(message)) => {
            assert!(message.contains("sampling/createMessage"), "{message}")
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
    finish(&client, &peer);
}

#[test]
fn a_started_tool_call_follows_input_rounds_when_waited_on() {
    let handlers = config(ProtocolMode::Modern)
        .validate_output(false)
        .roots(Vec::new)
        .elicitation(ElicitResult::accept_defaults);
    let (client, peer) = connect_modern(handlers);
    let state = "round-one";
    let (outcome, (first, retry)) = exchange(
        &peer,
        || {
            let call = client
                .start_tool("transfer", json!({"amount": 5}), CallOptions::new())
                .expect("start");
            call.wait()
        },
        |peer| {
            let first = serve(peer, "tools/call", input_required(state));
            let retry = serve(
                peer,
                "tools/call",
                json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]}),
            );
            (first, retry)
        },
    );
    assert_eq!(outcome.expect("completed after one round").text(), "done");
    assert_ne!(first.id, retry.id, "each round is a new request");
    let retry_params = retry.params.expect("params");
    assert_eq!(retry_params["requestState"], state);
    assert_eq!(retry_params["arguments"], json!({"amount": 5}));
    assert_eq!(
        retry_params["inputResponses"]["k1"]["content"]["account"],
        "main"
    );
    finish(&client, &peer);
}

#[test]
fn a_panicking_handler_in_an_input_round_fails_the_call_not_the_caller() {
    let handlers = config(ProtocolMode::Modern)
        .roots(|| panic!("the roots handler exploded"))
        .elicitation(ElicitResult::accept_defaults);
    let (client, peer) = connect_modern(handlers);
    let (outcome, _) = exchange(
        &peer,
        || client.request("prompts/get", json!({"name": "p"}), CallOptions::new()),
        |peer| serve(peer, "prompts/get", input_required("s")),
    );
    match outcome {
        Err(Error::Protocol(message)) => assert!(message.contains("roots/list"), "{message}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
    finish(&client, &peer);
}
