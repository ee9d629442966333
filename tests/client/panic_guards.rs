//! User code cannot kill library threads: a panic in a request handler, a notification
//! handler, a progress callback, an MCP handler or a timer task is caught and logged, and the
//! thread it ran on goes on.
use crate::support::client as support;

use std::time::{Duration, Instant};

use crossbeam_channel::bounded;
use serde_json::json;
use support::{memory_client, next_request, SOON};
use toolwire::jsonrpc::{
    ErrorCode, Message, Notification, Request, RequestId, Response, TimerWheel,
};
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig};

fn request(id: i64, method: &str) -> Message {
    Message::Request(Request {
        id: RequestId::Number(id),
        method: method.into(),
        params: None,
    })
}

fn next_response(peer: &toolwire::transport::MemoryPeer) -> Response {
    match peer.recv_message(SOON).expect("a response") {
        Message::Response(response) => response,
        other => panic!("expected a response, got {other:?}"),
    }
}

#[test]
fn a_panicking_request_handler_is_answered_with_an_internal_error_and_the_next_request_works() {
    let config = ClientConfig::default().on_request(|request| {
        if request.method == "explode" {
            panic!("the handler exploded");
        }
        Ok(json!({"method": request.method}))
    });
    let (client, peer) = memory_client(config);
    peer.send(&request(1, "explode"));
    let first = next_response(&peer);
    assert_eq!(first.id, Some(RequestId::Number(1)));
    let error = first.payload.expect_err("an error object");
    assert_eq!(error.code, ErrorCode::INTERNAL_ERROR);
    // The dispatch thread survived: the next request is answered normally.
    peer.send(&request(2, "fine"));
    let second = next_response(&peer);
    assert_eq!(second.id, Some(RequestId::Number(2)));
    assert_eq!(second.payload.expect("a result"), json!({"method": "fine"}));
    client.close().expect("close");
}

#[test]
fn a_panicking_notification_handler_does_not_stop_the_next_notification() {
    let (seen_tx, seen) = bounded(4);
    let config = ClientConfig::default().on_notification(move |notification| {
        if notification.method == "explode" {
            panic!("the notification handler exploded");
        }
        let _ = seen_tx.send(notification.method.clone());
    });
    let (client, peer) = memory_client(config);
    for method in ["explode", "after"] {
        peer.send(&Message::Notification(Notification {
            method: method.into(),
            params: None,
        }));
    }
    assert_eq!(seen.recv_timeout(SOON).expect("the second one"), "after");
    client.close().expect("close");
}

#[test]
fn a_panicking_progress_callback_does_not_stop_the_call() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let server = std::thread::spawn(move || {
        let request = next_request(&peer);
        for progress in 1..=2 {
            peer.send(&Message::Notification(Notification {
                method: "notifications/progress".into(),
                params: Some(json!({"progressToken": request.id.to_value(), "progress": progress})),
            }));
        }
        peer.send(&Message::Response(Response::ok(request.id, json!("done"))));
        peer
    });
    let mut calls = 0;
    let outcome = client.call_with(
        "work",
        json!({}),
        CallOptions::new().timeout(SOON).on_progress(move |_| {
            calls += 1;
            if calls == 1 {
                panic!("the progress callback exploded");
            }
        }),
    );
    assert_eq!(outcome.expect("the call completes"), json!("done"));
    let _peer = server.join().expect("the server thread");
    assert_eq!(client.stats().in_flight, 0);
    client.close().expect("close");
}

#[test]
fn a_panicking_timer_task_does_not_stop_later_deadlines() {
    let wheel = TimerWheel::new();
    let (fired_tx, fired) = bounded(1);
    let now = Instant::now();
    wheel.schedule(now, Box::new(|| panic!("the timer task exploded")));
    wheel.schedule(
        now + Duration::from_millis(5),
        Box::new(move || {
            let _ = fired_tx.send(());
        }),
    );
    fired
        .recv_timeout(SOON)
        .expect("the later deadline fired after the panic");
    // And the client deadlines on the same wheel still fire. With an hour of timer grace the
    // waiting caller never releases the call itself: only the wheel can.
    let config = ClientConfig::default()
        .timer(wheel.clone())
        .timer_grace(Duration::from_secs(3600));
    let (client, peer) = memory_client(config);
    let mut handle = client
        .start(
            "hang",
            json!({}),
            CallOptions::new().timeout(Duration::from_millis(20)),
        )
        .expect("start");
    let _request = next_request(&peer);
    let outcome = handle
        .wait_timeout(SOON)
        .expect("the wheel released the call");
    assert!(outcome.expect_err("a timeout").is_timeout());
    client.close().expect("close");
}
