//! The stdio server on the process's stdout writes an answer itself when nothing waits and the
//! pipe has room, and queues it otherwise: a client that stops reading still has every
//! request read (the reading thread never waits for stdout), and every answer comes once when
//! it reads again, inline tools and pooled ones alike.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{tool_server_path, within, LONG};

/// Requests sent before the first answer is read: their answers (3 KB each, 1.8 MB in all)
/// fill the stdout pipe many times over, and fit the writer's queue (1,024 lines).
const CALLS: usize = 600;

fn fill_then_read(args: &[&'static str]) {
    let mut child = Command::new(tool_server_path())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn tool_server");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let message = "x".repeat(3000);
    // All the requests (1.8 MB, far past the stdin pipe) go in while nothing is read: only a
    // reader that never waits for stdout takes them all.
    let sent = within(LONG, move || {
        for id in 0..CALLS {
            let line = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"message\":\"{message}{id}\"}}}}}}\n"
            );
            stdin.write_all(line.as_bytes()).unwrap();
        }
        stdin.flush().unwrap();
        stdin
    });
    let seen = within(LONG, move || {
        let mut reader = BufReader::new(stdout);
        let mut seen = HashSet::new();
        let mut line = String::new();
        while seen.len() < CALLS {
            line.clear();
            assert!(reader.read_line(&mut line).unwrap() > 0, "stdout ended");
            let answer: Value = serde_json::from_str(&line).expect("one JSON answer a line");
            let id = answer["id"].as_u64().expect("an answer with an id") as usize;
            // A pooled call may find every worker busy on a loaded machine: its answer is
            // then the refusal (still one answer).
            if answer["error"]["code"] != -32000 {
                let text = answer["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or("");
                assert!(text.ends_with(&format!("x{id}")), "{id}: {text:.40}");
            }
            assert!(seen.insert(id), "id {id} answered twice");
        }
        seen
    });
    assert_eq!(seen.len(), CALLS);
    drop(sent);
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_client_that_stops_reading_still_has_every_request_read_and_answered_once() {
    fill_then_read(&[]);
}

#[test]
fn the_same_with_the_tool_on_the_worker_pool() {
    fill_then_read(&["--pooled"]);
}
