//! An HTTP backend that needs OAuth authorizes with the tokens a login stored
//! (`GatewayConfig::token_store`); one whose tokens are missing or refused is reported as
//! needing authorization, with the command that logs in, and left out while the others
//! serve. Nobody is ever asked: the gateway starts without a user.
#![cfg(all(feature = "gateway", feature = "oauth"))]

use crate::support::auth_fake;
use crate::support::gateway as support;

use std::sync::Arc;

use auth_fake::{FakeAuth, Options};
use serde_json::json;
use support::{call, front, gateway_with, tool_server_entry, url_entry};
use toolwire::auth::{MemoryTokenStore, OAuthConfig, TokenStore};
use toolwire::gateway::GatewayConfig;
use toolwire::ProtocolMode;

/// A store holding the tokens of a login to `fake`.
fn logged_in(fake: &FakeAuth) -> Arc<dyn TokenStore> {
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::new());
    let oauth = auth_fake::provider(fake, OAuthConfig::default().store(Arc::clone(&store)));
    oauth.login().expect("the login");
    store
}

fn options(store: Arc<dyn TokenStore>) -> GatewayConfig {
    GatewayConfig::new()
        .protocol(ProtocolMode::Legacy)
        .token_store(store)
}

#[test]
fn a_backend_authorizes_with_the_stored_tokens() {
    let fake = FakeAuth::start(Options::default());
    let store = logged_in(&fake);
    let authorizations = fake.authorizations();
    let gateway = gateway_with(
        &[
            ("remote", url_entry(&fake.url)),
            ("local", tool_server_entry()),
        ],
        "{}",
        options(store),
    );
    let report = gateway.report();
    assert!(report.failed.is_empty(), "{report:?}");
    let (client, connection) = front(&gateway);
    assert_eq!(call(&client, "mcp__remote__echo", json!({})).text(), "done");
    assert_eq!(
        call(&client, "mcp__local__echo", json!({"message": "hi"})).text(),
        "hi"
    );
    // The stored tokens were used: nobody was asked to authorize again.
    assert_eq!(fake.authorizations(), authorizations);
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn a_backend_without_tokens_needs_authorization_and_the_others_serve() {
    let fake = FakeAuth::start(Options::default());
    let empty: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::new());
    let gateway = gateway_with(
        &[
            ("remote", url_entry(&fake.url)),
            ("local", tool_server_entry()),
        ],
        "{}",
        options(empty),
    );
    let report = gateway.report();
    assert_eq!(report.started.len(), 1, "{report:?}");
    assert_eq!(report.started[0].name, "local");
    let failed = &report.failed[0];
    assert_eq!(failed.name, "remote");
    // The config here is text, not a file: there is no --config to name.
    assert_eq!(
        failed.error,
        "needs authorization: run `toolwire --server remote login`"
    );
    assert_eq!(fake.authorizations(), 0, "nobody may be asked");
    let (client, connection) = front(&gateway);
    assert!(call(&client, "mcp__remote__echo", json!({}))
        .text()
        .starts_with("UNKNOWN_TOOL: "));
    assert_eq!(
        call(&client, "mcp__local__echo", json!({"message": "hi"})).text(),
        "hi"
    );
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn a_backend_whose_tokens_are_refused_needs_authorization() {
    let fake = FakeAuth::start(Options::default());
    let store = logged_in(&fake);
    fake.set(|options| options.refuse_tokens = true);
    let gateway = gateway_with(
        &[
            ("remote", url_entry(&fake.url)),
            ("local", tool_server_entry()),
        ],
        "{}",
        options(store),
    );
    let report = gateway.report();
    assert_eq!(report.started.len(), 1, "{report:?}");
    let failed = &report.failed[0];
    assert_eq!(failed.name, "remote");
    assert!(
        failed.error.starts_with("needs authorization: "),
        "{failed:?}"
    );
    gateway.close();
}
