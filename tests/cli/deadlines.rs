//! Every deadline is a deadline, from the command line: a Ctrl-C while a POST waits for its
//! response headers is honoured at once (exit 130, the request cancelled), and `--timeout`
//! ends a call against a server that sends its headers slowly, the close included.
#![cfg(feature = "cli")]

use crate::support::cli;
use crate::support::http_fake;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cli::{read_until, sigint, spawn_with_stderr_lines, toolwire, wait_bounded, LIMIT};
use http_fake::{initialize_result, result, FakeServer, Reply, Req};
use serde_json::json;

/// A server that answers the handshake and the tool list, then holds the headers of every
/// `tools/call` until the client closes the connection; it records whether one was abandoned.
fn stalling_server(abandoned: Arc<AtomicBool>) -> FakeServer {
    FakeServer::start(move |req: &Req, reply: &mut Reply<'_>| {
        match (req.method.as_str(), req.rpc().as_str()) {
            ("POST", "initialize") => reply.json(
                200,
                &initialize_result(req, "2025-11-25"),
                &[("Mcp-Session-Id", "s-1")],
            ),
            ("POST", "tools/list") => reply.json(
                200,
                &result(
                    req,
                    json!({"tools": [{"name": "hang", "inputSchema": {"type": "object"}}]}),
                ),
                &[],
            ),
            ("POST", "tools/call") => {
                // Never answer: only the client can end this exchange.
                if reply.client_closed_within(Duration::from_secs(3600)) {
                    abandoned.store(true, Ordering::SeqCst);
                }
            }
            ("POST", _) => reply.accepted(),
            ("GET", _) => reply.send(405, "", &[], ""),
            _ => reply.send(200, "", &[], ""),
        }
    })
}

#[test]
fn ctrl_c_while_a_post_waits_for_its_headers_exits_130_at_once() {
    let abandoned = Arc::new(AtomicBool::new(false));
    let server = stalling_server(Arc::clone(&abandoned));
    // An hour: only the interrupt can end the call before the hang guard.
    let command = toolwire(&["call", "hang", "--timeout", "1h", "--url", &server.url]);
    let (mut child, lines) = spawn_with_stderr_lines(command);
    read_until(&lines, |line| line == "calling hang");
    // The POST is out and waiting: the server has it.
    server.wait_for(LIMIT, |req| req.rpc() == "tools/call");
    sigint(child.id());
    let code = wait_bounded(&mut child, LIMIT);
    let stderr: Vec<String> = lines.iter().collect();
    assert_eq!(code, 130, "{stderr:#?}");
    assert!(
        stderr.iter().any(|line| line.contains("interrupted")),
        "{stderr:#?}"
    );
    // The request was cancelled: its connection was closed under the stalled POST.
    let deadline = std::time::Instant::now() + LIMIT;
    while !abandoned.load(Ordering::SeqCst) {
        assert!(
            std::time::Instant::now() < deadline,
            "the POST was never abandoned"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_timeout_ends_the_call_against_a_server_that_stalls_its_headers() {
    let abandoned = Arc::new(AtomicBool::new(false));
    let server = stalling_server(Arc::clone(&abandoned));
    let command = toolwire(&["call", "hang", "--timeout", "300ms", "--url", &server.url]);
    let (mut child, lines) = spawn_with_stderr_lines(command);
    let code = wait_bounded(&mut child, LIMIT);
    let stderr: Vec<String> = lines.iter().collect();
    assert_eq!(code, 3, "a timeout: {stderr:#?}");
    assert!(
        stderr.iter().any(|line| line.contains("timed out after")),
        "{stderr:#?}"
    );
}
