//! The peer's requests and notifications: answered or delivered on the dispatch thread.
use crate::support::client as support;

use crossbeam_channel::unbounded;
use serde_json::{json, Value};
use support::{memory_client, next_response, SOON};
use toolwire::jsonrpc::{ErrorCode, ErrorObject, Message, Notification, Request, RequestId};
use toolwire::mcp::McpDialect;
use toolwire::ClientConfig;

fn send_request(
    peer: &toolwire::transport::MemoryPeer,
    id: RequestId,
    method: &str,
    params: Option<Value>,
) {
    peer.send(&Message::Request(Request {
        id,
        method: method.into(),
        params,
    }));
}

#[test]
fn ping_is_answered_with_an_empty_object_and_the_same_id() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    send_request(&peer, RequestId::String("ping-1".into()), "ping", None);
    let response = next_response(&peer);
    assert_eq!(response.id, Some(RequestId::String("ping-1".into())));
    assert_eq!(response.payload, Ok(json!({})));
    send_request(&peer, RequestId::Number(7), "ping", Some(json!({})));
    let response = next_response(&peer);
    assert_eq!(response.id, Some(RequestId::Number(7)));
    assert_eq!(response.payload, Ok(json!({})));
    let stats = client.stats();
    assert_eq!(stats.received, 2, "{stats:?}");
    assert_eq!(stats.sent, 2, "{stats:?}");
    support::finish(&client);
}

#[test]
fn an_unknown_method_is_answered_with_method_not_found() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    send_request(
        &peer,
        RequestId::Number(3),
        "sampling/createMessage",
        Some(json!({})),
    );
    let response = next_response(&peer);
    assert_eq!(response.id, Some(RequestId::Number(3)));
    let error = response.payload.expect_err("an error");
    assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
    assert!(
        error.message.contains("sampling/createMessage"),
        "{error:?}"
    );
    support::finish(&client);
}

#[test]
fn a_custom_handler_answers_on_the_dispatch_thread() {
    let (threads_tx, threads_rx) = unbounded::<Option<String>>();
    let config = ClientConfig::default()
        .dialect(McpDialect)
        .on_request(move |request| {
            let _ = threads_tx.send(std::thread::current().name().map(str::to_owned));
            match request.method.as_str() {
                "roots/list" => {
                    Ok(json!({"roots": [{"uri": "file:///work"}], "echo": request.params}))
                }
                other => Err(ErrorObject::new(
                    ErrorCode(-32042),
                    format!("refused {other}"),
                )),
            }
        });
    let (client, peer) = memory_client(config);
    send_request(
        &peer,
        RequestId::Number(1),
        "roots/list",
        Some(json!({"x": 1})),
    );
    send_request(&peer, RequestId::String("two".into()), "elicit", None);
    send_request(&peer, RequestId::Number(3), "ping", None);
    let first = next_response(&peer);
    assert_eq!(first.id, Some(RequestId::Number(1)));
    assert_eq!(
        first.payload,
        Ok(json!({"roots": [{"uri": "file:///work"}], "echo": {"x": 1}}))
    );
    let second = next_response(&peer);
    assert_eq!(second.id, Some(RequestId::String("two".into())));
    assert_eq!(second.payload.expect_err("refused").code, ErrorCode(-32042));
    // With a handler, ping is the handler's too.
    let third = next_response(&peer);
    assert_eq!(third.id, Some(RequestId::Number(3)));
    assert_eq!(third.payload.expect_err("refused").message, "refused ping");
    for _ in 0..3 {
        let name = threads_rx.recv_timeout(SOON).expect("the handler ran");
        assert_eq!(name.as_deref(), Some("toolwire-dispatch"));
    }
    support::finish(&client);
}

#[test]
fn an_invalid_request_with_a_readable_id_is_answered_with_invalid_request() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    peer.send_line(r#"{"jsonrpc":"1.0","id":7,"method":"tools/list"}"#);
    let response = next_response(&peer);
    assert_eq!(response.id, Some(RequestId::Number(7)));
    assert_eq!(
        response.payload.expect_err("invalid").code,
        ErrorCode::INVALID_REQUEST
    );
    peer.send_line(r#"{"jsonrpc":"2.0","id":"s","method":5}"#);
    let response = next_response(&peer);
    assert_eq!(response.id, Some(RequestId::String("s".into())));
    assert_eq!(
        response.payload.expect_err("invalid").code,
        ErrorCode::INVALID_REQUEST
    );
    peer.send_line(r#"{"jsonrpc":"2.0","id":8,"method":"m","params":"text"}"#);
    let response = next_response(&peer);
    assert_eq!(response.id, Some(RequestId::Number(8)));
    assert_eq!(
        response.payload.expect_err("invalid").code,
        ErrorCode::INVALID_REQUEST
    );
    let stats = client.stats();
    assert_eq!(stats.skipped_lines, 3, "{stats:?}");
    assert!(!client.is_closed());
    support::round_trip(&client, &peer);
    support::finish(&client);
}

#[test]
fn notifications_reach_the_handler_in_order_on_the_dispatch_thread() {
    const COUNT: u64 = 200;
    let (seen_tx, seen_rx) = unbounded::<(u64, Option<String>)>();
    let config = ClientConfig::default().dialect(McpDialect).on_notification(
        move |notification: &Notification| {
            assert_eq!(notification.method, "notifications/message");
            let seq = notification.params.as_ref().expect("params")["seq"]
                .as_u64()
                .expect("seq");
            let _ = seen_tx.send((seq, std::thread::current().name().map(str::to_owned)));
        },
    );
    let (client, peer) = memory_client(config);
    for seq in 0..COUNT {
        support::notify(&peer, "notifications/message", json!({"seq": seq}));
    }
    for expected in 0..COUNT {
        let (seq, thread) = seen_rx.recv_timeout(SOON).expect("delivered");
        assert_eq!(seq, expected);
        assert_eq!(thread.as_deref(), Some("toolwire-dispatch"));
    }
    support::round_trip(&client, &peer);
    assert!(seen_rx.try_recv().is_err(), "each delivered once");
    assert_eq!(client.stats().received, COUNT + 1);
    support::finish(&client);
}

#[test]
fn a_request_with_an_unreadable_id_is_answered_with_a_null_id() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    for line in [
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
    ] {
        peer.send_line(line);
        let response = next_response(&peer);
        assert_eq!(response.id, None, "{line}");
        assert_eq!(
            response.payload.unwrap_err().code,
            ErrorCode::INVALID_REQUEST,
            "{line}"
        );
    }
    // Not JSON at all: no reply (a storm of errors helps nobody); the stream goes on.
    peer.send_line("this is not json");
    send_request(&peer, RequestId::Number(9), "ping", None);
    let response = next_response(&peer);
    assert_eq!(response.id, Some(RequestId::Number(9)));
    assert_eq!(client.stats().skipped_lines, 4);
    client.close().unwrap();
}

#[test]
fn a_full_inbound_queue_answers_the_overflow_at_once_with_internal_error() {
    // One request inside the handler, one waiting in a queue of one: the third is refused at
    // once instead of queueing without bound.
    let (entered_tx, entered_rx) = unbounded();
    let (release_tx, release_rx) = unbounded::<()>();
    let mut config = ClientConfig::default()
        .dialect(McpDialect)
        .on_request(move |request| {
            let _ = entered_tx.send(request.id.clone());
            let _ = release_rx.recv_timeout(SOON);
            Ok(json!({"done": request.id.to_value()}))
        });
    config = config.inbound_queue(1);
    let (client, peer) = memory_client(config);
    send_request(&peer, RequestId::Number(1), "work", None);
    assert_eq!(entered_rx.recv_timeout(SOON).unwrap(), RequestId::Number(1));
    send_request(&peer, RequestId::Number(2), "work", None);
    send_request(&peer, RequestId::Number(3), "work", None);
    let refused = next_response(&peer);
    assert_eq!(refused.id, Some(RequestId::Number(3)));
    let error = refused.payload.unwrap_err();
    assert_eq!(error.code, ErrorCode::INTERNAL_ERROR);
    assert!(error.message.contains("overloaded"), "{}", error.message);
    release_tx.send(()).unwrap();
    release_tx.send(()).unwrap();
    for expected in [1, 2] {
        let response = next_response(&peer);
        assert_eq!(response.id, Some(RequestId::Number(expected)));
        assert_eq!(response.payload, Ok(json!({"done": expected})));
    }
    client.close().unwrap();
}

#[test]
fn close_waits_for_a_stuck_handler_only_for_the_dispatch_grace() {
    let (entered_tx, entered_rx) = unbounded();
    let (release_tx, release_rx) = unbounded::<()>();
    let (left_tx, left_rx) = unbounded::<()>();
    let mut config = ClientConfig::default()
        .dialect(McpDialect)
        .on_request(move |_| {
            let _ = entered_tx.send(());
            // Stuck until the test lets go, which it does only after close() returned (or
            // gave up on it): a close that waited for the handler could not return first.
            let _ = release_rx.recv();
            let _ = left_tx.send(());
            Ok(json!({}))
        });
    config = config.dispatch_join_grace(std::time::Duration::from_millis(200));
    let (client, peer) = memory_client(config);
    send_request(&peer, RequestId::Number(1), "stuck", None);
    entered_rx.recv_timeout(SOON).unwrap();
    // close() on its own thread, with a guard that only keeps a broken test from hanging:
    // past it the handler is released (so everything can end) and the test fails.
    let (closed_tx, closed_rx) = unbounded();
    let closer = client.clone();
    std::thread::spawn(move || {
        let started = std::time::Instant::now();
        let outcome = closer.close();
        let _ = closed_tx.send((outcome, started.elapsed()));
    });
    let closed = closed_rx.recv_timeout(SOON);
    if closed.is_err() {
        let _ = release_tx.send(());
    }
    let (outcome, took) = closed.expect("close() waited for the stuck handler");
    outcome.unwrap();
    // It waited for the handler (the grace), then left it behind, still inside.
    assert!(took >= std::time::Duration::from_millis(200), "{took:?}");
    assert!(left_rx.try_recv().is_err(), "the handler had already left");
    release_tx.send(()).unwrap();
    left_rx
        .recv_timeout(SOON)
        .expect("the released handler returns");
}

/// `settle` waits for the handlers to have seen what the peer sent before the last answer:
/// the answer wakes its caller at once while a notification sent before it is still queued
/// behind a busy handler; `settle` says so within its bound, and returns true once the
/// handler has had it.
#[test]
fn settle_waits_for_notifications_sent_before_the_answer() {
    let (gate_tx, gate_rx) = unbounded::<()>();
    let (seen_tx, seen_rx) = unbounded::<u64>();
    let config = ClientConfig::default().dialect(McpDialect).on_notification(
        move |notification: &Notification| {
            let seq = notification.params.as_ref().expect("params")["seq"]
                .as_u64()
                .expect("seq");
            if seq == 0 {
                // The first holds the dispatch thread until the test opens the gate.
                gate_rx.recv().expect("the gate");
            }
            let _ = seen_tx.send(seq);
        },
    );
    let (client, peer) = memory_client(config);
    support::notify(&peer, "notifications/message", json!({"seq": 0}));
    support::notify(&peer, "notifications/message", json!({"seq": 1}));
    // The answer that follows both on the wire reaches its caller.
    support::round_trip(&client, &peer);
    assert!(
        !client.settle(std::time::Duration::from_millis(50)),
        "the handler is held: not settled"
    );
    assert!(seen_rx.try_recv().is_err());
    gate_tx.send(()).expect("open the gate");
    assert!(client.settle(SOON), "settled once the handler has both");
    assert_eq!(seen_rx.try_iter().collect::<Vec<_>>(), vec![0, 1]);
    support::finish(&client);
}
