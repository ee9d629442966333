//! `toolwire serve --http` with authorization: static tokens (`--auth-tokens`) in front of
//! the gateway, and the refusal to listen beyond loopback without authorization, before any
//! backend starts.
#![cfg(feature = "cli")]

use crate::support::cli;
use crate::support::gateway as support;
use crate::support::server::{exchange, post, stateless_headers, stateless_request};

use serde_json::json;
use sha2::{Digest, Sha256};
use toolwire::{HttpConfig, McpClient, McpConfig, ProtocolMode};

#[test]
fn a_network_address_without_authorization_is_refused_before_any_backend_starts() {
    let folder = cli::scratch("serve-no-auth");
    let marker = folder.join("started");
    let config = folder.join("servers.json");
    let entry = json!({"command": "sh", "args": ["-c", format!("touch '{}'", marker.display())]});
    std::fs::write(&config, json!({"mcpServers": {"one": entry}}).to_string()).unwrap();
    let config = config.to_str().unwrap();
    let run = cli::run_args(&["serve", "--config", config, "--http", "0.0.0.0:0"]).expect(2);
    for flag in ["--auth-issuer", "--auth-tokens", "--no-auth"] {
        assert!(run.stderr.contains(flag), "{flag}: {}", run.stderr);
    }
    assert!(!marker.exists(), "no backend was started");
    // A resource without a way to check tokens is a usage error too.
    let run = cli::run_args(&[
        "serve",
        "--config",
        config,
        "--http",
        "127.0.0.1:0",
        "--auth-resource",
        "https://mcp.example/mcp",
    ])
    .expect(2);
    assert!(run.stderr.contains("--auth-issuer"), "{}", run.stderr);
    assert!(!marker.exists(), "no backend was started");
    // The metrics listener follows the same rule.
    let run = cli::run_args(&[
        "serve",
        "--config",
        config,
        "--http",
        "127.0.0.1:0",
        "--metrics",
        "0.0.0.0:0",
    ])
    .expect(2);
    assert!(run.stderr.contains("--metrics 0.0.0.0:0"), "{}", run.stderr);
    assert!(run.stderr.contains("--auth-tokens"), "{}", run.stderr);
    assert!(!marker.exists(), "no backend was started");
}

#[test]
fn serve_with_static_tokens_admits_their_holders_only() {
    let folder = cli::scratch("serve-tokens");
    let config = folder.join("servers.json");
    let servers = json!({"mcpServers": {"alpha": support::tool_server_entry()}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let hash: String = Sha256::digest(b"team-token")
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let tokens = folder.join("tokens.json");
    let file = json!({"tokens": [{"sha256": hash, "subject": "team", "scopes": ["mcp"]}]});
    std::fs::write(&tokens, file.to_string()).unwrap();
    let mut command = cli::toolwire(&[
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
        "--auth-tokens",
        tokens.to_str().unwrap(),
        "--auth-resource",
        "https://mcp.example/mcp",
        "--auth-scope",
        "mcp",
        "--allowed-host",
        "app.example",
        "--allowed-origin",
        "https://tools.example:8443",
    ]);
    command.stdin(std::process::Stdio::null());
    let (mut child, lines) = cli::spawn_with_stderr_lines(command);
    let seen = cli::read_until(&lines, |line| line.contains("listening on "));
    let url = seen
        .last()
        .unwrap()
        .split("listening on ")
        .nth(1)
        .unwrap()
        .trim()
        .to_owned();

    let headers = stateless_headers("tools/list", None);
    let body = stateless_request(1, "tools/list", json!({}));
    let refused = post(&url, &headers, &body);
    assert_eq!(refused.status, 401, "{refused:?}");
    let challenge = refused.header("www-authenticate").unwrap();
    assert!(
        challenge.contains(
            "resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp\""
        ) && challenge.contains("scope=\"mcp\""),
        "{challenge}"
    );
    let client = McpClient::connect_http(
        HttpConfig::new(&url).bearer_token("team-token"),
        McpConfig::default().mode(ProtocolMode::Modern),
    )
    .unwrap();
    assert!(!client.list_tools().unwrap().is_empty());
    client.close().unwrap();
    // The resource's host is a name clients may use (a proxy in front passes it on).
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: mcp.example\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}Authorization: Bearer team-token\r\n"
    );
    let as_named = exchange(&url, &head, &body.to_string());
    assert_eq!(as_named.status, 200, "{as_named:?}");
    // --allowed-host names another; a name nobody gave is 421 before the token is looked at.
    let named = |host: &str, origin: &str| {
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{headers}Authorization: Bearer team-token\r\n"
        );
        exchange(&url, &head, &body.to_string()).status
    };
    assert_eq!(named("app.example", ""), 200);
    assert_eq!(named("other.example", ""), 421);
    // --allowed-origin admits exactly that origin (its host is no allowed host); others 403.
    assert_eq!(
        named("localhost", "Origin: https://tools.example:8443\r\n"),
        200
    );
    assert_eq!(named("localhost", "Origin: https://tools.example\r\n"), 403);
    assert_eq!(named("localhost", "Origin: https://evil.example\r\n"), 403);
    cli::sigint(child.id());
    assert_eq!(cli::wait_bounded(&mut child, crate::support::LONG), 0);
}

/// `toolwire serve` started over `config` with `args`, and the URL it listens at.
fn serve(args: &[&str], secret: Option<&str>) -> (cli::KillOnDrop, String) {
    let mut command = cli::toolwire(args);
    command
        .stdin(std::process::Stdio::null())
        .env_remove("TOOLWIRE_AUTH_CLIENT_SECRET");
    if let Some(secret) = secret {
        command.env("TOOLWIRE_AUTH_CLIENT_SECRET", secret);
    }
    let (child, lines) = cli::spawn_with_stderr_lines(command);
    let seen = cli::read_until(&lines, |line| line.contains("listening on "));
    let url = seen.last().unwrap().split("listening on ").nth(1).unwrap();
    (child, url.trim().to_owned())
}

fn list(url: &str, token: Option<&str>) -> crate::support::server::RawResponse {
    let mut headers = stateless_headers("tools/list", None);
    if let Some(token) = token {
        headers.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    post(
        url,
        &headers,
        &stateless_request(1, "tools/list", json!({})),
    )
}

/// The policy file's `"auth"` section protects `serve --http` as the flags do, a flag
/// overrides its setting, and a key it does not know stops the start before any backend.
#[test]
fn the_policy_files_auth_section_protects_serve_and_flags_override_it() {
    let folder = cli::scratch("serve-policy-auth");
    let config = folder.join("servers.json");
    let servers = json!({"mcpServers": {"alpha": support::tool_server_entry()}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let hash: String = Sha256::digest(b"team-token")
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let tokens = folder.join("tokens.json");
    let file = json!({"tokens": [{"sha256": hash, "subject": "team", "scopes": ["mcp", "extra"]}]});
    std::fs::write(&tokens, file.to_string()).unwrap();
    let policy = folder.join("policy.json");
    let section =
        json!({"resource": "https://mcp.example/mcp", "tokens": tokens, "scopes": ["mcp"]});
    std::fs::write(&policy, json!({"auth": section}).to_string()).unwrap();
    let (config, policy_path) = (config.to_str().unwrap(), policy.to_str().unwrap());
    let base = ["serve", "--config", config, "--policy", policy_path];
    let (mut child, url) = serve(&[&base[..], &["--http", "127.0.0.1:0"]].concat(), None);
    let refused = list(&url, None);
    assert_eq!(refused.status, 401, "{refused:?}");
    let challenge = refused.header("www-authenticate").unwrap();
    assert!(challenge.contains("scope=\"mcp\""), "{challenge}");
    assert_eq!(list(&url, Some("team-token")).status, 200);
    assert_eq!(list(&url, Some("other-token")).status, 401);
    cli::sigint(child.id());
    assert_eq!(cli::wait_bounded(&mut child, crate::support::LONG), 0);
    // --auth-scope replaces the section's scopes.
    let flags = ["--http", "127.0.0.1:0", "--auth-scope", "admin"];
    let (mut child, url) = serve(&[&base[..], &flags].concat(), None);
    let narrow = list(&url, Some("team-token"));
    assert_eq!(narrow.status, 403, "{narrow:?}");
    assert!(narrow
        .header("www-authenticate")
        .unwrap()
        .contains("scope=\"admin\""));
    cli::sigint(child.id());
    assert_eq!(cli::wait_bounded(&mut child, crate::support::LONG), 0);
    // Read strictly: a misspelt key fails the start, naming it, before any backend.
    let marker = folder.join("started");
    let entry = json!({"command": "sh", "args": ["-c", format!("touch '{}'", marker.display())]});
    std::fs::write(
        folder.join("servers.json"),
        json!({"mcpServers": {"one": entry}}).to_string(),
    )
    .unwrap();
    let mut misspelt = section.clone();
    misspelt["scope"] = json!(["mcp"]);
    std::fs::write(&policy, json!({"auth": misspelt}).to_string()).unwrap();
    let run = cli::run_args(&[&base[..], &["--http", "127.0.0.1:0"]].concat()).expect(2);
    assert!(
        run.stderr.contains("unknown key \"scope\" at /auth"),
        "{}",
        run.stderr
    );
    assert!(!marker.exists(), "no backend was started");
    let _ = std::fs::remove_dir_all(&folder);
}

/// `serve --auth-issuer URL --auth-introspection --auth-client-id ID` with the secret in
/// TOOLWIRE_AUTH_CLIENT_SECRET: the fake authorization server's opaque tokens are checked at
/// its introspection endpoint; the secret is shown nowhere; a client id without a secret is a
/// usage error.
#[test]
fn serve_checks_opaque_tokens_by_introspection() {
    use crate::support::auth_fake::{FakeAuth, Options};
    let folder = cli::scratch("serve-introspection");
    let config = folder.join("servers.json");
    let servers = json!({"mcpServers": {"alpha": support::tool_server_entry()}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let fake = FakeAuth::start(Options {
        introspection: Some(("rs", "rs-secret-value")),
        resource: Some("https://mcp.example/mcp".into()),
        ..Options::default()
    });
    let issuer = fake.issuer();
    let args = [
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
        "--auth-issuer",
        &issuer,
        "--auth-resource",
        "https://mcp.example/mcp",
        "--auth-introspection",
        "--auth-client-id",
        "rs",
    ];
    let run = cli::run_args(&args).expect(2);
    assert!(
        run.stderr.contains("TOOLWIRE_AUTH_CLIENT_SECRET"),
        "{}",
        run.stderr
    );
    let mut command = cli::toolwire(&args);
    command
        .stdin(std::process::Stdio::null())
        .env("TOOLWIRE_AUTH_CLIENT_SECRET", "rs-secret-value")
        .env("RUST_LOG", "debug");
    let (mut child, lines) = cli::spawn_with_stderr_lines(command);
    let seen = cli::read_until(&lines, |line| line.contains("listening on "));
    let url = seen
        .last()
        .unwrap()
        .split("listening on ")
        .nth(1)
        .unwrap()
        .trim()
        .to_owned();
    let mut answer = ureq::post(format!("{}/token", fake.base))
        .send_form([("grant_type", "client_credentials"), ("scope", "mcp")])
        .unwrap();
    let body: serde_json::Value =
        serde_json::from_str(&answer.body_mut().read_to_string().unwrap()).unwrap();
    let token = body["access_token"].as_str().unwrap().to_owned();
    assert_eq!(list(&url, Some(&token)).status, 200);
    assert_eq!(list(&url, Some("tok-999")).status, 401);
    assert_eq!(fake.world.lock().unwrap().introspections.len(), 2);
    cli::sigint(child.id());
    assert_eq!(cli::wait_bounded(&mut child, crate::support::LONG), 0);
    let rest: Vec<String> = lines.iter().collect();
    for line in seen.iter().chain(&rest) {
        assert!(!line.contains("rs-secret-value"), "{line}");
    }
    let _ = std::fs::remove_dir_all(&folder);
}
