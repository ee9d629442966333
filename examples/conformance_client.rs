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
//! The 2026-07-28 scenarios have their own functions below (`request-metadata`,
//! `sep-2322-client-request-state`, `http-standard-headers`, `http-custom-headers`,
//! `http-invalid-tool-headers`, `json-schema-2020-12-preservation`).
//!
//! `TOOLWIRE_MODE=legacy|auto|modern` picks the protocol mode (default: modern when the
//! suite's `MCP_CONFORMANCE_PROTOCOL_VERSION` is 2026-07-28, else auto, which probes with
//! `server/discover` and falls back to `initialize`). `TOOLWIRE_LOG=debug` logs to stderr.

use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use toolwire::mcp::{ElicitRequest, ElicitResult, SkillResources};
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
    // Filled once connected, for handlers that call back into the client.
    let slot: Arc<OnceLock<McpClient>> = Arc::new(OnceLock::new());
    if scenario == "sep-2322-client-request-state" {
        config = mrtr_config(config, Arc::clone(&slot));
    }
    let mut http = HttpConfig::new(url);
    // Authorization scenarios (`auth/…`): see `auth_scenario` below.
    if let Some(oauth) = auth_scenario(scenario, url)? {
        http = http.auth(oauth);
    }
    let client = McpClient::connect_with(http.connector(), config)?;
    let _ = slot.set(client.clone());
    let info = client.session_info()?;
    eprintln!(
        "conformance_client: connected to {} {} with protocol {} ({})",
        info.server.name, info.server.version, info.protocol_version, info.era
    );
    if scenario.starts_with("sep-2640-") {
        skills(&client, scenario)?;
        client.close()?;
        return Ok(());
    }
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
        // ---- 2026-07-28 scenarios (issue 13): each in its own function below ----
        "request-metadata" => {}
        "sep-2322-client-request-state" => mrtr_script(&client)?,
        "http-standard-headers" => standard_headers(&client)?,
        "http-custom-headers" => custom_headers(&client)?,
        "http-invalid-tool-headers" => call_listed_tools(&client, &tools)?,
        "json-schema-2020-12-preservation" => schema_echo(&client, &tools)?,
        // ---- end of the 2026-07-28 scenarios ----
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

/// The Skills scenarios (SEP-2640, issue 28): list the skills, reading nothing
/// (`sep-2640-client-no-prefetch`); otherwise load each (its SKILL.md read and verified) and
/// read its other files only when that succeeded (`sep-2640-client-verify-*`: a refused
/// skill is reported, not an error of the run).
fn skills(client: &McpClient, scenario: &str) -> Result<(), Box<dyn std::error::Error>> {
    let entries = client.list_skills()?;
    for entry in &entries {
        eprintln!(
            "conformance_client: skill {} at {}",
            entry.name(),
            entry.uri
        );
    }
    if scenario == "sep-2640-client-no-prefetch" {
        return Ok(());
    }
    for entry in &entries {
        let mut skill = match client.load_skill(entry) {
            Ok(skill) => skill,
            Err(error) => {
                eprintln!("conformance_client: {} not loaded: {error}", entry.name());
                continue;
            }
        };
        let SkillResources::Files(files) = &entry.resources else {
            continue;
        };
        for file in files.iter().filter(|file| file.uri != entry.uri) {
            match skill.read(client, &file.uri) {
                Ok(bytes) => eprintln!("conformance_client: {} ({} bytes)", file.uri, bytes.len()),
                Err(error) => eprintln!("conformance_client: {} refused: {error}", file.uri),
            }
        }
    }
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
        .unwrap_or_default()
        .get("required")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}

fn mode() -> Result<ProtocolMode, String> {
    let wire = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();
    match std::env::var("TOOLWIRE_MODE").as_deref() {
        Err(_) | Ok("") if wire == "2026-07-28" => Ok(ProtocolMode::Modern),
        Err(_) | Ok("" | "auto") => Ok(ProtocolMode::Auto),
        Ok("legacy") => Ok(ProtocolMode::Legacy),
        Ok("modern") => Ok(ProtocolMode::Modern),
        Ok(other) => Err(format!(
            "TOOLWIRE_MODE={other}: expected legacy, auto or modern"
        )),
    }
}

// ---- 2026-07-28 scenario functions (issue 13) ----

type Outcome = Result<(), Box<dyn std::error::Error>>;

/// sep-2322: the elicitation of `test_mrtr_echo_state` is answered only after an unrelated
/// call went out in between (its isolation is what the scenario checks); every boolean the
/// form asks for is confirmed.
fn mrtr_config(config: McpConfig, slot: Arc<OnceLock<McpClient>>) -> McpConfig {
    let unrelated_done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    config.elicitation(move |request: &ElicitRequest| {
        if !unrelated_done.swap(true, std::sync::atomic::Ordering::SeqCst) {
            if let Some(client) = slot.get() {
                match client.call_tool("test_mrtr_unrelated", json!({})) {
                    Ok(result) => eprintln!(
                        "conformance_client: test_mrtr_unrelated → {}",
                        result.text()
                    ),
                    Err(error) => {
                        eprintln!("conformance_client: test_mrtr_unrelated failed: {error}")
                    }
                }
            }
        }
        let mut content = serde_json::Map::new();
        if let Some(properties) = request
            .requested_schema
            .as_ref()
            .and_then(|schema| schema.get("properties"))
            .and_then(Value::as_object)
        {
            for (name, property) in properties {
                if property.get("type").and_then(Value::as_str) == Some("boolean") {
                    content.insert(name.clone(), json!(true));
                }
            }
        }
        ElicitResult::Accept(Value::Object(content))
    })
}

/// sep-2322: echo-state (with the unrelated call between its rounds), no-state, then a
/// result without `resultType`.
fn mrtr_script(client: &McpClient) -> Outcome {
    for name in [
        "test_mrtr_echo_state",
        "test_mrtr_no_state",
        "test_mrtr_no_result_type",
    ] {
        let result = client.call_tool(name, json!({}))?;
        eprintln!("conformance_client: {name} → {}", result.text());
    }
    Ok(())
}

/// http-standard-headers: one request of each kind the scenario records.
fn standard_headers(client: &McpClient) -> Outcome {
    for tool in client.list_tools()?.iter() {
        client.call_tool(&tool.name, json!({}))?;
    }
    for resource in client.list_resources()? {
        client.read_resource(&resource.uri)?;
    }
    for prompt in client.list_prompts()? {
        client.get_prompt(&prompt.name, json!({}))?;
    }
    Ok(())
}

/// http-custom-headers: the calls the scenario's context lists, as they are.
fn custom_headers(client: &McpClient) -> Outcome {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let calls = context
        .get("toolCalls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for call in calls {
        let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
        let arguments = call.get("arguments").cloned().unwrap_or(json!({}));
        let result = client.call_tool(name, arguments)?;
        eprintln!("conformance_client: {name} → {}", result.text());
    }
    Ok(())
}

/// http-invalid-tool-headers: every tool the list kept (the invalid ones were left out and
/// reported), each with a placeholder for every required string.
fn call_listed_tools(client: &McpClient, tools: &[Tool]) -> Outcome {
    for (name, reason) in client.rejected_tools() {
        eprintln!("conformance_client: rejected tool {name}: {reason}");
    }
    for tool in tools {
        let schema = tool.input_schema().unwrap_or_default();
        let mut arguments = serde_json::Map::new();
        for required in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            arguments.insert(required.to_owned(), json!("us-west1"));
        }
        let result = client.call_tool(&tool.name, Value::Object(arguments))?;
        eprintln!("conformance_client: {} → {}", tool.name, result.text());
    }
    Ok(())
}

/// json-schema-2020-12-preservation: the focal tool's input schema handed back byte for byte
/// as it was received.
fn schema_echo(client: &McpClient, tools: &[Tool]) -> Outcome {
    let focal = tools
        .iter()
        .find(|tool| tool.name == "json_schema_2020_12_tool")
        .ok_or("no json_schema_2020_12_tool in the list")?;
    let schema = serde_json::value::RawValue::from_string(focal.input_schema_json().to_owned())?;
    #[derive(serde::Serialize)]
    struct Echo {
        schema: Box<serde_json::value::RawValue>,
    }
    let result = client.call_tool("json_schema_echo", Echo { schema })?;
    eprintln!("conformance_client: json_schema_echo → {}", result.text());
    Ok(())
}

// ---- end of the 2026-07-28 scenario functions ----

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
