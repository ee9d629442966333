//! Helpers shared by the client tests over the in-memory transport (`tests/client`, and the
//! hostile ones): each file names it with `use crate::support::client as support;`.

use serde_json::{json, Value};
use toolwire::jsonrpc::{Message, Notification, Request, RequestId, Response};
use toolwire::mcp::methods::CANCELLED;
use toolwire::transport::{MemoryPeer, MemoryTransport};
use toolwire::{CallOptions, Client, ClientConfig};

pub use super::SOON;

/// A client over a fresh in-memory pair.
pub fn memory_client(config: ClientConfig) -> (Client, MemoryPeer) {
    let (transport, peer) = MemoryTransport::pair();
    let client = Client::with_config(transport, config).expect("start the client");
    (client, peer)
}

/// The next message the client sent; panics if none arrives soon.
pub fn next_message(peer: &MemoryPeer) -> Message {
    peer.recv_message(SOON)
        .expect("the client should have sent a message")
}

/// The next message, which must be a request.
pub fn next_request(peer: &MemoryPeer) -> Request {
    match next_message(peer) {
        Message::Request(request) => request,
        other => panic!("expected a request, got {other:?}"),
    }
}

/// The next message, which must be a notification.
pub fn next_notification(peer: &MemoryPeer) -> Notification {
    match next_message(peer) {
        Message::Notification(notification) => notification,
        other => panic!("expected a notification, got {other:?}"),
    }
}

/// The next message, which must be a response.
pub fn next_response(peer: &MemoryPeer) -> Response {
    match next_message(peer) {
        Message::Response(response) => response,
        other => panic!("expected a response, got {other:?}"),
    }
}

/// The next message, which must be `notifications/cancelled` for `id`; returns its reason.
pub fn expect_cancelled(peer: &MemoryPeer, id: &RequestId) -> String {
    let notification = next_notification(peer);
    assert_eq!(notification.method, CANCELLED);
    let params = notification.params.expect("cancelled carries params");
    assert_eq!(params["requestId"], id.to_value(), "{params}");
    params["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("cancelled must carry a string reason: {params}"))
        .to_owned()
}

/// Answers a request with a result.
pub fn answer(peer: &MemoryPeer, id: &RequestId, result: Value) {
    peer.send(&Message::Response(Response::ok(id.clone(), result)));
}

/// Sends a notification to the client.
pub fn notify(peer: &MemoryPeer, method: &str, params: Value) {
    peer.send(&Message::Notification(Notification {
        method: method.into(),
        params: Some(params),
    }));
}

/// Sends `notifications/progress` for `token`.
pub fn progress(peer: &MemoryPeer, token: &RequestId, value: f64) {
    notify(
        peer,
        toolwire::mcp::methods::PROGRESS,
        json!({"progressToken": token.to_value(), "progress": value, "total": 100.0}),
    );
}

/// The progress token the client put in a request's `_meta`.
pub fn progress_token(request: &Request) -> RequestId {
    let token = &request.params.as_ref().expect("params")["_meta"]["progressToken"];
    RequestId::from_value(token).unwrap_or_else(|error| panic!("bad token {token}: {error}"))
}

/// A round trip that proves every frame the peer sent before it has been processed: frames are
/// handled in order by the client's reader, so once this ping's answer is delivered, so is
/// everything before it. The next frame the peer receives must be the ping.
pub fn round_trip(client: &Client, peer: &MemoryPeer) {
    let handle = client
        .start("ping", Value::Null, CallOptions::new().timeout(SOON))
        .expect("start the sync ping");
    let request = next_request(peer);
    assert_eq!(
        request.method, "ping",
        "expected the sync ping, got {request:?}"
    );
    answer(peer, &request.id, json!({"pong": true}));
    assert_eq!(handle.wait().expect("sync ping"), json!({"pong": true}));
}

/// The project's after-test checks: nothing in flight, then closed.
pub fn finish(client: &Client) {
    assert_eq!(client.stats().in_flight, 0, "{:?}", client.stats());
    client.close().expect("close");
    assert!(client.is_closed());
    assert_eq!(client.stats().in_flight, 0);
}
