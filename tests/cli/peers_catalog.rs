//! The catalog commands, the answers to the server's requests, `doctor` and `shell` against
//! the interop peers: server-everything over stdio and our Python SDK server over stdio.
//! `#[ignore]`d without the peers (see tests/peers/README.md).
#![cfg(feature = "cli")]

use crate::support::cli;
use crate::support::mcp as support;

use std::io::Write;
use std::process::Stdio;

use cli::{assert_in_order, run, run_args, scratch, toolwire, wait_bounded, Run, LIMIT};
use serde_json::{json, Value};
use support::{peers, Peers};

/// The command line of server-everything over stdio.
fn everything_command(peers: &Peers) -> Vec<String> {
    vec![
        peers.path("TOOLWIRE_NODE").display().to_string(),
        peers.path("TOOLWIRE_EVERYTHING_JS").display().to_string(),
        "stdio".into(),
    ]
}

/// The command line of our Python SDK server over stdio.
fn python_command(peers: &Peers) -> Vec<String> {
    vec![
        peers.path("TOOLWIRE_PYTHON").display().to_string(),
        peers.py_server().display().to_string(),
        "stdio".into(),
    ]
}

fn with_server(server: &[String], args: &[&str]) -> Run {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--");
    all.extend(server.iter().map(String::as_str));
    run_args(&all)
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn everything_resources_prompts_completion_and_log_level() {
    let peers = peers("everything_resources_prompts_completion_and_log_level");
    let server = everything_command(&peers);
    let everything = |args: &[&str]| with_server(&server, args);
    let listed = everything(&["resources"]).expect(0);
    assert!(
        listed.stdout.contains("demo://resource/static/document/"),
        "{}",
        listed.stdout
    );
    assert!(
        listed.stdout.trim_end().ends_with("resources"),
        "{}",
        listed.stdout
    );
    let templates = everything(&["templates"]).expect(0);
    assert!(
        templates
            .stdout
            .contains("demo://resource/dynamic/text/{resourceId}"),
        "{}",
        templates.stdout
    );
    let read = everything(&["read", "demo://resource/dynamic/text/3"]).expect(0);
    assert!(read.stdout.starts_with("Resource 3: "), "{}", read.stdout);
    let blob = everything(&["read", "demo://resource/dynamic/blob/3"]).expect(0);
    assert!(blob.stdout.starts_with("[blob "), "{}", blob.stdout);

    let prompts = everything(&["prompts"]).expect(0);
    assert_in_order(&prompts.stdout, &["args-prompt", "city, state?"]);
    let prompt = everything(&["prompt", "args-prompt", "city=Paris"]).expect(0);
    assert_in_order(&prompt.stdout, &["[user]", "Paris"]);
    let missing = everything(&["prompt", "args-prompt"]).expect(2);
    assert!(
        missing.stderr.contains("needs `city`"),
        "{}",
        missing.stderr
    );
    let completed = everything(&[
        "complete",
        "--prompt",
        "completable-prompt",
        "department",
        "E",
    ])
    .expect(0);
    assert!(
        completed.stdout.contains("Engineering"),
        "{}",
        completed.stdout
    );
    let completed = everything(&[
        "complete",
        "--template",
        "demo://resource/dynamic/text/{resourceId}",
        "resourceId",
        "1",
    ])
    .expect(0);
    assert!(!completed.stdout.is_empty(), "{}", completed.stdout);
    let level = everything(&["log-level", "error"]).expect(0);
    assert!(
        level.stdout.contains("at error and above"),
        "{}",
        level.stdout
    );
    let tool = everything(&["tools", "get-sum"]).expect(0);
    assert_in_order(
        &tool.stdout,
        &[
            "name:         get-sum",
            "usage: toolwire call get-sum a=<number> b=<number>",
            "input schema:",
        ],
    );
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn everything_roots_sampling_and_elicitation() {
    let peers = peers("everything_roots_sampling_and_elicitation");
    let server = everything_command(&peers);
    let everything = |args: &[&str]| with_server(&server, args);
    let root = scratch("everything-root");
    let roots = everything(&["call", "get-roots-list", "--root", root.to_str().unwrap()]).expect(0);
    let real = root.canonicalize().unwrap();
    assert!(
        roots.stdout.contains(&format!("file://{}", real.display())),
        "{}",
        roots.stdout
    );
    let sampled = everything(&[
        "call",
        "trigger-sampling-request",
        "prompt=hi",
        "--sampling-command",
        "echo hello from the model",
    ])
    .expect(0);
    assert!(
        sampled.stdout.contains("hello from the model"),
        "{}",
        sampled.stdout
    );
    let declined = everything(&["call", "trigger-sampling-request", "prompt=hi"]);
    assert!(
        declined
            .stderr
            .contains("declined the server's request to sample a model"),
        "{}",
        declined.stderr
    );
    let elicited =
        everything(&["call", "trigger-elicitation-request", "--elicit", "decline"]).expect(0);
    assert!(
        elicited.stdout.contains("\"decline\""),
        "{}",
        elicited.stdout
    );
    assert!(
        elicited.stderr.contains("as --elicit decline asks"),
        "{}",
        elicited.stderr
    );
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn python_server_catalog_and_shell() {
    let peers = peers("python_server_catalog_and_shell");
    let server = python_command(&peers);
    let python = |args: &[&str]| with_server(&server, args);
    let listed = python(&["resources"]).expect(0);
    assert_in_order(
        &listed.stdout,
        &[
            "toolwire://greeting",
            "greeting",
            "text/plain",
            "1 resource",
        ],
    );
    let read = python(&["read", "toolwire://greeting"]).expect(0);
    assert_eq!(read.stdout, "Hello from the toolwire Python peer.\n");
    let prompt = python(&["prompt", "greet", "name=Ada"]).expect(0);
    assert_in_order(&prompt.stdout, &["[user]", "greeting for Ada"]);
    let bad = python(&["call", "add", "a=1", "b=x"]).expect(2);
    assert!(
        bad.stderr.contains("usage: toolwire call add"),
        "{}",
        bad.stderr
    );

    // The shell on one connection, lines from a pipe.
    let mut command = toolwire(&["shell", "--"]);
    command.args(&server);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"call echo message=one\nread toolwire://greeting\nping\n")
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap());
    let stderr = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap());
    assert_eq!(
        wait_bounded(&mut child, LIMIT),
        0,
        "{}",
        err.join().unwrap()
    );
    assert_in_order(
        &out.join().unwrap(),
        &["one", "Hello from the toolwire Python peer.", "pong from"],
    );
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn doctor_on_both_peers() {
    let peers = peers("doctor_on_both_peers");
    let dir = scratch("doctor-peers");
    let config = dir.join(".mcp.json");
    let entry = |command: Vec<String>| json!({"command": command[0], "args": command[1..]});
    std::fs::write(
        &config,
        json!({"mcpServers": {"everything": entry(everything_command(&peers)),
                              "python": entry(python_command(&peers))}})
        .to_string(),
    )
    .unwrap();
    let report = run(toolwire(&[
        "doctor",
        "--json",
        "--config",
        config.to_str().unwrap(),
    ]))
    .expect(0);
    let document: Value = serde_json::from_str(&report.stdout).unwrap();
    for server in document["servers"].as_array().unwrap() {
        assert_eq!(server["status"], "ready", "{server}");
        assert!(server["tools"].as_u64().unwrap() > 0, "{server}");
    }
}
