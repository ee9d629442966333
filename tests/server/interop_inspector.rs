//! toolwire's server against the MCP Inspector's command line (`@modelcontextprotocol/inspector`
//! 2.12.0, a client nobody here wrote): tools, resources and prompts, over stdio and
//! Streamable HTTP, and on HTTP also with the Inspector probing the 2026-07-28 protocol first.
//! Runs when TOOLWIRE_PEERS=1 or TOOLWIRE_PEERS_DIR is set (see tests/peers/install.sh); ignored otherwise.

use crate::support::mcp;
use crate::support::server as support;

use std::process::{Command, Stdio};

use serde_json::Value;
use support::{example, HttpExample};

/// Runs the Inspector's CLI with `args`; its JSON answer.
fn inspector(peers: &mcp::Peers, args: &[&str]) -> Value {
    let node = peers.path("TOOLWIRE_NODE22");
    let script = peers.path("TOOLWIRE_INSPECTOR_JS");
    let output = Command::new(node)
        .arg(script)
        .args(["--cli", "--format", "json"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run the Inspector");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "the Inspector failed ({}) on {args:?}:\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

fn exercise(peers: &mcp::Peers, target: &[&str]) {
    let with = |extra: &[&str]| -> Vec<String> {
        target.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let run = |extra: &[&str]| {
        let args = with(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        inspector(peers, &args)
    };
    let tools = run(&["--method", "tools/list"]);
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(
        names.contains(&"echo") && names.contains(&"count"),
        "{tools}"
    );
    let add = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "add")
        .expect("add");
    assert_eq!(add["outputSchema"]["required"][0], "sum", "{add}");
    assert_eq!(add["annotations"]["idempotentHint"], true, "{add}");
    let echoed = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "message=hi",
    ]);
    assert_eq!(echoed["result"]["content"][0]["text"], "hi", "{echoed}");
    let added = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "add",
        "--tool-args-json",
        r#"{"a":2,"b":3}"#,
    ]);
    assert_eq!(added["result"]["structuredContent"]["sum"], 5.0, "{added}");
    let resources = run(&["--method", "resources/list"]);
    assert_eq!(
        resources["result"]["resources"][0]["uri"], "memo://readme",
        "{resources}"
    );
    let read = run(&["--method", "resources/read", "--uri", "memo://readme"]);
    assert_eq!(
        read["result"]["contents"][0]["text"], "Served by toolwire.",
        "{read}"
    );
    let prompts = run(&["--method", "prompts/list"]);
    assert_eq!(
        prompts["result"]["prompts"][0]["name"], "greeting",
        "{prompts}"
    );
    let prompt = run(&[
        "--method",
        "prompts/get",
        "--prompt-name",
        "greeting",
        "--prompt-args",
        "name=Ann",
    ]);
    assert_eq!(
        prompt["result"]["messages"][0]["content"]["text"], "Say hello to Ann.",
        "{prompt}"
    );
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_inspector_cli_over_stdio() {
    let peers = mcp::peers("the_inspector_cli_over_stdio");
    let server = example("http_server");
    exercise(&peers, &[server.to_str().unwrap(), "--stdio"]);
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_inspector_cli_over_http_in_both_eras() {
    let peers = mcp::peers("the_inspector_cli_over_http_in_both_eras");
    let server = HttpExample::start("http_server", &[]);
    exercise(&peers, &[&server.url]);
    exercise(&peers, &[&server.url, "--protocol-era", "auto"]);
    assert_eq!(server.stop(), Some(0));
}
