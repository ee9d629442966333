//! On a terminal, progress is an indicatif bar that is drawn while the call runs and cleared
//! when it ends. The binary runs under a pseudo-terminal made by python3's `pty` module; the
//! test reads the raw bytes the terminal received.
#![cfg(feature = "cli")]

use crate::support::cli;

use std::process::{Command, Stdio};

use cli::{assert_in_order, bin, tool_server, wait_bounded, LIMIT};

/// Runs the command under a pty; the relay copies everything the terminal shows to its
/// stdout and exits with the command's exit code.
const RELAY: &str = r#"
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = sys.stdout.buffer
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    out.write(data)
out.flush()
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"#;

/// What a terminal showed while `toolwire ARGS -- tool_server` ran, and the exit code.
fn on_a_terminal(args: &[&str]) -> (i32, String) {
    let server = tool_server();
    let mut command = Command::new("python3");
    command
        .arg("-c")
        .arg(RELAY)
        .arg(bin())
        .args(args)
        .arg("--")
        .arg(server)
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .env("COLUMNS", "100")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = command
        .spawn()
        .expect("python3 is needed for the pseudo-terminal test");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut bytes).unwrap();
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let code = wait_bounded(&mut child, LIMIT);
    (code, reader.join().unwrap())
}

#[test]
fn the_progress_bar_is_drawn_then_cleared() {
    let (code, screen) = on_a_terminal(&["call", "sleep", "ms=1500", "progress=5"]);
    assert_eq!(code, 0, "{screen:?}");
    // Frames of the bar, in order, with the tool's name and the server's messages.
    assert_in_order(
        &screen,
        &[
            "sleep [",
            "=>",
            "] 1/5 step 1 of 5",
            "] 2/5 step 2 of 5",
            "] 3/5 step 3 of 5",
            "] 4/5 step 4 of 5",
        ],
    );
    // Each frame is redrawn in place: carriage return, clear the line.
    assert!(screen.matches("\r\x1b[2K").count() >= 5, "{screen:?}");
    // The last thing before the result is the clearing of the bar: the result starts on a
    // clean line and no frame follows it.
    let result = screen.find("slept 1500 ms").expect("the result");
    assert!(
        screen[..result].ends_with("\r\x1b[2K"),
        "the bar was not cleared before the result: {screen:?}"
    );
    assert!(!screen[result..].contains('['), "{screen:?}");
    // No plain progress lines on a terminal.
    assert!(!screen.contains("progress 1/5"), "{screen:?}");
    assert!(!screen.contains("calling sleep"), "{screen:?}");
}

#[test]
fn a_quick_call_leaves_only_its_result_and_quiet_draws_nothing() {
    // A call quicker than the spinner's delay draws nothing; on a slow machine a spinner may
    // show, but it is cleared before the result.
    let (code, screen) = on_a_terminal(&["call", "add", "a=1", "b=2"]);
    assert_eq!(code, 0, "{screen:?}");
    let last = screen.rsplit("\x1b[2K").next().unwrap();
    assert_eq!(last, "{\"sum\":3}\r\n", "{screen:?}");
    let (code, screen) = on_a_terminal(&["call", "sleep", "ms=600", "progress=3", "-q"]);
    assert_eq!(code, 0, "{screen:?}");
    assert_eq!(screen, "slept 600 ms\r\n", "{screen:?}");
}
