//! MCP authorization end to end against an in-process resource and authorization server:
//! each step of the flow, in order, as the server saw it, in both protocol eras.
#![cfg(feature = "oauth")]

use crate::support::auth_fake;

use auth_fake::{assert_idle, connect, provider, FakeAuth, Options};
use serde_json::json;
use toolwire::auth::OAuthConfig;

#[test]
fn a_401_runs_discovery_registration_and_the_code_flow_once_then_every_request_has_the_token() {
    let fake = FakeAuth::start(Options {
        user: Some("alice@example.com"),
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected after authorizing");
    let tools = client.list_tools().expect("tools");
    assert_eq!(tools[0].name, "echo");
    assert_eq!(
        client.call_tool("echo", json!({})).expect("call").text(),
        "done"
    );

    let paths = fake.paths();
    let auth_steps: Vec<&str> = paths
        .iter()
        .map(String::as_str)
        .filter(|path| {
            !path.starts_with("POST /mcp")
                && !path.starts_with("GET /mcp")
                && !path.starts_with("DELETE")
        })
        .collect();
    assert_eq!(
        auth_steps,
        [
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-authorization-server",
            "POST /register",
            "GET /authorize",
            "POST /token",
        ]
    );
    assert_eq!(
        paths[0], "POST /mcp initialize",
        "the first request meets the 401"
    );
    assert!(fake.problems().is_empty(), "{:?}", fake.problems());

    let world = fake.world.lock().unwrap();
    let registration = &world.registrations[0];
    assert_eq!(registration["token_endpoint_auth_method"], "none");
    assert_eq!(registration["application_type"], "native");
    assert_eq!(
        registration["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(
        registration["redirect_uris"],
        json!(["http://127.0.0.1:9/callback"])
    );
    assert!(registration.get("resource").is_none());
    let authorization = &world.authorizations[0];
    assert_eq!(authorization["response_type"], "code");
    assert_eq!(authorization["code_challenge_method"], "S256");
    assert_eq!(authorization["code_challenge"].len(), 43);
    assert!(
        authorization["state"].len() >= 43,
        "128 random bits at least"
    );
    assert_eq!(
        authorization["resource"], fake.url,
        "RFC 8707, exactly as published"
    );
    assert!(
        !authorization.contains_key("scope"),
        "no scope anywhere: none is sent"
    );
    let (token_form, basic) = &world.token_requests[0];
    assert_eq!(token_form["grant_type"], "authorization_code");
    assert_eq!(token_form["client_id"], "client-1");
    assert!(basic.is_none() && !token_form.contains_key("client_secret"));
    let requests = paths
        .iter()
        .filter(|p| p.starts_with("POST /mcp") && !p.contains("notifications/"))
        .count();
    assert_eq!(
        world.mcp_with_token,
        requests - 1,
        "all but the first carried the token"
    );
    drop(world);

    let status = oauth.status();
    assert!(status.authorized);
    assert_eq!(status.subject.as_deref(), Some("alice@example.com"));
    assert!(status.expires_at.is_some());
    assert_eq!(status.authorizations, 1);
    assert_idle(&client);
    client.close().expect("close");
}

#[test]
fn the_stateless_era_authorizes_on_server_discover() {
    let fake = FakeAuth::start(Options {
        modern: true,
        challenge_scope: Some("mcp:read"),
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected");
    assert_eq!(
        client.session_info().unwrap().protocol_version,
        "2026-07-28"
    );
    client.call_tool("echo", json!({})).expect("call");
    assert_eq!(fake.paths()[0], "POST /mcp server/discover");
    assert_eq!(fake.authorizations(), 1);
    let world = fake.world.lock().unwrap();
    assert_eq!(
        world.authorizations[0]["scope"], "mcp:read",
        "the challenge's scope first"
    );
    drop(world);
    assert_idle(&client);
    client.close().unwrap();
}

#[test]
fn discovery_falls_back_to_the_root_metadata_and_the_issuer_path_is_inserted() {
    let fake = FakeAuth::start(Options {
        prm_path: Some("/.well-known/oauth-protected-resource"),
        prm_in_challenge: false,
        issuer_path: "/tenant1",
        prm_scopes: Some(vec!["a", "b"]),
        ..Options::default()
    });
    fake.set(|options| options.resource = Some(fake.base.clone()));
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected");
    let paths = fake.paths();
    let gets: Vec<&String> = paths
        .iter()
        .filter(|path| path.starts_with("GET /.well-known"))
        .collect();
    assert_eq!(
        gets,
        [
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-protected-resource",
            "GET /.well-known/oauth-authorization-server/tenant1",
        ]
    );
    let world = fake.world.lock().unwrap();
    assert_eq!(
        world.authorizations[0]["resource"], fake.base,
        "the bare origin, no `/` added"
    );
    assert_eq!(
        world.authorizations[0]["scope"], "a b",
        "all of scopes_supported"
    );
    drop(world);
    assert!(fake.problems().is_empty(), "{:?}", fake.problems());
    client.close().unwrap();
}

#[test]
fn without_resource_metadata_the_origin_is_the_authorization_server() {
    let fake = FakeAuth::start(Options {
        prm_path: None,
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected the 2025-03-26 way");
    assert!(fake
        .paths()
        .iter()
        .any(|path| path == "GET /.well-known/oauth-authorization-server"));
    assert_eq!(fake.authorizations(), 1);
    client.close().unwrap();
}

#[test]
fn a_registered_secret_and_a_basic_only_server_mean_client_secret_basic() {
    let fake = FakeAuth::start(Options {
        registered_secret: Some("s3cret:with/odd&chars"),
        auth_methods: vec!["client_secret_basic"],
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected");
    let world = fake.world.lock().unwrap();
    assert_eq!(
        world.registrations[0]["token_endpoint_auth_method"],
        "client_secret_basic"
    );
    let (form, basic) = &world.token_requests[0];
    assert!(!form.contains_key("client_secret") && !form.contains_key("client_id"));
    // RFC 6749 §2.3.1: each half form-encoded before base64.
    let expected = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "client-1:s3cret%3Awith%2Fodd%26chars"
        )
    );
    assert_eq!(basic.as_deref(), Some(expected.as_str()));
    drop(world);
    client.close().unwrap();
}

#[test]
fn a_pre_registered_client_posts_its_secret_when_only_post_is_offered() {
    let fake = FakeAuth::start(Options {
        registration: false,
        auth_methods: vec!["client_secret_post"],
        ..Options::default()
    });
    let oauth = provider(
        &fake,
        OAuthConfig::default()
            .client_id("mine")
            .client_secret("pre-secret"),
    );
    let client = connect(&fake, &oauth).expect("connected");
    assert_eq!(fake.registrations(), 0);
    let world = fake.world.lock().unwrap();
    let (form, basic) = &world.token_requests[0];
    assert_eq!(form["client_id"], "mine");
    assert_eq!(form["client_secret"], "pre-secret");
    assert!(basic.is_none());
    assert_eq!(world.authorizations[0]["client_id"], "mine");
    drop(world);
    client.close().unwrap();
}

#[test]
fn a_client_metadata_document_is_the_client_id_where_the_server_takes_them() {
    let fake = FakeAuth::start(Options::default());
    // The fake does not advertise the documents: registration happens.
    let oauth = provider(
        &fake,
        OAuthConfig::default().client_metadata_url("https://app.example/client.json"),
    );
    let client = connect(&fake, &oauth).expect("connected");
    assert_eq!(fake.registrations(), 1);
    client.close().unwrap();
}

#[test]
fn offline_access_is_asked_for_only_when_the_server_lists_it() {
    for (listed, expected) in [(true, "mcp:read offline_access"), (false, "mcp:read")] {
        let fake = FakeAuth::start(Options {
            challenge_scope: Some("mcp:read"),
            as_scopes: Some(if listed {
                vec!["mcp:read", "offline_access"]
            } else {
                vec!["mcp:read"]
            }),
            ..Options::default()
        });
        let oauth = provider(&fake, OAuthConfig::default());
        let client = connect(&fake, &oauth).expect("connected");
        let world = fake.world.lock().unwrap();
        assert_eq!(world.authorizations[0]["scope"], expected);
        assert_eq!(world.authorizations[0].contains_key("prompt"), listed);
        drop(world);
        client.close().unwrap();
    }
}

#[test]
fn a_server_moved_to_another_authorization_server_gets_a_new_client_there() {
    let fake = FakeAuth::start(Options::default());
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected");
    // The resource now names another issuer (here: a path of the same origin), and forgets
    // the first one's tokens.
    fake.set(|options| options.issuer_path = "/tenant2");
    fake.revoke_all();
    client
        .call_tool("echo", json!({}))
        .expect("authorized at the new issuer");
    let world = fake.world.lock().unwrap();
    assert_eq!(
        world.registrations.len(),
        2,
        "registered again with the new issuer"
    );
    let clients: Vec<&str> = world
        .authorizations
        .iter()
        .map(|query| query["client_id"].as_str())
        .collect();
    assert_eq!(
        clients,
        ["client-1", "client-2"],
        "the old client is never presented there"
    );
    assert_eq!(world.token_requests[1].0["client_id"], "client-2");
    drop(world);
    assert!(
        fake.paths()
            .iter()
            .filter(|path| path.contains("oauth-protected-resource"))
            .count()
            >= 2,
        "discovered afresh"
    );
    assert_eq!(
        oauth.status().issuer,
        Some(format!("{}/tenant2", fake.base))
    );
    client.close().unwrap();
}
