//! The OAuth fields of HTTP entries, in each host's spelling: Claude Code's and VS Code's
//! `oauth`, Cursor's `auth`; bad values named by server and field; the secret never in a
//! `Debug`.

use serde_json::json;
use toolwire::config::{ConfigFormat, LoadOptions, ServerConfigs};

fn read(format: ConfigFormat, document: serde_json::Value) -> toolwire::Result<ServerConfigs> {
    let options = LoadOptions::new()
        .format(format)
        .process_env(false)
        .var("SECRET", "from-env")
        .workspace_folder("/tmp");
    ServerConfigs::parse(&document.to_string(), &options)
}

#[test]
fn claude_code_s_oauth_object() {
    let configs = read(
        ConfigFormat::ClaudeCode,
        json!({"mcpServers": {"remote": {"type": "http", "url": "https://mcp.example.com/mcp",
            "oauth": {"clientId": "abc", "callbackPort": 8080, "scopes": "read write",
                      "authServerMetadataUrl": "https://auth.example.com/.well-known/openid-configuration"}}}}),
    )
    .unwrap();
    let oauth = configs.oauth("remote").expect("the oauth fields");
    assert_eq!(oauth.client_id.as_deref(), Some("abc"));
    assert_eq!(oauth.callback_port, Some(8080));
    assert_eq!(
        oauth.scopes.as_deref(),
        Some(&["read".to_owned(), "write".to_owned()][..])
    );
    assert!(oauth
        .auth_server_metadata_url
        .as_deref()
        .unwrap()
        .starts_with("https://auth."));
}

#[test]
fn vs_code_s_client_id() {
    let configs = read(
        ConfigFormat::VsCode,
        json!({"servers": {"slack": {"type": "http", "url": "https://mcp.slack.com/mcp", "oauth": {"clientId": "123.456"}}}}),
    )
    .unwrap();
    assert_eq!(
        configs.oauth("slack").unwrap().client_id.as_deref(),
        Some("123.456")
    );
}

#[test]
fn cursor_s_auth_object_with_an_expanded_secret() {
    let configs = read(
        ConfigFormat::Cursor,
        json!({"mcpServers": {"r": {"url": "https://mcp.example.com/mcp",
            "auth": {"CLIENT_ID": "cid", "CLIENT_SECRET": "${env:SECRET}", "scopes": ["a", "b"]}}}}),
    )
    .unwrap();
    let oauth = configs.oauth("r").unwrap();
    assert_eq!(oauth.client_secret.as_deref(), Some("from-env"));
    assert_eq!(oauth.scopes.as_ref().unwrap().len(), 2);
    let shown = format!("{oauth:?} {configs:?}");
    assert!(!shown.contains("from-env"), "{shown}");
}

#[test]
fn bad_oauth_values_name_the_server_and_field() {
    let error = read(
        ConfigFormat::ClaudeCode,
        json!({"mcpServers": {"x": {"type": "http", "url": "https://h/mcp", "oauth": {"callbackPort": 70000}}}}),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("server `x`") && error.contains("oauth.callbackPort"),
        "{error}"
    );
    let error = read(
        ConfigFormat::ClaudeCode,
        json!({"mcpServers": {"x": {"type": "http", "url": "https://h/mcp", "oauth": {"authServerMetadataUrl": "http://h/m"}}}}),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("https"), "{error}");
    let configs = read(
        ConfigFormat::ClaudeCode,
        json!({"mcpServers": {"x": {"url": "https://h/mcp"}}}),
    )
    .unwrap();
    assert!(configs.oauth("x").is_none());
}
