//! Elicitation on a terminal: the server's question, then each field of the requested schema
//! with its type, choices and default; a wrong answer is asked again; `n` declines; Ctrl-D
//! cancels. The binary runs under a pseudo-terminal made by python3's `pty` module, with a
//! small driver that types each answer once its prompt has been shown.
#![cfg(feature = "cli")]

#[path = "cli_support.rs"]
mod cli;

use std::process::{Command, Stdio};

use cli::{bin, tool_server, wait_bounded, LIMIT};
use serde_json::{json, Value};

/// Runs the command under a pty; `argv[1]` is a JSON list of `[prompt, answer]` pairs: each
/// answer is typed once its prompt has shown. Everything the terminal showed goes to stdout.
const DRIVER: &str = r#"
import json, os, pty, sys
script = [(p.encode(), a.encode()) for p, a in json.loads(sys.argv[1])]
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
out = sys.stdout.buffer
pending = b""
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    out.write(data)
    out.flush()
    pending += data
    while script and script[0][0] in pending:
        prompt, answer = script.pop(0)
        pending = pending[pending.index(prompt) + len(prompt):]
        os.write(fd, answer)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"#;

fn request() -> Value {
    json!({"message": "Tell me about you", "requestedSchema": {"type": "object",
        "properties": {
            "age": {"type": "integer", "description": "Your age"},
            "color": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
            "name": {"type": "string", "title": "Your name"},
            "subscribe": {"type": "boolean"}
        },
        "required": ["name", "age"]}})
}

/// What the terminal showed while `toolwire call ask ...` ran with `script`, and the exit code.
fn on_a_terminal(script: &[(&str, &str)]) -> (i32, String) {
    let server = tool_server();
    let params = format!("params:={}", request());
    let mut command = Command::new("python3");
    command
        .arg("-c")
        .arg(DRIVER)
        .arg(serde_json::to_string(script).unwrap())
        .arg(bin())
        .args([
            "call",
            "ask",
            "method=elicitation/create",
            &params,
            "-q",
            "--",
        ])
        .arg(server)
        .arg("--catalog")
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
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

/// The JSON answer the tool printed: the last line holding `{"action"`.
fn answered(screen: &str) -> Value {
    let line = screen
        .lines()
        .rev()
        .find(|line| line.contains("{\"action\""))
        .unwrap_or_else(|| panic!("no answer in {screen:?}"));
    serde_json::from_str(line.trim()).unwrap()
}

#[test]
fn each_field_is_asked_with_its_type_and_default() {
    let (code, screen) = on_a_terminal(&[
        ("Answer? [Y/n] ", "\n"),
        ("  age Your age (integer, required): ", "soon\n"),
        ("(a whole number)", ""),
        ("  age Your age (integer, required): ", "36\n"),
        ("  color (string, one of: red, blue) [blue]: ", "\n"),
        ("  name Your name (string, required): ", "Grace\n"),
        ("  subscribe (boolean): ", "y\n"),
    ]);
    assert_eq!(code, 0, "{screen:?}");
    assert!(
        screen.contains("The server asks: Tell me about you"),
        "{screen:?}"
    );
    assert_eq!(
        answered(&screen),
        json!({"action": "accept",
               "content": {"age": 36, "color": "blue", "name": "Grace", "subscribe": true}})
    );
    // Nothing was declined on the user's behalf.
    assert!(!screen.contains("note:"), "{screen:?}");
}

#[test]
fn no_declines_and_ctrl_d_cancels() {
    let (code, screen) = on_a_terminal(&[("Answer? [Y/n] ", "n\n")]);
    assert_eq!(code, 0, "{screen:?}");
    assert_eq!(answered(&screen), json!({"action": "decline"}));
    let (code, screen) = on_a_terminal(&[
        ("Answer? [Y/n] ", "\n"),
        ("  age Your age (integer, required): ", "\u{4}"),
    ]);
    assert_eq!(code, 0, "{screen:?}");
    assert_eq!(answered(&screen), json!({"action": "cancel"}));
}
