//! A client for the client scenarios of the MCP conformance suite
//! (`@modelcontextprotocol/conformance`).
//!
//! The harness runs `<command> <server URL>` with `MCP_CONFORMANCE_SCENARIO` naming the
//! scenario, and judges what the test server saw. This client connects over Streamable HTTP
//! to the URL (the last argument), does what the scenario asks, closes, and exits 0 (1 on
//! failure, with the reason on stderr).
//!
//! ```text
//! cargo build --example conformance_client
//! conformance-client.sh "target/debug/examples/conformance_client" initialize tools_call sse-retry elicitation-sep1034-client-defaults
//! ```
//!
//! Scenarios: `initialize` (connect, list tools), `tools_call` (call `add_numbers`),
//! `sse-retry` (call `test_reconnection`, whose response arrives only on the resumed GET
//! stream), `elicitation-sep1034-client-defaults` (accept elicitations with the schema's
//! defaults); any other scenario connects, lists the tools and closes. `auth/…` scenarios get
//! an OAuth provider first (see `auth_scenario`), with `MCP_CONFORMANCE_CONTEXT`'s
//! credentials and grants.
//!
//! `TOOLWIRE_MODE=legacy|auto|modern` picks the protocol mode (default: auto, which probes
//! with `server/discover` and falls back to `initialize`). `TOOLWIRE_LOG=debug` logs to
//! stderr.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::{json, Value};
use toolwire::mcp::ElicitResult;
use toolwire::{CallOptions, HttpConfig, McpClient, McpConfig, ProtocolMode, Tool};

fn main() -> ExitCode {
    init_log();
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client <server URL>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&scenario, &url) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("conformance_client: scenario `{scenario}` failed: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(scenario: &str, url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut config = McpConfig::default().mode(mode()?);
    config = config.request_timeout(Duration::from_secs(20));
    config = config.discover_timeout(Duration::from_secs(5));
    if scenario.starts_with("elicitation") {
        // A non-interactive client can only answer with the defaults the form declares.
        config = config.elicitation(ElicitResult::accept_defaults);
    }
    let mut http = HttpConfig::new(url);
    // Authorization scenarios (`auth/…`): see `auth_scenario` below.
    if let Some(oauth) = auth_scenario(scenario, url)? {
        http = http.auth(oauth);
    }
    let client = McpClient::connect_with(http.connector(), config)?;
    let info = client.session_info()?;
    eprintln!(
        "conformance_client: connected to {} {} with protocol {} ({})",
        info.server.name, info.server.version, info.protocol_version, info.era
    );
    let tools = client.list_tools()?;
    eprintln!(
        "conformance_client: {} tool(s): {}",
        tools.len(),
        tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let call = |name: &str, arguments: Value| -> Result<(), Box<dyn std::error::Error>> {
        let result = client.call_tool_with(name, arguments, CallOptions::new())?;
        eprintln!(
            "conformance_client: {name} → {}{}",
            result.text(),
            if result.is_error { " (tool error)" } else { "" }
        );
        Ok(())
    };
    match scenario {
        "initialize" => {}
        "tools_call" => call("add_numbers", json!({"a": 2, "b": 3}))?,
        "sse-retry" => call("test_reconnection", json!({}))?,
        "elicitation-sep1034-client-defaults" => {
            call("test_client_elicitation_defaults", json!({}))?;
        }
        _ => {
            // Unknown scenarios: call every tool that needs no arguments.
            for tool in tools.iter().filter(|tool| needs_no_arguments(tool)) {
                call(&tool.name, json!({}))?;
            }
        }
    }
    client.close()?;
    Ok(())
}

// ---- Authorization scenarios (issue 12) -------------------------------------------------
//
// Every `auth/…` scenario gets an OAuth provider whose user-agent step follows the mock
// authorization server's redirect itself (as the suite's reference client does) and a client
// metadata document URL (`basic-cimd`); `MCP_CONFORMANCE_CONTEXT` supplies pre-registered
// credentials and the extensions' grants. The driver then runs as for any scenario: connect,
// list the tools, call `test-tool`.

/// The Client ID Metadata Document URL both reference clients use; the mock never fetches it.
const CONFORMANCE_CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";

fn auth_scenario(
    scenario: &str,
    url: &str,
) -> Result<Option<std::sync::Arc<toolwire::auth::OAuth>>, Box<dyn std::error::Error>> {
    use toolwire::auth::{FetchRedirect, Grant, OAuth, OAuthConfig, SigningKey};
    if !scenario.starts_with("auth/") {
        return Ok(None);
    }
    let context: Value = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => serde_json::from_str(&text)?,
        Err(_) => Value::Null,
    };
    let field = |name: &str| context.get(name).and_then(Value::as_str).map(str::to_owned);
    let mut config = OAuthConfig::default()
        .authorizer(std::sync::Arc::new(FetchRedirect::new(
            "http://localhost:3000/callback",
        )))
        .client_metadata_url(CONFORMANCE_CIMD_URL)
        .client_name("toolwire conformance client");
    if let Some(id) = field("client_id") {
        config = config.client_id(id);
    }
    if let Some(secret) = field("client_secret") {
        config = config.client_secret(secret);
    }
    match scenario {
        "auth/client-credentials-basic" => config = config.grant(Grant::ClientCredentials),
        "auth/client-credentials-jwt" => {
            let pem = field("private_key_pem").ok_or("the context has no private_key_pem")?;
            config = config
                .grant(Grant::ClientCredentials)
                .client_key(SigningKey::from_pkcs8_pem(&pem)?);
        }
        "auth/wif-jwt-bearer" => {
            let assertion = field("valid_jwt").ok_or("the context has no valid_jwt")?;
            config = config.grant(Grant::JwtBearer { assertion });
        }
        "auth/enterprise-managed-authorization" => {
            let need = |name: &str| field(name).ok_or(format!("the context has no {name}"));
            config = config.grant(Grant::IdentityAssertion {
                idp_token_endpoint: need("idp_token_endpoint")?,
                idp_client_id: need("idp_client_id")?,
                idp_client_secret: None,
                id_token: need("idp_id_token")?,
            });
        }
        _ => {}
    }
    Ok(Some(std::sync::Arc::new(OAuth::new(url, config)?)))
}

// ---- End of the authorization scenarios --------------------------------------------------

fn needs_no_arguments(tool: &Tool) -> bool {
    tool.input_schema()
        .get("required")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}

fn mode() -> Result<ProtocolMode, String> {
    match std::env::var("TOOLWIRE_MODE").as_deref() {
        Err(_) | Ok("" | "auto") => Ok(ProtocolMode::Auto),
        Ok("legacy") => Ok(ProtocolMode::Legacy),
        Ok("modern") => Ok(ProtocolMode::Modern),
        Ok(other) => Err(format!(
            "TOOLWIRE_MODE={other}: expected legacy, auto or modern"
        )),
    }
}

/// A minimal `log` sink on stderr, on when `TOOLWIRE_LOG` names a level.
fn init_log() {
    struct Stderr;
    impl log::Log for Stderr {
        fn enabled(&self, _: &log::Metadata<'_>) -> bool {
            true
        }
        fn log(&self, record: &log::Record<'_>) {
            eprintln!("[{} {}] {}", record.level(), record.target(), record.args());
        }
        fn flush(&self) {}
    }
    let level = match std::env::var("TOOLWIRE_LOG").as_deref() {
        Ok("trace") => log::LevelFilter::Trace,
        Ok("debug") => log::LevelFilter::Debug,
        Ok("info") => log::LevelFilter::Info,
        Ok("warn") => log::LevelFilter::Warn,
        _ => return,
    };
    if log::set_logger(&Stderr).is_ok() {
        log::set_max_level(level);
    }
}
