//! A 2026-07-28 input round's `requestState` is bound to the caller it was made for: the
//! retry with it by that caller completes; the same state presented by another caller, by
//! the same subject of another issuer's making, or without a token is -32602 exactly as a
//! tampered one, and the handler never sees it. With static tokens and with JWT access
//! tokens.
#![cfg(feature = "oauth")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use toolwire::auth::SigningKey;
use toolwire::harness::LocalTool;
use toolwire::server::{
    Authorization, CallToolResult, HttpServer, HttpServerConfig, InputRequired, RequestContext,
    Server, ServerConfig, StaticTokens,
};

use super::http_auth::{at_jwt, claims, Issuer, RESOURCE};
use crate::support::hex_sha256;
use crate::support::server::{post, stateless_headers};

/// A server whose `ask` asks for a name with a state, counting the runs that saw a state.
fn asking(with_state: &Arc<AtomicUsize>) -> Server {
    let server = Server::new(ServerConfig::new("rounds", "1")).unwrap();
    let counted = Arc::clone(with_state);
    server
        .add_tool(LocalTool::with_context(
            "ask",
            "Asks for a name.",
            json!({"type": "object"}),
            move |context, _| {
                let context = RequestContext::of(context).expect("served");
                match (context.request_state(), context.input_response("name")) {
                    (Some(state), Some(answer)) => {
                        counted.fetch_add(1, Ordering::SeqCst);
                        Ok(CallToolResult::from_text(format!(
                            "{} {}",
                            state["greeting"].as_str().unwrap_or(""),
                            answer["content"]["name"].as_str().unwrap_or("")
                        )))
                    }
                    _ => Err(InputRequired::new()
                        .elicit(
                            "name",
                            json!({"message": "Name?", "requestedSchema": {"type": "object"}}),
                        )
                        .state(json!({"greeting": "Hello,"}))
                        .into()),
                }
            },
        ))
        .unwrap();
    server
}

/// A 2026-07-28 `tools/call ask` with `extra` params, as the holder of `token` (or no one).
fn ask(http: &HttpServer, token: Option<&str>, extra: Value) -> Value {
    let mut headers = stateless_headers("tools/call", Some("ask"));
    if let Some(token) = token {
        headers.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    let mut params = json!({"name": "ask", "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }});
    for (key, value) in extra.as_object().unwrap() {
        params[key] = value.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let answer = post(&http.url(), &headers, &body);
    assert_eq!(answer.status, 200, "{answer:?}");
    serde_json::from_str(&answer.body).unwrap()
}

/// `owner` starts a round; each of `others` (None: no token) retrying with its state is
/// refused as a tampered state is; `owner` retrying completes.
fn assert_bound(http: &HttpServer, owner: &str, others: &[Option<&str>], runs: &AtomicUsize) {
    let first = ask(http, Some(owner), json!({}));
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answers = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let retry = json!({"inputResponses": answers, "requestState": state});
    let tampered = json!({"inputResponses": answers, "requestState": format!("{state}x")});
    let tampered = ask(http, Some(owner), tampered);
    assert_eq!(tampered["error"]["code"], -32602, "{tampered}");
    for other in others {
        let refused = ask(http, *other, retry.clone());
        assert_eq!(
            refused["error"], tampered["error"],
            "{other:?} is answered as a tampered state is"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no refused retry ran");
    let done = ask(http, Some(owner), retry);
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada", "{done}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_request_state_is_refused_to_any_other_static_token_caller() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = asking(&runs);
    let tokens = StaticTokens::new()
        .with(&hex_sha256("ann-secret"), "ann", &[])
        .unwrap()
        .with(&hex_sha256("bob-secret"), "bob", &[])
        .unwrap()
        .with(&hex_sha256("ann-laptop"), "ann", &[])
        .unwrap();
    let auth = Authorization::static_tokens(RESOURCE, tokens);
    let http = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    // Another subject is refused; ann's second token is ann (the caller, not the token).
    assert_bound(&http, "ann-secret", &[Some("bob-secret")], &runs);
    let first = ask(&http, Some("ann-secret"), json!({}));
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answers = json!({"name": {"action": "accept", "content": {"name": "Bo"}}});
    let retry = json!({"inputResponses": answers, "requestState": state});
    let done = ask(&http, Some("ann-laptop"), retry);
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Bo", "{done}");
    http.close().unwrap();
}

#[test]
fn a_request_state_is_refused_to_any_other_jwt_caller_or_issuer_and_without_a_token() {
    let (issuer, second) = (Issuer::start(), Issuer::start());
    let key = SigningKey::generate();
    issuer.publish(&key, "k1");
    second.publish(&key, "k1");
    let runs = Arc::new(AtomicUsize::new(0));
    let server = asking(&runs);
    let auth = Authorization::jwt(RESOURCE, issuer.url()).issuer(second.url());
    let http = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    let ann = key.sign_jws(&at_jwt("k1"), &claims(&issuer.url()));
    let mut bob = claims(&issuer.url());
    bob["sub"] = json!("bob");
    let bob = key.sign_jws(&at_jwt("k1"), &bob);
    // The same subject, made by the other trusted issuer: another caller.
    let elsewhere = key.sign_jws(&at_jwt("k1"), &claims(&second.url()));
    assert_bound(&http, &ann, &[Some(&bob), Some(&elsewhere)], &runs);
    let kept = ask(&http, Some(&ann), json!({}));
    let anns_state = kept["result"]["requestState"].as_str().unwrap().to_owned();
    http.close().unwrap();

    // Without authorization a state carries no caller, and a caller's state is refused when
    // presented with no token (to a server of the same process that needs none).
    let runs = Arc::new(AtomicUsize::new(0));
    let open = HttpServer::bind(&asking(&runs), HttpServerConfig::new()).unwrap();
    let first = ask(&open, None, json!({}));
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answers = json!({"name": {"action": "accept", "content": {"name": "Cy"}}});
    let done = ask(
        &open,
        None,
        json!({"inputResponses": answers, "requestState": state}),
    );
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Cy", "{done}");
    let unauthenticated = ask(
        &open,
        None,
        json!({"inputResponses": answers, "requestState": anns_state}),
    );
    assert_eq!(
        unauthenticated["error"]["code"], -32602,
        "{unauthenticated}"
    );
    assert!(unauthenticated["error"]["message"]
        .as_str()
        .unwrap()
        .contains("integrity"));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only Cy's retry ran");
    open.close().unwrap();
}
