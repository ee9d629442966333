//! Each way MCP authorization refuses to go on, against the in-process servers: the error
//! names the step, nothing is sent past the check that failed, and no token or secret is
//! in the message.
#![cfg(feature = "oauth")]

use crate::support::auth_fake;

use std::sync::Arc;

use auth_fake::{connect, provider, FakeAuth, Iss, Options};
use serde_json::json;
use toolwire::auth::{NonInteractive, OAuth, OAuthConfig};
use toolwire::error::AuthErrorKind;

fn refused(options: Options, config: OAuthConfig) -> (FakeAuth, toolwire::Error) {
    let fake = FakeAuth::start(options);
    let oauth = provider(&fake, config.client_name("planted-client-name"));
    let error = connect(&fake, &oauth).expect_err("authorization must fail");
    (fake, error)
}

fn kind(error: &toolwire::Error) -> AuthErrorKind {
    error
        .auth()
        .unwrap_or_else(|| panic!("not an authorization error: {error}"))
        .kind
}

#[test]
fn metadata_naming_another_issuer_is_not_used() {
    let (fake, error) = refused(
        Options {
            metadata_issuer: Some("https://attacker.example.com".into()),
            ..Options::default()
        },
        OAuthConfig::default(),
    );
    assert_eq!(kind(&error), AuthErrorKind::IssuerMismatch, "{error}");
    assert!(
        error.to_string().contains("attacker.example.com"),
        "{error}"
    );
    assert_eq!(
        (
            fake.registrations(),
            fake.authorizations(),
            fake.token_requests()
        ),
        (0, 0, 0)
    );
}

#[test]
fn a_resource_that_is_not_this_server_stops_before_registration() {
    let (fake, error) = refused(
        Options {
            resource: Some("https://evil.example.com/mcp".into()),
            ..Options::default()
        },
        OAuthConfig::default(),
    );
    assert_eq!(kind(&error), AuthErrorKind::ResourceMismatch, "{error}");
    assert_eq!((fake.registrations(), fake.authorizations()), (0, 0));
    assert!(!fake
        .paths()
        .iter()
        .any(|path| path.contains("oauth-authorization-server")));
}

#[test]
fn a_server_without_pkce_s256_is_refused() {
    for methods in [None, Some(vec!["plain"])] {
        let (fake, error) = refused(
            Options {
                pkce_methods: methods,
                ..Options::default()
            },
            OAuthConfig::default(),
        );
        assert_eq!(kind(&error), AuthErrorKind::Unsupported, "{error}");
        assert!(error.to_string().contains("S256"), "{error}");
        assert_eq!((fake.registrations(), fake.authorizations()), (0, 0));
    }
}

#[test]
fn a_refused_registration_says_why() {
    let (fake, error) = refused(
        Options {
            registration_refused: true,
            ..Options::default()
        },
        OAuthConfig::default(),
    );
    assert_eq!(kind(&error), AuthErrorKind::Registration, "{error}");
    assert!(
        error.to_string().contains("invalid_client_metadata"),
        "{error}"
    );
    assert_eq!((fake.registrations(), fake.authorizations()), (1, 0));
}

#[test]
fn no_registration_and_no_client_id_asks_for_one() {
    let (fake, error) = refused(
        Options {
            registration: false,
            ..Options::default()
        },
        OAuthConfig::default(),
    );
    assert_eq!(kind(&error), AuthErrorKind::Registration, "{error}");
    assert!(error.to_string().contains("client-id"), "{error}");
    assert_eq!(fake.authorizations(), 0);
}

#[test]
fn a_redirect_from_another_issuer_is_refused_before_the_token_request() {
    for (supported, iss) in [(true, Iss::Wrong), (false, Iss::Wrong), (true, Iss::Omit)] {
        let (fake, error) = refused(
            Options {
                iss_supported: supported,
                iss,
                ..Options::default()
            },
            OAuthConfig::default(),
        );
        assert_eq!(kind(&error), AuthErrorKind::IssuerMismatch, "{error}");
        assert_eq!(
            (fake.authorizations(), fake.token_requests()),
            (1, 0),
            "{supported} {iss:?}"
        );
        assert!(
            !error.to_string().contains("code-1"),
            "the code stays out of messages: {error}"
        );
    }
}

#[test]
fn without_a_user_the_flow_stops_before_registering_and_says_how_to_log_in() {
    let fake = FakeAuth::start(Options::default());
    let config =
        OAuthConfig::default().authorizer(Arc::new(NonInteractive::new("run `toolwire login`")));
    let oauth = Arc::new(OAuth::new(fake.url.clone(), config).unwrap());
    let error = connect(&fake, &oauth).expect_err("no user");
    assert_eq!(kind(&error), AuthErrorKind::LoginRequired, "{error}");
    assert!(error.to_string().contains("toolwire login"), "{error}");
    assert_eq!((fake.registrations(), fake.authorizations()), (0, 0));
}

#[test]
fn a_server_quoting_the_oauth_token_shows_it_masked() {
    let fake = FakeAuth::start(Options {
        token_prefix: "oauth-access-token-",
        ..Options::default()
    });
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected");
    let error = client
        .call_tool("quote", json!({}))
        .expect_err("a JSON-RPC error");
    let shown = format!("{error} {error:?}");
    assert!(shown.contains("refused ***"), "{shown}");
    assert!(!shown.contains("oauth-access-token-"), "{shown}");
    let result = client.call_tool("quote_text", json!({})).expect("a result");
    assert!(result.is_error);
    let shown = format!("{result:?}");
    assert!(shown.contains("refused ***"), "{shown}");
    assert!(!shown.contains("oauth-access-token-"), "{shown}");
    client.close().unwrap();
}

#[test]
fn a_token_the_server_refuses_at_once_is_an_error_not_a_loop() {
    let fake = FakeAuth::start(Options::default());
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected");
    fake.set(|options| options.refuse_tokens = true);
    let error = client.list_tools().expect_err("refused");
    assert_eq!(kind(&error), AuthErrorKind::Refused, "{error}");
    assert_eq!(
        fake.authorizations(),
        2,
        "one new authorization, then the refusal is final"
    );
    auth_fake::assert_idle(&client);
    client.close().unwrap();
}

#[test]
fn a_pre_registered_client_bound_to_another_issuer_is_not_sent_there() {
    let (fake, error) = refused(
        Options::default(),
        OAuthConfig::default()
            .client_id("bound")
            .client_secret("bound-secret")
            .client_issuer("https://the-right-issuer.example"),
    );
    assert_eq!(kind(&error), AuthErrorKind::Registration, "{error}");
    assert!(!error.to_string().contains("bound-secret"), "{error}");
    assert_eq!((fake.authorizations(), fake.token_requests()), (0, 0));
}
