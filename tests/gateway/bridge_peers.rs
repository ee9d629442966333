//! Bridging with a backend nobody here wrote: the official Python SDK server's eliciting,
//! sampling and roots tools, written with its handshake-era API
//! (tests/peers/py_bridge_server.py), behind `toolwire serve` (which reaches it with
//! `--protocol legacy`: on 2026-07-28 the SDK's server has no back-channel for those
//! requests), called by 2026-07-28 hosts: toolwire's own command with `--protocol modern`,
//! and the Python SDK's `Client` in auto mode (tests/peers/py_bridge_client.py). Each request
//! becomes an input round the host answers, and the call completes with the answers. Runs
//! when TOOLWIRE_PEERS=1 or TOOLWIRE_PEERS_DIR is set (see tests/peers/install.sh); ignored
//! otherwise.
#![cfg(feature = "cli")]

use crate::support::cli;
use crate::support::mcp;

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use super::interop::{serve_http_with, stats_over_http};

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn a_python_sdk_servers_requests_reach_modern_hosts_as_input_rounds() {
    let peers = mcp::peers("a_python_sdk_servers_requests_reach_modern_hosts_as_input_rounds");
    let python = peers.path("TOOLWIRE_PYTHON");
    let folder = cli::scratch("gateway-bridge-py");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_bridge_server.py");
    let config = folder.join("servers.json");
    let entries = json!({"mcpServers": {"asker": {"command": python, "args": [script]}}});
    std::fs::write(&config, entries.to_string()).unwrap();
    let (_serve, _lines, url) = serve_http_with(&config, &["--protocol", "legacy"]);

    // toolwire's own command on 2026-07-28: elicitation with the defaults, sampling by a
    // command, roots from --root.
    let root = folder.canonicalize().unwrap();
    let root_uri = format!("file://{}", root.display());
    for (tool, expected) in [
        ("ask", "hello, nobody".to_owned()),
        ("summarize", "model said: a summary from the cli".to_owned()),
        ("where", format!("roots: {root_uri}")),
        ("both", "nobody / a summary from the cli".to_owned()),
    ] {
        let name = format!("mcp__asker__{tool}");
        let run = cli::run_args(&[
            "--protocol",
            "modern",
            "--elicit",
            "accept-defaults",
            "--sampling-command",
            "echo a summary from the cli",
            "--root",
            root.to_str().unwrap(),
            "call",
            &name,
            "--url",
            &url,
        ])
        .expect(0);
        assert_eq!(run.stdout.trim(), expected, "{tool}: {}", run.stderr);
    }

    // The Python SDK's host in auto mode (it speaks 2026-07-28 to the gateway).
    let host = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_bridge_client.py");
    let output = Command::new(&python)
        .arg(host)
        .arg(&url)
        .stdin(Stdio::null())
        .output()
        .expect("run the Python host");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("PYBRIDGE PASSED"),
        "the Python host failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("protocol 2026-07-28"), "{stdout}");

    // Eight calls completed, none held any more.
    let stats = stats_over_http(&url);
    assert_eq!(stats["held_rounds"], json!(0), "{stats}");
    assert_eq!(
        stats["backends"]["asker"]["statuses"]["OK"],
        json!(8),
        "{stats}"
    );
}
