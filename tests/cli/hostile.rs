//! The `toolwire` command against input that would be misread: argument JSON with a key
//! written twice (refused by name, as the harness refuses it), integers a JavaScript server
//! cannot hold (a warning naming the field), integers outside 64 bits (refused), a FIFO named
//! as the config file (refused at once), and a relative `--config .vscode/mcp.json` whose
//! `${workspaceFolder}` must be the project root.
#![cfg(feature = "cli")]

use crate::support::cli;

use std::io::Write;
use std::process::Stdio;

use cli::{run, run_tool_server, scratch, tool_server, toolwire};

/// The warning's words, as the command writes them.
const BEYOND: &str = "beyond ±9007199254740991 (2^53 − 1)";

#[test]
fn a_duplicate_key_in_the_argument_object_is_refused_by_name() {
    let run = run_tool_server(&[
        "call",
        "echo",
        r#"{"message": "checked", "message": "sent"}"#,
    ])
    .expect(2);
    assert!(
        run.stderr
            .contains(r#"duplicate key "message" in the object at (root)"#),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[test]
fn a_duplicate_key_on_stdin_is_refused_by_name() {
    let server = tool_server();
    let mut command = toolwire(&["call", "echo", "-", "--", server.to_str().unwrap()]);
    command.stdin(Stdio::piped());
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("start toolwire");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"message": "x", "nested": {"k": 1, "k": 2}}"#)
        .unwrap();
    let output = child.wait_with_output().expect("toolwire output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(r#"duplicate key "k" in the object at /nested"#),
        "{stderr}"
    );
}

#[test]
fn a_duplicate_key_inside_a_pair_value_is_refused_by_name() {
    // `extra` is not declared by echo's schema, so it would be sent as read.
    for pair in [r#"extra:={"k": 1, "k": 2}"#, r#"extra={"k": 1, "k": 2}"#] {
        let run = run_tool_server(&["call", "echo", "message=hi", pair]).expect(2);
        assert!(
            run.stderr.contains(r#"duplicate key "k""#) && run.stderr.contains("extra"),
            "{pair}: {}",
            run.stderr
        );
    }
}

#[test]
fn an_integer_outside_64_bits_is_refused_in_every_form() {
    // The JSON object form names the field by its pointer; a pair names itself.
    for (args, named) in [
        (
            &[r#"{"a": 123456789012345678901, "b": 1}"#][..],
            "the integer 123456789012345678901 at /a is outside the 64-bit range",
        ),
        (
            &["a:=123456789012345678901", "b=1"][..],
            "`a:=123456789012345678901`: the integer 123456789012345678901 at (root) is outside \
             the 64-bit range",
        ),
        (
            &["a=123456789012345678901", "b=1"][..],
            "`a=123456789012345678901`: the integer 123456789012345678901 is outside the 64-bit \
             range",
        ),
    ] {
        let mut all = vec!["call", "add"];
        all.extend_from_slice(args);
        let run = run_tool_server(&all).expect(2);
        assert!(run.stderr.contains(named), "{args:?}: {}", run.stderr);
    }
}

#[test]
fn an_integer_beyond_2_pow_53_warns_naming_the_field_and_is_sent() {
    let run = run_tool_server(&["call", "add", "a=9007199254740993", "b=0"]).expect(0);
    assert!(
        run.stderr.contains(&format!(
            "warning: the argument at /a holds the integer 9007199254740993, {BEYOND}"
        )),
        "{}",
        run.stderr
    );

    // Negative, nested, and in the JSON form: each field is named.
    let run = run_tool_server(&[
        "call",
        "echo",
        r#"{"message": "hi", "ids": [1, -9007199254740992], "n": {"x": 18446744073709551615}}"#,
    ])
    .expect(0);
    assert_eq!(run.stdout, "hi\n");
    assert!(
        run.stderr.contains(&format!(
            "the argument at /ids/1 holds the integer -9007199254740992, {BEYOND}"
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!(
            "the argument at /n/x holds the integer 18446744073709551615, {BEYOND}"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn an_integer_within_2_pow_53_gives_no_warning() {
    let run =
        run_tool_server(&["call", "add", "a=9007199254740991", "b=-9007199254740991"]).expect(0);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}

#[cfg(unix)]
#[test]
fn a_fifo_named_by_config_is_refused_at_once() {
    let dir = scratch("fifo");
    let fifo = dir.join("mcp.json");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(status.success());
    // `run` fails the test if the command is still running at its limit: nobody ever writes
    // to the FIFO, so a reader that waited for a writer would be.
    let run = run(toolwire(&["servers", "--config", fifo.to_str().unwrap()])).expect(2);
    assert!(
        run.stderr
            .contains(&format!("{} is a FIFO, not a regular file", fifo.display())),
        "{}",
        run.stderr
    );
}

#[cfg(unix)]
#[test]
fn a_relative_vscode_config_expands_workspace_folder_to_the_project_root() {
    let root = scratch("project");
    std::fs::create_dir_all(root.join(".vscode")).unwrap();
    std::os::unix::fs::symlink(tool_server(), root.join("server")).unwrap();
    std::fs::write(
        root.join(".vscode/mcp.json"),
        r#"{"servers": {"local": {"type": "stdio", "command": "${workspaceFolder}/server"}}}"#,
    )
    .unwrap();
    let mut command = toolwire(&[
        "call",
        "echo",
        "message=rooted",
        "--config",
        ".vscode/mcp.json",
    ]);
    command.current_dir(&root);
    assert_eq!(run(command).expect(0).stdout, "rooted\n");
}
