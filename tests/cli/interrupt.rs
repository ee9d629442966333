//! Ctrl-C: SIGINT during a call cancels it (the server is told), closes the server, and exits
//! with 130. The test waits for the binary's `calling …` line on stderr, never a sleep.
#![cfg(feature = "cli")]

use crate::support::cli;

use std::sync::mpsc;
use std::time::Duration;

use cli::{
    read_until, scratch, sent, sigint, spawn_with_stderr_lines, tool_server, toolwire, transcript,
    wait_bounded, LIMIT,
};

/// Starts `toolwire ARGS -- tool_server`; returns the child and a channel of its stderr
/// lines.
fn start(args: &[&str]) -> (crate::support::cli::KillOnDrop, mpsc::Receiver<String>) {
    let server = tool_server();
    let mut command = toolwire(args);
    command.arg("--").arg(server);
    spawn_with_stderr_lines(command)
}

/// The pid the binary's debug log gives for the server it started.
fn server_pid(lines: &[String]) -> u32 {
    lines
        .iter()
        .find_map(|line| {
            let (_, rest) = line.split_once(" (pid ")?;
            rest.trim_end_matches(')').parse().ok()
        })
        .unwrap_or_else(|| panic!("no `started … (pid N)` line in {lines:#?}"))
}

#[test]
fn ctrl_c_cancels_the_call_tells_the_server_closes_it_and_exits_130() {
    let dir = scratch("interrupt");
    let file = dir.join("t.jsonl");
    let (mut child, lines) = start(&[
        "call",
        "hang",
        "--log-level",
        "debug",
        "--transcript",
        file.to_str().unwrap(),
    ]);
    let before = read_until(&lines, |line| line == "calling hang");
    let pid = server_pid(&before);
    sigint(child.id());
    let code = wait_bounded(&mut child, LIMIT);
    let after: Vec<String> = lines.iter().collect();
    let stderr = after.join("\n");
    assert_eq!(code, 130, "{stderr}");
    assert!(
        stderr.contains("interrupted: the call to `hang` was cancelled (the server was told)"),
        "{stderr}"
    );
    // The server got notifications/cancelled before it was closed: its stderr says so.
    assert!(
        stderr.contains("tool_server: client cancelled request"),
        "{stderr}"
    );
    // ...and it is gone (reaped, not even a zombie).
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the server (pid {pid}) outlived the command"
    );

    let lines = transcript(&file);
    let call = &sent(&lines, "tools/call")[0];
    let cancelled = sent(&lines, "notifications/cancelled");
    assert_eq!(cancelled.len(), 1, "{lines:#?}");
    assert_eq!(cancelled[0]["params"]["requestId"], call["id"]);
    assert!(lines
        .iter()
        .any(|line| line["event"] == "cancel" && line["detail"] == "interrupted (SIGINT)"));
    let exit = lines.last().unwrap();
    assert_eq!(exit["code"], 130);
    assert_eq!(exit["status"], "INTERRUPTED");
}

#[test]
fn ctrl_c_during_a_call_with_progress_clears_it_and_exits_130() {
    let (mut child, lines) = start(&["call", "sleep", "ms=20000", "progress=200"]);
    read_until(&lines, |line| line.starts_with("progress 1/200"));
    sigint(child.id());
    let code = wait_bounded(&mut child, Duration::from_secs(10));
    let rest = lines.iter().collect::<Vec<_>>().join("\n");
    assert_eq!(code, 130, "{rest}");
    assert!(rest.contains("was cancelled"), "{rest}");
}

/// A stdio MCP server that answers the handshake and never answers `tools/list`, saying on
/// stderr when it got it.
const SILENT_LISTER: &str = r#"
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "silent", "version": "1"}}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    elif method == "tools/list":
        print("silent: got tools/list", file=sys.stderr, flush=True)
"#;

#[test]
fn ctrl_c_outside_a_call_closes_the_server_and_exits_130() {
    let script = scratch("silent").join("silent.py");
    std::fs::write(&script, SILENT_LISTER).unwrap();
    let mut command = toolwire(&[
        "tools",
        "--protocol",
        "legacy",
        "--log-level",
        "debug",
        "--",
        "python3",
        script.to_str().unwrap(),
    ]);
    command.env("PYTHONUNBUFFERED", "1");
    let (mut child, lines) = spawn_with_stderr_lines(command);
    let before = read_until(&lines, |line| line.contains("silent: got tools/list"));
    let pid = server_pid(&before);
    sigint(child.id());
    let code = wait_bounded(&mut child, Duration::from_secs(10));
    let rest = lines.iter().collect::<Vec<_>>().join("\n");
    assert_eq!(code, 130, "{rest}");
    assert!(
        rest.contains("interrupted; the server was closed"),
        "{rest}"
    );
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the server (pid {pid}) outlived the command"
    );
}
