//! A login end to end, against an in-process MCP server that needs OAuth and its
//! authorization server (the fake the tests use, `tests/support/auth_fake.rs`): the first request meets
//! 401, the client discovers, registers, opens "the browser" (a thread here, which follows
//! the redirect to the loopback listener, as a browser would), exchanges the code, and every
//! request after carries the token. Then the server forgets its tokens, and the refresh token
//! brings a new one without asking anyone.
//!
//! ```text
//! cargo run --example oauth_login --features oauth
//! ```

#[path = "../tests/support/auth_fake.rs"]
mod auth_fake;
#[path = "../tests/support/http_fake.rs"]
mod http_fake;

use std::sync::{mpsc, Arc};
use std::time::Duration;

use serde_json::json;
use toolwire::auth::{LoopbackAuthorizer, OAuth, OAuthConfig};
use toolwire::{HttpConfig, McpClient, McpConfig, ProtocolMode};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fake = auth_fake::FakeAuth::start(auth_fake::Options {
        challenge_scope: Some("mcp:read"),
        as_scopes: Some(vec!["mcp:read", "offline_access"]),
        issue_refresh: true,
        user: Some("alice@example.com"),
        ..auth_fake::Options::default()
    });
    println!("MCP server: {}", fake.url);

    // The user-agent step: the loopback listener, with a "browser" that consents at once.
    let (opened, open) = mpsc::channel::<String>();
    let authorizer = LoopbackAuthorizer::new()
        .open_browser(false)
        .notice(move |text| {
            println!("{text}");
            let _ = opened.send(text.to_owned());
        });
    let browser = std::thread::spawn(move || -> Result<(), String> {
        let notice = open
            .recv_timeout(Duration::from_secs(30))
            .map_err(|e| e.to_string())?;
        let address = notice
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .ok_or("no address")?;
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .max_redirects(0)
                .http_status_as_error(false)
                .build(),
        );
        let consent = agent.get(address).call().map_err(|e| e.to_string())?;
        let location = consent.headers()["location"]
            .to_str()
            .map_err(|e| e.to_string())?
            .to_owned();
        agent.get(&location).call().map_err(|e| e.to_string())?;
        Ok(())
    });

    let oauth = Arc::new(OAuth::new(
        fake.url.clone(),
        OAuthConfig::default().authorizer(Arc::new(authorizer)),
    )?);
    let http = HttpConfig::new(fake.url.clone()).auth(oauth.clone());
    let client = McpClient::connect_http(http, McpConfig::default().mode(ProtocolMode::Legacy))?;
    browser
        .join()
        .map_err(|_| "the browser thread panicked")??;
    let tools = client.list_tools()?;
    println!(
        "tools: {}",
        tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );

    println!("what the servers saw:");
    for path in fake.paths() {
        println!("  {path}");
    }
    let status = oauth.status();
    println!(
        "authorized: {} as {} with scopes {:?} (refreshable: {})",
        status.authorized,
        status.subject.as_deref().unwrap_or("?"),
        status.scopes,
        status.refreshable
    );

    fake.revoke_all();
    let before = fake.paths().len();
    let result = client.call_tool("echo", json!({}))?;
    println!(
        "after the server forgot its tokens: echo → {}",
        result.text()
    );
    for path in &fake.paths()[before..] {
        println!("  {path}");
    }
    println!("users asked: {}", oauth.status().authorizations);
    client.close()?;
    Ok(())
}
