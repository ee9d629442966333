//! Connects to a stdio MCP server, lists its tools, calls `add`: the program whose build
//! bench/weight/run.sh weighs, beside the same program on rmcp.

use serde_json::json;
use toolwire::{McpClient, McpConfig, StdioConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = std::env::args()
        .nth(1)
        .ok_or("usage: weight-toolwire SERVER")?;
    let client = McpClient::connect_stdio(StdioConfig::new(server), McpConfig::default())?;
    let tools = client.list_tools()?;
    println!("{} tools", tools.len());
    let result = client.call_tool("add", json!({"a": 2, "b": 40}))?;
    println!("add -> {}", result.text());
    client.close()?;
    Ok(())
}
