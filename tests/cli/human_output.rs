//! Output for a person: argument errors say which field, what was wrong and what it takes,
//! then the tool's signature (not the repair prompt written for a model); the server's log
//! messages show on stderr at warning and above by default, as plain text with the level.
#![cfg(feature = "cli")]

use crate::support::cli;

use cli::{assert_in_order, run_args, run_tool_server, tool_server, Run};

/// `toolwire ARGS -- tool_server --catalog`.
fn catalog(args: &[&str]) -> Run {
    let server = tool_server();
    let mut all = args.to_vec();
    all.extend(["--", server.to_str().unwrap(), "--catalog"]);
    run_args(&all)
}

#[test]
fn argument_errors_name_the_field_what_it_takes_and_the_signature() {
    let run = run_tool_server(&["call", "sleep", "ms=-5", "progress=x"]).expect(2);
    assert_in_order(
        &run.stderr,
        &[
            "toolwire: error: the arguments do not fit the input schema of `sleep`; nothing \
             was run",
            "`ms`: ",
            "(expected integer, ≥ 0)",
            "`progress`: \"x\" is not of type \"integer\" (expected integer, ≥ 0)",
            "usage: toolwire call sleep ms=<integer> [progress=<integer>]",
            "  ms        integer, ≥ 0, required",
            "  progress  integer, ≥ 0",
        ],
    );
    // Not the model's prompt: no schema dump, no "call it again".
    assert!(!run.stderr.contains("JSON Schema"), "{}", run.stderr);
    assert!(!run.stderr.contains("Fix these fields"), "{}", run.stderr);

    let missing = run_tool_server(&["call", "add", "a=1"]).expect(2);
    assert_in_order(
        &missing.stderr,
        &[
            "\"b\" is a required property",
            "usage: toolwire call add a=<number> b=<number>",
        ],
    );
    // An argument that is not even a pair also shows the signature.
    let shape = run_tool_server(&["call", "echo", "hello"]).expect(2);
    assert_in_order(
        &shape.stderr,
        &[
            "neither key=value",
            "usage: toolwire call echo message=<string>",
        ],
    );
}

#[test]
fn the_servers_log_messages_show_at_warning_and_above_as_plain_text() {
    let run = catalog(&["call", "log"]).expect(0);
    assert_eq!(run.stdout, "logged\n");
    assert_in_order(
        &run.stderr,
        &[
            "server warning [catalog]: a warning message\n",
            "server error [catalog]: a error message\n",
        ],
    );
    assert!(!run.stderr.contains("info message"), "{}", run.stderr);
    assert!(!run.stderr.contains("toolwire::server"), "{}", run.stderr);
    // Lower with --server-log (the server sends info and above unless asked otherwise).
    let run = catalog(&["call", "log", "--server-log", "info"]).expect(0);
    assert_in_order(
        &run.stderr,
        &[
            "server info [catalog]: a info message",
            "server warning [catalog]: a warning message",
        ],
    );
    // Off.
    let run = catalog(&["call", "log", "--server-log", "off"]).expect(0);
    assert!(!run.stderr.contains("server "), "{}", run.stderr);
    // The library's own log level does not hide them.
    let run = catalog(&[
        "call",
        "log",
        "level=critical",
        "message=on fire",
        "--log-level",
        "off",
    ])
    .expect(0);
    assert!(
        run.stderr
            .ends_with("\nserver critical [catalog]: on fire\n"),
        "{}",
        run.stderr
    );
}
