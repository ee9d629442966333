//! Batches: one array frame out, outcomes back in request order whatever order the peer uses.
use crate::support::client as support;

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{memory_client, round_trip, SOON};
use toolwire::jsonrpc::{BatchEntry, ErrorCode, ErrorObject, Frame, Message, Response, TimerWheel};
use toolwire::mcp::McpDialect;
use toolwire::transport::MemoryTransport;
use toolwire::{CallOptions, Client, ClientConfig, Error};

fn request(method: &str, params: Value) -> BatchEntry {
    BatchEntry::Request {
        method: method.into(),
        params,
    }
}

#[test]
fn a_batch_goes_out_as_one_frame_and_comes_back_in_request_order() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let peer = Arc::new(peer);
    let peer_thread = {
        let peer = Arc::clone(&peer);
        thread::spawn(move || {
            let Some(Frame::Batch(elements)) = peer.recv(SOON) else {
                panic!("expected one batch frame")
            };
            let messages: Vec<Message> = elements
                .into_iter()
                .map(|element| element.expect("valid element"))
                .collect();
            assert_eq!(messages.len(), 4);
            let mut requests = Vec::new();
            for (position, message) in messages.into_iter().enumerate() {
                match (position, message) {
                    (1, Message::Notification(notification)) => {
                        assert_eq!(notification.method, "notifications/note");
                        assert_eq!(notification.params, Some(json!({"hello": true})));
                    }
                    (_, Message::Request(request)) => requests.push(request),
                    (position, other) => panic!("unexpected element {position}: {other:?}"),
                }
            }
            let methods: Vec<&str> = requests.iter().map(|r| r.method.as_str()).collect();
            assert_eq!(methods, ["a", "b", "c"]);
            assert_eq!(requests[0].params, Some(json!({"x": 1})));
            assert_eq!(requests[1].params, Some(json!([2])));
            assert_eq!(requests[2].params, None);
            // Answer in reverse order, b with an error, all in one array frame.
            let answers: Vec<Value> = requests
                .iter()
                .rev()
                .map(|request| {
                    let response = if request.method == "b" {
                        Response::error(
                            Some(request.id.clone()),
                            ErrorObject::new(ErrorCode::INVALID_PARAMS, "b is wrong"),
                        )
                    } else {
                        Response::ok(
                            request.id.clone(),
                            json!(format!("{} done", request.method)),
                        )
                    };
                    serde_json::from_str(&Message::Response(response).to_line()).expect("json")
                })
                .collect();
            peer.send_line(Value::Array(answers).to_string());
        })
    };
    let results = client
        .batch(
            vec![
                request("a", json!({"x": 1})),
                BatchEntry::Notification {
                    method: "notifications/note".into(),
                    params: json!({"hello": true}),
                },
                request("b", json!([2])),
                request("c", Value::Null),
            ],
            CallOptions::new().timeout(SOON),
        )
        .expect("the batch was sent");
    peer_thread.join().expect("peer");
    assert_eq!(
        results.len(),
        3,
        "one outcome per request, none for the notification"
    );
    let mut results = results.into_iter();
    assert_eq!(results.next().unwrap().expect("a"), json!("a done"));
    match results.next().unwrap() {
        Err(Error::Rpc(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            assert_eq!(error.message, "b is wrong");
        }
        other => panic!("expected b's error, got {other:?}"),
    }
    assert_eq!(results.next().unwrap().expect("c"), json!("c done"));
    let stats = client.stats();
    assert_eq!(stats.sent, 1, "a batch counts once: {stats:?}");
    assert_eq!(stats.received, 1, "{stats:?}");
    support::finish(&client);
}

#[test]
fn an_empty_batch_is_a_config_error_and_sends_nothing() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let error = client
        .batch(Vec::new(), CallOptions::default())
        .expect_err("empty");
    assert!(matches!(error, Error::Config(_)), "{error:?}");
    assert_eq!(client.stats().sent, 0);
    round_trip(&client, &peer);
    support::finish(&client);
}

#[test]
fn a_batch_with_bad_params_is_a_config_error_and_sends_nothing() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let error = client
        .batch(
            vec![request("a", json!({})), request("b", json!("a string"))],
            CallOptions::new().timeout(SOON),
        )
        .expect_err("bad params");
    assert!(matches!(error, Error::Config(_)), "{error:?}");
    // Nothing reached the peer, not even a cancellation for a request it never saw.
    round_trip(&client, &peer);
    let stats = client.stats();
    assert_eq!(stats.sent, 1, "only the ping: {stats:?}");
    assert_eq!(stats.cancels, 0, "{stats:?}");
    support::finish(&client);
}

#[test]
fn a_batch_that_cannot_be_sent_releases_its_requests_quietly() {
    // A queue of one frame that the peer does not read yet, already full.
    let wheel = TimerWheel::new();
    let (transport, peer) = MemoryTransport::pair_with_capacity(1);
    let client = Client::with_config(
        transport,
        ClientConfig::default()
            .dialect(McpDialect)
            .timer(wheel.clone()),
    )
    .expect("client");
    client
        .notify("notifications/fill", json!({}))
        .expect("the first frame fits");
    let timeout = Duration::from_millis(30);
    let started = Instant::now();
    let error = client
        .batch(
            vec![request("a", json!({})), request("b", json!({}))],
            CallOptions::new().timeout(timeout),
        )
        .expect_err("the batch cannot be queued");
    assert!(started.elapsed() >= timeout);
    assert!(
        matches!(error, Error::Busy { .. } | Error::Timeout { .. }),
        "{error:?}"
    );
    // Let any deadline that fired meanwhile finish what it does.
    let (tx, rx) = crossbeam_channel::bounded(1);
    wheel.schedule(
        Instant::now(),
        Box::new(move || {
            let _ = tx.send(());
        }),
    );
    rx.recv_timeout(SOON).expect("the wheel runs");
    let stats = client.stats();
    assert_eq!(stats.in_flight, 0, "{stats:?}");
    assert_eq!(stats.cancels, 0, "the caller cancelled nothing: {stats:?}");
    assert_eq!(stats.sent, 1, "{stats:?}");
    // The peer sees the first frame, then nothing about the batch.
    let first = support::next_notification(&peer);
    assert_eq!(first.method, "notifications/fill");
    round_trip(&client, &peer);
    support::finish(&client);
}
