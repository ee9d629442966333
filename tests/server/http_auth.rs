//! The HTTP server as an OAuth resource server (`HttpServerConfig::authorization`): static
//! tokens and JWT access tokens from an in-test issuer whose ES256 key the test makes and
//! serves as a JWKS; the 401 and 403 challenges, the protected resource metadata, refused
//! tokens never reaching a handler, the caller on the request context, sessions bound to
//! their caller, and keys fetched again on an unknown `kid` at most once per interval.
#![cfg(feature = "oauth")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::hex_sha256;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};
use toolwire::auth::SigningKey;
use toolwire::harness::LocalTool;
use toolwire::server::{
    Authorization, CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig,
    StaticTokens, ToolAccess,
};
use toolwire::{HttpConfig, McpClient, McpConfig, ProtocolMode};

use crate::support::http_fake::FakeServer;
use crate::support::server::{exchange, post, stateless_headers, stateless_request};

pub(crate) const RESOURCE: &str = "https://mcp.example/mcp";

/// A server with `whoami` (the caller's subject and scopes), counting every handler run.
fn server(runs: &Arc<AtomicUsize>) -> Server {
    let server = Server::new(ServerConfig::new("protected", "1")).unwrap();
    let counted = Arc::clone(runs);
    server
        .add_tool(LocalTool::with_context(
            "whoami",
            "Says who called.",
            json!({"type": "object"}),
            move |context, _| {
                counted.fetch_add(1, Ordering::SeqCst);
                let text =
                    match toolwire::server::RequestContext::of(context).and_then(|c| c.caller()) {
                        Some(caller) => format!(
                            "{} {} {}",
                            caller.subject(),
                            caller.client_id().unwrap_or("-"),
                            caller.scopes().join(",")
                        ),
                        None => "nobody".to_owned(),
                    };
                Ok(CallToolResult::from_text(text))
            },
        ))
        .unwrap();
    server
}

fn client(http: &HttpServer, token: &str, mode: ProtocolMode) -> McpClient {
    McpClient::connect_http(
        HttpConfig::new(http.url()).bearer_token(token),
        McpConfig::default().mode(mode),
    )
    .unwrap()
}

/// A 2026-07-28 `tools/call whoami` with these extra headers.
fn call_with(http: &HttpServer, headers: &str) -> crate::support::server::RawResponse {
    let headers = format!(
        "{}{headers}",
        stateless_headers("tools/call", Some("whoami"))
    );
    let body = stateless_request(1, "tools/call", json!({"name": "whoami", "arguments": {}}));
    post(&http.url(), &headers, &body)
}

/// The parameters of a `Bearer a="b", c="d"` challenge.
fn challenge(header: &str) -> Vec<(String, String)> {
    let rest = header.strip_prefix("Bearer ").expect("a Bearer challenge");
    rest.split("\", ")
        .map(|part| {
            let (name, value) = part.split_once('=').expect("name=value");
            (name.to_owned(), value.trim_matches('"').to_owned())
        })
        .collect()
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(known, _)| known == name)
        .map(|(_, value)| value.as_str())
}

fn metadata(http: &HttpServer, auth_path: &str) -> Value {
    let head = format!(
        "GET {auth_path} HTTP/1.1\r\nHost: {}\r\n",
        http.local_addr()
    );
    let answer = exchange(&http.url(), &head, "");
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.header("access-control-allow-origin"), Some("*"));
    serde_json::from_str(&answer.body).unwrap()
}

#[test]
fn static_tokens_admit_their_callers_and_refuse_everyone_else_before_any_handler() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs);
    let tokens = StaticTokens::new()
        .with(&hex_sha256("ann-secret"), "ann", &["mcp:tools"])
        .unwrap()
        .with(&hex_sha256("bob-secret"), "bob", &[])
        .unwrap();
    let auth = Authorization::static_tokens(RESOURCE, tokens)
        .issuer("https://login.example")
        .scopes(["mcp:tools"]);
    let metadata_path = auth.metadata_path();
    let http = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();

    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let ann = client(&http, "ann-secret", mode);
        let tools = ann.list_tools().unwrap();
        assert_eq!(tools.len(), 1, "{mode:?}");
        let text = ann.call_tool("whoami", json!({})).unwrap().text();
        assert_eq!(text, "ann - mcp:tools", "{mode:?}");
        ann.close().unwrap();
    }
    let served = runs.load(Ordering::SeqCst);
    assert_eq!(served, 2);

    // No token: 401 with the metadata's URL and the scope, no error code.
    let missing = call_with(&http, "");
    assert_eq!(missing.status, 401, "{missing:?}");
    let params = challenge(missing.header("www-authenticate").unwrap());
    assert_eq!(
        param(&params, "resource_metadata"),
        Some("https://mcp.example/.well-known/oauth-protected-resource/mcp")
    );
    assert_eq!(param(&params, "scope"), Some("mcp:tools"));
    assert_eq!(param(&params, "error"), None);
    // An unknown token: 401 invalid_token, and the token is nowhere in the answer.
    let wrong = call_with(&http, "Authorization: Bearer not-a-known-token\r\n");
    assert_eq!(wrong.status, 401);
    let header = wrong.header("www-authenticate").unwrap();
    assert_eq!(param(&challenge(header), "error"), Some("invalid_token"));
    assert!(!header.contains("not-a-known-token") && !wrong.body.contains("not-a-known-token"));
    // Another scheme is an invalid request, still 401.
    let basic = call_with(&http, "Authorization: Basic YW5uOng=\r\n");
    assert_eq!(basic.status, 401);
    // A known token without the scope: 403 insufficient_scope naming it.
    let narrow = call_with(&http, "Authorization: Bearer bob-secret\r\n");
    assert_eq!(narrow.status, 403, "{narrow:?}");
    let params = challenge(narrow.header("www-authenticate").unwrap());
    assert_eq!(param(&params, "error"), Some("insufficient_scope"));
    assert_eq!(param(&params, "scope"), Some("mcp:tools"));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        served,
        "no refused request reached a handler"
    );

    let document = metadata(&http, &metadata_path);
    assert_eq!(document["resource"], RESOURCE);
    assert_eq!(
        document["authorization_servers"],
        json!(["https://login.example"])
    );
    assert_eq!(document["scopes_supported"], json!(["mcp:tools"]));
    assert_eq!(document["bearer_methods_supported"], json!(["header"]));
    http.close().unwrap();
}

#[test]
fn a_session_belongs_to_the_caller_who_opened_it() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs);
    let tokens = StaticTokens::new()
        .with(&hex_sha256("ann-secret"), "ann", &[])
        .unwrap()
        .with(&hex_sha256("bob-secret"), "bob", &[])
        .unwrap();
    let auth = Authorization::static_tokens(RESOURCE, tokens);
    let http = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let opened = post(&http.url(), "Authorization: Bearer ann-secret\r\n", &init);
    assert_eq!(opened.status, 200, "{opened:?}");
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let as_bob = format!(
        "Authorization: Bearer bob-secret\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
    );
    assert_eq!(post(&http.url(), &as_bob, &list).status, 404);
    let as_ann = as_bob.replace("bob-secret", "ann-secret");
    let listed = post(&http.url(), &as_ann, &list);
    assert_eq!(listed.status, 200, "{listed:?}");
    let delete_as_bob = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {}\r\n{as_bob}",
        http.local_addr()
    );
    assert_eq!(exchange(&http.url(), &delete_as_bob, "").status, 404);
    assert_eq!(http.sessions(), 1, "bob could not end ann's session");
    http.close().unwrap();
}

/// An issuer of the test's own: RFC 8414 metadata and a JWKS of the keys it holds now,
/// counting the JWKS fetches.
pub(crate) struct Issuer {
    fake: FakeServer,
    pub(crate) keys: Arc<Mutex<Vec<Value>>>,
    pub(crate) fetches: Arc<AtomicUsize>,
}

impl Issuer {
    pub(crate) fn start() -> Issuer {
        let keys: Arc<Mutex<Vec<Value>>> = Arc::default();
        let fetches = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (Arc::clone(&keys), Arc::clone(&fetches));
        let fake = FakeServer::start(move |req, reply| {
            let origin = format!("http://{}", req.header("host").unwrap_or(""));
            match req.path.as_str() {
                "/.well-known/oauth-authorization-server" => reply.json(
                    200,
                    &json!({"issuer": origin, "jwks_uri": format!("{origin}/jwks"),
                        "token_endpoint": format!("{origin}/token")}),
                    &[],
                ),
                "/jwks" => {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let keys = served.lock().unwrap().clone();
                    reply.json(200, &json!({"keys": keys}), &[]);
                }
                _ => reply.json(404, &json!({}), &[]),
            }
        });
        Issuer {
            fake,
            keys,
            fetches,
        }
    }

    pub(crate) fn url(&self) -> String {
        self.fake.url.trim_end_matches("/mcp").to_owned()
    }

    /// Publishes `key` under `kid`.
    pub(crate) fn publish(&self, key: &SigningKey, kid: &str) {
        let mut jwk = key.public_jwk();
        jwk["kid"] = json!(kid);
        jwk["use"] = json!("sig");
        jwk["alg"] = json!("ES256");
        self.keys.lock().unwrap().push(jwk);
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The claims of a good token from `issuer` for the resource.
pub(crate) fn claims(issuer: &str) -> Value {
    json!({"iss": issuer, "sub": "ann", "client_id": "app-1", "aud": [RESOURCE, "other"],
        "scope": "mcp:tools extra", "iat": now(), "exp": now() + 300, "jti": "j1"})
}

pub(crate) fn at_jwt(kid: &str) -> Value {
    json!({"alg": "ES256", "typ": "at+jwt", "kid": kid})
}

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}\r\n")
}

#[test]
fn jwt_access_tokens_are_checked_against_the_issuers_keys_and_claims() {
    let issuer = Issuer::start();
    let key = SigningKey::generate();
    issuer.publish(&key, "k1");
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs);
    let auth = Authorization::jwt(RESOURCE, issuer.url())
        .scopes(["mcp:tools"])
        .leeway(Duration::ZERO);
    let metadata_path = auth.metadata_path();
    let http = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();

    let good = key.sign_jws(&at_jwt("k1"), &claims(&issuer.url()));
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let ann = client(&http, &good, mode);
        assert_eq!(ann.list_tools().unwrap().len(), 1);
        let text = ann.call_tool("whoami", json!({})).unwrap().text();
        assert_eq!(text, "ann app-1 mcp:tools,extra", "{mode:?}");
        ann.close().unwrap();
    }
    let served = runs.load(Ordering::SeqCst);
    assert_eq!(
        issuer.fetches.load(Ordering::SeqCst),
        1,
        "the keys were cached"
    );

    let missing = call_with(&http, "");
    assert_eq!(missing.status, 401);
    let params = challenge(missing.header("www-authenticate").unwrap());
    assert!(param(&params, "resource_metadata")
        .unwrap()
        .ends_with(&metadata_path));
    let document = metadata(&http, &metadata_path);
    assert_eq!(document["authorization_servers"], json!([issuer.url()]));
    assert_eq!(document["resource"], RESOURCE);

    let other_key = SigningKey::generate();
    let mut wrong_audience = claims(&issuer.url());
    wrong_audience["aud"] = json!("https://elsewhere.example/mcp");
    let mut expired = claims(&issuer.url());
    expired["exp"] = json!(now() - 5);
    let mut not_yet = claims(&issuer.url());
    not_yet["nbf"] = json!(now() + 120);
    let mut foreign = claims(&issuer.url());
    foreign["iss"] = json!("https://login.example");
    let unsigned = |header: Value| {
        let part = |value: &Value| URL_SAFE_NO_PAD.encode(value.to_string());
        format!("{}.{}.", part(&header), part(&claims(&issuer.url())))
    };
    let mut tampered = good.clone();
    tampered.replace_range(good.len() - 4.., "AAAA");
    let refused = [
        (
            "wrong audience",
            key.sign_jws(&at_jwt("k1"), &wrong_audience),
        ),
        (
            "bad signature",
            other_key.sign_jws(&at_jwt("k1"), &claims(&issuer.url())),
        ),
        ("tampered signature", tampered),
        ("expired", key.sign_jws(&at_jwt("k1"), &expired)),
        ("not yet valid", key.sign_jws(&at_jwt("k1"), &not_yet)),
        ("untrusted issuer", key.sign_jws(&at_jwt("k1"), &foreign)),
        (
            "alg none",
            unsigned(json!({"alg": "none", "typ": "at+jwt", "kid": "k1"})),
        ),
        ("HS256", {
            let mut token = unsigned(json!({"alg": "HS256", "typ": "at+jwt", "kid": "k1"}));
            token.push_str("c2lnbmF0dXJl");
            token
        }),
        (
            "typ JWT",
            key.sign_jws(
                &json!({"alg": "ES256", "typ": "JWT", "kid": "k1"}),
                &claims(&issuer.url()),
            ),
        ),
        ("not a JWT", "abc.def".to_owned()),
    ];
    for (what, token) in &refused {
        let answer = call_with(&http, &bearer(token));
        assert_eq!(answer.status, 401, "{what}: {answer:?}");
        let params = challenge(answer.header("www-authenticate").unwrap());
        assert_eq!(param(&params, "error"), Some("invalid_token"), "{what}");
        assert_eq!(param(&params, "scope"), Some("mcp:tools"), "{what}");
    }
    let mut narrow = claims(&issuer.url());
    narrow["scope"] = json!("extra");
    let answer = call_with(&http, &bearer(&key.sign_jws(&at_jwt("k1"), &narrow)));
    assert_eq!(answer.status, 403, "{answer:?}");
    let params = challenge(answer.header("www-authenticate").unwrap());
    assert_eq!(param(&params, "error"), Some("insufficient_scope"));
    assert_eq!(param(&params, "scope"), Some("mcp:tools"));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        served,
        "no refused token reached a handler"
    );
    http.close().unwrap();
}

#[test]
fn an_unknown_kid_fetches_the_keys_again_at_most_once_per_interval() {
    let issuer = Issuer::start();
    let first = SigningKey::generate();
    issuer.publish(&first, "k1");
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs);
    let auth =
        Authorization::jwt(RESOURCE, issuer.url()).refetch_interval(Duration::from_secs(3600));
    let http = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    let token =
        |key: &SigningKey, kid: &str| bearer(&key.sign_jws(&at_jwt(kid), &claims(&issuer.url())));
    assert_eq!(call_with(&http, &token(&first, "k1")).status, 200);
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);
    // The issuer rotates in a new key: tokens with its kid are unknown within the interval
    // (the first fetch counts), and fetching again waits for the interval.
    let second = SigningKey::generate();
    issuer.publish(&second, "k2");
    for _ in 0..3 {
        assert_eq!(call_with(&http, &token(&second, "k2")).status, 401);
    }
    assert_eq!(
        issuer.fetches.load(Ordering::SeqCst),
        1,
        "no refetch within the interval"
    );
    http.close().unwrap();

    // With a short interval the new key is found by one refetch.
    let auth =
        Authorization::jwt(RESOURCE, issuer.url()).refetch_interval(Duration::from_millis(1));
    let http = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    let before = issuer.fetches.load(Ordering::SeqCst);
    assert_eq!(call_with(&http, &token(&first, "k1")).status, 200);
    let rotated = SigningKey::generate();
    issuer.publish(&rotated, "k3");
    assert_eq!(call_with(&http, &token(&rotated, "k3")).status, 200);
    assert_eq!(call_with(&http, &token(&rotated, "k3")).status, 200);
    assert_eq!(
        issuer.fetches.load(Ordering::SeqCst),
        before + 2,
        "one fetch, one refetch"
    );
    http.close().unwrap();
}

/// Runs `openssl` (on every machine of this project's kind) and returns its stdout.
fn openssl(args: &[&str]) -> Vec<u8> {
    let output = std::process::Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(output.status.success(), "openssl {args:?}: {output:?}");
    output.stdout
}

#[test]
fn rs256_tokens_verify_with_the_issuers_rsa_key_and_only_as_rs256() {
    // An RSA key the test makes, its public half published as a JWK, tokens signed with it.
    let dir = crate::support::cli::scratch("rs256");
    let key = dir.join("key.pem");
    let key = key.to_str().unwrap();
    openssl(&[
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
        "-out",
        key,
    ]);
    let modulus = String::from_utf8(openssl(&["rsa", "-in", key, "-noout", "-modulus"])).unwrap();
    let hex = modulus.trim().strip_prefix("Modulus=").unwrap();
    let n: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).unwrap())
        .collect();
    let sign = |header: Value, claims: &Value| {
        let part = |value: &Value| URL_SAFE_NO_PAD.encode(value.to_string());
        let input = format!("{}.{}", part(&header), part(claims));
        let file = dir.join("input");
        std::fs::write(&file, &input).unwrap();
        let signature = openssl(&[
            "dgst",
            "-sha256",
            "-sign",
            key,
            "-binary",
            file.to_str().unwrap(),
        ]);
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
    };
    let issuer = Issuer::start();
    issuer
        .keys
        .lock()
        .unwrap()
        .push(json!({"kty": "RSA", "kid": "r1", "use": "sig",
        "n": URL_SAFE_NO_PAD.encode(&n), "e": "AQAB"}));
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs);
    let auth = Authorization::jwt(RESOURCE, issuer.url());
    let http = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    let rs256 = json!({"alg": "RS256", "typ": "at+jwt", "kid": "r1"});
    let good = sign(rs256.clone(), &claims(&issuer.url()));
    let answer = call_with(&http, &bearer(&good));
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(answer.body.contains("ann app-1"), "{answer:?}");
    // The same key's signature under another algorithm's name, or over other claims: refused.
    let as_es256 = sign(
        json!({"alg": "ES256", "typ": "at+jwt", "kid": "r1"}),
        &claims(&issuer.url()),
    );
    let mut other = claims(&issuer.url());
    other["sub"] = json!("mallory");
    let spliced = {
        let forged = sign(rs256, &other);
        let parts: Vec<&str> = good.split('.').collect();
        let claims_part = forged.split('.').nth(1).unwrap().to_owned();
        format!("{}.{claims_part}.{}", parts[0], parts[2])
    };
    for (what, token) in [("as ES256", as_es256), ("spliced claims", spliced)] {
        assert_eq!(call_with(&http, &bearer(&token)).status, 401, "{what}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    http.close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_verified_token_is_remembered_until_it_expires_and_not_verified_again() {
    let issuer = Issuer::start();
    let key = SigningKey::generate();
    issuer.publish(&key, "k1");
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs);
    // Keys that are old after a millisecond, so a change at the issuer is seen at once.
    let fresh = |cache: usize| {
        let auth = Authorization::jwt(RESOURCE, issuer.url())
            .keys_max_age(Duration::from_millis(1))
            .refetch_interval(Duration::from_millis(1))
            .verified_cache(cache);
        HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap()
    };
    let (remembering, forgetting) = (fresh(1024), fresh(0));
    let good = bearer(&key.sign_jws(&at_jwt("k1"), &claims(&issuer.url())));
    assert_eq!(call_with(&remembering, &good).status, 200);
    assert_eq!(call_with(&forgetting, &good).status, 200);
    // The issuer drops the key: a server that verifies every time refuses the token once it
    // has fetched the keys again, and so does the other for a token it has not seen.
    issuer.keys.lock().unwrap().clear();
    assert!(crate::support::eventually(crate::support::LONG, || {
        call_with(&forgetting, &good).status == 401
    }));
    let mut other = claims(&issuer.url());
    other["jti"] = json!("j2");
    let unseen = bearer(&key.sign_jws(&at_jwt("k1"), &other));
    assert!(crate::support::eventually(crate::support::LONG, || {
        call_with(&remembering, &unseen).status == 401
    }));
    // The token it verified before is remembered until its exp.
    assert_eq!(call_with(&remembering, &good).status, 200);
    remembering.close().unwrap();
    forgetting.close().unwrap();
}

/// `Server::set_tool_access` decides per caller: a hidden tool is left out of that caller's
/// listing (across pages) and answered as unknown; a decision that panics hides; a missing
/// scope is 403 with the challenge naming it, before the handler.
#[test]
fn tool_access_is_decided_per_caller_in_listings_calls_and_challenges() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Server::new(ServerConfig::new("per-caller", "1").page_size(1)).unwrap();
    for name in ["a", "b", "c", "d"] {
        let counted = Arc::clone(&runs);
        server
            .add_tool(LocalTool::with_context(
                name,
                "A tool.",
                json!({"type": "object"}),
                move |_, _| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    Ok(CallToolResult::from_text("ran"))
                },
            ))
            .unwrap();
    }
    server.set_tool_access(|name, caller| match (name, caller.subject()) {
        ("b", "bob") => ToolAccess::Hidden,
        ("c", "bob") => panic!("a decision that fails"),
        ("d", _) if !caller.has_scope("tools:d") => ToolAccess::NeedsScopes(vec!["tools:d".into()]),
        _ => ToolAccess::Allowed,
    });
    let tokens = StaticTokens::new()
        .with(&hex_sha256("ann-secret"), "ann", &["tools:d"])
        .unwrap()
        .with(&hex_sha256("bob-secret"), "bob", &[])
        .unwrap();
    let auth = Authorization::static_tokens(RESOURCE, tokens);
    let http = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let names = |client: &McpClient| -> Vec<String> {
            let tools = client.list_tools().unwrap();
            tools.iter().map(|tool| tool.name.clone()).collect()
        };
        let ann = client(&http, "ann-secret", mode);
        assert_eq!(names(&ann), ["a", "b", "c", "d"], "{mode:?}");
        assert_eq!(ann.call_tool("d", json!({})).unwrap().text(), "ran");
        ann.close().unwrap();
        let bob = client(&http, "bob-secret", mode);
        assert_eq!(names(&bob), ["a", "d"], "{mode:?}");
        for hidden in ["b", "c"] {
            let answer = bob.call_tool(hidden, json!({})).unwrap();
            assert!(answer.is_error, "{mode:?} {hidden}");
            assert!(
                answer.text().contains("Unknown tool"),
                "{mode:?}: {}",
                answer.text()
            );
        }
        assert!(bob.call_tool("d", json!({})).is_err(), "{mode:?}");
        bob.close().unwrap();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2, "only ann's calls of d ran");
    let headers = format!(
        "{}Authorization: Bearer bob-secret\r\n",
        stateless_headers("tools/call", Some("d"))
    );
    let body = stateless_request(1, "tools/call", json!({"name": "d", "arguments": {}}));
    let answer = post(&http.url(), &headers, &body);
    assert_eq!(answer.status, 403, "{answer:?}");
    let params = challenge(answer.header("www-authenticate").unwrap());
    assert_eq!(param(&params, "error"), Some("insufficient_scope"));
    assert_eq!(param(&params, "scope"), Some("tools:d"));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    http.close().unwrap();
}
