//! Config files users already have: Claude Desktop, Cursor, Claude Code and VS Code, read from
//! fixtures, routed to stdio or HTTP, with variable expansion and errors that name the server
//! and the field.

use crate::support as common;
#[cfg(feature = "http")]
use crate::support::http_fake;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use toolwire::config::{ConfigFormat, LoadOptions, ServerEntry};
use toolwire::{Error, McpClient, McpConfig, ProtocolMode, ServerConfigs};

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/config")
        .join(path)
}

/// Options that see only the given variables, never the test process's environment.
fn isolated() -> LoadOptions {
    LoadOptions::new().process_env(false)
}

fn stdio(configs: &ServerConfigs, name: &str) -> toolwire::StdioConfig {
    match configs.get(name) {
        Some(ServerEntry::Stdio(config)) => config.clone(),
        other => panic!("`{name}` is not a stdio server: {other:?}"),
    }
}

fn http(configs: &ServerConfigs, name: &str) -> (String, Vec<(String, String)>) {
    match configs.get(name) {
        Some(ServerEntry::Http { url, headers }) => (url.clone(), headers.clone()),
        other => panic!("`{name}` is not an HTTP server: {other:?}"),
    }
}

fn env_of(config: &toolwire::StdioConfig, key: &str) -> Option<String> {
    config
        .get_envs()
        .get(&OsString::from(key))
        .map(|value| value.to_string_lossy().into_owned())
}

fn args_of(config: &toolwire::StdioConfig) -> Vec<String> {
    config
        .get_args()
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect()
}

fn config_error(text: &str, options: &LoadOptions) -> String {
    match ServerConfigs::parse(text, options) {
        Err(Error::Config(message)) => message,
        Err(other) => panic!("expected a config error, got {other}"),
        Ok(configs) => panic!("expected an error, got {configs:?}"),
    }
}

#[test]
fn claude_desktop_entries_are_taken_literally() {
    let configs = ServerConfigs::load(fixture("claude_desktop_config.json")).unwrap();
    assert_eq!(configs.format(), ConfigFormat::ClaudeDesktop);
    assert_eq!(
        configs.names().collect::<Vec<_>>(),
        ["filesystem", "remote"]
    );
    let filesystem = stdio(&configs, "filesystem");
    assert_eq!(filesystem.get_program(), &OsString::from("npx"));
    assert_eq!(
        args_of(&filesystem),
        [
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/home/me/Desktop"
        ]
    );
    assert_eq!(env_of(&filesystem, "LOG_LEVEL").as_deref(), Some("debug"));
    assert_eq!(
        env_of(&filesystem, "LITERAL").as_deref(),
        Some("${HOME} stays as written")
    );
    assert_eq!(
        filesystem.get_current_dir(),
        Some(PathBuf::from("/tmp").as_path())
    );
    let (url, headers) = http(&configs, "remote");
    assert_eq!(url, "http://127.0.0.1:8931/mcp");
    assert_eq!(
        headers,
        [("Authorization".to_owned(), "Bearer desk-token".to_owned())]
    );
}

#[test]
fn claude_code_expands_vars_and_defaults_everywhere() {
    let options = isolated()
        .var("TOOL_SERVER", "/opt/tools/server")
        .var("API_KEY", "k-123")
        .var("LEVEL", "")
        .var("GITHUB_TOKEN", "ghp_x");
    let configs = ServerConfigs::load_with(fixture("claude-code/.mcp.json"), options).unwrap();
    assert_eq!(configs.format(), ConfigFormat::ClaudeCode);
    let local = stdio(&configs, "local");
    assert_eq!(local.get_program(), &OsString::from("/opt/tools/server"));
    // Unset → default; set but empty with `:-` → default too, as in the shell.
    assert_eq!(args_of(&local), ["--name", "tools", "--level=info"]);
    assert_eq!(env_of(&local, "API_KEY").as_deref(), Some("k-123"));
    assert_eq!(env_of(&local, "REGION").as_deref(), Some("eu-west-1"));
    let (url, headers) = http(&configs, "github");
    assert_eq!(url, "https://api.example.com/mcp");
    assert_eq!(
        headers,
        [
            ("Authorization".to_owned(), "Bearer ghp_x".to_owned()),
            ("X-Team".to_owned(), "platform".to_owned())
        ]
    );
    // No `type`: a command means stdio. The unknown `timeout` is ignored.
    assert_eq!(
        stdio(&configs, "plain").get_program(),
        &OsString::from("python3")
    );

    // A set variable wins over the default.
    let options = isolated()
        .var("TOOL_SERVER", "x")
        .var("API_KEY", "k")
        .var("GITHUB_TOKEN", "t")
        .var("GITHUB_MCP_URL", "http://127.0.0.1:9/mcp")
        .var("SERVER_NAME", "mine");
    let configs = ServerConfigs::load_with(fixture("claude-code/.mcp.json"), options).unwrap();
    assert_eq!(http(&configs, "github").0, "http://127.0.0.1:9/mcp");
    assert_eq!(args_of(&stdio(&configs, "local"))[1], "mine");
}

#[test]
fn claude_code_unset_variable_without_default_names_server_and_field() {
    let options = isolated().var("TOOL_SERVER", "x").var("GITHUB_TOKEN", "t");
    let error = ServerConfigs::load_with(fixture("claude-code/.mcp.json"), options)
        .unwrap_err()
        .to_string();
    assert!(error.contains(".mcp.json"), "{error}");
    assert!(error.contains("server `local`"), "{error}");
    assert!(error.contains("field `env.API_KEY`"), "{error}");
    assert!(error.contains("${API_KEY}"), "{error}");
}

#[test]
fn cursor_expands_editor_variables() {
    let options = isolated().var("NOTES_TOKEN", "n-1");
    let configs = ServerConfigs::load_with(fixture("cursor/.cursor/mcp.json"), options).unwrap();
    assert_eq!(configs.format(), ConfigFormat::Cursor);
    let notes = stdio(&configs, "notes");
    let workspace = fixture("cursor");
    assert_eq!(
        args_of(&notes),
        [format!("{}/server.js", workspace.display())]
    );
    assert_eq!(env_of(&notes, "NOTES_TOKEN").as_deref(), Some("n-1"));
    // An unset `${env:…}` is empty, as in the editor.
    let (url, headers) = http(&configs, "search");
    assert_eq!(url, "http://localhost:7000/mcp");
    assert_eq!(headers, [("X-Key".to_owned(), String::new())]);
}

#[test]
fn vscode_reads_servers_env_file_and_supplied_inputs() {
    let options = isolated().input("api-key", "secret");
    let configs = ServerConfigs::load_with(fixture("vscode/.vscode/mcp.json"), options).unwrap();
    assert_eq!(configs.format(), ConfigFormat::VsCode);
    let memory = stdio(&configs, "memory");
    assert_eq!(env_of(&memory, "FROM_FILE").as_deref(), Some("yes"));
    assert_eq!(env_of(&memory, "QUOTED").as_deref(), Some("a b c"));
    assert_eq!(
        env_of(&memory, "OVERRIDE").as_deref(),
        Some("from env"),
        "`env` wins over `envFile`"
    );
    assert_eq!(
        env_of(&memory, "MEMORY_FILE"),
        Some(format!("{}/memory.json", fixture("vscode").display()))
    );
    let (url, headers) = http(&configs, "api");
    assert_eq!(url, "https://api.example.com/mcp");
    assert_eq!(
        headers,
        [("Authorization".to_owned(), "Bearer secret".to_owned())]
    );
}

#[test]
fn vscode_input_without_a_value_is_a_clear_error() {
    let error = ServerConfigs::load_with(fixture("vscode/.vscode/mcp.json"), isolated())
        .unwrap_err()
        .to_string();
    assert!(error.contains("server `api`"), "{error}");
    assert!(error.contains("field `headers.Authorization`"), "{error}");
    assert!(error.contains("not supported here"), "{error}");
    assert!(error.contains("LoadOptions::input(\"api-key\""), "{error}");
}

#[test]
fn every_bad_entry_names_its_server_and_field() {
    let code = isolated().format(ConfigFormat::ClaudeCode);
    let vscode = isolated().format(ConfigFormat::VsCode);
    let cases: &[(&str, &LoadOptions, &str, &str)] = &[
        (
            r#"{"mcpServers": {"a": {"type": "grpc", "url": "http://x/sse"}}}"#,
            &code,
            "`a`",
            "`type`",
        ),
        (r#"{"mcpServers": {"b": {}}}"#, &code, "`b`", "`command`"),
        (
            r#"{"mcpServers": {"c": {"command": 5}}}"#,
            &code,
            "`c`",
            "`command`",
        ),
        (
            r#"{"mcpServers": {"d": {"command": "x", "args": ["ok", 7]}}}"#,
            &code,
            "`d`",
            "`args[1]`",
        ),
        (
            r#"{"mcpServers": {"e": {"command": "x", "env": {"N": 1}}}}"#,
            &code,
            "`e`",
            "`env.N`",
        ),
        (
            r#"{"mcpServers": {"f": {"url": "ftp://x"}}}"#,
            &code,
            "`f`",
            "`url`",
        ),
        (
            r#"{"mcpServers": {"g": {"url": "http://x", "headers": {"A": true}}}}"#,
            &code,
            "`g`",
            "`headers.A`",
        ),
        (
            r#"{"mcpServers": {"h": {"type": "websocket", "url": "ws://x"}}}"#,
            &code,
            "`h`",
            "`type`",
        ),
        (
            r#"{"mcpServers": {"i": {"command": "x", "url": "http://x"}}}"#,
            &code,
            "`i`",
            "`command`",
        ),
        (
            r#"{"mcpServers": {"j": {"type": "http"}}}"#,
            &code,
            "`j`",
            "`url`",
        ),
        (
            r#"{"mcpServers": {"k": {"command": "x", "cwd": ["no"]}}}"#,
            &code,
            "`k`",
            "`cwd`",
        ),
        (
            r#"{"mcpServers": {"l": {"command": "${NOPE}"}}}"#,
            &code,
            "`l`",
            "`command`",
        ),
        (
            r#"{"mcpServers": {"m": "npx server"}}"#,
            &code,
            "`m`",
            "`mcpServers.m`",
        ),
        (
            r#"{"servers": {"n": {"command": "x"}}}"#,
            &vscode,
            "`n`",
            "`type`",
        ),
        (
            r#"{"servers": {"o": {"type": "stdio", "command": "x", "envFile": "/nonexistent/.env"}}}"#,
            &vscode,
            "`o`",
            "`envFile`",
        ),
        (
            r#"{"servers": {"p": {"type": "stdio", "command": "${command:pick}"}}}"#,
            &vscode,
            "`p`",
            "`command`",
        ),
        (
            r#"{"servers": {"q": {"type": "sse", "url": "ftp://x"}}}"#,
            &vscode,
            "`q`",
            "`url`",
        ),
    ];
    for (text, options, server, field) in cases {
        let message = config_error(text, options);
        assert!(
            message.contains(&format!("server {server}")),
            "{text}: {message}"
        );
        assert!(
            message.contains(&format!("field {field}")),
            "{text}: {message}"
        );
    }
    let unknown = config_error(cases[0].0, &code);
    assert!(unknown.contains("\"sse\""), "{unknown}");
}

#[test]
fn format_detection_and_unknown_names() {
    let configs = ServerConfigs::parse(r#"{"servers": {}}"#, &isolated()).unwrap();
    assert_eq!(configs.format(), ConfigFormat::VsCode);
    let configs =
        ServerConfigs::parse(r#"{"mcpServers": {"x": {"command": "y"}}}"#, &isolated()).unwrap();
    assert_eq!(configs.format(), ConfigFormat::ClaudeCode);
    let error = configs.connect("nope", McpConfig::default()).unwrap_err();
    assert!(
        error.to_string().contains("no server named `nope`"),
        "{error}"
    );
    assert!(error.to_string().contains("it has: x"), "{error}");
    let error = ServerConfigs::load(fixture("missing.json")).unwrap_err();
    assert!(matches!(error, Error::Io(_)), "{error}");
}

#[test]
fn connect_starts_a_stdio_server_from_a_config() {
    let text = r#"{"mcpServers": {"local": {"command": "${TOOL_SERVER}", "env": {"API_KEY": "${API_KEY:-none}"}}}}"#;
    let options = isolated().var(
        "TOOL_SERVER",
        common::tool_server_path().display().to_string(),
    );
    let configs = ServerConfigs::parse(text, &options).unwrap();
    let client = configs
        .connect("local", McpConfig::default().mode(ProtocolMode::Legacy))
        .unwrap();
    assert!(!client.list_tools().unwrap().is_empty());
    client.close().unwrap();
}

#[cfg(feature = "http")]
#[test]
fn connect_opens_an_http_session_with_the_configured_headers() {
    use http_fake::{initialize_result, result, FakeServer};
    use serde_json::json;
    let server = FakeServer::start(|req, reply| match req.rpc().as_str() {
        "initialize" => reply.json(200, &initialize_result(req, "2025-11-25"), &[]),
        "notifications/initialized" => reply.accepted(),
        "tools/list" => reply.json(200, &result(req, json!({"tools": []})), &[]),
        _ if req.method == "GET" => reply.send(405, "", &[], ""),
        _ => reply.send(400, "", &[], ""),
    });
    let text = json!({"mcpServers": {"remote": {"type": "http", "url": "${URL}",
        "headers": {"Authorization": "Bearer ${TOKEN:-dev}"}}}})
    .to_string();
    let configs = ServerConfigs::parse(&text, &isolated().var("URL", &server.url)).unwrap();
    let client = configs
        .connect("remote", McpConfig::default().mode(ProtocolMode::Legacy))
        .unwrap();
    assert!(client.list_tools().unwrap().is_empty());
    client.close().unwrap();
    for req in server.requests() {
        assert_eq!(
            req.header("authorization"),
            Some("Bearer dev"),
            "{}",
            req.label()
        );
    }
}

#[test]
fn an_sse_entry_routes_to_the_legacy_transport() {
    let configs = ServerConfigs::parse(
        r#"{"servers": {"old": {"type": "sse", "url": "http://127.0.0.1:9/sse",
            "headers": {"Authorization": "Bearer s3cret"}}}}"#,
        &isolated().format(ConfigFormat::VsCode),
    )
    .unwrap();
    match configs.get("old") {
        Some(ServerEntry::Sse { url, headers }) => {
            assert_eq!(url, "http://127.0.0.1:9/sse");
            assert_eq!(headers[0].0, "Authorization");
        }
        other => panic!("expected an SSE entry, got {other:?}"),
    }
    assert!(!format!("{:?}", configs.get("old")).contains("s3cret"));
    assert!(configs.connector("old").is_ok());
}

#[test]
fn websocket_tcp_and_unix_urls_route_to_their_transports() {
    let configs = ServerConfigs::parse(
        r#"{"mcpServers": {
            "ws": {"url": "ws://127.0.0.1:9/rpc", "headers": {"Authorization": "Bearer s3cret"}},
            "tcp": {"url": "tcp://127.0.0.1:9"},
            "unix": {"url": "unix:/run/peer.sock"}}}"#,
        &isolated().format(ConfigFormat::ClaudeCode),
    )
    .unwrap();
    assert!(
        matches!(configs.get("ws"), Some(ServerEntry::WebSocket { url, .. }) if url == "ws://127.0.0.1:9/rpc")
    );
    assert_eq!(configs.get("ws").unwrap().transport(), "websocket");
    assert!(!format!("{:?}", configs.get("ws")).contains("s3cret"));
    match configs.get("tcp") {
        Some(ServerEntry::Socket(socket)) => assert_eq!(
            socket.address(),
            &toolwire::transport::SocketAddress::Tcp("127.0.0.1:9".into())
        ),
        other => panic!("{other:?}"),
    }
    match configs.get("unix") {
        Some(ServerEntry::Socket(socket)) => {
            assert_eq!(socket.address().to_string(), "unix:/run/peer.sock")
        }
        other => panic!("{other:?}"),
    }
    // Connecting to nothing fails at connect time, naming the address.
    let error = McpClient::connect_with(configs.connector("tcp").unwrap(), McpConfig::default())
        .unwrap_err();
    assert!(error.to_string().contains("tcp://127.0.0.1:9"), "{error}");
}
