//! Refresh tokens: an expired token is refreshed once before a request, a later 401 tries a
//! refresh before a new authorization, and a refused refresh token leads to one.
#![cfg(feature = "oauth")]

use crate::support::auth_fake;

use auth_fake::{assert_idle, connect, provider, FakeAuth, Options};
use serde_json::json;
use toolwire::auth::OAuthConfig;

fn grants(fake: &FakeAuth) -> Vec<String> {
    let world = fake.world.lock().unwrap();
    world
        .token_requests
        .iter()
        .map(|(form, _)| form["grant_type"].clone())
        .collect()
}

#[test]
fn an_expired_token_is_refreshed_once_before_the_request() {
    // Expiring within the refresh skew (30 s): expired for the client at once.
    let fake = FakeAuth::start(Options {
        expires_in: Some(5),
        issue_refresh: true,
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected");
    fake.set(|options| options.expires_in = Some(3600));
    client.list_tools().expect("tools");
    client.call_tool("echo", json!({})).expect("call");
    let list = grants(&fake);
    assert_eq!(
        list.iter()
            .filter(|grant| *grant == "authorization_code")
            .count(),
        1,
        "{list:?}"
    );
    assert!(list.contains(&"refresh_token".to_owned()), "{list:?}");
    assert_eq!(
        list.last().unwrap(),
        "refresh_token",
        "none after the long-lived token: {list:?}"
    );
    let world = fake.world.lock().unwrap();
    let refresh = world
        .token_requests
        .iter()
        .find(|(form, _)| form["grant_type"] == "refresh_token")
        .unwrap();
    assert_eq!(
        refresh.0["resource"], fake.url,
        "the resource goes with the refresh too"
    );
    drop(world);
    assert!(oauth.status().refreshable);
    assert_idle(&client);
    client.close().unwrap();
}

#[test]
fn a_later_401_refreshes_before_authorizing_again() {
    let fake = FakeAuth::start(Options {
        issue_refresh: true,
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected");
    fake.revoke_all();
    client
        .call_tool("echo", json!({}))
        .expect("retried with the refreshed token");
    assert_eq!(grants(&fake), ["authorization_code", "refresh_token"]);
    assert_eq!(fake.authorizations(), 1);
    client.close().unwrap();
}

#[test]
fn a_refused_refresh_token_is_forgotten_and_the_user_asked_again() {
    let fake = FakeAuth::start(Options {
        issue_refresh: true,
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected");
    fake.set(|options| options.refresh_fails = true);
    fake.revoke_all();
    client
        .call_tool("echo", json!({}))
        .expect("authorized again");
    assert_eq!(
        grants(&fake),
        ["authorization_code", "refresh_token", "authorization_code"]
    );
    assert_eq!(fake.authorizations(), 2);
    assert_idle(&client);
    client.close().unwrap();
}
