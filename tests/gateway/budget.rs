//! The policy's budget of calls per caller and window ends in BUDGET; refused calls
//! (INVALID, UNKNOWN_TOOL) spend none of it. Over HTTP a caller is its address: a new
//! session or a new connection from it starts nothing over, another address has a budget of
//! its own, and the count starts over once the window ends. A connection without an address
//! (in memory, stdio) is a caller of its own.
#![cfg(feature = "gateway")]

use std::time::{Duration, Instant};

use crate::support::gateway as support;
use crate::support::{eventually, LONG};

use serde_json::json;
use support::{call, front, gateway, status_count, tool_server_entry};
use toolwire::gateway::Gateway;
use toolwire::server::HttpServer;
use toolwire::{HttpConfig, McpClient, McpConfig, ProtocolMode};

#[test]
fn the_budget_per_caller_ends_in_budget() {
    let gateway = gateway(
        &[("tools", tool_server_entry())],
        r#"{"calls_per_caller": 2}"#,
    );
    let (client, connection) = front(&gateway);
    assert_eq!(
        call(&client, "mcp__tools__echo", json!({"message": "1"})).text(),
        "1"
    );
    // Refusals spend nothing.
    assert!(call(&client, "mcp__tools__echo", json!({}))
        .text()
        .starts_with("INVALID: "));
    assert!(call(&client, "mcp__tools__nothing", json!({}))
        .text()
        .starts_with("UNKNOWN_TOOL: "));
    assert_eq!(
        call(&client, "mcp__tools__echo", json!({"message": "2"})).text(),
        "2"
    );
    let spent = call(&client, "mcp__tools__echo", json!({"message": "3"}));
    assert!(spent.is_error);
    assert!(spent.text().starts_with("BUDGET: "), "{}", spent.text());
    assert!(
        // The harness's words: the gateway's budget is a harness budget scope, with the
        // policy's default window.
        spent
            .text()
            .contains("attempt budget of 2 per 60 s is spent (it starts over in "),
        "{}",
        spent.text()
    );
    let stats = gateway.stats();
    assert_eq!(status_count(&stats, "tools", "BUDGET"), 1, "{stats}");
    assert_eq!(stats["backends"]["tools"]["forwarded"], json!(2), "{stats}");

    // Another connection in memory is another caller (it has no address to share).
    let (second, second_connection) = front(&gateway);
    assert_eq!(
        call(&second, "mcp__tools__echo", json!({"message": "4"})).text(),
        "4"
    );
    assert!(call(&client, "mcp__tools__echo", json!({"message": "5"}))
        .text()
        .starts_with("BUDGET: "));
    for (client, connection) in [(client, connection), (second, second_connection)] {
        client.close().unwrap();
        connection.wait();
    }
}

/// The gateway served over HTTP twice, on IPv4 and on IPv6 loopback, so that clients come
/// from two addresses (127.0.0.1 and ::1).
fn two_addresses(gateway: &Gateway) -> [HttpServer; 2] {
    ["127.0.0.1:0", "[::1]:0"].map(|addr| gateway.serve_http(addr.parse().unwrap()).unwrap())
}

fn http_client(http: &HttpServer, mode: ProtocolMode) -> McpClient {
    McpClient::connect_http(HttpConfig::new(http.url()), McpConfig::default().mode(mode))
        .expect("front client over HTTP")
}

fn is_budget(client: &McpClient) -> bool {
    call(client, "mcp__tools__echo", json!({"message": "more"}))
        .text()
        .starts_with("BUDGET: ")
}

#[test]
fn over_http_a_new_session_starts_nothing_over_and_another_address_has_its_own() {
    let gateway = gateway(
        &[("tools", tool_server_entry())],
        r#"{"calls_per_caller": 2}"#,
    );
    let [v4, v6] = two_addresses(&gateway);
    let first = http_client(&v4, ProtocolMode::Legacy);
    for n in ["1", "2"] {
        assert_eq!(
            call(&first, "mcp__tools__echo", json!({"message": n})).text(),
            n
        );
    }
    assert!(is_budget(&first));
    first.close().unwrap();
    // A new session from the same address: still spent (it was reset before).
    let again = http_client(&v4, ProtocolMode::Legacy);
    assert!(is_budget(&again), "a new session started the count over");
    // The 2026-07-28 requests of the same address count there too.
    let modern = http_client(&v4, ProtocolMode::Modern);
    assert!(is_budget(&modern));
    // Another address is another caller.
    let other = http_client(&v6, ProtocolMode::Legacy);
    assert_eq!(
        call(&other, "mcp__tools__echo", json!({"message": "3"})).text(),
        "3"
    );
    assert_eq!(gateway.stats()["backends"]["tools"]["forwarded"], json!(3));
    for client in [again, modern, other] {
        client.close().unwrap();
    }
}

#[test]
fn stateless_clients_count_by_address_and_reconnecting_starts_nothing_over() {
    let gateway = gateway(
        &[("tools", tool_server_entry())],
        r#"{"calls_per_caller": 2}"#,
    );
    let [v4, v6] = two_addresses(&gateway);
    let first = http_client(&v4, ProtocolMode::Modern);
    let second = http_client(&v6, ProtocolMode::Modern);
    // Two 2026-07-28 clients at two addresses: two budgets (they shared one before).
    for n in ["1", "2"] {
        assert_eq!(
            call(&first, "mcp__tools__echo", json!({"message": n})).text(),
            n
        );
    }
    assert!(is_budget(&first));
    for n in ["3", "4"] {
        assert_eq!(
            call(&second, "mcp__tools__echo", json!({"message": n})).text(),
            n
        );
    }
    assert!(is_budget(&second));
    // Each request is its own HTTP exchange: a client that connects again is the same
    // caller.
    first.close().unwrap();
    let reconnected = http_client(&v4, ProtocolMode::Modern);
    assert!(
        is_budget(&reconnected),
        "reconnecting started the count over"
    );
    let stats = gateway.stats();
    assert_eq!(stats["backends"]["tools"]["forwarded"], json!(4), "{stats}");
    assert_eq!(status_count(&stats, "tools", "BUDGET"), 3, "{stats}");
    for client in [second, reconnected] {
        client.close().unwrap();
    }
}

#[test]
fn the_count_starts_over_once_the_window_has_ended_and_not_before() {
    let gateway = gateway(
        &[("tools", tool_server_entry())],
        r#"{"calls_per_caller": 1, "budget_window": "1s"}"#,
    );
    let [v4, _v6] = two_addresses(&gateway);
    let client = http_client(&v4, ProtocolMode::Modern);
    // The window begins with the first call counted, at the earliest now.
    let began = Instant::now();
    assert_eq!(
        call(&client, "mcp__tools__echo", json!({"message": "1"})).text(),
        "1"
    );
    let spent = call(&client, "mcp__tools__echo", json!({"message": "2"}));
    assert!(
        spent
            .text()
            .contains("attempt budget of 1 per 1 s is spent (it starts over in "),
        "{}",
        spent.text()
    );
    // Refused calls spend nothing and do not move the window: once it ends, one call is
    // admitted again.
    let mut admitted = None;
    assert!(eventually(LONG, || {
        let answer = call(&client, "mcp__tools__echo", json!({"message": "3"}));
        if answer.text() == "3" {
            admitted = Some(began.elapsed());
            return true;
        }
        assert!(answer.text().starts_with("BUDGET: "), "{}", answer.text());
        false
    }));
    let waited = admitted.unwrap();
    assert!(
        waited >= Duration::from_secs(1),
        "admitted after {waited:?}"
    );
    assert!(is_budget(&client), "the new window holds one call");
    client.close().unwrap();
}

/// With authorization in front, a caller is its token's subject: two callers behind one
/// address count apart, and one caller's count holds across its sessions, both eras and
/// connections.
#[cfg(feature = "oauth")]
#[test]
fn an_authenticated_caller_is_counted_by_subject_across_sessions_and_apart_from_others() {
    use toolwire::server::{Authorization, HttpServerConfig, StaticTokens};
    let tokens = StaticTokens::new()
        .with(&crate::support::hex_sha256("ann-secret"), "ann", &[])
        .unwrap()
        .with(&crate::support::hex_sha256("bob-secret"), "bob", &[])
        .unwrap();
    let auth = Authorization::static_tokens("http://127.0.0.1/mcp", tokens);
    let gateway = support::gateway_with(
        &[("tools", tool_server_entry())],
        r#"{"calls_per_caller": 2}"#,
        toolwire::gateway::GatewayConfig::new().http(HttpServerConfig::new().authorization(auth)),
    );
    let http = gateway.serve_http("127.0.0.1:0".parse().unwrap()).unwrap();
    let as_caller = |token: &str, mode: ProtocolMode| {
        McpClient::connect_http(
            HttpConfig::new(http.url()).bearer_token(token),
            McpConfig::default().mode(mode),
        )
        .expect("front client with a token")
    };
    let ann = as_caller("ann-secret", ProtocolMode::Legacy);
    for n in ["1", "2"] {
        assert_eq!(
            call(&ann, "mcp__tools__echo", json!({"message": n})).text(),
            n
        );
    }
    assert!(is_budget(&ann));
    ann.close().unwrap();
    // Bob calls from the same address: a caller of his own.
    let bob = as_caller("bob-secret", ProtocolMode::Modern);
    assert_eq!(
        call(&bob, "mcp__tools__echo", json!({"message": "3"})).text(),
        "3"
    );
    // Ann again, in a new session and in the other era: still spent.
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let again = as_caller("ann-secret", mode);
        assert!(
            is_budget(&again),
            "{mode:?}: a new session started ann's count over"
        );
        again.close().unwrap();
    }
    assert_eq!(gateway.stats()["backends"]["tools"]["forwarded"], json!(3));
    bob.close().unwrap();
}
