//! Batches at the protocol's edges: a batch of requests from the peer is answered as one
//! array (JSON-RPC 2.0 §6), invalid elements included and notifications left unanswered; and
//! when the reply to a batch of ours leaves one of its requests out, that call fails at once.
use crate::support::client as support;

use serde_json::{json, Value};
use support::{memory_client, SOON};
use toolwire::jsonrpc::BatchEntry;
use toolwire::{CallOptions, ClientConfig, Error};

#[test]
fn a_batch_of_requests_from_the_peer_is_answered_as_one_array() {
    let config = ClientConfig::default().on_request(|request| Ok(json!({"ran": request.method})));
    let (client, peer) = memory_client(config);
    peer.send_line(
        r#"[{"jsonrpc":"2.0","id":1,"method":"a"},
            {"jsonrpc":"2.0","method":"just-a-notification"},
            {"jsonrpc":"1.0","id":2,"method":"b"},
            {"jsonrpc":"2.0","id":"three","method":"c"}]"#,
    );
    let line = peer.recv_line(SOON).expect("one reply frame");
    let reply: Value = serde_json::from_str(&line).expect("JSON");
    let replies = reply.as_array().expect("the reply is one array");
    assert_eq!(
        replies.len(),
        3,
        "one response per request, none for the notification: {reply}"
    );
    let by_id = |id: Value| {
        replies
            .iter()
            .find(|response| response["id"] == id)
            .unwrap_or_else(|| panic!("no response for {id}: {reply}"))
    };
    assert_eq!(by_id(json!(1))["result"], json!({"ran": "a"}));
    assert_eq!(by_id(json!(2))["error"]["code"], json!(-32600));
    assert_eq!(by_id(json!("three"))["result"], json!({"ran": "c"}));
    // Nothing else follows: the batch was answered once.
    assert_eq!(peer.recv_line(std::time::Duration::ZERO), None);
    client.close().expect("close");
}

#[test]
fn a_request_the_batch_reply_leaves_out_fails_at_once() {
    let (client, peer) = memory_client(ClientConfig::default());
    let server = std::thread::spawn(move || {
        let line = peer.recv_line(SOON).expect("the batch");
        let batch: Value = serde_json::from_str(&line).expect("JSON");
        let ids: Vec<Value> = batch
            .as_array()
            .expect("an array")
            .iter()
            .map(|request| request["id"].clone())
            .collect();
        // Answer the first and the last; leave the middle one out.
        peer.send_line(
            json!([
                {"jsonrpc": "2.0", "id": ids[0], "result": "first"},
                {"jsonrpc": "2.0", "id": ids[2], "result": "third"}
            ])
            .to_string(),
        );
        peer
    });
    let entry = |method: &str| BatchEntry::Request {
        method: method.into(),
        params: Value::Null,
    };
    // The deadline is only a hang guard: a left-out request would otherwise wait for it.
    let outcomes = client
        .batch(
            vec![entry("one"), entry("two"), entry("three")],
            CallOptions::new().timeout(SOON),
        )
        .expect("the batch is sent");
    let _peer = server.join().expect("the server");
    assert_eq!(outcomes[0].as_ref().expect("answered"), &json!("first"));
    match &outcomes[1] {
        Err(Error::Protocol(message)) => assert!(message.contains("no response"), "{message}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
    assert_eq!(outcomes[2].as_ref().expect("answered"), &json!("third"));
    assert_eq!(client.stats().timeouts, 0);
    assert_eq!(client.stats().in_flight, 0);
    client.close().expect("close");
}
