//! What `tool_server --catalog` adds, for the tests of the `toolwire` command's catalog and
//! client-capability commands:
//!
//! * resources `note://readme` (text) and `note://logo` (a PNG blob); the template
//!   `note://items/{id}` (its text names the id);
//! * the prompt `greet {name, tone?}`, and completion of its `name` (and of the template's
//!   `id`) from a fixed list filtered by the typed prefix;
//! * the tool `log {level?, message?}`: sends one `notifications/message` at each of debug,
//!   info, warning and error (logger `catalog`), or one at `level` with `message`;
//! * the tool `ask {method, params?}`: sends that request to the client and answers its result
//!   as JSON text, or, when the client refuses, a result with `isError` quoting the error.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};
use toolwire::harness::{LocalTool, ToolContext, ToolFailure};
use toolwire::server::{
    content, CallToolResult, HandlerError, LogLevel, PromptResult, RequestContext, Server,
    ServerPrompt, ServerResource, ServerResourceTemplate,
};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// The names completion offers.
const NAMES: [&str; 4] = ["ada", "alan", "barbara", "grace"];
/// How long `ask` waits for the client (a person may be answering).
const ASK_TIMEOUT: Duration = Duration::from_secs(60);

/// Adds the catalog to `server`.
pub fn add(server: &Server) -> toolwire::Result<()> {
    server.add_resource(
        ServerResource::new("note://readme", "readme", |_, uri| {
            Ok(vec![content::text_contents(
                uri,
                Some("text/plain"),
                "Read me first.",
            )])
        })
        .mime_type("text/plain")
        .description("A short text."),
    )?;
    server.add_resource(
        ServerResource::new("note://logo", "logo", |_, uri| {
            Ok(vec![content::blob_contents(uri, Some("image/png"), PNG)])
        })
        .mime_type("image/png")
        .description("A tiny image."),
    )?;
    server.add_resource_template(
        ServerResourceTemplate::new(
            "note://items/{id}",
            "item",
            |_, uri, vars: &BTreeMap<String, String>| {
                let id = vars.get("id").cloned().unwrap_or_default();
                Ok(vec![content::text_contents(
                    uri,
                    Some("text/plain"),
                    format!("item {id}"),
                )])
            },
        )
        .description("One item by id."),
    )?;
    server.add_prompt(
        ServerPrompt::new("greet", "Greets someone.", |_, args| {
            let name = args.get("name").and_then(Value::as_str).unwrap_or("");
            let tone = args.get("tone").and_then(Value::as_str).unwrap_or("warm");
            Ok(PromptResult::new()
                .description(format!("a {tone} greeting"))
                .user_text(format!("Please greet {name}, {tone}ly.")))
        })
        .argument("name", "Who to greet", true)
        .argument("tone", "How", false),
    )?;
    server.set_completion(|_, request| {
        Ok(NAMES
            .iter()
            .filter(|name| name.starts_with(&request.value))
            .map(|name| (*name).to_owned())
            .collect())
    });
    server.add_tool(LocalTool::with_context(
        "log",
        "Sends log messages at each level, or one at `level`.",
        json!({"type": "object", "properties": {
            "level": {"type": "string", "enum": ["debug", "info", "notice", "warning", "error",
                                                 "critical", "alert", "emergency"]},
            "message": {"type": "string"}}}),
        |context, args| served(log_tool, context, args),
    ))?;
    server.add_tool(LocalTool::with_context(
        "ask",
        "Sends a request to the client and answers what it said.",
        json!({"type": "object", "required": ["method"], "properties": {
            "method": {"type": "string"}, "params": {"type": "object"}}}),
        |context, args| served(ask_tool, context, args),
    ))?;
    Ok(())
}

fn level(name: &str) -> LogLevel {
    match name {
        "debug" => LogLevel::Debug,
        "notice" => LogLevel::Notice,
        "warning" => LogLevel::Warning,
        "error" => LogLevel::Error,
        "critical" => LogLevel::Critical,
        "alert" => LogLevel::Alert,
        "emergency" => LogLevel::Emergency,
        _ => LogLevel::Info,
    }
}

/// Runs a handler written against the server's request context as a served tool's code.
fn served(
    handler: fn(&RequestContext, &Value) -> Result<CallToolResult, HandlerError>,
    context: &dyn ToolContext,
    args: &Value,
) -> Result<CallToolResult, ToolFailure> {
    let context = RequestContext::of(context).expect("served by toolwire::server");
    handler(context, args).map_err(HandlerError::into_failure)
}

fn log_tool(context: &RequestContext, args: &Value) -> Result<CallToolResult, HandlerError> {
    if let Some(name) = args.get("level").and_then(Value::as_str) {
        let message = args.get("message").and_then(Value::as_str).unwrap_or("");
        context.log(level(name), Some("catalog"), json!(message));
    } else {
        for name in ["debug", "info", "warning", "error"] {
            context.log(
                level(name),
                Some("catalog"),
                json!(format!("a {name} message")),
            );
        }
    }
    Ok(CallToolResult::from_text("logged"))
}

fn ask_tool(context: &RequestContext, args: &Value) -> Result<CallToolResult, HandlerError> {
    let method = args["method"].as_str().unwrap_or_default();
    let params = args.get("params").cloned().unwrap_or_else(|| json!({}));
    match context.request_with(method, params, ASK_TIMEOUT) {
        Ok(result) => Ok(CallToolResult::from_text(result.to_string())),
        Err(toolwire::Error::Rpc(error)) => Ok(CallToolResult::error(format!(
            "the client refused {method}: {} {}",
            error.code.0, error.message
        ))),
        Err(error) => Err(HandlerError::internal(format!("{method}: {error}"))),
    }
}
