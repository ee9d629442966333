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
//! defaults); any other scenario connects, lists the tools and closes.
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
    let client = McpClient::connect_with(HttpConfig::new(url).connector(), config)?;
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
