//! toolwire's server against a client nobody here wrote: the official Python SDK's (PyPI `mcp`
//! 2.3.0, driven by tests/peers/py_client.py), over stdio and Streamable HTTP, in both protocol
//! eras: tools with schemas and structured results, a tool error with the repair message,
//! progress, a sampling round trip (a request back to the client, or a 2026-07-28 input
//! round), and a cancellation the server's handler sees. Runs when TOOLWIRE_PEERS=1 or
//! TOOLWIRE_PEERS_DIR is set (see tests/peers/install.sh); ignored otherwise.

use crate::support::mcp;
use crate::support::server as support;

use std::path::Path;
use std::process::{Command, Stdio};

use support::{example, HttpExample};

/// Runs the Python client; its whole output, after checking it passed.
fn py_client(python: &Path, args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_client.py");
    let output = Command::new(python)
        .arg(script)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success() && stdout.contains("PYCLIENT PASSED"),
        "the Python client failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    stdout
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_python_sdk_client_over_stdio_in_both_eras() {
    let peers = mcp::peers("the_python_sdk_client_over_stdio_in_both_eras");
    let python = peers.path("TOOLWIRE_PYTHON");
    let server = example("http_server");
    let server = server.to_str().expect("a UTF-8 path");
    let legacy = py_client(&python, &["legacy", server, "--stdio"]);
    assert!(legacy.contains("protocol 2025-11-25"), "{legacy}");
    assert!(
        legacy.contains("ok: sampling request reached the client"),
        "{legacy}"
    );
    let modern = py_client(&python, &["auto", server, "--stdio"]);
    assert!(modern.contains("protocol 2026-07-28"), "{modern}");
    assert!(
        modern.contains("ok: sampling request reached the client"),
        "{modern}"
    );
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_python_sdk_client_over_http_in_both_eras_and_its_cancellation_reaches_the_handler() {
    let peers = mcp::peers("the_python_sdk_client_over_http_in_both_eras");
    let python = peers.path("TOOLWIRE_PYTHON");
    let mut server = HttpExample::start("http_server", &[]);
    let url = server.url.clone();
    let legacy = py_client(&python, &["legacy", &url]);
    assert!(legacy.contains("protocol 2025-11-25"), "{legacy}");
    // notifications/cancelled on the session: the handler saw it and stopped.
    server.expect_stderr("count cancelled at step");
    let modern = py_client(&python, &["auto", &url]);
    assert!(modern.contains("protocol 2026-07-28"), "{modern}");
    assert_eq!(server.stop(), Some(0));
}
