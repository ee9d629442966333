//! Frames a peer sends that the strict parser cannot take still fail the call they answer at
//! once, with the reason, instead of leaving it to its deadline: nested deeper than the
//! parser allows, a number out of range, invalid UTF-8; and an integer outside the 64-bit
//! range is refused by name, never rounded into a float.
use crate::support::client as support;

use serde_json::json;
use support::{memory_client, next_request, SOON};
use toolwire::jsonrpc::{ErrorCode, Message, RequestId};
use toolwire::{CallOptions, ClientConfig, Error};

/// Starts a call, lets the peer answer it with `answer(id)`, and returns the outcome. The
/// call's deadline is only a hang guard: a frame that is dropped shows as a timeout.
fn answered_with(answer: impl Fn(i64) -> Vec<u8>) -> Result<serde_json::Value, Error> {
    let (client, peer) = memory_client(ClientConfig::default());
    let handle = client
        .start("tools/get", json!({}), CallOptions::new().timeout(SOON))
        .expect("start");
    let request = next_request(&peer);
    let RequestId::Number(id) = request.id else {
        panic!("numbered ids");
    };
    peer.send_bytes(answer(id));
    let outcome = handle.wait();
    assert_eq!(client.stats().in_flight, 0);
    assert_eq!(client.stats().timeouts, 0, "it waited for its deadline");
    client.close().expect("close");
    outcome
}

fn expect_protocol(outcome: Result<serde_json::Value, Error>, needle: &str) {
    match outcome {
        Err(Error::Protocol(message)) => assert!(message.contains(needle), "{message}"),
        other => panic!("expected a protocol error naming {needle:?}, got {other:?}"),
    }
}

#[test]
fn a_response_nested_deeper_than_the_parser_allows_fails_its_call_at_once() {
    expect_protocol(
        answered_with(|id| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{}0{}}}"#,
                "[".repeat(300),
                "]".repeat(300)
            )
            .into_bytes()
        }),
        "recursion limit",
    );
}

#[test]
fn a_response_with_a_number_out_of_range_fails_its_call_at_once() {
    expect_protocol(
        answered_with(|id| {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"x":1e400}}}}"#).into_bytes()
        }),
        "number out of range",
    );
}

#[test]
fn a_response_with_invalid_utf8_fails_its_call_at_once() {
    expect_protocol(
        answered_with(|id| {
            let mut bytes = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":""#).into_bytes();
            bytes.extend_from_slice(b"\xff\xfe\"}");
            bytes
        }),
        "malformed response",
    );
}

#[test]
fn an_integer_beyond_64_bits_in_a_result_is_refused_by_name_not_rounded() {
    expect_protocol(
        answered_with(|id| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"count":[1,18446744073709551616]}}}}"#
            )
            .into_bytes()
        }),
        "18446744073709551616 at /result/count/1",
    );
}

#[test]
fn a_request_from_the_peer_with_an_integer_beyond_64_bits_is_answered_with_an_error() {
    let (client, peer) = memory_client(ClientConfig::default().on_request(|_| Ok(json!("ran"))));
    peer.send_line(
        r#"{"jsonrpc":"2.0","id":5,"method":"sample","params":{"n":-99999999999999999999}}"#,
    );
    let Some(Message::Response(response)) = peer.recv_message(SOON) else {
        panic!("expected an answer");
    };
    assert_eq!(response.id, Some(RequestId::Number(5)));
    let error = response
        .payload
        .expect_err("an error, the handler never ran");
    assert_eq!(error.code, ErrorCode::INVALID_REQUEST);
    assert!(error.message.contains("/params/n"), "{}", error.message);
    client.close().expect("close");
}
