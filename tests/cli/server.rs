//! The `toolwire` command against toolwire's own server (examples/http_server.rs), over stdio
//! and Streamable HTTP, in both protocol eras: the listing, calls, the repair message of a
//! call the server refuses, progress on stderr, and a timeout the server's handler sees as a
//! cancellation.
#![cfg(feature = "cli")]

use crate::support::cli;
use crate::support::server as support;

use cli::{assert_in_order, run_args, Run};
use support::{example, HttpExample};

fn stdio(args: &[&str]) -> Run {
    let server = example("http_server");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", server.to_str().unwrap(), "--stdio"]);
    run_args(&all)
}

#[test]
fn the_command_over_stdio() {
    let run = stdio(&["tools"]).expect(0);
    assert_in_order(
        &run.stdout,
        &[
            "add",
            "a: number, b: number",
            "echo",
            "wait",
            "count",
            "summarize",
            "5 tools",
        ],
    );
    let run = stdio(&["call", "add", "a=2", "b=3", "--json"]).expect(0);
    let result: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(result["structuredContent"]["sum"], 5.0);
    let run = stdio(&["call", "count", "steps=3", "ms=10"]).expect(0);
    assert_eq!(run.stdout, "counted 3\n");
    assert_in_order(&run.stderr, &["progress 1/3", "progress 3/3"]);
    for protocol in ["legacy", "modern"] {
        let run = stdio(&["info", "--protocol", protocol]).expect(0);
        assert_in_order(&run.stdout, &["toolwire-http-server 0.1.0"]);
    }
}

#[test]
fn the_command_over_http_and_a_timeout_the_handler_sees() {
    let mut server = HttpExample::start("http_server", &[]);
    let url = server.url.clone();
    let run = run_args(&["--url", &url, "info"]).expect(0);
    assert_in_order(
        &run.stdout,
        &["toolwire-http-server", "2026-07-28", "stateless"],
    );
    let run = run_args(&["--url", &url, "--protocol", "legacy", "info"]).expect(0);
    assert_in_order(&run.stdout, &["2025-11-25", "handshake"]);
    let run = run_args(&["--url", &url, "call", "echo", "message=over http"]).expect(0);
    assert_eq!(run.stdout, "over http\n");
    // The deadline passes: the client closes the request's stream, which is the cancellation.
    let run = run_args(&[
        "--url",
        &url,
        "--timeout",
        "300ms",
        "call",
        "wait",
        "ms=60000",
    ])
    .expect(3);
    assert!(run.stderr.contains("timed out"), "{}", run.stderr);
    server.expect_stderr("wait cancelled");
    assert_eq!(server.stop(), Some(0));
}
