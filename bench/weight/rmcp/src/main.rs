//! Connects to a stdio MCP server, lists its tools, calls `add`: the same program as
//! bench/weight/toolwire, on rmcp and tokio.

use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use tokio::process::Command;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = std::env::args().nth(1).ok_or("usage: weight-rmcp SERVER")?;
    let client = ().serve(TokioChildProcess::new(Command::new(server))?).await?;
    let tools = client.list_all_tools().await?;
    println!("{} tools", tools.len());
    let arguments = serde_json::json!({"a": 2, "b": 40});
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    let params = CallToolRequestParams::new("add").with_arguments(arguments);
    let result = client.call_tool(params).await?;
    println!("add -> {}", serde_json::to_string(&result.content)?);
    client.cancel().await?;
    Ok(())
}
