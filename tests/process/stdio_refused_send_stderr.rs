//! A child that closes its stdin and dies a moment later, with the reason on stderr: the call
//! whose write is refused (the pipe has no reader) reports that reason. Callers write their
//! own frames, so the refusal can come before the stderr drain has read the last words; the
//! send waits for the drain (within the exit wait and the call's deadline) before it builds
//! the error.

#![cfg(unix)]

use crate::support as common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use toolwire::{CallOptions, ClientConfig, Error, StdioConfig};

const LAST_WORDS: &str = "fatal: the licence key is missing";

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[test]
fn a_write_refused_by_a_dying_child_carries_its_stderr() {
    let _serial = common::serial();
    let dir = std::env::temp_dir().join(format!("toolwire-refused-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (ready, go) = (dir.join("ready"), dir.join("go"));
    mkfifo(&ready);
    mkfifo(&go);
    // Closes stdin, says so on `ready`, waits for `go`, then leaves its reason and exits.
    let script = format!(
        "exec 0<&-; echo closed > '{}'; read x < '{}'; echo '{LAST_WORDS}' >&2; exit 3",
        ready.display(),
        go.display()
    );
    let config = StdioConfig::new("sh")
        .args(["-c", script.as_str()])
        .exit_wait(Duration::from_secs(30));
    let (client, _transport) = common::shared_stdio_client(config, ClientConfig::default());

    // The child's stdin is closed before the call writes (a latch, not a wait).
    let mut said = String::new();
    std::fs::File::open(&ready)
        .expect("open ready")
        .read_to_string(&mut said)
        .expect("read ready");
    assert_eq!(said.trim(), "closed");

    // The child writes its reason only after the refused write: without the wait for the
    // drain, the error is built first and has no stderr. (The delay gives a send that does
    // not wait the time to return; a send that waits passes whatever the delay.)
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let mut fifo = std::fs::OpenOptions::new()
            .write(true)
            .open(&go)
            .expect("open go");
        fifo.write_all(b"go\n").expect("write go");
    });
    let outcome = client.call_with(
        "ping",
        json!({}),
        CallOptions::new().timeout(Duration::from_secs(60)),
    );
    release.join().expect("the release thread");
    match outcome {
        Err(Error::Closed(closed)) => assert!(
            closed.stderr_tail.contains(LAST_WORDS),
            "the error carries the child's last words: {closed:?}"
        ),
        other => panic!("expected the connection closed, got {other:?}"),
    }
    let _ = client.close();
    let _ = std::fs::remove_dir_all(&dir);
}
