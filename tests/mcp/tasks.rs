//! Tool calls that run as tasks, against a server played by the test: the 2025-11-25 tasks
//! utility (a `task` param for a tool that requires it, `tasks/get` polled, `tasks/result`
//! for the end) and the 2026-07-28 extension (`resultType: "task"`, `tasks/get` carrying the
//! result, the error or input requests answered once with `tasks/update`); every status, a
//! status notice, a task that never finishes (the call's deadline cancels it on the server),
//! a cancelled handle, and `tasks/list`.

use crate::support::mcp as support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::*;
use toolwire::jsonrpc::{ErrorObject, Message, RequestId};
use toolwire::mcp::{ElicitResult, TaskStatus, TASKS_EXTENSION};
use toolwire::transport::MemoryPeer;
use toolwire::{CallOptions, Error, McpClient, McpConfig, ProtocolMode};

fn research_tool() -> Value {
    json!({"name": "research", "inputSchema": {"type": "object"},
           "execution": {"taskSupport": "required"}})
}

fn task(id: &str, status: &str, message: &str) -> Value {
    json!({"taskId": id, "status": status, "statusMessage": message,
           "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:01Z",
           "ttl": 60000, "pollInterval": 20})
}

/// A 2025-11-25 client whose server offers tasks for tools/call.
fn connect_tasks(config: McpConfig) -> (McpClient, MemoryPeer) {
    let (client, peer, _) = connect_scripted(config.mode(ProtocolMode::Legacy), |peer| {
        let mut result = initialize_result("2025-11-25");
        result["capabilities"]["tasks"] =
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
        serve(peer, "initialize", result);
        expect_notification(peer, "notifications/initialized");
    });
    (client.expect("connect"), peer)
}

fn task_id_of(request: &toolwire::jsonrpc::Request) -> String {
    params(request)["taskId"].as_str().unwrap().to_owned()
}

#[test]
fn a_required_task_is_asked_for_polled_and_its_result_fetched() {
    let (client, peer) = connect_tasks(config(ProtocolMode::Legacy));
    let (outcome, ()) = exchange(
        &peer,
        || client.call_tool("research", json!({"topic": "rust"})),
        |peer| {
            serve_tools(peer, json!([research_tool()]));
            let call = expect_request(peer, "tools/call");
            assert_eq!(params(&call)["task"]["ttl"], 300_000, "{}", params(&call));
            answer(
                peer,
                &call.id,
                json!({"task": task("t1", "working", "Gathering sources")}),
            );
            let get = expect_request(peer, "tasks/get");
            assert_eq!(task_id_of(&get), "t1");
            answer(peer, &get.id, task("t1", "working", "Analyzing"));
            // A status notice wakes the waiter before the next poll would.
            notify(
                peer,
                "notifications/tasks/status",
                task("t1", "completed", "done"),
            );
            let result = expect_request(peer, "tasks/result");
            answer(
                peer,
                &result.id,
                json!({"content": [{"type": "text", "text": "report"}],
                "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t1"}}}),
            );
        },
    );
    let result = outcome.unwrap();
    assert_eq!(result.text(), "report");
    assert_eq!(result.task_id.as_deref(), Some("t1"));
    finish(&client, &peer);
}

#[test]
fn failed_and_input_required_tasks_end_through_tasks_result() {
    let elicited = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = std::sync::Arc::clone(&elicited);
    let config = config(ProtocolMode::Legacy).elicitation(move |_| {
        seen.store(true, std::sync::atomic::Ordering::SeqCst);
        ElicitResult::Accept(json!({"interpretation": "programming"}))
    });
    let (client, peer) = connect_tasks(config);
    let (outcome, ()) = exchange(
        &peer,
        || client.call_tool("research", json!({})),
        |peer| {
            serve_tools(peer, json!([research_tool()]));
            let call = expect_request(peer, "tools/call");
            answer(
                peer,
                &call.id,
                json!({"task": task("t2", "input_required", "Which one?")}),
            );
            // The input comes on the stream of tasks/result, which then returns the error.
            let result = expect_request(peer, "tasks/result");
            peer.send(&Message::Request(toolwire::jsonrpc::Request {
                id: RequestId::String("e1".into()),
                method: "elicitation/create".into(),
                params: Some(json!({"message": "Which?", "requestedSchema": {"type": "object"}})),
            }));
            match next_message(peer) {
                Message::Response(response) => {
                    assert_eq!(response.id, Some(RequestId::String("e1".into())))
                }
                other => panic!("expected the elicitation's answer, got {other:?}"),
            }
            answer_error(
                peer,
                &result.id,
                ErrorObject::new(
                    toolwire::jsonrpc::ErrorCode::INTERNAL_ERROR,
                    "research failed",
                ),
            );
        },
    );
    assert!(elicited.load(std::sync::atomic::Ordering::SeqCst));
    assert!(matches!(outcome, Err(Error::Rpc(error)) if error.message == "research failed"));
    finish(&client, &peer);
}

#[test]
fn a_task_that_never_finishes_is_cancelled_on_the_server_when_the_call_times_out() {
    let (client, peer) = connect_tasks(config(ProtocolMode::Legacy));
    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    let (outcome, polls) = exchange(
        &peer,
        || client.call_tool_with("research", json!({}), CallOptions::new().timeout(timeout)),
        |peer| {
            serve_tools(peer, json!([research_tool()]));
            let call = expect_request(peer, "tools/call");
            answer(
                peer,
                &call.id,
                json!({"task": task("t3", "working", "forever")}),
            );
            let mut polls = 0;
            loop {
                match next_message(peer) {
                    Message::Request(request) if request.method == "tasks/get" => {
                        polls += 1;
                        answer(peer, &request.id, task("t3", "working", "forever"));
                    }
                    Message::Request(request) if request.method == "tasks/cancel" => {
                        assert_eq!(task_id_of(&request), "t3");
                        answer(peer, &request.id, task("t3", "cancelled", "by request"));
                        return polls;
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        },
    );
    assert!(started.elapsed() >= timeout);
    assert!(polls >= 1, "the task was polled");
    let error = outcome.unwrap_err();
    assert!(error.is_timeout(), "{error:?}");
    assert!(error.to_string().contains("t3"), "{error}");
    finish(&client, &peer);
}

#[test]
fn cancelling_a_handle_cancels_its_task_and_the_handle_shows_the_status() {
    let (client, peer) = connect_tasks(config(ProtocolMode::Legacy));
    let ((), ()) = exchange(
        &peer,
        || {
            let mut call = client
                .start_tool("research", json!({}), CallOptions::new())
                .unwrap();
            while call.task().is_none() {
                assert!(call.wait_timeout(Duration::from_millis(20)).is_none());
            }
            let seen = call.task().unwrap();
            assert_eq!(seen.task_id, "t4");
            assert_eq!(seen.status, TaskStatus::Working);
            assert!(call.cancel());
            assert!(!call.cancel(), "a second cancel does nothing");
            assert!(matches!(call.wait(), Err(Error::Cancelled { .. })));
        },
        |peer| {
            serve_tools(peer, json!([research_tool()]));
            let call = expect_request(peer, "tools/call");
            answer(
                peer,
                &call.id,
                json!({"task": task("t4", "working", "slow")}),
            );
            loop {
                match next_message(peer) {
                    Message::Request(request) if request.method == "tasks/get" => {
                        answer(peer, &request.id, task("t4", "working", "slow"));
                    }
                    Message::Request(request) if request.method == "tasks/cancel" => {
                        answer(peer, &request.id, task("t4", "cancelled", "by request"));
                        return;
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        },
    );
    // What the server keeps: tasks/list, paged.
    let (listed, ()) = exchange(
        &peer,
        || client.list_tasks(),
        |peer| {
            let first = expect_request(peer, "tasks/list");
            answer(
                peer,
                &first.id,
                json!({"tasks": [task("t4", "cancelled", "")], "nextCursor": "c"}),
            );
            let second = expect_request(peer, "tasks/list");
            assert_eq!(params(&second)["cursor"], "c");
            answer(
                peer,
                &second.id,
                json!({"tasks": [task("t5", "completed", "")]}),
            );
        },
    );
    let statuses: Vec<TaskStatus> = listed
        .unwrap()
        .into_iter()
        .map(|task| task.status)
        .collect();
    assert_eq!(statuses, [TaskStatus::Cancelled, TaskStatus::Completed]);
    finish(&client, &peer);
}

#[test]
fn a_tool_that_does_not_require_a_task_is_a_plain_call() {
    let (client, peer) = connect_tasks(config(ProtocolMode::Legacy));
    let (outcome, ()) = exchange(
        &peer,
        || client.call_tool("echo", json!({})),
        |peer| {
            serve_tools(peer, json!([tool("echo")]));
            let call = expect_request(peer, "tools/call");
            assert!(params(&call).get("task").is_none());
            answer(
                peer,
                &call.id,
                json!({"content": [{"type": "text", "text": "hi"}]}),
            );
        },
    );
    assert_eq!(outcome.unwrap().task_id, None);
    finish(&client, &peer);
}

// ---- the 2026-07-28 extension ----

fn modern_task(id: &str, status: &str, extra: Value) -> Value {
    let mut value = json!({"resultType": "complete", "taskId": id, "status": status,
        "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z",
        "ttlMs": null, "pollIntervalMs": 20});
    if let (Some(object), Value::Object(extra)) = (value.as_object_mut(), extra) {
        object.extend(extra);
    }
    value
}

#[test]
fn a_2026_task_is_followed_through_input_requests_to_its_result() {
    let config =
        config(ProtocolMode::Modern).elicitation(|_| ElicitResult::Accept(json!({"ok": true})));
    let (client, peer) = connect_modern(config);
    let (outcome, ()) = exchange(
        &peer,
        || client.call_tool("slow", json!({})),
        |peer| {
            let call = expect_request(peer, "tools/call");
            let capabilities =
                &params(&call)["_meta"]["io.modelcontextprotocol/clientCapabilities"];
            assert!(
                capabilities["extensions"][TASKS_EXTENSION].is_object(),
                "{capabilities}"
            );
            let mut created = modern_task("m1", "working", json!({}));
            created["resultType"] = json!("task");
            answer(peer, &call.id, created);
            let asks = json!({"inputRequests": {"k1": {"method": "elicitation/create",
                "params": {"message": "ok?", "requestedSchema": {"type": "object"}}}}});
            let get = expect_request(peer, "tasks/get");
            assert!(
                params(&get)["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
                    [TASKS_EXTENSION]
                    .is_object()
            );
            answer(
                peer,
                &get.id,
                modern_task("m1", "input_required", asks.clone()),
            );
            let update = expect_request(peer, "tasks/update");
            assert_eq!(params(&update)["inputResponses"]["k1"]["action"], "accept");
            answer(peer, &update.id, json!({"resultType": "complete"}));
            // Still showing the answered request (eventually consistent): not answered twice.
            let get = expect_request(peer, "tasks/get");
            answer(peer, &get.id, modern_task("m1", "input_required", asks));
            let get = expect_request(peer, "tasks/get");
            answer(
                peer,
                &get.id,
                modern_task(
                    "m1",
                    "completed",
                    json!({"result":
                {"content": [{"type": "text", "text": "finished"}], "isError": false}}),
                ),
            );
            // The result is checked against the tool's outputSchema: the list is fetched.
            serve_tools(peer, json!([tool("slow")]));
        },
    );
    let result = outcome.unwrap();
    assert_eq!(result.text(), "finished");
    assert_eq!(result.task_id.as_deref(), Some("m1"));
    finish(&client, &peer);
}

#[test]
fn a_2026_task_that_fails_or_is_cancelled_ends_the_call_with_why() {
    let (client, peer) = connect_modern(config(ProtocolMode::Modern));
    for (status, extra) in [
        (
            "failed",
            json!({"error": {"code": -32603, "message": "backend down"}}),
        ),
        ("cancelled", json!({"statusMessage": "by an operator"})),
    ] {
        let (outcome, ()) = exchange(
            &peer,
            || client.call_tool("slow", json!({})),
            |peer| {
                let call = expect_request(peer, "tools/call");
                let mut created = modern_task("m2", "working", json!({}));
                created["resultType"] = json!("task");
                answer(peer, &call.id, created);
                let get = expect_request(peer, "tasks/get");
                answer(peer, &get.id, modern_task("m2", status, extra.clone()));
            },
        );
        let error = outcome.unwrap_err();
        match status {
            "failed" => assert!(matches!(&error, Error::Rpc(e) if e.message == "backend down")),
            _ => assert!(error.to_string().contains("by an operator"), "{error}"),
        }
    }
    finish(&client, &peer);
}
