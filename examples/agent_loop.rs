//! An MCP server's tools offered to a model, the model's tool calls run through the harness,
//! and the answers sent back: the README's complete program, run by `tests/examples/agent_loop.rs`.
//!
//! ```text
//! cargo build --example tool_server && cargo run --example agent_loop
//! ```
//!
//! The model is played by `model()` below, which answers the request the way the Chat
//! Completions API does; everything else is what a real agent loop does.

// readme:begin
use serde_json::{json, Value};
use toolwire::{
    CallShape, Harness, HarnessConfig, McpClient, McpConfig, McpImport, Status, StdioConfig,
    ToolRegistry,
};

fn main() -> Result<(), toolwire::Error> {
    // Any stdio MCP server; here the bundled one (`cargo build --example tool_server`).
    let server = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/debug/examples/tool_server".into());
    let client = McpClient::connect_stdio(StdioConfig::new(server), McpConfig::default())?;

    // 1. The server's tools become the allowlist: these two, named `mcp__demo__{tool}`.
    let mut registry = ToolRegistry::new();
    registry.import_mcp(&client, &McpImport::new("demo").allow(["add", "echo"]))?;
    let harness = Harness::new(registry, HarnessConfig::default())?;

    // 2. They are offered to the model as the `tools` of a Chat Completions request.
    let mut messages = vec![json!({"role": "user", "content": "What is 2 + 40?"})];
    let request = json!({
        "model": "any-model",
        "messages": messages,
        "tools": harness.registry().openai_tools(),
    });
    let response = model(&request); // your HTTP call to the model's API goes here
    let assistant = response["choices"][0]["message"].clone();
    messages.push(assistant.clone());

    // 3. Each tool call, as the model wrote it: name, strict JSON and the input schema are
    //    checked, the tool runs on the MCP server within its bound, and the answer comes back
    //    in the model's own shape, a `role: tool` message.
    let mut statuses = Vec::new();
    for call in assistant["tool_calls"].as_array().into_iter().flatten() {
        let reply = harness.handle(CallShape::OpenAi, &call.to_string());
        println!("{} {}", reply.outcome.status, reply.message());
        statuses.push(reply.outcome.status);
        messages.push(reply.message());
    }
    assert_eq!(statuses, [Status::Ok, Status::Invalid]);

    // 4. `messages` goes back to the model for its next turn.
    println!("{} messages for the next turn", messages.len());
    harness.close();
    client.close()?;
    Ok(())
}
// readme:end

/// Stands in for the model's API: it picks the offered `add` tool and calls it twice, once
/// well and once with an argument that breaks the tool's input schema.
fn model(request: &Value) -> Value {
    let tools = request["tools"].as_array().expect("tools");
    let add = tools
        .iter()
        .find(|tool| tool["function"]["name"] == "mcp__demo__add")
        .expect("the add tool is offered");
    assert!(add["function"]["parameters"]["properties"]["a"].is_object());
    json!({"choices": [{"message": {
        "role": "assistant",
        "content": null,
        "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "mcp__demo__add", "arguments": "{\"a\": 2, \"b\": 40}"}},
            {"id": "call_2", "type": "function",
             "function": {"name": "mcp__demo__add", "arguments": "{\"a\": 2, \"b\": \"forty\"}"}}
        ]
    }}]})
}
