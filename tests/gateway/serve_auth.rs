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
    cli::sigint(child.id());
    assert_eq!(cli::wait_bounded(&mut child, crate::support::LONG), 0);
}
