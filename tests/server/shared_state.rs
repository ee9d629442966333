//! Several instances sharing one state store (a real `redis-server`, which `.ci/run`
//! installs): a task created on one instance is read, answered and cancelled on another; a
//! task whose instance was killed ends `failed` once its lease passes, and never stays
//! `working`; while Redis is down the requests that need it are answered at once with an
//! error naming the store, and succeed once it is back; a resource update made on one
//! instance reaches a subscription held by another. The instances are
//! `examples/conformance_server` children (`--state redis://…`), or in-process servers.
#![cfg(feature = "redis")]

use crate::support::redis::Redis;
use crate::support::server::{self as support, HttpExample};
use crate::support::{mcp, LONG};

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolwire::jsonrpc::Message;
use toolwire::server::{
    content, PeerTransport, RedisConfig, RedisStore, Server, ServerConfig, ServerResource,
};
use toolwire::transport::MemoryTransport;

const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A 2026-07-28 request to `url` declaring the tasks extension (and elicitation): its
/// JSON-RPC answer.
fn request(url: &str, method: &str, name: Option<&str>, mut params: Value) -> Value {
    params["_meta"] = support::meta(json!({"elicitation": {}, "extensions": {EXTENSION: {}}}));
    // The tasks/* requests name their task in Mcp-Name.
    let task = params["taskId"].as_str().map(str::to_owned);
    let name = name.or(task.as_deref());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response = support::post(url, &support::stateless_headers(method, name), &body);
    response
        .messages()
        .into_iter()
        .find(|message| message.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer to {method}: {response:?}"))
}

/// Calls `tool` as a task on `url`: the task id.
fn create(url: &str, tool: &str, arguments: Value) -> String {
    let answer = request(
        url,
        "tools/call",
        Some(tool),
        json!({"name": tool, "arguments": arguments}),
    );
    assert_eq!(answer["result"]["resultType"], "task", "{answer}");
    answer["result"]["taskId"].as_str().unwrap().to_owned()
}

fn get(url: &str, id: &str) -> Value {
    request(url, "tasks/get", None, json!({"taskId": id}))
}

/// Polls `tasks/get` on `url` until the task's status is `status` (the bound only keeps a
/// broken test from hanging).
fn until_status(url: &str, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + LONG;
    loop {
        let answer = get(url, id);
        if answer["result"]["status"] == status {
            return answer["result"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "task {id} never became {status}: {answer}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn instance(redis: &Redis, extra: &[&str]) -> HttpExample {
    let url = redis.url();
    let mut args = vec!["--port", "0", "--state", url.as_str()];
    args.extend_from_slice(extra);
    HttpExample::start("conformance_server", &args)
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh), and redis-server"]
fn a_task_created_on_one_instance_is_read_answered_and_cancelled_on_another() {
    let _peers =
        mcp::peers("a_task_created_on_one_instance_is_read_answered_and_cancelled_on_another");
    let redis = Redis::start("tasks-across");
    let a = instance(&redis, &[]);
    let b = instance(&redis, &[]);

    // Created on A, completed and read on B.
    let id = create(
        &a.url,
        "slow_compute",
        json!({"seconds": 0.2, "label": "across"}),
    );
    let done = until_status(&b.url, &id, "completed");
    assert_eq!(
        done["result"]["content"][0]["text"], "across: done after 0.2 s",
        "{done}"
    );

    // Created on A, its input asked on B, answered on B: A runs the next round.
    let id = create(&a.url, "confirm_delete", json!({"filename": "notes.txt"}));
    let waiting = until_status(&b.url, &id, "input_required");
    assert!(waiting["inputRequests"]["confirm"].is_object(), "{waiting}");
    let updated = request(
        &b.url,
        "tasks/update",
        None,
        json!({"taskId": id, "inputResponses": {
            "confirm": {"action": "accept", "content": {"confirm": true}}}}),
    );
    assert!(updated["result"].is_object(), "{updated}");
    let done = until_status(&a.url, &id, "completed");
    assert_eq!(
        done["result"]["content"][0]["text"], "notes.txt deleted (not really)",
        "{done}"
    );

    // Created on A, cancelled on B; A reads it cancelled.
    let id = create(&a.url, "slow_compute", json!({"seconds": 120}));
    let cancelled = request(&b.url, "tasks/cancel", None, json!({"taskId": id}));
    assert!(cancelled["result"].is_object(), "{cancelled}");
    until_status(&a.url, &id, "cancelled");

    // An id neither created is unknown to both.
    let unknown = get(&b.url, "0123456789abcdef0123456789abcdef");
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh), and redis-server"]
fn a_killed_instances_task_fails_once_its_lease_passes_and_the_others_go_on() {
    let _peers =
        mcp::peers("a_killed_instances_task_fails_once_its_lease_passes_and_the_others_go_on");
    let redis = Redis::start("tasks-killed");
    let lease = Duration::from_millis(900);
    let ms = lease.as_millis().to_string();
    let mut a = instance(&redis, &["--task-lease-ms", &ms]);
    let b = instance(&redis, &["--task-lease-ms", &ms]);
    let doomed = create(
        &a.url,
        "slow_compute",
        json!({"seconds": 120, "label": "doomed"}),
    );
    let survivor = create(
        &b.url,
        "slow_compute",
        json!({"seconds": 0.5, "label": "survivor"}),
    );
    // Renewed while A lives: still working after more than a whole lease.
    std::thread::sleep(lease + lease / 2);
    assert_eq!(get(&b.url, &doomed)["result"]["status"], "working");

    a.kill();
    let killed = Instant::now();
    let failed = until_status(&b.url, &doomed, "failed");
    // The last renewal came at most a third of the lease before the kill.
    assert!(
        killed.elapsed() >= lease / 3,
        "failed {:?} after the kill, before its lease could pass",
        killed.elapsed()
    );
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("lease") && message.contains("not run again"),
        "{failed}"
    );
    // It stays failed, and the other instance's task completes.
    assert_eq!(get(&b.url, &doomed)["result"]["status"], "failed");
    let done = until_status(&b.url, &survivor, "completed");
    assert_eq!(
        done["result"]["content"][0]["text"],
        "survivor: done after 0.5 s"
    );
    // Later calls succeed.
    let id = create(
        &b.url,
        "slow_compute",
        json!({"seconds": 0, "label": "later"}),
    );
    until_status(&b.url, &id, "completed");
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh), and redis-server"]
fn while_the_store_is_down_requests_that_need_it_fail_at_once_and_succeed_once_it_is_back() {
    let _peers = mcp::peers(
        "while_the_store_is_down_requests_that_need_it_fail_at_once_and_succeed_once_it_is_back",
    );
    let mut redis = Redis::start("store-down");
    let a = instance(&redis, &[]);
    let before = create(&a.url, "slow_compute", json!({"seconds": 0}));
    until_status(&a.url, &before, "completed");

    redis.stop();
    let place = format!("redis://127.0.0.1:{}/0", redis.port);
    for answer in [
        request(
            &a.url,
            "tools/call",
            Some("slow_compute"),
            json!({"name": "slow_compute", "arguments": {"seconds": 0}}),
        ),
        get(&a.url, &before),
    ] {
        assert_eq!(answer["error"]["code"], -32603, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("the state store failed") && message.contains(&place),
            "{answer}"
        );
    }
    // What needs no store still works.
    let greeted = request(
        &a.url,
        "tools/call",
        Some("test_simple_text"),
        json!({"name": "test_simple_text", "arguments": {}}),
    );
    assert!(greeted["result"]["content"].is_array(), "{greeted}");

    redis.restart();
    // Within the store's backoff (at most 2 s) the instance reaches it again.
    let mut last = Value::Null;
    let back = crate::support::eventually(LONG, || {
        last = request(
            &a.url,
            "tools/call",
            Some("slow_compute"),
            json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": "back"}}),
        );
        last["result"]["resultType"] == "task"
    });
    assert!(back, "never reached the store again: {last}");
    let id = last["result"]["taskId"].as_str().unwrap();
    let done = until_status(&a.url, id, "completed");
    assert_eq!(done["result"]["content"][0]["text"], "back: done after 0 s");
}

fn watched_server(redis: &Redis) -> Server {
    let store = RedisStore::open(RedisConfig::from_url(&redis.url()).unwrap()).unwrap();
    let server =
        Server::new(ServerConfig::new("shared", "1").state_store(std::sync::Arc::new(store)))
            .unwrap();
    server
        .add_resource(ServerResource::new(
            "test://watched",
            "Watched",
            |_, uri| Ok(vec![content::text_contents(uri, None, "watched")]),
        ))
        .unwrap();
    server
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh), and redis-server"]
fn a_resource_update_on_one_instance_reaches_a_subscription_on_another() {
    let _peers = mcp::peers("a_resource_update_on_one_instance_reaches_a_subscription_on_another");
    let redis = Redis::start("events");
    let a = watched_server(&redis);
    let b = watched_server(&redis);
    let (transport, peer) = MemoryTransport::pair();
    let connection = b.connect(PeerTransport::new(peer)).unwrap();
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
    let listen = json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
        "params": {"notifications": {"resourceSubscriptions": ["test://watched"]},
                   "_meta": support::meta(json!({}))}});
    let raw = toolwire::jsonrpc::parse_frame(listen.to_string().as_bytes()).unwrap();
    let toolwire::jsonrpc::Frame::Single(Message::Request(request)) = raw else {
        panic!()
    };
    let handle = client
        .start(
            &request.method,
            request.params.unwrap(),
            toolwire::CallOptions::new().timeout(LONG),
        )
        .unwrap();
    let ack = frames.recv_timeout(LONG).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    // B subscribes to the store's events on its own thread: A updates until B has heard
    // (an update published before B's subscription is lost, as publish/subscribe says).
    let deadline = Instant::now() + LONG;
    let heard = loop {
        a.notify_resource_updated("test://watched");
        if let Ok(frame) = frames.recv_timeout(Duration::from_millis(100)) {
            break frame;
        }
        assert!(Instant::now() < deadline, "B never heard A's update");
    };
    assert_eq!(heard["method"], "notifications/resources/updated");
    assert_eq!(heard["params"]["uri"], "test://watched");
    assert_eq!(
        heard["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
    );
    assert!(handle.cancel());
    client.close().unwrap();
    connection.wait();
}
