//! `toolwire doctor`: every server of a config checked in parallel, each within its deadline;
//! per server whether it started (with its stderr tail, secrets masked), its protocol version
//! and era, its tool count and whether it needs authorization; exit 4 unless all are ready.
//! The config holds a good server, one that crashes at start, one that hangs, one that needs
//! authorization (the OAuth fake answering 401 with WWW-Authenticate) and a bad entry.
#![cfg(feature = "cli")]

use crate::support::auth_fake;
use crate::support::cli;

use auth_fake::{FakeAuth, Options};
use cli::{assert_in_order, run, scratch, tool_server, toolwire, Run};
use serde_json::{json, Value};

/// A value the crashing server prints to its stderr, which must show as `***`.
const SECRET: &str = "PLANTED-DOCTOR-SECRET-42";
/// The hanging server's unusual sleep, to find it among the processes afterwards.
const HANG_SECONDS: &str = "6173";

fn doctor(config: &std::path::Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "doctor",
        "--config",
        config.to_str().unwrap(),
        "--connect-timeout",
        "2s",
    ];
    args.extend_from_slice(extra);
    let mut command = toolwire(&args);
    command
        .env("TOOLWIRE_TOKEN_FILE", config.with_file_name("tokens.json"))
        .env_remove("MCP_CLIENT_SECRET");
    run(command)
}

/// Whether a process runs `sleep HANG_SECONDS`.
fn hanging_server_alive() -> bool {
    let wanted = format!("sleep\0{HANG_SECONDS}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .any(|cmdline| cmdline == wanted.as_bytes())
}

#[test]
fn doctor_reports_each_server_and_fails_unless_all_are_ready() {
    let fake = FakeAuth::start(Options::default());
    let dir = scratch("doctor");
    let config = dir.join(".mcp.json");
    let server = tool_server();
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "good": {"command": server},
            "crashing": {"command": "/bin/sh",
                         "args": ["-c", "echo \"fatal: bad token $TOKEN\" >&2; exit 3"],
                         "env": {"TOKEN": SECRET}},
            "hanging": {"command": "sleep", "args": [HANG_SECONDS]},
            "remote": {"type": "http", "url": fake.url},
            "broken": {"command": 42}
        }})
        .to_string(),
    )
    .unwrap();
    let report = doctor(&config, &[]).expect(4);
    assert_in_order(
        &report.stdout,
        &[
            "(Claude Code format, 5 servers)",
            "NAME",
            "TRANSPORT",
            "STATUS",
            "PROTOCOL",
            "ERA",
            "TOOLS",
            "AUTH",
            "TIME",
            "broken",
            "skipped",
            "crashing",
            "stdio",
            "failed",
            "good",
            "stdio",
            "ready",
            "2025-11-25",
            "handshake",
            "9",
            "hanging",
            "stdio",
            "failed",
            "remote",
            "http",
            "needs-auth",
            "needed",
            "broken (skipped):",
            "field `command`: must be a string",
            "crashing (failed):",
            "exit status: 3",
            "stderr tail:",
            "fatal: bad token ***",
            "hanging (failed):",
            "did not answer the MCP handshake in time",
            "remote (needs-auth):",
        ],
    );
    assert!(
        report
            .stdout
            .contains("needs authorization: log in with `toolwire --config"),
        "{}",
        report.stdout
    );
    assert!(
        report.stdout.ends_with("4 of 5 servers not ready\n"),
        "{}",
        report.stdout
    );
    for text in [&report.stdout, &report.stderr] {
        assert!(!text.contains(SECRET), "the secret shows:\n{text}");
    }
    // Nothing was left running, and nobody was asked to log in.
    assert!(
        !hanging_server_alive(),
        "the hanging server outlived doctor"
    );
    assert_eq!(fake.authorizations(), 0);

    let report = doctor(&config, &["--json", "--jobs", "2"]).expect(4);
    let document: Value = serde_json::from_str(&report.stdout).unwrap();
    let status = |name: &str| {
        document["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|server| server["name"] == name)
            .map(|server| server["status"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert_eq!(status("good"), "ready");
    assert_eq!(status("crashing"), "failed");
    assert_eq!(status("hanging"), "failed");
    assert_eq!(status("remote"), "needs-auth");
    assert_eq!(status("broken"), "skipped");
    let good = document["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|server| server["name"] == "good")
        .unwrap();
    assert_eq!(good["tools"], 9);
    assert_eq!(good["protocolVersion"], "2025-11-25");
    assert_eq!(good["server"], "toolwire-tool-server 0.1.0");
}

#[test]
fn doctor_exits_0_when_every_server_is_ready() {
    let dir = scratch("doctor-good");
    let config = dir.join("servers.json");
    let server = tool_server();
    std::fs::write(
        &config,
        json!({"mcpServers": {"one": {"command": server}, "two": {"command": server}}}).to_string(),
    )
    .unwrap();
    let report = doctor(&config, &["--jobs", "1"]).expect(0);
    assert!(
        report.stdout.ends_with("all 2 servers ready\n"),
        "{}",
        report.stdout
    );
    // Not for one server.
    let mut command = toolwire(&["doctor", "--url", "http://127.0.0.1:1/mcp"]);
    command.env_remove("MCP_CLIENT_SECRET");
    run(command).expect(2);
}

#[test]
fn doctor_checks_a_gateway_policy_without_serving() {
    let dir = scratch("doctor-policy");
    let config = dir.join("servers.json");
    let server = tool_server();
    std::fs::write(
        &config,
        json!({"mcpServers": {"files": {"command": server}, "search": {"command": server}}})
            .to_string(),
    )
    .unwrap();
    let policy = dir.join("policy.json");
    // A typo in a deny list, and one in a server's name.
    std::fs::write(
        &policy,
        r#"{"servers": {"files": {"deny": ["ecoh"]}, "serch": {"concurrency": 2}}}"#,
    )
    .unwrap();
    let report = doctor(&config, &["--policy", policy.to_str().unwrap()]).expect(2);
    assert!(
        report
            .stdout
            .contains(r#"server "serch" (did you mean "search"?)"#),
        "{}",
        report.stdout
    );
    assert!(
        report.stdout.contains("policy-mismatch"),
        "{}",
        report.stdout
    );
    assert!(
        report
            .stdout
            .contains(r#"deny "ecoh" (did you mean "echo"?)"#),
        "{}",
        report.stdout
    );
    // The server's name fixed: the deny typo alone makes the run fail as a server would.
    std::fs::write(&policy, r#"{"servers": {"files": {"deny": ["ecoh"]}}}"#).unwrap();
    let report = doctor(&config, &["--policy", policy.to_str().unwrap(), "--json"]).expect(4);
    let answer: Value = serde_json::from_str(&report.stdout).unwrap();
    assert!(answer.get("policy").is_none(), "{answer}");
    let status = |name: &str| {
        answer["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|server| server["name"] == name)
            .unwrap()["status"]
            .clone()
    };
    assert_eq!(status("files"), "policy-mismatch", "{answer}");
    assert_eq!(status("search"), "ready", "{answer}");
    // Fixed: all ready.
    std::fs::write(&policy, r#"{"servers": {"files": {"deny": ["echo"]}}}"#).unwrap();
    doctor(&config, &["--policy", policy.to_str().unwrap()]).expect(0);
}
