//! Issue #22 item 4, against the in-process servers: only `Bearer` and `DPoP` tokens are
//! used (RFC 6749 §7.1), and a challenge's `resource_metadata` is fetched only from the MCP
//! server's own origin, while an authorization server the resource metadata names may be on
//! another local port when the MCP server is local too (the conformance suite's layout).
#![cfg(feature = "oauth")]

use crate::support::auth_fake;
use crate::support::http_fake;

use auth_fake::{connect, provider, FakeAuth, Options};
use http_fake::FakeServer;
use serde_json::json;
use toolwire::auth::OAuthConfig;
use toolwire::error::AuthErrorKind;

fn kind(error: &toolwire::Error) -> AuthErrorKind {
    error
        .auth()
        .unwrap_or_else(|| panic!("not an authorization error: {error}"))
        .kind
}

#[test]
fn a_token_of_a_type_the_client_does_not_understand_is_refused_naming_it() {
    let fake = FakeAuth::start(Options {
        token_type: Some("mac"),
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let error = connect(&fake, &oauth).expect_err("a `mac` token must not be used");
    assert_eq!(kind(&error), AuthErrorKind::Token, "{error}");
    let shown = error.to_string();
    assert!(shown.contains("`mac`"), "{shown}");
    assert!(shown.contains("RFC 6749 §7.1"), "{shown}");
    // The token was issued but never sent, nor shown.
    assert_eq!(fake.token_requests(), 1);
    assert_eq!(fake.world.lock().unwrap().mcp_with_token, 0);
    assert!(!shown.contains("tok-1"), "{shown}");
    assert!(!oauth.status().authorized);
}

#[test]
fn bearer_in_any_case_is_used() {
    let fake = FakeAuth::start(Options {
        token_type: Some("bEaReR"),
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("a bearer token in any case is used");
    assert_eq!(client.list_tools().expect("tools").len(), 1);
    assert!(fake.world.lock().unwrap().mcp_with_token > 0);
    client.close().expect("close");
}

#[test]
fn a_dpop_token_without_a_proof_is_refused() {
    // The authorization server offers no DPoP, so no proof went with the request.
    let fake = FakeAuth::start(Options {
        token_type: Some("DPoP"),
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let error = connect(&fake, &oauth).expect_err("a DPoP token without a key is unusable");
    assert_eq!(kind(&error), AuthErrorKind::Token, "{error}");
    assert!(error.to_string().contains("no DPoP proof"), "{error}");
    assert_eq!(fake.world.lock().unwrap().mcp_with_token, 0);
}

#[test]
fn a_challenge_naming_another_local_service_is_not_fetched() {
    // Another service on this machine, with a tempting answer for anything asked.
    let victim = FakeServer::start(|_req, reply| {
        reply.json(
            200,
            &json!({"resource": "http://127.0.0.1/mcp", "authorization_servers": ["http://127.0.0.1:9"]}),
            &[],
        );
    });
    let admin = victim.url.replace("/mcp", "/admin/reset?all=1");
    let fake = FakeAuth::start(Options {
        challenge_metadata: Some(admin),
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("the server's own metadata is used instead");
    assert!(
        victim.requests().is_empty(),
        "the other origin was asked: {:?}",
        victim.labels()
    );
    let paths = fake.paths();
    assert!(
        paths
            .iter()
            .any(|path| path == "GET /.well-known/oauth-protected-resource/mcp"),
        "{paths:?}"
    );
    client.close().expect("close");
}

#[test]
fn a_challenge_naming_another_origin_and_no_metadata_of_its_own_fails() {
    let victim = FakeServer::start(|_req, reply| reply.send(200, "text/plain", &[], "ok"));
    let fake = FakeAuth::start(Options {
        challenge_metadata: Some(victim.url.replace("/mcp", "/.well-known/x")),
        prm_path: Some("/elsewhere"),
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default().legacy_discovery(false));
    let error = connect(&fake, &oauth).expect_err("no metadata on the server's own origin");
    assert_eq!(kind(&error), AuthErrorKind::Discovery, "{error}");
    assert!(victim.requests().is_empty(), "{:?}", victim.labels());
    assert_eq!((fake.registrations(), fake.authorizations()), (0, 0));
}

#[test]
fn an_authorization_server_on_another_local_port_named_by_the_metadata_is_asked() {
    // The conformance layout: the MCP server and its resource metadata on one localhost
    // port, the authorization server on another. Both local, and the second is named by the
    // first's metadata: allowed.
    let authorization_server = FakeAuth::start(Options::default());
    let fake = FakeAuth::start(Options {
        authorization_server: Some(authorization_server.issuer()),
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    // The fake MCP server knows only its own tokens: the connection ends refused, after the
    // other server has done its part.
    let _ = connect(&fake, &oauth);
    let asked = authorization_server.paths();
    assert!(
        asked
            .iter()
            .any(|path| path == "GET /.well-known/oauth-authorization-server"),
        "{asked:?}"
    );
    assert!(authorization_server.registrations() >= 1, "{asked:?}");
    assert!(authorization_server.token_requests() >= 1, "{asked:?}");
    assert_eq!(fake.registrations(), 0);
}
