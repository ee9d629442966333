//! The `toolwire` command against the interop peers: server-everything over stdio and our
//! Python SDK server over HTTP on 127.0.0.1.
//!
//! The tests that need the peers are `#[ignore]`d (a plain `cargo test` lists them as
//! ignored); `TOOLWIRE_PEERS_DIR=DIR cargo test --features cli --tests -- --ignored` runs them
//! after `bash tests/peers/install.sh DIR`, and run that way without the peers they fail.
#![cfg(feature = "cli")]

use crate::support::cli;
use crate::support::mcp as support;

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cli::{
    assert_in_order, read_until, run_args, scratch, sent, sigint, spawn_with_stderr_lines,
    toolwire, transcript, wait_bounded, Run, LIMIT,
};
use serde_json::Value;
use support::{peers, Peers};

/// `toolwire ARGS -- node server-everything stdio`.
fn everything(peers: &Peers, args: &[&str]) -> Run {
    let node = peers.path("TOOLWIRE_NODE");
    let script = peers.path("TOOLWIRE_EVERYTHING_JS");
    let mut all: Vec<&str> = args.to_vec();
    all.extend([
        "--",
        node.to_str().unwrap(),
        script.to_str().unwrap(),
        "stdio",
    ]);
    run_args(&all)
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn everything_tools_and_calls() {
    let peers = peers("everything_tools_and_calls");
    let run = everything(&peers, &["tools"]).expect(0);
    // The client declares roots, sampling and elicitation, so the server shows the three
    // tools that use them too.
    assert!(
        run.stdout.lines().last() == Some("16 tools"),
        "{}",
        run.stdout
    );
    for name in [
        "get-roots-list",
        "trigger-sampling-request",
        "trigger-elicitation-request",
    ] {
        assert!(run.stdout.contains(name), "{name}: {}", run.stdout);
    }
    let sum = run
        .stdout
        .lines()
        .find(|line| line.starts_with("get-sum "))
        .expect("get-sum");
    assert!(sum.contains("a: number, b: number"), "{sum}");

    let run = everything(&peers, &["info", "--protocol", "legacy"]).expect(0);
    assert_in_order(
        &run.stdout,
        &["mcp-servers/everything", "2025-11-25", "handshake"],
    );

    let run = everything(&peers, &["call", "get-sum", "a=2", "b=3"]).expect(0);
    assert_eq!(run.stdout, "The sum of 2 and 3 is 5.\n");

    // Content printed readably: an image as a summary line, resource links as uri lines.
    let run = everything(&peers, &["call", "get-tiny-image"]).expect(0);
    assert!(run.stdout.contains("[image image/png, "), "{}", run.stdout);
    let run = everything(&peers, &["call", "get-resource-links", "count=2"]).expect(0);
    assert_eq!(
        run.stdout.matches("[resource link] demo://").count(),
        2,
        "{}",
        run.stdout
    );
    let run = everything(
        &peers,
        &[
            "call",
            "get-resource-reference",
            "resourceType=Text",
            "resourceId=1",
        ],
    )
    .expect(0);
    assert!(run.stdout.contains("[resource] demo://"), "{}", run.stdout);

    // Structured content is checked against the output schema, and shown whole with --json.
    let run = everything(
        &peers,
        &[
            "call",
            "get-structured-content",
            "location=Chicago",
            "--json",
        ],
    )
    .expect(0);
    let result: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(result["structuredContent"]["temperature"].is_number());

    // The error names the field and gives the signature.
    let run = everything(&peers, &["call", "get-sum", "a=2", "b=x"]).expect(2);
    assert!(
        run.stderr.contains("`b`: \"x\" is not of type")
            && run.stderr.contains("usage: toolwire call"),
        "{}",
        run.stderr
    );
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn everything_progress_lines_is_error_and_timeout() {
    let peers = peers("everything_progress_lines_is_error_and_timeout");
    let run = everything(
        &peers,
        &[
            "call",
            "trigger-long-running-operation",
            "duration=1",
            "steps=4",
        ],
    )
    .expect(0);
    assert!(run.stdout.contains("Long running operation completed"));
    assert_in_order(
        &run.stderr,
        &[
            "calling trigger-long-running-operation",
            "progress 1/4",
            "progress 2/4",
            "progress 3/4",
            "progress 4/4",
        ],
    );

    // A fetch from a closed port on 127.0.0.1 fails inside the tool: isError.
    let dir = scratch("everything");
    let url = cli::closed_port_url();
    let run = everything(
        &peers,
        &["call", "gzip-file-as-resource", &format!("data={url}")],
    )
    .expect(1);
    assert!(!run.stdout.trim().is_empty(), "the tool's error text");

    // A ten-minute operation: a run that waited for it instead of its 300 ms timeout would
    // outlast the run's hang guard (LIMIT).
    let file = dir.join("t.jsonl");
    let run = everything(
        &peers,
        &[
            "call",
            "trigger-long-running-operation",
            "duration=600",
            "steps=1",
            "--timeout",
            "300ms",
            "--transcript",
            file.to_str().unwrap(),
        ],
    )
    .expect(3);
    assert!(run.stderr.contains("timed out after"), "{}", run.stderr);
    let lines = transcript(&file);
    assert_eq!(sent(&lines, "notifications/cancelled").len(), 1);
}

/// Our Python SDK server on a free port of 127.0.0.1, killed on drop.
struct PyServer {
    child: Child,
    url: String,
    /// Where its stderr goes.
    log: std::path::PathBuf,
}

impl PyServer {
    fn start(peers: &Peers) -> PyServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let log = scratch("py-server").join("stderr.log");
        let child = Command::new(peers.path("TOOLWIRE_PYTHON"))
            .arg(peers.py_server())
            .args(["http", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start py_server.py");
        let server = PyServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            log,
        };
        // The server is another process: watch for its port to open (bounded).
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "py_server.py did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn run(&self, args: &[&str]) -> Run {
        let mut all = vec!["--url", self.url.as_str()];
        all.extend_from_slice(args);
        run_args(&all)
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn python_server_over_http() {
    let peers = peers("python_server_over_http");
    let server = PyServer::start(&peers);

    let run = server.run(&["tools"]).expect(0);
    assert!(
        run.stdout.lines().last() == Some("8 tools"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("slow "), "{}", run.stdout);

    let run = server.run(&["info", "--json"]).expect(0);
    let info: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(info["server"]["name"], "toolwire-py-peer");
    let run = server
        .run(&["info", "--json", "--protocol", "legacy"])
        .expect(0);
    let info: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(info["era"], "handshake");

    server.run(&["ping"]).expect(0);

    let run = server.run(&["call", "echo", "message=hi"]).expect(0);
    assert_eq!(run.stdout, "echo: hi\n");
    let run = server
        .run(&["call", "measure", "values=[1, 2, 3]", "--json"])
        .expect(0);
    let result: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(result["structuredContent"]["count"], 3);

    // Progress lines off a terminal, in both eras.
    for protocol in ["auto", "legacy"] {
        let run = server
            .run(&["call", "slow", "seconds=0.5", "--protocol", protocol])
            .expect(0);
        assert_eq!(run.stdout, "slept 0.5s\n");
        assert_in_order(
            &run.stderr,
            &[
                "calling slow",
                "progress 1/10 step 1 of 10",
                "progress 10/10 step 10 of 10",
            ],
        );
    }

    let run = server
        .run(&["call", "refuse", "reason=not today"])
        .expect(1);
    assert!(run.stdout.contains("not today"), "{}", run.stdout);

    // Ten minutes of sleep: a run that waited for it instead of its 300 ms timeout would
    // outlast the run's hang guard (LIMIT).
    let run = server
        .run(&["call", "slow", "seconds=600", "--timeout", "300ms"])
        .expect(3);
    assert!(run.stderr.contains("timed out after"), "{}", run.stderr);

    let run = server.run(&["call", "add", "a=1", "b=x"]).expect(2);
    assert!(
        run.stderr.contains("`b`: \"x\" is not of type")
            && run.stderr.contains("usage: toolwire call"),
        "{}",
        run.stderr
    );
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn python_server_ctrl_c_cancels_the_call_in_both_eras() {
    let peers = peers("python_server_ctrl_c_cancels_the_call_in_both_eras");
    let server = PyServer::start(&peers);
    let cancelled = || {
        std::fs::read_to_string(&server.log)
            .unwrap_or_default()
            .matches("slow: cancelled")
            .count()
    };
    for (round, protocol) in ["auto", "legacy"].into_iter().enumerate() {
        let command = toolwire(&[
            "--url",
            &server.url,
            "--protocol",
            protocol,
            "call",
            "slow",
            "seconds=30",
        ]);
        let (mut child, lines) = spawn_with_stderr_lines(command);
        read_until(&lines, |line| line.starts_with("progress 1/10"));
        sigint(child.id());
        assert_eq!(wait_bounded(&mut child, LIMIT), 130, "{protocol}");
        // The server is another process: watch its log for the cancellation (bounded).
        let deadline = Instant::now() + Duration::from_secs(10);
        while cancelled() < round + 1 {
            assert!(
                Instant::now() < deadline,
                "{protocol}: the server never saw the cancellation: {}",
                std::fs::read_to_string(&server.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn everything_task_status_while_waiting_and_the_task_id_in_json() {
    let peers = peers("everything_task_status_while_waiting_and_the_task_id_in_json");
    // A tool that requires a task: its status is shown while the command waits.
    let run = everything(
        &peers,
        &["call", "simulate-research-query", "topic=tasks", "--json"],
    )
    .expect(0);
    let result: Value = serde_json::from_str(&run.stdout).expect("JSON on stdout");
    let task_id = result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
        .as_str()
        .expect("the task id in --json");
    assert!(
        run.stderr
            .contains(&format!("task {task_id} working: Gathering sources")),
        "{}",
        run.stderr
    );
    assert!(result["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Research Report: tasks"));
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn everything_in_sse_mode_from_a_config_entry_of_type_sse() {
    let peers = peers("everything_in_sse_mode_from_a_config_entry_of_type_sse");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let dir = scratch("everything-sse");
    let preload = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/loopback.cjs");
    let mut child = Command::new(peers.path("TOOLWIRE_NODE"))
        .arg("--require")
        .arg(preload)
        .arg(peers.path("TOOLWIRE_EVERYTHING_JS"))
        .arg("sse")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
        .spawn()
        .expect("start server-everything");
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let config = dir.join(".mcp.json");
    std::fs::write(
        &config,
        format!(r#"{{"mcpServers": {{"old": {{"type": "sse", "url": "http://127.0.0.1:{port}/sse"}}}}}}"#),
    )
    .unwrap();
    let config = config.to_str().unwrap().to_owned();
    let servers = run_args(&["servers", "--config", &config]).expect(0);
    assert!(servers.stdout.contains("sse"), "{}", servers.stdout);
    let tools = run_args(&["tools", "--config", &config]).expect(0);
    assert!(tools.stdout.contains("echo"), "{}", tools.stdout);
    assert!(
        tools.stdout.lines().last().unwrap_or("").ends_with("tools"),
        "{}",
        tools.stdout
    );
    let call = run_args(&["call", "echo", "message=over sse", "--config", &config]).expect(0);
    assert_eq!(call.stdout, "Echo: over sse\n");
    let _ = child.kill();
    let _ = child.wait();
}
