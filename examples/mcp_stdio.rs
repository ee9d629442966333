//! An MCP client against the bundled tool server, over stdio.
//!
//! ```text
//! cargo run --example mcp_stdio
//! ```
//!
//! Connects in Auto mode (the probe with `server/discover` is refused by this handshake-era
//! server, so the client falls back to `initialize`), lists the tools, calls a few, follows a
//! long call's progress, shows a tool error, and closes.

use std::path::PathBuf;
use std::process::Command;

use serde_json::json;
use toolwire::mcp::Era;
use toolwire::{CallOptions, McpClient, McpConfig, StdioConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client =
        McpClient::connect_stdio(StdioConfig::new(tool_server_path()?), McpConfig::default())?;
    let info = client.session_info()?;
    println!(
        "Connected to {} {} using protocol {} ({}).",
        info.server.name, info.server.version, info.protocol_version, info.era
    );
    assert_eq!(info.era, Era::Handshake);

    let tools = client.list_tools()?;
    println!("{} tools:", tools.len());
    for tool in tools.iter() {
        println!(
            "  {:<13} {}",
            tool.name,
            tool.description.as_deref().unwrap_or("")
        );
    }

    let echoed = client.call_tool_with("echo", json!({"message": "hello"}), CallOptions::new())?;
    println!("echo → {}", echoed.text());
    assert_eq!(echoed.text(), "hello");

    let sum = client.call_tool_with("add", json!({"a": 2, "b": 40}), CallOptions::new())?;
    println!(
        "add → {} (structured {}, checked against the tool's outputSchema)",
        sum.text(),
        sum.structured_content.clone().unwrap_or_default()
    );

    let slept = client.call_tool_with(
        "sleep",
        json!({"ms": 300, "progress": 3}),
        CallOptions::new().on_progress(|progress| {
            println!(
                "  progress {}/{}",
                progress.progress,
                progress.total.unwrap_or(0.0)
            );
        }),
    )?;
    println!("sleep → {}", slept.text());

    let failed = client.call_tool_with(
        "fail",
        json!({"message": "out of coffee"}),
        CallOptions::new(),
    )?;
    assert!(failed.is_error);
    println!(
        "fail → a tool error (isError), not a transport failure: {}",
        failed.text()
    );

    client.close()?;
    println!("Closed.");
    Ok(())
}

fn tool_server_path() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let path = exe
        .parent()
        .ok_or("no parent directory")?
        .join("tool_server");
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        if !Command::new(cargo)
            .args(["build", "--quiet", "--example", "tool_server"])
            .status()?
            .success()
        {
            return Err("building tool_server failed".into());
        }
    }
    Ok(path)
}
