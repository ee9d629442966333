//! toolwire's HTTP server as a resource server for an authorization server nobody here
//! wrote: npm `oidc-provider` (pinned in tests/peers/install.sh, run on 127.0.0.1 by
//! tests/peers/oidc_provider.mjs), issuing JWT access tokens through `client_credentials` with
//! resource indicators. A valid token lists and calls; a missing one gets 401 with the
//! header and a fetchable metadata document naming the issuer; ES256 and RS256 tokens verify
//! with the issuer's own keys; another audience, a bad signature, `alg: none` and an expired
//! token are 401, a missing scope 403, and none of them reaches a handler. Its opaque tokens
//! (for a resource it issues them for) are checked by token introspection. toolwire's own CLI
//! logs in to a protected `toolwire serve` with `--grant client-credentials` (an unbound token,
//! though oidc-provider offers DPoP: the server challenges `Bearer` alone), and so does the
//! official Python SDK client with the authorization code and PKCE. Runs when
//! TOOLWIRE_PEERS=1 or TOOLWIRE_PEERS_DIR is set.
#![cfg(feature = "oauth")]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};
use toolwire::harness::LocalTool;
use toolwire::server::{
    Authorization, CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig,
};
use toolwire::{HttpConfig, McpClient, McpConfig, ProtocolMode};

use crate::support::server::{exchange, post, stateless_headers, stateless_request};
use crate::support::{eventually, mcp, LONG};

const RESOURCE: &str = "https://mcp.example/mcp";
const OTHER: &str = "https://other.example/mcp";

/// The running authorization server; ended (stdin closed, then killed) when dropped.
struct Oidc {
    child: Child,
    issuer: String,
}

impl Drop for Oidc {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_oidc(test: &str) -> Oidc {
    start_oidc_for(test, &[RESOURCE, OTHER])
}

/// oidc-provider issuing tokens for `resources` (the first ES256, see oidc_provider.mjs).
fn start_oidc_for(test: &str, resources: &[&str]) -> Oidc {
    let peers = mcp::peers(test);
    let node = peers.path("TOOLWIRE_NODE22");
    let package = peers.path("TOOLWIRE_OIDC_PROVIDER");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/oidc_provider.mjs");
    let mut child = Command::new(node)
        .arg(script)
        .arg(package)
        .args(resources)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start oidc-provider");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("the ISSUER line");
    let issuer = line
        .strip_prefix("ISSUER ")
        .unwrap_or_else(|| panic!("oidc-provider said {line:?}"))
        .trim()
        .to_owned();
    Oidc { child, issuer }
}

/// A `client_credentials` token for `resource` with `scope`.
fn token(oidc: &Oidc, resource: &str, scope: &str) -> String {
    let mut answer = ureq::post(format!("{}/token", oidc.issuer))
        .header("Authorization", "Basic c3ZjOnN2Yy1zZWNyZXQ=")
        .send_form([
            ("grant_type", "client_credentials"),
            ("resource", resource),
            ("scope", scope),
        ])
        .expect("a token");
    let body: Value = serde_json::from_str(&answer.body_mut().read_to_string().unwrap()).unwrap();
    body["access_token"]
        .as_str()
        .expect("an access token")
        .to_owned()
}

fn call(http: &HttpServer, token: Option<&str>) -> crate::support::server::RawResponse {
    let mut headers = stateless_headers("tools/call", Some("whoami"));
    if let Some(token) = token {
        headers.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    let body = stateless_request(1, "tools/call", json!({"name": "whoami", "arguments": {}}));
    post(&http.url(), &headers, &body)
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn oidc_provider_tokens_are_accepted_and_bad_ones_refused_before_any_handler() {
    let oidc =
        start_oidc("oidc_provider_tokens_are_accepted_and_bad_ones_refused_before_any_handler");
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Server::new(ServerConfig::new("protected", "1")).unwrap();
    let counted = Arc::clone(&runs);
    server
        .add_tool(LocalTool::with_context(
            "whoami",
            "Says who called.",
            json!({"type": "object"}),
            move |context, _| {
                counted.fetch_add(1, Ordering::SeqCst);
                let caller = toolwire::server::RequestContext::of(context)
                    .and_then(|c| c.caller())
                    .expect("a caller");
                Ok(CallToolResult::from_text(format!(
                    "{} {}",
                    caller.client_id().unwrap_or("-"),
                    caller.scopes().join(",")
                )))
            },
        ))
        .unwrap();
    let auth = Authorization::jwt(RESOURCE, oidc.issuer.clone())
        .scopes(["mcp:read"])
        .leeway(Duration::ZERO);
    let metadata_path = auth.metadata_path();
    let http = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();

    let good = token(&oidc, RESOURCE, "mcp:read mcp:write");
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let client = McpClient::connect_http(
            HttpConfig::new(http.url()).bearer_token(&good),
            McpConfig::default().mode(mode),
        )
        .unwrap();
        assert_eq!(client.list_tools().unwrap().len(), 1);
        let text = client.call_tool("whoami", json!({})).unwrap().text();
        assert_eq!(text, "svc mcp:read,mcp:write", "{mode:?}");
        client.close().unwrap();
    }
    let served = runs.load(Ordering::SeqCst);

    let missing = call(&http, None);
    assert_eq!(missing.status, 401);
    let challenge = missing.header("www-authenticate").unwrap();
    assert!(challenge.contains(&format!(
        "resource_metadata=\"https://mcp.example{metadata_path}\""
    )));
    let head = format!(
        "GET {metadata_path} HTTP/1.1\r\nHost: {}\r\n",
        http.local_addr()
    );
    let document: Value = serde_json::from_str(&exchange(&http.url(), &head, "").body).unwrap();
    assert_eq!(document["authorization_servers"], json!([oidc.issuer]));

    let other_audience = token(&oidc, OTHER, "mcp:read");
    let mut bad_signature = good.clone();
    let at = bad_signature.len() - 6;
    bad_signature.replace_range(at.., "AAAAAA");
    let parts: Vec<&str> = good.split('.').collect();
    let none = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"at+jwt","kid":"es1"}"#),
        parts[1]
    );
    for (what, token) in [
        ("another audience", other_audience.clone()),
        ("bad signature", bad_signature),
        ("alg none", none),
    ] {
        let answer = call(&http, Some(&token));
        assert_eq!(answer.status, 401, "{what}: {answer:?}");
        assert!(answer
            .header("www-authenticate")
            .unwrap()
            .contains("error=\"invalid_token\""));
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        served,
        "no refused token reached a handler"
    );
    // The other audience's tokens are RS256, signed with the issuer's RSA key: a server that
    // is that resource takes them.
    let auth = Authorization::jwt(OTHER, oidc.issuer.clone());
    let other_http =
        HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    let header = URL_SAFE_NO_PAD
        .decode(other_audience.split('.').next().unwrap())
        .unwrap();
    assert!(String::from_utf8(header).unwrap().contains("\"RS256\""));
    assert_eq!(call(&other_http, Some(&other_audience)).status, 200);
    other_http.close().unwrap();
    // A one-second token: accepted, then refused once it has expired (leeway 0).
    let short = token(&oidc, &format!("{RESOURCE}/short"), "mcp:read");
    let auth =
        Authorization::jwt(format!("{RESOURCE}/short"), oidc.issuer.clone()).leeway(Duration::ZERO);
    let short_http =
        HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    assert!(
        eventually(LONG, || call(&short_http, Some(&short)).status == 401),
        "the expired token was still accepted"
    );
    short_http.close().unwrap();
    let served = runs.load(Ordering::SeqCst);
    // Without the scope the server needs: 403 naming it.
    let narrow = token(&oidc, RESOURCE, "mcp:write");
    let answer = call(&http, Some(&narrow));
    assert_eq!(answer.status, 403, "{answer:?}");
    let challenge = answer.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\"")
            && challenge.contains("scope=\"mcp:read\""),
        "{challenge}"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        served,
        "the 403 reached no handler"
    );
    http.close().unwrap();
}

/// `toolwire serve --http ADDR` over the tool_server example (as server `demo`), protected by
/// `oidc`'s JWTs for `http://ADDR/mcp` with scope `mcp:read`, once it listens; killed when
/// dropped, if a test fails before it stops the server itself.
#[cfg(feature = "cli")]
fn protected_serve(
    oidc: &Oidc,
    addr: std::net::SocketAddr,
    folder: &Path,
) -> crate::support::cli::KillOnDrop {
    use crate::support::cli;
    let config = folder.join("servers.json");
    let entry = json!({"command": cli::tool_server().display().to_string(), "args": []});
    std::fs::write(&config, json!({"mcpServers": {"demo": entry}}).to_string()).unwrap();
    let resource = format!("http://{addr}/mcp");
    let mut serve = cli::toolwire(&[
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--http",
        &addr.to_string(),
        "--auth-issuer",
        &oidc.issuer,
        "--auth-resource",
        &resource,
        "--auth-scope",
        "mcp:read",
    ]);
    serve.stdin(Stdio::null());
    let (serving, lines) = cli::spawn_with_stderr_lines(serve);
    cli::read_until(&lines, |line| line.contains("listening on "));
    serving
}

/// toolwire's CLI end to end: `toolwire serve --http` over the tool_server example, protected
/// by oidc-provider's JWTs, and `toolwire call --grant client-credentials` finding the
/// authorization server through the 401 and the metadata, getting a token for the metadata's
/// `resource` with no user, calling, and keeping the token; the secret shows nowhere.
#[cfg(feature = "cli")]
#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_cli_logs_in_to_a_protected_toolwire_serve_with_client_credentials() {
    use crate::support::cli;
    let test = "the_cli_logs_in_to_a_protected_toolwire_serve_with_client_credentials";
    // The resource is the URL clients use, port included: a port free a moment ago, held
    // until oidc-provider listens so that it cannot take it.
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = holder.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let oidc = start_oidc_for(test, &[&resource]);
    drop(holder);
    // oidc-provider offers DPoP; toolwire's resource server challenges `Bearer` alone, so the
    // client must ask for an unbound token.
    let configuration: Value = serde_json::from_str(
        &ureq::get(format!("{}/.well-known/openid-configuration", oidc.issuer))
            .call()
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap(),
    )
    .unwrap();
    let algorithms = configuration["dpop_signing_alg_values_supported"].as_array();
    assert!(
        algorithms.is_some_and(|list| list.contains(&json!("ES256"))),
        "{configuration}"
    );
    let folder = cli::scratch("oidc-cli");
    let mut serving = protected_serve(&oidc, addr, &folder);
    let tokens = folder.join("tokens.json");
    let command = |args: &[&str], secret: bool| {
        let mut command = cli::toolwire(args);
        command
            .env("TOOLWIRE_TOKEN_FILE", &tokens)
            .env_remove("MCP_CLIENT_SECRET");
        if secret {
            command.env("MCP_CLIENT_SECRET", "svc-secret");
        }
        cli::run(command)
    };
    // Without a token the server refuses, and the CLI (no terminal) says so.
    let refused = command(&["--url", &resource, "tools", "--no-login"], false).expect(4);
    assert!(
        refused.stderr.contains("toolwire login"),
        "{}",
        refused.stderr
    );
    let call = command(
        &[
            "--url",
            &resource,
            "call",
            "mcp__demo__echo",
            "message=hello through oidc",
            "--grant",
            "client-credentials",
            "--client-id",
            "svc",
            "--log-level",
            "debug",
        ],
        true,
    )
    .expect(0);
    assert!(
        call.stdout.contains("hello through oidc"),
        "{}",
        call.stdout
    );
    // The kept token serves the next command, with no secret and no grant.
    let info = command(&["--url", &resource, "info"], false).expect(0);
    assert!(
        info.stdout
            .contains("authorization: authorized as svc (Bearer;")
            && info.stdout.contains("mcp:read"),
        "{}",
        info.stdout
    );
    let again = command(
        &[
            "--url",
            &resource,
            "call",
            "mcp__demo__echo",
            "message=again",
        ],
        false,
    )
    .expect(0);
    assert!(again.stdout.contains("again"), "{}", again.stdout);
    let kept = std::fs::read_to_string(&tokens).unwrap();
    for run in [&call, &info, &again] {
        for text in [&run.stdout, &run.stderr] {
            assert!(!text.contains("svc-secret"), "{text}");
        }
    }
    assert!(!kept.contains("svc-secret"), "the secret is not kept");
    cli::sigint(serving.id());
    assert_eq!(cli::wait_bounded(&mut serving, LONG), 0);
    let _ = std::fs::remove_dir_all(folder);
}

/// Opaque tokens from oidc-provider (its resource indicators' `accessTokenFormat: 'opaque'`),
/// checked by introspection at the `introspection_endpoint` its discovery names, this
/// server authenticating as client `rs` (`client_secret_basic`): a good token lists and
/// calls as its client, a token for another audience (a JWT for the plain resource, which
/// oidc-provider does not introspect as this audience's) is 401, a missing scope 403, and
/// wrong credentials at the endpoint 503; no refusal reaches a handler.
#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn oidc_provider_opaque_tokens_are_checked_by_introspection() {
    let oidc = start_oidc("oidc_provider_opaque_tokens_are_checked_by_introspection");
    let opaque_resource = format!("{RESOURCE}/opaque");
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Server::new(ServerConfig::new("introspected", "1")).unwrap();
    let counted = Arc::clone(&runs);
    server
        .add_tool(LocalTool::with_context(
            "whoami",
            "Says who called.",
            json!({"type": "object"}),
            move |context, _| {
                counted.fetch_add(1, Ordering::SeqCst);
                let caller = toolwire::server::RequestContext::of(context)
                    .and_then(|c| c.caller())
                    .expect("a caller");
                Ok(CallToolResult::from_text(format!(
                    "{} {}",
                    caller.subject(),
                    caller.scopes().join(",")
                )))
            },
        ))
        .unwrap();
    let auth = Authorization::introspection(opaque_resource.clone(), oidc.issuer.clone())
        .introspection_client("rs", "rs-secret")
        .scopes(["mcp:read"])
        .leeway(Duration::ZERO);
    let http = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    let good = token(&oidc, &opaque_resource, "mcp:read mcp:write");
    assert_eq!(good.split('.').count(), 1, "an opaque token, not a JWT");
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let client = McpClient::connect_http(
            HttpConfig::new(http.url()).bearer_token(&good),
            McpConfig::default().mode(mode),
        )
        .unwrap();
        assert_eq!(client.list_tools().unwrap().len(), 1);
        let text = client.call_tool("whoami", json!({})).unwrap().text();
        assert_eq!(text, "svc mcp:read,mcp:write", "{mode:?}");
        client.close().unwrap();
    }
    let served = runs.load(Ordering::SeqCst);
    let jwt_elsewhere = token(&oidc, RESOURCE, "mcp:read");
    let answer = call(&http, Some(&jwt_elsewhere));
    assert_eq!(answer.status, 401, "{answer:?}");
    assert!(answer
        .header("www-authenticate")
        .unwrap()
        .contains("error=\"invalid_token\""));
    assert_eq!(call(&http, Some("not-a-token-it-issued")).status, 401);
    let narrow = token(&oidc, &opaque_resource, "mcp:write");
    let answer = call(&http, Some(&narrow));
    assert_eq!(answer.status, 403, "{answer:?}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        served,
        "no refusal ran a handler"
    );
    http.close().unwrap();
    // oidc-provider refuses the resource server's wrong secret: 503, not the token's fault.
    let auth = Authorization::introspection(opaque_resource.clone(), oidc.issuer.clone())
        .introspection_client("rs", "wrong-secret");
    let refused = HttpServer::bind(&server, HttpServerConfig::new().authorization(auth)).unwrap();
    let answer = call(&refused, Some(&good));
    assert_eq!(answer.status, 503, "{answer:?}");
    refused.close().unwrap();
}

/// The official Python SDK's client (PyPI `mcp` 2.3.0, tests/peers/py_oauth_client.py) logs
/// in to a protected `toolwire serve` with its OAuth provider and calls through it. The grant
/// is the authorization code with PKCE, the one a person uses: oidc-provider's development
/// interactions (a login form taking any login, then a consent form) can be driven without a
/// person, so the script posts both forms where a browser would, and hands the redirect's
/// code back to the SDK, which exchanges it (with its verifier and the resource indicator) for
/// a JWT access token for the server's resource. The client is oidc-provider's pre-registered
/// public client `pyapp`. The server admits the token: the SDK lists and calls.
#[cfg(feature = "cli")]
#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_python_sdk_client_logs_in_to_a_protected_toolwire_serve_with_the_authorization_code() {
    use crate::support::cli;
    let test =
        "the_python_sdk_client_logs_in_to_a_protected_toolwire_serve_with_the_authorization_code";
    let python = mcp::peers(test).path("TOOLWIRE_PYTHON");
    // As in the CLI test: the resource's port is held until oidc-provider listens.
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = holder.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let oidc = start_oidc_for(test, &[&resource]);
    drop(holder);
    let folder = cli::scratch("oidc-python");
    let mut serving = protected_serve(&oidc, addr, &folder);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_oauth_client.py");
    let mut run = Command::new(python);
    run.arg(script).arg(&resource).stdin(Stdio::null());
    let output = cli::run(run);
    assert!(
        output.code == 0 && output.stdout.contains("PYOAUTH PASSED"),
        "the Python client failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.code,
        output.stdout,
        output.stderr
    );
    for step in [
        "authorization request with PKCE S256",
        "posted login and consent",
        "echo through the protected gateway",
        "token type Bearer, scope mcp:read",
    ] {
        assert!(output.stdout.contains(step), "{step}: {}", output.stdout);
    }
    cli::sigint(serving.id());
    assert_eq!(cli::wait_bounded(&mut serving, LONG), 0);
    let _ = std::fs::remove_dir_all(folder);
}
