//! The grants without a user and DPoP, against the in-process servers: client credentials
//! with a secret and with a signed assertion, workload identity, enterprise-managed
//! authorization, and DPoP-bound tokens with server nonces.
#![cfg(feature = "oauth")]

use crate::support::auth_fake;

use std::sync::Arc;

use auth_fake::{assert_idle, connect, jws_parts, FakeAuth, Options, AS_NONCE, RS_NONCE};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use p256::ecdsa::signature::Verifier;
use serde_json::json;
use toolwire::auth::{Grant, OAuth, OAuthConfig, SigningKey};

fn oauth(fake: &FakeAuth, config: OAuthConfig) -> Arc<OAuth> {
    Arc::new(OAuth::new(fake.url.clone(), config).expect("a provider"))
}

#[test]
fn a_refusal_quoting_the_client_secret_shows_it_masked() {
    for method in ["client_secret_basic", "client_secret_post"] {
        let fake = FakeAuth::start(Options {
            auth_methods: vec![method],
            grant_types: vec!["client_credentials"],
            refresh_fails: true,
            ..Options::default()
        });
        let config = OAuthConfig::default()
            .grant(Grant::ClientCredentials)
            .client_id("svc")
            .client_secret("svc-secret-quoted");
        let error = connect(&fake, &oauth(&fake, config)).expect_err("refused");
        let shown = format!("{error} {error:?}");
        assert!(shown.contains("invalid_client"), "{shown}");
        assert!(shown.contains("received ***"), "{shown}");
        assert!(!shown.contains("svc-secret-quoted"), "{method}: {shown}");
        // Nor its Basic form.
        assert!(!shown.contains("Basic "), "{method}: {shown}");
    }
}

#[test]
fn client_credentials_with_a_secret_use_basic_and_no_user() {
    let fake = FakeAuth::start(Options {
        auth_methods: vec!["client_secret_basic"],
        grant_types: vec!["client_credentials"],
        challenge_scope: Some("mcp:read"),
        ..Options::default()
    });
    let config = OAuthConfig::default()
        .grant(Grant::ClientCredentials)
        .client_id("svc")
        .client_secret("svc-secret");
    let provider = oauth(&fake, config);
    let client = connect(&fake, &provider).expect("connected");
    let world = fake.world.lock().unwrap();
    assert!(world.authorizations.is_empty() && world.registrations.is_empty());
    let (form, basic) = &world.token_requests[0];
    assert_eq!(form["grant_type"], "client_credentials");
    assert_eq!(form["resource"], fake.url);
    assert_eq!(form["scope"], "mcp:read");
    assert!(basic
        .as_deref()
        .is_some_and(|value| value.starts_with("Basic ")));
    drop(world);
    assert_idle(&client);
    client.close().unwrap();
}

#[test]
fn client_credentials_with_a_signed_assertion_for_the_issuer() {
    use p256::pkcs8::DecodePrivateKey;
    // A throwaway P-256 key (openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256).
    let pem = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgBZYrysFtcONf6e8B
Dr+inHjL329KiPcb79hYy70tHuuhRANCAAQeE3bLnrfdl+xnWfQQYY56mnhwmrC1
csELj4tNT0XJk1xifzgmCBL6B2aKBnEGaXwWToiv3+pMzY5CEE90wXUM
-----END PRIVATE KEY-----
";
    let secret = p256::ecdsa::SigningKey::from_pkcs8_pem(pem).unwrap();
    let fake = FakeAuth::start(Options {
        auth_methods: vec!["private_key_jwt"],
        grant_types: vec!["client_credentials"],
        ..Options::default()
    });
    let config = OAuthConfig::default()
        .grant(Grant::ClientCredentials)
        .client_id("svc")
        .client_key(SigningKey::from_pkcs8_pem(pem).unwrap());
    let provider = oauth(&fake, config);
    let client = connect(&fake, &provider).expect("connected");
    let world = fake.world.lock().unwrap();
    let (form, basic) = &world.token_requests[0];
    assert!(basic.is_none());
    assert_eq!(
        form["client_assertion_type"],
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    );
    let assertion = &form["client_assertion"];
    let (header, claims) = jws_parts(assertion).unwrap();
    assert_eq!(header["alg"], "ES256");
    assert_eq!(
        (claims["iss"].as_str(), claims["sub"].as_str()),
        (Some("svc"), Some("svc"))
    );
    assert_eq!(
        claims["aud"],
        fake.issuer(),
        "the issuer, not the token endpoint"
    );
    assert!(claims["exp"].as_u64().unwrap() <= claims["iat"].as_u64().unwrap() + 300);
    // A JWS signature is r‖s (64 bytes), and it verifies.
    let (signed, signature) = assertion.rsplit_once('.').unwrap();
    let signature =
        p256::ecdsa::Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature).unwrap()).unwrap();
    p256::ecdsa::VerifyingKey::from(&secret)
        .verify(signed.as_bytes(), &signature)
        .unwrap();
    drop(world);
    client.close().unwrap();
}

#[test]
fn workload_identity_forwards_its_jwt_and_never_retries() {
    let fake = FakeAuth::start(Options {
        grant_types: vec!["urn:ietf:params:oauth:grant-type:jwt-bearer"],
        registration: false,
        ..Options::default()
    });
    let config = OAuthConfig::default()
        .grant(Grant::JwtBearer {
            assertion: "workload.jwt.here".into(),
        })
        .client_id("workload");
    let provider = oauth(&fake, config.clone());
    let client = connect(&fake, &provider).expect("connected");
    {
        let world = fake.world.lock().unwrap();
        let (form, _) = &world.token_requests[0];
        assert_eq!(form["assertion"], "workload.jwt.here");
        assert_eq!(form["client_id"], "workload");
    }
    client.close().unwrap();
    // A refused assertion: one token request, an error, no other grant.
    let refusing = FakeAuth::start(Options {
        grant_types: vec!["urn:ietf:params:oauth:grant-type:jwt-bearer"],
        refresh_fails: true,
        ..Options::default()
    });
    let error = connect(&refusing, &oauth(&refusing, config)).expect_err("refused");
    assert!(error.to_string().contains("invalid_grant"), "{error}");
    // The refusal quoted the assertion: the error shows it masked.
    assert!(
        !format!("{error} {error:?}").contains("workload.jwt.here"),
        "{error}"
    );
    assert!(error.to_string().contains("received ***"), "{error}");
    assert_eq!(refusing.token_requests(), 1);
    assert_eq!(refusing.authorizations(), 0);
}

#[test]
fn enterprise_authorization_exchanges_the_id_token_then_uses_the_jwt_bearer_grant() {
    let fake = FakeAuth::start(Options {
        grant_types: vec!["urn:ietf:params:oauth:grant-type:jwt-bearer"],
        auth_methods: vec!["client_secret_basic"],
        ..Options::default()
    });
    let config = OAuthConfig::default()
        .grant(Grant::IdentityAssertion {
            idp_token_endpoint: format!("{}/idp/token", fake.base),
            idp_client_id: "idp-client".into(),
            idp_client_secret: None,
            id_token: "user.id.token".into(),
        })
        .client_id("mcp-client")
        .client_secret("mcp-secret");
    let provider = oauth(&fake, config);
    let client = connect(&fake, &provider).expect("connected");
    let world = fake.world.lock().unwrap();
    let exchange = &world.exchanges[0];
    assert_eq!(
        exchange["grant_type"],
        "urn:ietf:params:oauth:grant-type:token-exchange"
    );
    assert_eq!(
        exchange["requested_token_type"],
        "urn:ietf:params:oauth:token-type:id-jag"
    );
    assert_eq!(exchange["audience"], fake.issuer());
    assert_eq!(exchange["resource"], fake.url);
    assert_eq!(exchange["subject_token"], "user.id.token");
    assert_eq!(exchange["client_id"], "idp-client");
    let (form, basic) = &world.token_requests[0];
    assert_eq!(
        form["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(form["assertion"], format!("jag-for-{}", fake.issuer()));
    assert!(basic.is_some() && !form.contains_key("client_secret"));
    drop(world);
    client.close().unwrap();
}

#[test]
fn no_dpop_binding_for_a_resource_server_that_challenges_bearer_alone() {
    let fake = FakeAuth::start(Options {
        dpop: true,
        bearer_only: true,
        ..Options::default()
    });
    let provider = auth_fake::provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &provider).expect("connected");
    client.call_tool("echo", json!({})).expect("call");
    assert_eq!(provider.status().token_type.as_deref(), Some("Bearer"));
    let world = fake.world.lock().unwrap();
    assert!(world.proofs.is_empty(), "no DPoP proof was sent");
    assert!(world.problems.is_empty(), "{:?}", world.problems);
    drop(world);
    client.close().unwrap();
}

#[test]
fn dpop_binds_the_token_and_answers_both_servers_nonces() {
    let fake = FakeAuth::start(Options {
        dpop: true,
        dpop_nonce: true,
        ..Options::default()
    });
    let provider = auth_fake::provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &provider).expect("connected");
    client.call_tool("echo", json!({})).expect("call");
    assert_eq!(provider.status().token_type.as_deref(), Some("DPoP"));
    let world = fake.world.lock().unwrap();
    let at_token: Vec<_> = world
        .proofs
        .iter()
        .filter(|(path, ..)| path == "/token")
        .collect();
    assert_eq!(
        at_token.len(),
        2,
        "once, then again with the server's nonce"
    );
    assert_eq!(at_token[1].2["nonce"], AS_NONCE);
    assert_eq!(at_token[1].2["htm"], "POST");
    assert_eq!(at_token[1].2["htu"], format!("{}/token", fake.base));
    assert!(
        at_token[1].1["jwk"].get("d").is_none(),
        "the public key only"
    );
    let at_mcp: Vec<_> = world
        .proofs
        .iter()
        .filter(|(path, ..)| path == "/mcp")
        .collect();
    assert!(at_mcp.len() >= 3);
    assert_ne!(
        at_mcp[0].2["nonce"], RS_NONCE,
        "the first request knew no nonce"
    );
    assert!(
        at_mcp[1..]
            .iter()
            .all(|(_, _, claims)| claims["nonce"] == RS_NONCE),
        "kept once learned"
    );
    let mut jtis: Vec<&str> = at_mcp
        .iter()
        .map(|(_, _, claims)| claims["jti"].as_str().unwrap())
        .collect();
    jtis.sort_unstable();
    jtis.dedup();
    assert_eq!(
        jtis.len(),
        at_mcp.len(),
        "a fresh jti for every request, retries too"
    );
    assert!(at_mcp
        .iter()
        .all(|(_, _, claims)| claims["ath"].is_string() && claims["htu"] == fake.url));
    assert_eq!(
        world.authorizations.len(),
        1,
        "a nonce is no reason to authorize again"
    );
    drop(world);
    assert_idle(&client);
    client.close().unwrap();
}
