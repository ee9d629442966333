//! Elicitation on a terminal: the server's question, then each field of the requested schema
//! with its type, choices and default; a wrong answer is asked again; `n` declines; Ctrl-D
//! cancels. The binary runs under a pseudo-terminal made by python3's `pty` module, with a
//! small driver that types each answer once its prompt has been shown.
#![cfg(feature = "cli")]

use crate::support::cli;

use cli::{tool_server, under_a_pty};
use serde_json::{json, Value};

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
    under_a_pty(
        &[
            "call",
            "ask",
            "method=elicitation/create",
            &params,
            "-q",
            "--",
            server.to_str().unwrap(),
            "--catalog",
        ],
        script,
    )
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
