//! `toolwire shell` on a terminal: one connection for many commands, line editing and
//! history (the up arrow brings back earlier lines), Ctrl-C cancels the running call only
//! (the server is told and the session goes on), Ctrl-C at the prompt clears the line, and
//! `exit` ends it. Also the shell without a terminal (lines from a pipe), and the completion
//! scripts. The pty is python3's `pty` module with a driver that types each input once the
//! text before it has shown.
#![cfg(feature = "cli")]

use crate::support::cli;

use std::io::Write;
use std::process::Stdio;

use cli::{
    assert_in_order, run, run_args, tool_server, toolwire, under_a_pty, wait_bounded, LIMIT,
};

fn on_a_terminal(script: &[(&str, &str)]) -> (i32, String) {
    let server = tool_server();
    under_a_pty(&["shell", "--", server.to_str().unwrap()], script)
}

const PROMPT: &str = "toolwire-tool-server> ";
const UP: &str = "\u{1b}[A";

#[test]
fn ctrl_c_cancels_the_running_call_only_and_history_comes_back() {
    let (code, screen) = on_a_terminal(&[
        (PROMPT, "call echo message=first\r"),
        ("first", ""),
        (PROMPT, "call sleep ms=60000 progress=600\r"),
        // The call is out (its progress shows, in whichever frame is drawn first: the spinner's
        // or the bar's, at whatever step); Ctrl-C cancels it.
        ("/600 step", "\u{3}"),
        ("was cancelled (the server was told)", ""),
        // The same session goes on: the up arrow twice brings back the first line.
        (PROMPT, &format!("{UP}{UP}\r")),
        ("first", ""),
        // Ctrl-C at the prompt drops the line, and the session stays.
        (PROMPT, "call add a=1\u{3}"),
        (PROMPT, "ping\r"),
        ("pong from toolwire-tool-server", "history\r"),
        ("   1  call echo message=first", "exit\r"),
    ]);
    assert_eq!(code, 0, "{screen:?}");
    assert_in_order(
        &screen,
        &[
            "connected to toolwire-tool-server",
            "first",
            "the call to `sleep` was cancelled (the server was told)",
            "call echo message=first",
            "first",
            "call add a=1",
            "pong from toolwire-tool-server",
            "   2  call sleep ms=60000 progress=600",
            "   3  call echo message=first",
            "   4  ping",
        ],
    );
    // One connection: the server was started once (one greeting).
    assert_eq!(screen.matches("connected to").count(), 1, "{screen:?}");
}

/// A wide character takes two columns: the left arrow over one moves the cursor back two,
/// and text typed there goes before it.
#[test]
fn wide_characters_are_edited_by_their_width() {
    let (code, screen) = on_a_terminal(&[
        (PROMPT, "call echo message=\u{8a9e}\u{1b}[D"),
        ("\u{1b}[2D", "\u{65e5}\u{672c}\r"),
        ("\r\n\u{65e5}\u{672c}\u{8a9e}\r\n", "history\r"),
        ("   1  call echo message=\u{65e5}\u{672c}\u{8a9e}", "exit\r"),
    ]);
    assert_eq!(code, 0, "{screen:?}");
    assert_in_order(
        &screen,
        &[
            "\u{1b}[2D",
            "\r\n\u{65e5}\u{672c}\u{8a9e}\r\n",
            "   1  call echo message=\u{65e5}\u{672c}\u{8a9e}",
        ],
    );
}

/// Runs `toolwire shell` on the tool server with `input` piped to it; asserts it exits 0 and
/// returns its stdout and stderr.
fn shell_from_pipe(input: &[u8]) -> (String, String) {
    let mut command = toolwire(&["shell", "--"]);
    command.arg(tool_server());
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap());
    let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap());
    assert_eq!(wait_bounded(&mut child, LIMIT), 0);
    (out.join().unwrap(), err.join().unwrap())
}

/// Lines from a pipe keep their wide characters, in `key=value` and JSON arguments alike.
#[test]
fn the_shell_reads_wide_characters_from_a_pipe() {
    let (out, _) = shell_from_pipe(
        "call echo message=日本語\ncall echo '{\"message\":\"中文 ✓ 日本語\"}'\nhistory\n"
            .as_bytes(),
    );
    assert_in_order(
        &out,
        &[
            "日本語\n",
            "中文 ✓ 日本語\n",
            "   1  call echo message=日本語",
            "   2  call echo '{\"message\":\"中文 ✓ 日本語\"}'",
        ],
    );
}

#[test]
fn the_shell_reads_lines_from_a_pipe() {
    let (out, err) =
        shell_from_pipe(b"tools add\ncall add a=2 b=3\ncall nope\nservers\nread x -- y\nping\n");
    assert_in_order(&out, &["name:         add", "{\"sum\":5}", "pong from"]);
    assert_in_order(
        &err,
        &[
            "no tool named `nope`",
            "not for a session",
            "the session is connected already",
        ],
    );
}

#[test]
fn completion_scripts_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _toolwire"),
        ("zsh", "#compdef toolwire"),
        ("fish", "complete -c toolwire"),
    ] {
        let script = run_args(&["completions", shell]).expect(0);
        assert!(script.stdout.contains(marker), "{shell}: {}", script.stdout);
        for command in ["doctor", "resources", "shell", "log-level"] {
            assert!(script.stdout.contains(command), "{shell} lacks {command}");
        }
    }
    run(toolwire(&["completions", "tcsh"])).expect(2);
}
