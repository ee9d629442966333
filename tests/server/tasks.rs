//! The 2026-07-28 tasks extension on the server (SEP-2663), over a memory connection with raw
//! frames: a task-capable call answered at once with a task, polled with `tasks/get` to its
//! result or error, cancelled (the handler sees it; a finished task's cancel is the same empty
//! ack), its input requests answered with `tasks/update` (some, then the rest), an input round
//! before the task is created, the TTL (a finished task is dropped after it, never before), the
//! bound on the tasks held, and the refusals: an unknown id, and no extension declared.

use crate::support::server as support;

use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use serde_json::{json, Value};
use toolwire::harness::{LocalTool, ToolFailure, ToolOptions, ToolTimeout};
use toolwire::server::{
    CallToolResult, HandlerError, InputRequired, RequestContext, Server, ServerConfig, TaskSupport,
    BUSY, MISSING_CAPABILITY,
};
use toolwire::{Client, Error};

use support::{gated, memory_client, meta, LONG};

const EXTENSION: &str = "io.modelcontextprotocol/tasks";

pub(super) fn with_tasks() -> Value {
    json!({"elicitation": {}, "extensions": {EXTENSION: {}}})
}

/// A 2026-07-28 request with these capabilities.
pub(super) fn call(
    client: &Client,
    capabilities: Value,
    method: &str,
    mut params: Value,
) -> toolwire::Result<Value> {
    params["_meta"] = meta(capabilities);
    client.call(method, params)
}

fn rpc_error(result: toolwire::Result<Value>) -> toolwire::jsonrpc::ErrorObject {
    match result {
        Err(Error::Rpc(error)) => *error,
        other => panic!("expected an error, got {other:?}"),
    }
}

pub(super) fn get(client: &Client, id: &str) -> Value {
    call(client, with_tasks(), "tasks/get", json!({"taskId": id})).expect("tasks/get")
}

/// Polls `tasks/get` until `done` holds (a bound that only keeps a broken test from hanging).
pub(super) fn eventually(client: &Client, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + LONG;
    loop {
        let task = get(client, id);
        if done(&task) {
            return task;
        }
        assert!(
            Instant::now() < deadline,
            "the task never got there: {task}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn iso8601(text: &Value) -> bool {
    let text = text.as_str().unwrap_or("");
    let bytes = text.as_bytes();
    text.len() >= 20
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes[10] == b'T'
        && bytes[13] == b':'
        && text.ends_with('Z')
}

fn tool(
    name: &str,
    handler: impl Fn(&RequestContext, &Value) -> Result<CallToolResult, HandlerError>
        + Send
        + Sync
        + 'static,
) -> LocalTool {
    // The one tool type, whose handler reaches the request's context and answers with the
    // server's own errors.
    LocalTool::with_context(
        name,
        "A test tool.",
        json!({"type": "object"}),
        move |context, args| {
            let context = RequestContext::of(context).expect("served");
            handler(context, args).map_err(HandlerError::into_failure)
        },
    )
}

pub(super) fn server_with(config: ServerConfig) -> (Server, Sender<()>, Receiver<()>) {
    let server = Server::new(config).unwrap();
    let (release_tx, release_rx) = bounded(16);
    let (cancel_tx, cancel_rx) = bounded(16);
    server
        .add_tool(gated("gated", release_rx, cancel_tx))
        .unwrap();
    server
        .add_tool(tool("sync", |_, _| {
            Ok(CallToolResult::from_text("at once"))
        }))
        .unwrap();
    server
        .add_tool(
            tool("tool_error", |_, _| Ok(CallToolResult::error("it broke")))
                .task(TaskSupport::Optional),
        )
        .unwrap();
    server
        .add_tool(
            tool("protocol_error", |_, _| {
                Err(HandlerError::internal("broken down"))
            })
            .task(TaskSupport::Required),
        )
        .unwrap();
    server
        .add_tool(
            tool("two_questions", |context, _| {
                let (Some(first), Some(second)) = (
                    context.input_response("first"),
                    context.input_response("second"),
                ) else {
                    return Err(InputRequired::new()
                        .elicit(
                            "first",
                            json!({"message": "First?", "requestedSchema": {"type": "object"}}),
                        )
                        .elicit(
                            "second",
                            json!({"message": "Second?", "requestedSchema": {"type": "object"}}),
                        )
                        .into());
                };
                Ok(CallToolResult::from_text(format!(
                    "{} and {}",
                    first["content"]["v"], second["content"]["v"]
                )))
            })
            .task(TaskSupport::Optional),
        )
        .unwrap();
    server
        .add_tool(
            tool("named", |_, args| {
                Ok(CallToolResult::from_text(format!(
                    "task for {}",
                    args["who"].as_str().unwrap_or("?")
                )))
            })
            .task(TaskSupport::Required)
            .before_task(|context, _| {
                let answer = context.request_input(
                    "who",
                    "elicitation/create",
                    json!({"message": "Who?", "requestedSchema": {"type": "object"}}),
                )?;
                Ok(json!({"who": answer["content"]["name"]}))
            }),
        )
        .unwrap();
    (server, release_tx, cancel_rx)
}

fn server() -> (Server, Sender<()>, Receiver<()>) {
    server_with(ServerConfig::new("tasks", "1.0"))
}

pub(super) fn create(client: &Client, name: &str) -> String {
    let created = call(client, with_tasks(), "tools/call", json!({"name": name})).unwrap();
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().expect("a taskId").to_owned()
}

#[test]
fn a_task_is_created_at_once_polled_while_working_and_completed_with_its_result() {
    let (server, release, _) = server();
    let (client, connection) = memory_client(&server);
    let discover = call(&client, with_tasks(), "server/discover", json!({})).unwrap();
    assert!(
        discover["capabilities"]["extensions"][EXTENSION].is_object(),
        "{discover}"
    );
    assert!(discover["capabilities"].get("tasks").is_none());

    let created = call(
        &client,
        with_tasks(),
        "tools/call",
        json!({"name": "gated"}),
    )
    .unwrap();
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    assert!(
        iso8601(&created["createdAt"]) && iso8601(&created["lastUpdatedAt"]),
        "{created}"
    );
    assert!(created["ttlMs"].as_u64().unwrap() > 0);
    assert!(created["pollIntervalMs"].as_u64().unwrap() > 0);
    for absent in [
        "task",
        "result",
        "error",
        "inputRequests",
        "requestState",
        "ttl",
        "content",
    ] {
        assert!(created.get(absent).is_none(), "{absent} in {created}");
    }
    let id = created["taskId"].as_str().unwrap();

    let working = get(&client, id);
    assert_eq!(
        (working["status"].as_str(), working["resultType"].as_str()),
        (Some("working"), Some("complete"))
    );
    assert_eq!(working["taskId"], id);
    assert!(working.get("result").is_none());

    release.send(()).unwrap();
    let done = eventually(&client, id, |task| task["status"] == "completed");
    assert_eq!(done["result"]["content"][0]["text"], "released", "{done}");
    assert!(done.get("error").is_none() && done.get("requestState").is_none());
    assert_eq!(
        server.tasks_held(),
        1,
        "a finished task is kept until its TTL"
    );

    // A tool without task support answers in its request, extension or not.
    let sync = call(&client, with_tasks(), "tools/call", json!({"name": "sync"})).unwrap();
    assert_eq!(
        (sync["resultType"].as_str(), sync.get("taskId")),
        (Some("complete"), None)
    );
    client.close().unwrap();
    connection.wait();
}

#[test]
fn a_tool_error_completes_the_task_and_a_protocol_error_fails_it() {
    let (server, _release, _) = server();
    let (client, connection) = memory_client(&server);
    let id = create(&client, "tool_error");
    let done = eventually(&client, &id, |task| task["status"] != "working");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true);

    let id = create(&client, "protocol_error");
    let failed = eventually(&client, &id, |task| task["status"] != "working");
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603);
    assert_eq!(failed["error"]["message"], "broken down");
    assert!(failed.get("result").is_none());
    client.close().unwrap();
    connection.wait();
}

#[test]
fn a_cancelled_task_ends_cancelled_its_handler_sees_it_and_a_second_cancel_is_the_same_ack() {
    let (server, _release, saw_cancel) = server();
    let (client, connection) = memory_client(&server);
    let id = create(&client, "gated");
    let ack = call(&client, with_tasks(), "tasks/cancel", json!({"taskId": id})).unwrap();
    assert_eq!(ack["resultType"], "complete");
    for absent in ["taskId", "status", "result", "error", "inputRequests"] {
        assert!(ack.get(absent).is_none(), "{absent} in {ack}");
    }
    saw_cancel
        .recv_timeout(LONG)
        .expect("the handler saw the cancellation");
    assert_eq!(get(&client, &id)["status"], "cancelled");
    assert!(server.wait_idle(LONG), "the handler's worker is free again");
    // Its late answer did not change the outcome.
    assert_eq!(get(&client, &id)["status"], "cancelled");

    let again = call(&client, with_tasks(), "tasks/cancel", json!({"taskId": id})).unwrap();
    assert_eq!(
        again, ack,
        "cancelling a finished task is the same empty ack"
    );
    let done = create(&client, "tool_error");
    eventually(&client, &done, |task| task["status"] == "completed");
    let ack = call(
        &client,
        with_tasks(),
        "tasks/cancel",
        json!({"taskId": done}),
    )
    .unwrap();
    assert_eq!(ack["resultType"], "complete");
    assert_eq!(
        get(&client, &done)["status"],
        "completed",
        "a finished task stays as it ended"
    );
    client.close().unwrap();
    connection.wait();
}

#[test]
fn input_requests_are_answered_with_tasks_update_some_then_the_rest() {
    let (server, _release, _) = server();
    let (client, connection) = memory_client(&server);
    let id = create(&client, "two_questions");
    let waiting = eventually(&client, &id, |task| task["status"] == "input_required");
    let mut keys: Vec<&String> = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    keys.sort();
    assert_eq!(keys, ["first", "second"], "{waiting}");
    assert_eq!(
        waiting["inputRequests"]["first"]["method"],
        "elicitation/create"
    );
    assert!(
        server.wait_idle(LONG),
        "a task waiting for input holds no worker"
    );

    let update = |responses: Value| {
        call(
            &client,
            with_tasks(),
            "tasks/update",
            json!({"taskId": id, "inputResponses": responses}),
        )
        .unwrap()
    };
    let ack = update(json!({"first": {"action": "accept", "content": {"v": 1}}, "unasked": {}}));
    assert_eq!(ack["resultType"], "complete");
    assert!(ack.get("status").is_none() && ack.get("taskId").is_none());
    let partly = get(&client, &id);
    assert_eq!(partly["status"], "input_required");
    assert_eq!(
        partly["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["second"],
        "only the unanswered key is left: {partly}"
    );
    update(json!({"second": {"action": "accept", "content": {"v": 2}}}));
    let done = eventually(&client, &id, |task| task["status"] == "completed");
    assert_eq!(done["result"]["content"][0]["text"], "1 and 2", "{done}");
    // A finished task takes no more answers, and says so with the same ack.
    assert_eq!(update(json!({"first": {}}))["resultType"], "complete");
    client.close().unwrap();
    connection.wait();
}

#[test]
fn an_input_round_before_the_task_is_created_carries_its_answer_into_the_task() {
    let (server, _release, _) = server();
    let (client, connection) = memory_client(&server);
    let first = call(
        &client,
        with_tasks(),
        "tools/call",
        json!({"name": "named"}),
    )
    .unwrap();
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert!(first.get("taskId").is_none());
    assert_eq!(
        first["inputRequests"]["who"]["method"],
        "elicitation/create"
    );
    let retry = json!({"name": "named", "inputResponses": {"who": {"action": "accept", "content": {"name": "Alice"}}}});
    let created = call(&client, with_tasks(), "tools/call", retry).unwrap();
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("requestState").is_none() && created.get("inputRequests").is_none());
    let id = created["taskId"].as_str().unwrap();
    let done = eventually(&client, id, |task| task["status"] == "completed");
    assert_eq!(done["result"]["content"][0]["text"], "task for Alice");
    client.close().unwrap();
    connection.wait();
}

#[test]
fn a_finished_task_is_kept_until_its_ttl_and_dropped_after_it() {
    let ttl = Duration::from_millis(300);
    let (server, _release, _) = server_with(ServerConfig::new("tasks", "1.0").task_ttl(ttl));
    let (client, connection) = memory_client(&server);
    let created_at = Instant::now();
    let id = create(&client, "tool_error");
    let created = get(&client, &id);
    assert_eq!(created["ttlMs"], 300);
    // Poll until it is gone: each poll before the TTL must still find it.
    let deadline = Instant::now() + LONG;
    let gone = loop {
        match call(&client, with_tasks(), "tasks/get", json!({"taskId": id})) {
            Ok(task) => assert!(task["taskId"] == id.as_str()),
            Err(Error::Rpc(error)) => break error,
            Err(other) => panic!("{other}"),
        }
        assert!(Instant::now() < deadline, "the task outlived its TTL");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(created_at.elapsed() >= ttl, "dropped before its TTL");
    assert_eq!(gone.code.0, -32602, "{gone}");
    assert_eq!(server.tasks_held(), 0);
    client.close().unwrap();
    connection.wait();
}

#[test]
fn the_tasks_held_are_bounded_and_one_more_is_refused() {
    let (server, release, _) = server_with(ServerConfig::new("tasks", "1.0").max_tasks(2));
    let (client, connection) = memory_client(&server);
    let first = create(&client, "gated");
    create(&client, "gated");
    let refused = rpc_error(call(
        &client,
        with_tasks(),
        "tools/call",
        json!({"name": "gated"}),
    ));
    assert_eq!(refused.code, BUSY, "{refused}");
    assert!(refused.message.contains("holds 2 tasks"), "{refused}");
    assert_eq!(server.tasks_held(), 2);
    release.send(()).unwrap();
    release.send(()).unwrap();
    eventually(&client, &first, |task| task["status"] == "completed");
    client.close().unwrap();
    connection.wait();
}

#[test]
fn unknown_ids_removed_methods_and_requests_without_the_extension_are_refused() {
    let (server, _release, _) = server();
    let (client, connection) = memory_client(&server);
    let unknown = rpc_error(call(
        &client,
        with_tasks(),
        "tasks/get",
        json!({"taskId": "nope"}),
    ));
    assert_eq!(unknown.code.0, -32602, "{unknown}");
    for method in ["tasks/result", "tasks/list"] {
        let error = rpc_error(call(
            &client,
            with_tasks(),
            method,
            json!({"taskId": "nope"}),
        ));
        assert_eq!(error.code.0, -32601, "{method}: {error}");
    }
    let id = create(&client, "tool_error");
    let plain = json!({"elicitation": {}});
    for (method, params) in [
        ("tasks/get", json!({"taskId": id})),
        ("tasks/update", json!({"taskId": id, "inputResponses": {}})),
        ("tasks/cancel", json!({"taskId": id})),
        ("tools/call", json!({"name": "protocol_error"})),
    ] {
        let error = rpc_error(call(&client, plain.clone(), method, params));
        assert_eq!(error.code, MISSING_CAPABILITY, "{method}: {error}");
        assert!(
            error.data.unwrap()["requiredCapabilities"]["extensions"][EXTENSION].is_object(),
            "{method}"
        );
    }
    // An optional one runs in its request without the extension.
    let sync = call(&client, plain, "tools/call", json!({"name": "tool_error"})).unwrap();
    assert_eq!(
        (sync["resultType"].as_str(), sync["isError"].as_bool()),
        (Some("complete"), Some(true))
    );
    // The handshake era has no tasks of this kind.
    client.call("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})).unwrap();
    let error = rpc_error(client.call("tasks/get", json!({"taskId": id})));
    assert_eq!(error.code.0, -32601, "{error}");
    client.close().unwrap();
    connection.wait();
}

#[test]
fn a_task_past_its_run_bound_its_input_wait_or_its_result_size_ends() {
    let config = ServerConfig::new("tasks", "1.0")
        .task_input_timeout(Duration::from_millis(50))
        .max_task_result_bytes(1024);
    let (server, _release, _) = server_with(config);
    let (stopped_tx, stopped_rx) = bounded(1);
    server
        .add_tool(
            tool("stuck", move |context, _| {
                while !context.is_cancelled() {
                    std::thread::sleep(Duration::from_millis(2));
                }
                let _ = stopped_tx.send(());
                Ok(CallToolResult::from_text("late"))
            })
            .task(TaskSupport::Optional)
            .options(ToolOptions::new().timeout(ToolTimeout::Custom(Duration::from_millis(50)))),
        )
        .unwrap();
    server
        .add_tool(
            tool("big", |_, _| {
                Ok(CallToolResult::from_text("x".repeat(2000)))
            })
            .task(TaskSupport::Optional),
        )
        .unwrap();
    let (client, connection) = memory_client(&server);

    let id = create(&client, "stuck");
    let ended = eventually(&client, &id, |task| task["status"] != "working");
    assert_eq!(
        (
            ended["status"].as_str(),
            ended["result"]["isError"].as_bool()
        ),
        (Some("completed"), Some(true)),
        "{ended}"
    );
    stopped_rx
        .recv_timeout(LONG)
        .expect("the handler was told to stop");

    let id = create(&client, "two_questions");
    let failed = eventually(&client, &id, |task| task["status"] == "failed");
    assert_eq!(failed["error"]["code"], -32001, "{failed}");
    assert!(failed.get("inputRequests").is_none());

    let id = create(&client, "big");
    let failed = eventually(&client, &id, |task| task["status"] != "working");
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit of 1024"),
        "{failed}"
    );
    client.close().unwrap();
    connection.wait();
}

#[test]
fn the_crates_own_client_follows_a_task_through_its_input_to_its_result() {
    use toolwire::mcp::ElicitResult;
    use toolwire::{McpClient, McpConfig, ProtocolMode};
    let (server, release, _) =
        server_with(ServerConfig::new("tasks", "1.0").task_poll_interval(Duration::from_millis(5)));
    let (client_end, server_end) = toolwire::transport::MemoryTransport::pair();
    let connection = server
        .connect(toolwire::server::PeerTransport::new(server_end))
        .unwrap();
    let config = McpConfig::default()
        .mode(ProtocolMode::Modern)
        .min_task_poll(Duration::from_millis(1))
        .elicitation(|_| ElicitResult::Accept(json!({"v": "yes"})));
    let client = McpClient::connect(client_end, config).unwrap();
    // Answered once the test releases it: the client polls the task meanwhile.
    release.send(()).unwrap();
    assert_eq!(
        client.call_tool("gated", json!({})).unwrap().text(),
        "released"
    );
    // Both of its input requests answered by the client's handler through tasks/update.
    let both = client.call_tool("two_questions", json!({})).unwrap();
    assert_eq!(both.text(), "\"yes\" and \"yes\"");
    assert_eq!(server.tasks_held(), 2);
    client.close().unwrap();
    connection.wait();
}

/// Issue 21: task support is an option of the one runnable tool type. A `LocalTool` written
/// with the request's context and marked `task(Required)` runs as a task when served, and its
/// input request (`ToolContext::request_input`) is answered through the task by the crate's
/// own client.
#[test]
fn a_local_tool_with_task_support_runs_as_a_task_and_asks_through_it() {
    use toolwire::harness::{LocalTool, ToolContext};
    use toolwire::mcp::ElicitResult;
    use toolwire::{McpClient, McpConfig, ProtocolMode};
    let server =
        Server::new(ServerConfig::new("tasks", "1.0").task_poll_interval(Duration::from_millis(5)))
            .unwrap();
    server
        .add_tool(
            LocalTool::with_context(
                "get_weather",
                "Asks for the city, as a task.",
                json!({"type": "object"}),
                |context: &dyn ToolContext, _: &Value| {
                    let answer = context.request_input(
                        "city",
                        "elicitation/create",
                        json!({"message": "Which city?", "requestedSchema": {"type": "object"}}),
                    )?;
                    Ok(CallToolResult::from_text(format!(
                        "clear in {}",
                        answer["content"]["v"]
                    )))
                },
            )
            .task(TaskSupport::Required),
        )
        .unwrap();
    let (raw, connection) = memory_client(&server);
    // Without the extension, a required task tool is refused.
    let refused = rpc_error(call(
        &raw,
        json!({}),
        "tools/call",
        json!({"name": "get_weather", "arguments": {}}),
    ));
    assert_eq!(refused.code, MISSING_CAPABILITY);
    // With it, the call is answered with a task at once.
    let task = call(
        &raw,
        with_tasks(),
        "tools/call",
        json!({"name": "get_weather", "arguments": {}}),
    )
    .unwrap();
    assert_eq!(task["resultType"], "task", "{task}");
    raw.close().unwrap();
    connection.wait();

    let (client_end, server_end) = toolwire::transport::MemoryTransport::pair();
    let connection = server
        .connect(toolwire::server::PeerTransport::new(server_end))
        .unwrap();
    let config = McpConfig::default()
        .mode(ProtocolMode::Modern)
        .min_task_poll(Duration::from_millis(1))
        .elicitation(|_| ElicitResult::Accept(json!({"v": "Lima"})));
    let client = McpClient::connect(client_end, config).unwrap();
    assert_eq!(
        client.call_tool("get_weather", json!({})).unwrap().text(),
        "clear in \"Lima\""
    );
    assert!(server.tasks_held() >= 2);
    client.close().unwrap();
    connection.wait();
}

/// Issue 21: a step before a task is the one tool type's option, with its failure type: one
/// that carries the server's answer is answered as such (above, `named`'s input round); a
/// safe one is an error with its text; an internal one's text is withheld.
#[test]
fn a_failed_step_before_a_task_shows_only_a_safe_text() {
    let server = Server::new(ServerConfig::new("steps", "1.0")).unwrap();
    for (name, failure) in [
        ("safe", ToolFailure::safe("say who first")),
        ("internal", ToolFailure::internal("password=hunter2")),
    ] {
        server
            .add_tool(
                LocalTool::with_context(name, "", json!({"type": "object"}), |_, _| {
                    Ok(CallToolResult::from_text("never"))
                })
                .task(TaskSupport::Required)
                .before_task(move |_, _| Err(failure.clone())),
            )
            .unwrap();
    }
    let (client, connection) = memory_client(&server);
    let safe = rpc_error(call(
        &client,
        with_tasks(),
        "tools/call",
        json!({"name": "safe"}),
    ));
    assert_eq!(safe.message, "say who first", "{safe:?}");
    let internal = rpc_error(call(
        &client,
        with_tasks(),
        "tools/call",
        json!({"name": "internal"}),
    ));
    assert!(!internal.message.contains("hunter2"), "{internal:?}");
    client.close().unwrap();
    connection.wait();
}
