//! The 2026-07-28 tasks extension through the gateway: a front client that declares it gets
//! the backend's task (its id sealed by the gateway), polls it with `tasks/get` to its
//! result, answers one's input requests with `tasks/update`, and cancels one (the backend's
//! handler sees it), all through the gateway; the creating call is the one call the budget
//! counts (polls, updates and cancels spend nothing); an id
//! the gateway did not seal reaches no backend; a client of the toolwire library follows a
//! task through the gateway as it follows a server's own.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;
use crate::support::server::{memory_client, meta};

use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use serde_json::{json, Value};
use support::{gateway, http_backend, url_entry, LONG};
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, HttpServer, Server, ServerConfig, TaskSupport};
use toolwire::{Client, Error, HttpConfig, McpClient, McpConfig, ProtocolMode};

const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A backend whose `gated` tool runs as a task when asked and waits for the test to release
/// it (or for its cancellation, which it reports), and whose `quick` one answers at once.
fn backend() -> (Server, Sender<()>, Receiver<()>) {
    let server = Server::new(ServerConfig::new("worker", "1.0")).unwrap();
    let (release, released) = bounded::<()>(4);
    let (saw_cancel, cancels) = bounded(4);
    server
        .add_tool(crate::support::server::gated("gated", released, saw_cancel))
        .unwrap();
    server
        .add_tool(
            LocalTool::with_context("quick", "Answers.", json!({"type": "object"}), |_, _| {
                Ok(CallToolResult::from_text("done"))
            })
            .task(TaskSupport::Optional),
        )
        .unwrap();
    server
        .add_tool(
            LocalTool::with_context(
                "asks",
                "Asks a name.",
                json!({"type": "object"}),
                |context, _| {
                    let answer = context.request_input(
                        "name",
                        "elicitation/create",
                        json!({"message": "Your name?", "requestedSchema": {"type": "object"}}),
                    )?;
                    let name = answer["content"]["name"].as_str().unwrap_or("?").to_owned();
                    Ok(CallToolResult::from_text(format!("Hello, {name}!")))
                },
            )
            .task(TaskSupport::Optional),
        )
        .unwrap();
    (server, release, cancels)
}

/// A 2026-07-28 request that declares the tasks extension.
fn request(client: &Client, method: &str, mut params: Value) -> toolwire::Result<Value> {
    params["_meta"] = meta(json!({"elicitation": {}, "extensions": {EXTENSION: {}}}));
    client.call(method, params)
}

fn get(client: &Client, id: &str) -> Value {
    request(client, "tasks/get", json!({"taskId": id})).expect("tasks/get")
}

/// Polls `tasks/get` until the task has `status` (the bound only keeps a broken test from
/// hanging).
fn until_status(client: &Client, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + LONG;
    loop {
        let task = get(client, id);
        if task["status"] == status {
            return task;
        }
        assert!(
            Instant::now() < deadline,
            "the task never got {status}: {task}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn create(client: &Client, tool: &str) -> String {
    let created = request(client, "tools/call", json!({"name": tool})).unwrap();
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("content").is_none(), "{created}");
    created["taskId"].as_str().expect("a taskId").to_owned()
}

#[test]
fn a_backends_task_is_created_polled_fetched_and_cancelled_through_the_gateway() {
    let (backend, release, cancels) = backend();
    let (_http, url) = http_backend(&backend);
    let gateway = gateway(
        &[("worker", url_entry(&url))],
        r#"{"namespace": "{tool}", "calls_per_caller": 3}"#,
    );
    let (client, _connection) = memory_client(gateway.server());

    // Created by the backend, polled through the gateway under the id it sealed.
    let id = create(&client, "gated");
    let working = get(&client, &id);
    assert_eq!(working["status"], "working", "{working}");
    assert_eq!(working["taskId"], json!(id), "{working}");
    release.send(()).unwrap();
    let done = until_status(&client, &id, "completed");
    assert_eq!(done["result"]["content"][0]["text"], "released", "{done}");
    assert_eq!(done["taskId"], json!(id), "{done}");

    // An id the gateway did not seal (here: a sealed one changed) reaches no backend.
    let forged = format!("{id}x");
    match request(&client, "tasks/get", json!({"taskId": forged})) {
        Err(Error::Rpc(error)) => assert_eq!(error.code.0, -32602, "{error:?}"),
        other => panic!("a forged task id was answered: {other:?}"),
    }

    // Cancelled through the gateway: the backend's handler sees it.
    let id = create(&client, "gated");
    let ack = request(&client, "tasks/cancel", json!({"taskId": id})).unwrap();
    assert_eq!(ack["resultType"], "complete", "{ack}");
    assert!(ack.get("status").is_none(), "{ack}");
    cancels
        .recv_timeout(LONG)
        .expect("the backend saw the cancel");
    until_status(&client, &id, "cancelled");

    // A task that asks for input: its requests come through `tasks/get`, and `tasks/update`
    // answers them at the backend.
    let id = create(&client, "asks");
    let asking = until_status(&client, &id, "input_required");
    assert_eq!(
        asking["inputRequests"]["name"]["params"]["message"], "Your name?",
        "{asking}"
    );
    let answers = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let ack = request(
        &client,
        "tasks/update",
        json!({"taskId": id, "inputResponses": answers}),
    )
    .unwrap();
    assert_eq!(ack["resultType"], "complete", "{ack}");
    let done = until_status(&client, &id, "completed");
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Ada!",
        "{done}"
    );

    // Three calls created the three tasks; the polls, the update and the cancel spent
    // nothing, and the budget of three is now spent.
    let third = request(&client, "tools/call", json!({"name": "quick"})).unwrap();
    assert_eq!(third["isError"], true, "{third}");
    assert!(
        third["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .starts_with("BUDGET"),
        "{third}"
    );
    gateway.close();
}

#[test]
fn a_library_client_follows_a_backends_task_through_the_gateway() {
    let (backend, _release, _cancels) = backend();
    let (_http, url) = http_backend(&backend);
    let gateway = gateway(&[("worker", url_entry(&url))], r#"{"namespace": "{tool}"}"#);
    let front: HttpServer = gateway.serve_http("127.0.0.1:0".parse().unwrap()).unwrap();
    let client = McpClient::connect_http(
        HttpConfig::new(front.url()),
        McpConfig::default().mode(ProtocolMode::Modern),
    )
    .unwrap();
    let result = client.call_tool("quick", json!({})).unwrap();
    assert_eq!(result.text(), "done", "{:?}", result.raw);
    // It came as a task, followed to its end under the gateway's id.
    assert!(result.task_id.is_some(), "{:?}", result.raw);
    client.close().unwrap();
    gateway.close();
}
