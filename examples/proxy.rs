//! A small MCP proxy built on toolwire's public server API only: one server in front of an
//! upstream MCP server, serving the upstream's tools, resources and prompts under a prefix,
//! with a per-connection call quota, and a helpful answer for a tool it does not serve.
//!
//! ```text
//! cargo run --example proxy
//! ```
//!
//! Everything runs in this process over in-memory transports (an upstream server, the proxy,
//! and a client of the proxy) so the example needs nothing installed; it asserts what the
//! client sees and ends with `proxy example: all checks passed`. A real proxy would connect
//! its upstream with `McpClient::connect_stdio` or `connect_http` and serve its front with
//! `Server::serve_stdio` or `HttpServer`.
//!
//! What it shows:
//!
//! * a tool's result is the one `CallToolResult` type on both sides, so the upstream's
//!   answer is served as it came (`_meta` and every block kept);
//! * `ServerResource::from_listing` and `ServerPrompt::from_listing` serve another server's
//!   listings, every field kept, under names of the proxy's choosing;
//! * `RequestContext::connection_state` keeps a quota per front connection;
//! * `Server::set_unknown_tool` answers a call of a tool that is not (or no longer) served.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use toolwire::harness::{LocalTool, ToolFailure};
use toolwire::server::{
    content, CallToolResult, HandlerError, PeerTransport, PromptResult, RequestContext, Server,
    ServerConfig, ServerConnection, ServerPrompt, ServerResource,
};
use toolwire::transport::MemoryTransport;
use toolwire::{McpClient, McpConfig, ProtocolMode};

/// The calls one front connection may make through the proxy.
const CALLS_PER_CONNECTION: u32 = 2;
/// The prefix of every name the proxy serves for its upstream.
const PREFIX: &str = "up.";

/// The calls a front connection has made (kept in its `ConnectionState`).
#[derive(Default)]
struct CallsMade(AtomicU32);

fn main() -> toolwire::Result<()> {
    let (upstream, _upstream_connection) = start_upstream()?;
    let proxy = Server::new(ServerConfig::new("proxy", "1.0"))?;
    serve_upstream(&proxy, &upstream)?;

    let (client_end, server_end) = MemoryTransport::pair();
    let connection = proxy.connect(PeerTransport::new(server_end))?;
    let client = McpClient::connect(client_end, McpConfig::default().mode(ProtocolMode::Legacy))?;

    let names: Vec<String> = client
        .list_tools()?
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    assert_eq!(names, ["up.add", "up.report"], "{names:?}");
    println!("tools served: {}", names.join(", "));

    let sum = client.call_tool("up.add", json!({"a": 2, "b": 3}))?;
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    println!(
        "up.add 2 3 = {}",
        sum.structured_content.unwrap_or_default()["sum"]
    );

    // The upstream's result comes through as it was sent: its `_meta` too.
    let report = client.call_tool("up.report", json!({}))?;
    assert_eq!(
        report.meta().map(|meta| &meta["source"]),
        Some(&json!("upstream"))
    );
    println!("up.report: {}", report.text());

    let unknown = client.call_tool("add", json!({}))?;
    assert!(unknown.is_error);
    assert!(
        unknown.text().contains("did you mean \"up.add\""),
        "{}",
        unknown.text()
    );
    println!("add: {}", unknown.text());

    // Two calls were made on this connection: a third is over its quota.
    let refused = client.call_tool("up.add", json!({"a": 1, "b": 1}))?;
    assert!(refused.is_error);
    assert!(refused.text().contains("quota"), "{}", refused.text());
    println!("a third call: {}", refused.text());

    let resources = client.list_resources()?;
    assert_eq!(resources.len(), 1);
    assert_eq!(resources[0].uri, "note://readme");
    // Listed as the upstream listed it, its fields beyond the typed ones kept.
    assert_eq!(resources[0].raw["annotations"], json!({"priority": 1}));
    let contents = client.read_resource("note://readme")?;
    assert_eq!(contents[0].text.as_deref(), Some("read me"));
    println!(
        "note://readme: {}",
        contents[0].text.as_deref().unwrap_or("")
    );

    let prompts = client.list_prompts()?;
    assert_eq!(prompts[0].name, "up.greet");
    assert!(prompts[0].arguments[0].required);
    let greeting = client.get_prompt("up.greet", json!({"name": "Ada"}))?;
    assert_eq!(greeting.messages[0].content.as_text(), Some("Hello, Ada!"));
    println!(
        "up.greet Ada: {}",
        greeting.messages[0].content.as_text().unwrap_or("")
    );

    client.close()?;
    connection.wait();
    println!("proxy example: all checks passed");
    Ok(())
}

/// The upstream server, in this process, and a client of it.
fn start_upstream() -> toolwire::Result<(Arc<McpClient>, ServerConnection)> {
    let server = Server::new(ServerConfig::new("upstream", "1.0"))?;
    server.add_tool(
        LocalTool::with_context(
            "add",
            "Adds two integers.",
            json!({"type": "object", "required": ["a", "b"],
                   "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
            |_context, args| {
                let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                Ok(CallToolResult::structured(json!({ "sum": sum })))
            },
        )
        .output_schema(json!({"type": "object", "properties": {"sum": {"type": "integer"}}})),
    )?;
    server.add_tool(LocalTool::with_context(
        "report",
        "Says where it came from.",
        json!({"type": "object"}),
        |_context, _args| {
            Ok(CallToolResult::from_text("all quiet").with_meta("source", json!("upstream")))
        },
    ))?;
    let mut readme =
        toolwire::mcp::Resource::new("note://readme", "readme").mime_type("text/plain");
    readme.raw = json!({"annotations": {"priority": 1}});
    server.add_resource(ServerResource::from_listing(readme, |_context, uri| {
        Ok(vec![content::text_contents(
            uri,
            Some("text/plain"),
            "read me",
        )])
    }))?;
    server.add_prompt(
        ServerPrompt::new("greet", "Greets someone.", |_context, args| {
            let name = args.get("name").and_then(Value::as_str).unwrap_or("you");
            Ok(PromptResult::new().user_text(format!("Hello, {name}!")))
        })
        .argument("name", "Who to greet.", true),
    )?;
    let (client_end, server_end) = MemoryTransport::pair();
    let connection = server.connect(PeerTransport::new(server_end))?;
    let client = McpClient::connect(client_end, McpConfig::default().mode(ProtocolMode::Legacy))?;
    Ok((Arc::new(client), connection))
}

/// Serves the upstream's tools, resources and prompts on `proxy`.
fn serve_upstream(proxy: &Server, upstream: &Arc<McpClient>) -> toolwire::Result<()> {
    let mut served = Vec::new();
    for tool in upstream.list_tools()?.iter() {
        let front = format!("{PREFIX}{}", tool.name);
        let remote = tool.name.clone();
        let client = Arc::clone(upstream);
        let mut listed = LocalTool::with_context(
            front.clone(),
            tool.description.clone().unwrap_or_default(),
            tool.input_schema()?,
            move |context, args| {
                // What only a server has (the connection's state) is behind the context.
                let Some(context) = RequestContext::of(context) else {
                    return Err(ToolFailure::safe("this tool is only served"));
                };
                let calls = context.connection_state().get::<CallsMade>();
                if calls.0.fetch_add(1, Ordering::SeqCst) >= CALLS_PER_CONNECTION {
                    return Ok(CallToolResult::error(format!(
                        "this connection's quota of {CALLS_PER_CONNECTION} calls is used up"
                    )));
                }
                // The upstream's answer is the very type this handler returns.
                // (an upstream error is passed on as the upstream sent it).
                client
                    .call_tool(&remote, args)
                    .map_err(|error| HandlerError::from(error).into_failure())
            },
        )
        // The upstream checks its own arguments and results against its own schemas.
        .check_schemas(false)
        .annotations(tool.annotations);
        if let Some(schema) = tool.output_schema()? {
            listed = listed.output_schema(schema);
        }
        proxy.add_tool(listed)?;
        served.push(front);
    }
    proxy.set_unknown_tool(move |name| {
        match served
            .iter()
            .find(|front| front.ends_with(&format!(".{name}")))
        {
            Some(front) => format!("Unknown tool: {name:?}; did you mean {front:?}?"),
            None => format!("Unknown tool: {name:?}"),
        }
    });
    for resource in upstream.list_resources()? {
        let client = Arc::clone(upstream);
        proxy.add_resource(ServerResource::from_listing(
            resource,
            move |_context, uri| {
                let contents = client.read_resource(uri)?;
                Ok(contents.into_iter().map(|item| item.raw).collect())
            },
        ))?;
    }
    for mut prompt in upstream.list_prompts()? {
        let client = Arc::clone(upstream);
        let remote = prompt.name.clone();
        prompt.name = format!("{PREFIX}{remote}");
        proxy.add_prompt(
            ServerPrompt::from_listing(prompt, move |_context, args| {
                let got = client.get_prompt(&remote, Value::Object(args.clone()))?;
                let messages = got.raw.get("messages").and_then(Value::as_array).cloned();
                Ok(PromptResult::from_messages(
                    got.description,
                    messages.unwrap_or_default(),
                ))
            })
            // The upstream answers for its own prompt's arguments.
            .check_arguments(false),
        )?;
    }
    Ok(())
}
