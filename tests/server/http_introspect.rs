//! Opaque access tokens checked by token introspection (RFC 7662,
//! `Authorization::introspection`) at the fake authorization server of tests/support
//! (`auth_fake`, introspection on): the endpoint found through the issuer's metadata, this
//! server authenticating with its client secret (Basic), the caller the answer names on the
//! request context, good answers believed until their maximum age (a revoked token refused
//! once that has passed, at once with a maximum age of zero), another audience or an inactive
//! token 401, a missing scope 403, and an endpoint that cannot be asked (down, or refusing
//! this server's credentials) 503 without a challenge; no refused request reaches a handler
//! and the token and secret show in no answer.
#![cfg(feature = "oauth")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolwire::harness::LocalTool;
use toolwire::server::{
    Authorization, CallToolResult, HttpServer, HttpServerConfig, RequestContext, Server,
    ServerConfig,
};
use toolwire::{HttpConfig, McpClient, McpConfig, ProtocolMode};

use crate::support::auth_fake::{FakeAuth, Options};
use crate::support::server::{post, stateless_headers, stateless_request, RawResponse};

const RESOURCE: &str = "https://mcp.example/mcp";

/// A server with `whoami`, counting its runs.
fn server(runs: &Arc<AtomicUsize>) -> Server {
    let server = Server::new(ServerConfig::new("introspected", "1")).unwrap();
    let counted = Arc::clone(runs);
    server
        .add_tool(LocalTool::with_context(
            "whoami",
            "Says who called.",
            json!({"type": "object"}),
            move |context, _| {
                counted.fetch_add(1, Ordering::SeqCst);
                let caller = RequestContext::of(context)
                    .and_then(|c| c.caller())
                    .expect("a caller");
                Ok(CallToolResult::from_text(format!(
                    "{} {} {} {}",
                    caller.subject(),
                    caller.client_id().unwrap_or("-"),
                    caller.scopes().join(","),
                    caller.issuer().unwrap_or("-")
                )))
            },
        ))
        .unwrap();
    server
}

/// The fake, introspecting for `rs` / `rs-secret`, its tokens for RESOURCE.
fn fake() -> FakeAuth {
    FakeAuth::start(Options {
        introspection: Some(("rs", "rs-secret")),
        resource: Some(RESOURCE.to_owned()),
        grant_types: vec!["client_credentials"],
        ..Options::default()
    })
}

/// An opaque token from the fake (`client_credentials`) with `scope`.
fn token(fake: &FakeAuth, scope: &str) -> String {
    let mut answer = ureq::post(format!("{}/token", fake.base))
        .send_form([("grant_type", "client_credentials"), ("scope", scope)])
        .unwrap();
    let body: Value = serde_json::from_str(&answer.body_mut().read_to_string().unwrap()).unwrap();
    body["access_token"].as_str().unwrap().to_owned()
}

fn call(http: &HttpServer, token: &str) -> RawResponse {
    let headers = format!(
        "{}Authorization: Bearer {token}\r\n",
        stateless_headers("tools/call", Some("whoami"))
    );
    let body = stateless_request(1, "tools/call", json!({"name": "whoami", "arguments": {}}));
    post(&http.url(), &headers, &body)
}

fn introspections(fake: &FakeAuth) -> usize {
    fake.world.lock().unwrap().introspections.len()
}

#[test]
fn opaque_tokens_are_admitted_by_introspection_and_refused_when_it_says_no() {
    let fake = fake();
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs);
    let auth = Authorization::introspection(RESOURCE, fake.issuer())
        .introspection_client("rs", "rs-secret")
        .scopes(["mcp:tools"])
        .leeway(Duration::ZERO);
    let http = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    let good = token(&fake, "mcp:tools extra");
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let client = McpClient::connect_http(
            HttpConfig::new(http.url()).bearer_token(&good),
            McpConfig::default().mode(mode),
        )
        .unwrap();
        assert_eq!(client.list_tools().unwrap().len(), 1);
        let text = client.call_tool("whoami", json!({})).unwrap().text();
        let expected = format!("user-1 svc mcp:tools,extra {}", fake.issuer());
        assert_eq!(text, expected, "{mode:?}");
        client.close().unwrap();
    }
    // One introspection: the answer is believed for its maximum age (60 s by default).
    assert_eq!(introspections(&fake), 1);
    let (form, basic) = fake.world.lock().unwrap().introspections[0].clone();
    assert_eq!(form.get("token"), Some(&good));
    assert_eq!(
        form.get("token_type_hint").map(String::as_str),
        Some("access_token")
    );
    assert_eq!(basic.as_deref(), Some("Basic cnM6cnMtc2VjcmV0"));
    let served = runs.load(Ordering::SeqCst);

    // Unknown (inactive), another audience, without the scope.
    let unknown = call(&http, "tok-unknown");
    assert_eq!(unknown.status, 401, "{unknown:?}");
    let challenge = unknown.header("www-authenticate").unwrap();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    assert!(!unknown.body.contains("tok-unknown") && !challenge.contains("tok-unknown"));
    let narrow = call(&http, &token(&fake, "extra"));
    assert_eq!(narrow.status, 403, "{narrow:?}");
    assert!(narrow
        .header("www-authenticate")
        .unwrap()
        .contains("scope=\"mcp:tools\""));
    fake.set(|options| options.resource = Some("https://other.example/mcp".into()));
    let elsewhere = call(&http, &token(&fake, "mcp:tools"));
    assert_eq!(elsewhere.status, 401, "{elsewhere:?}");
    fake.set(|options| options.resource = Some(RESOURCE.into()));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        served,
        "no refusal ran a handler"
    );
    // Revoked at the authorization server: still believed within the maximum age here.
    fake.revoke_all();
    assert_eq!(call(&http, &good).status, 200);
    http.close().unwrap();

    // A maximum age of zero asks every time: the revoked token is refused at once, and a
    // live one costs an introspection per request.
    let auth = Authorization::introspection(RESOURCE, fake.issuer())
        .introspection_client("rs", "rs-secret")
        .introspection_max_age(Duration::ZERO);
    let asking = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    assert_eq!(call(&asking, &good).status, 401);
    let live = token(&fake, "mcp:tools");
    let before = introspections(&fake);
    assert_eq!(call(&asking, &live).status, 200);
    assert_eq!(call(&asking, &live).status, 200);
    assert_eq!(introspections(&fake), before + 2);
    asking.close().unwrap();
}

#[test]
fn an_introspection_endpoint_that_cannot_be_asked_is_503_not_a_bad_token() {
    let fake = fake();
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs);
    let good = token(&fake, "mcp:tools");
    // This server's credentials are refused by the endpoint (configured, not discovered).
    let auth = Authorization::introspection(RESOURCE, fake.issuer())
        .introspection_endpoint(format!("{}/introspect", fake.base))
        .introspection_client("rs", "not-the-secret");
    let refused = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    let answer = call(&refused, &good);
    assert_eq!(answer.status, 503, "{answer:?}");
    assert_eq!(answer.header("www-authenticate"), None);
    assert!(
        answer.body.contains("temporarily_unavailable"),
        "{answer:?}"
    );
    assert!(!answer.body.contains("not-the-secret") && !answer.body.contains(&good));
    refused.close().unwrap();
    // The endpoint is down.
    let auth = Authorization::introspection(RESOURCE, fake.issuer())
        .introspection_client("rs", "rs-secret");
    let http = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    fake.set(|options| options.introspection_down = true);
    assert_eq!(call(&http, &good).status, 503);
    // Back up: the same token is admitted (a 503 was not remembered as a refusal).
    fake.set(|options| options.introspection_down = false);
    assert_eq!(call(&http, &good).status, 200);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    http.close().unwrap();
    // An issuer whose metadata offers no introspection endpoint: 503 as well.
    fake.set(|options| options.introspection = None);
    let auth = Authorization::introspection(RESOURCE, fake.issuer());
    let nowhere = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    assert_eq!(call(&nowhere, &good).status, 503);
    nowhere.close().unwrap();
}

#[test]
fn introspection_settings_are_checked_before_binding() {
    let fake = fake();
    let bind = |auth: Authorization| {
        let server = Server::new(ServerConfig::new("x", "1")).unwrap();
        HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).map(|http| {
            http.close().unwrap();
        })
    };
    let two_issuers =
        Authorization::introspection(RESOURCE, fake.issuer()).issuer("https://b.example");
    let plain = Authorization::introspection(RESOURCE, fake.issuer())
        .introspection_endpoint("http://login.example/introspect");
    let not_introspecting =
        Authorization::jwt(RESOURCE, fake.issuer()).introspection_client("rs", "rs-secret");
    let too_long = Authorization::introspection(RESOURCE, fake.issuer())
        .introspection_max_age(Duration::from_secs(25 * 3600));
    for (what, auth) in [
        ("two issuers", two_issuers),
        ("plain http endpoint", plain),
        ("a client without introspection", not_introspecting),
        ("a day and more", too_long),
    ] {
        let error = bind(auth).expect_err(what).to_string();
        assert!(!error.contains("rs-secret"), "{what}: {error}");
    }
    let debug = format!(
        "{:?}",
        Authorization::introspection(RESOURCE, fake.issuer()).introspection_client("rs", "s3cr3t")
    );
    assert!(!debug.contains("s3cr3t"), "{debug}");
}
