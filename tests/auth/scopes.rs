//! Step-up authorization on 403 `insufficient_scope`: the union of the scopes held and
//! challenged, a new authorization (not a refresh), and the bounds that end it.
#![cfg(feature = "oauth")]

use crate::support::auth_fake;

use auth_fake::{assert_idle, connect, provider, FakeAuth, Options};
use serde_json::json;
use toolwire::auth::OAuthConfig;
use toolwire::error::AuthErrorKind;

#[test]
fn a_403_authorizes_again_for_the_union_and_retries_the_call() {
    let fake = FakeAuth::start(Options {
        challenge_scope: Some("mcp:read"),
        tool_scope: Some("mcp:write"),
        prm_scopes: Some(vec!["mcp:profile"]),
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected");
    assert_eq!(
        client
            .call_tool("echo", json!({}))
            .expect("stepped up")
            .text(),
        "done"
    );
    let world = fake.world.lock().unwrap();
    let scopes: Vec<&str> = world
        .authorizations
        .iter()
        .map(|query| query["scope"].as_str())
        .collect();
    assert_eq!(
        scopes,
        ["mcp:read", "mcp:read mcp:write"],
        "never scopes_supported's mcp:profile"
    );
    let grants: Vec<&str> = world
        .token_requests
        .iter()
        .map(|(form, _)| form["grant_type"].as_str())
        .collect();
    assert_eq!(
        grants,
        ["authorization_code", "authorization_code"],
        "a new authorization, not a refresh"
    );
    assert_eq!(
        world.registrations.len(),
        1,
        "the client is registered once"
    );
    drop(world);
    assert_eq!(oauth.status().scopes, ["mcp:read", "mcp:write"]);
    assert_idle(&client);
    client.close().unwrap();
}

#[test]
fn a_step_up_that_would_add_nothing_gives_up_at_once() {
    let fake = FakeAuth::start(Options {
        challenge_scope: Some("mcp:admin"),
        always_forbidden: true,
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected");
    for _ in 0..3 {
        let error = client.call_tool("echo", json!({})).expect_err("always 403");
        assert_eq!(
            error.auth().map(|auth| auth.kind),
            Some(AuthErrorKind::InsufficientScope),
            "{error}"
        );
    }
    assert_eq!(
        fake.authorizations(),
        1,
        "the retry limit: no authorization comes of it"
    );
    // The session goes on for what the token allows.
    client.list_tools().expect("tools still listed");
    assert_idle(&client);
    client.close().unwrap();
}

#[test]
fn scopes_never_granted_end_after_one_step_up() {
    let fake = FakeAuth::start(Options {
        challenge_scope: Some("mcp:read"),
        tool_scope: Some("mcp:write"),
        grant_only: Some(vec!["mcp:read"]),
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected");
    let error = client
        .call_tool("echo", json!({}))
        .expect_err("never granted");
    assert_eq!(
        error.auth().map(|auth| auth.kind),
        Some(AuthErrorKind::InsufficientScope),
        "{error}"
    );
    assert_eq!(fake.authorizations(), 2);
    client.close().unwrap();
}

#[test]
fn max_step_ups_bounds_the_authorizations_per_operation() {
    let fake = FakeAuth::start(Options {
        challenge_scope: Some("mcp:read"),
        tool_scope: Some("mcp:write"),
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default().max_step_ups(0));
    let client = connect(&fake, &oauth).expect("connected");
    let error = client
        .call_tool("echo", json!({}))
        .expect_err("no step-up allowed");
    assert!(error.to_string().contains("max_step_ups"), "{error}");
    assert_eq!(fake.authorizations(), 1);
    client.close().unwrap();
}
