//! The catalog commands against the bundled server (`tool_server --catalog`): `resources`,
//! `templates`, `read`, `prompts`, `prompt`, `complete`, `log-level` and `tools NAME`; a
//! server without a capability is told apart from one that failed; a server command given
//! without `--` gets a hint; a program that is not an MCP server is named as such.
#![cfg(feature = "cli")]

use crate::support::cli;

use cli::{assert_in_order, run, run_args, run_tool_server, scratch, tool_server, toolwire, Run};
use serde_json::Value;

/// `toolwire ARGS -- tool_server --catalog`.
fn catalog(args: &[&str]) -> Run {
    let server = tool_server();
    let mut all = args.to_vec();
    all.extend(["--", server.to_str().unwrap(), "--catalog"]);
    run_args(&all)
}

#[test]
fn resources_templates_and_read() {
    let listed = catalog(&["resources"]).expect(0);
    assert_in_order(
        &listed.stdout,
        &[
            "URI",
            "NAME",
            "MIME",
            "DESCRIPTION",
            "note://readme",
            "readme",
            "text/plain",
            "A short text.",
            "note://logo",
            "logo",
            "image/png",
            "2 resources",
        ],
    );
    let listed: Value =
        serde_json::from_str(&catalog(&["resources", "--json"]).expect(0).stdout).unwrap();
    assert_eq!(listed[1]["uri"], "note://logo");

    let templates = catalog(&["templates"]).expect(0);
    assert_in_order(
        &templates.stdout,
        &[
            "URI TEMPLATE",
            "note://items/{id}",
            "item",
            "One item by id.",
            "1 template",
        ],
    );

    // One text item prints as the text alone; a blob as one line.
    assert_eq!(
        catalog(&["read", "note://readme"]).expect(0).stdout,
        "Read me first.\n"
    );
    assert_eq!(
        catalog(&["read", "note://items/42"]).expect(0).stdout,
        "item 42\n"
    );
    let blob = catalog(&["read", "note://logo"]).expect(0);
    assert_eq!(
        blob.stdout,
        "[blob image/png, 70 B] note://logo (--json shows it in base64)\n"
    );
    let blob: Value =
        serde_json::from_str(&catalog(&["read", "note://logo", "--json"]).expect(0).stdout)
            .unwrap();
    assert!(blob["contents"][0]["blob"]
        .as_str()
        .unwrap()
        .starts_with("iVBOR"));
    // A resource the server does not have: the server's error, exit 4.
    let missing = catalog(&["read", "note://nowhere"]).expect(4);
    assert!(
        missing.stderr.contains("reading note://nowhere"),
        "{}",
        missing.stderr
    );
}

#[test]
fn prompts_prompt_and_complete() {
    let listed = catalog(&["prompts"]).expect(0);
    assert_in_order(
        &listed.stdout,
        &[
            "NAME",
            "ARGUMENTS",
            "DESCRIPTION",
            "greet",
            "name, tone?",
            "Greets someone.",
            "1 prompt",
        ],
    );
    let got = catalog(&["prompt", "greet", "name=Ada", "tone=cheerful"]).expect(0);
    assert_eq!(
        got.stdout,
        "# a cheerful greeting\n[user]\nPlease greet Ada, cheerfully.\n"
    );
    let got: Value = serde_json::from_str(
        &catalog(&["prompt", "greet", "name=Ada", "--json"])
            .expect(0)
            .stdout,
    )
    .unwrap();
    assert_eq!(got["messages"][0]["role"], "user");
    // A missing required argument is ours to say, with the prompt's signature.
    let missing = catalog(&["prompt", "greet"]).expect(2);
    assert_in_order(
        &missing.stderr,
        &[
            "the prompt `greet` needs `name`; nothing was asked",
            "usage: toolwire prompt greet name=<text> [tone=<text>]",
            "name, required — Who to greet",
        ],
    );
    let unknown = catalog(&["prompt", "nope"]).expect(2);
    assert!(
        unknown
            .stderr
            .contains("no prompt named `nope` (it has: greet)"),
        "{}",
        unknown.stderr
    );

    let names = catalog(&["complete", "--prompt", "greet", "name", "a"]).expect(0);
    assert_eq!(names.stdout, "ada\nalan\n");
    let ids = catalog(&["complete", "--template", "note://items/{id}", "id", "g"]).expect(0);
    assert_eq!(ids.stdout, "grace\n");
    let raw: Value = serde_json::from_str(
        &catalog(&["complete", "--prompt", "greet", "name", "", "--json"])
            .expect(0)
            .stdout,
    )
    .unwrap();
    assert_eq!(raw["completion"]["values"].as_array().unwrap().len(), 4);
    run(toolwire(&["complete", "name"])).expect(2);
}

#[test]
fn log_level_sets_the_servers_level() {
    let dir = scratch("log-level");
    let file = dir.join("t.jsonl");
    let set = catalog(&["log-level", "error", "--transcript", file.to_str().unwrap()]).expect(0);
    assert_eq!(
        set.stdout,
        "the server now sends log messages at error and above\n"
    );
    let lines = cli::transcript(&file);
    let sent = cli::sent(&lines, "logging/setLevel");
    assert_eq!(sent.len(), 1, "{lines:#?}");
    assert_eq!(sent[0]["params"]["level"], "error");
}

#[test]
fn a_capability_the_server_lacks_is_said_and_nothing_is_asked() {
    for command in [
        vec!["resources"],
        vec!["templates"],
        vec!["read", "note://readme"],
        vec!["prompts"],
        vec!["prompt", "greet"],
        vec!["complete", "--prompt", "greet", "name"],
    ] {
        let run = run_tool_server(&command).expect(4);
        assert!(
            run.stderr
                .contains("toolwire-tool-server 0.1.0 does not offer")
                && run
                    .stderr
                    .contains("(it declares: logging, tools); nothing was asked"),
            "{command:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn tools_name_prints_one_tools_whole_definition() {
    let shown = run_tool_server(&["tools", "sleep"]).expect(0);
    assert_in_order(
        &shown.stdout,
        &[
            "name:         sleep",
            "description:",
            "  Waits ms milliseconds, reporting progress if asked.",
            "usage: toolwire call sleep ms=<integer> [progress=<integer>]",
            "annotations:  openWorldHint=false, readOnlyHint=true",
            "input schema:",
            "\"minimum\": 0",
            "\"required\": [",
        ],
    );
    let definition: Value = serde_json::from_str(
        &run_tool_server(&["tools", "add", "--json"])
            .expect(0)
            .stdout,
    )
    .unwrap();
    assert_eq!(definition["name"], "add");
    assert!(definition["outputSchema"].is_object(), "{definition}");
    let add = run_tool_server(&["tools", "add"]).expect(0);
    assert!(add.stdout.contains("output schema:"), "{}", add.stdout);
    let unknown = run_tool_server(&["tools", "nope"]).expect(2);
    assert!(
        unknown
            .stderr
            .contains("no tool named `nope` (it has: echo, add,"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn a_server_command_without_the_separator_gets_a_hint() {
    let server = tool_server();
    let server = server.to_str().unwrap();
    let empty = scratch("no-separator");
    // A launcher clap cannot place.
    let mut command = toolwire(&["tools", "npx", "-y", "some-server"]);
    command.current_dir(&empty);
    cli::with_home(&mut command, &empty);
    let run_npx = run(command).expect(2);
    assert!(
        run_npx.stderr.contains(
            "hint: a stdio server's command goes after `--`: toolwire tools -- npx -y some-server"
        ),
        "{}",
        run_npx.stderr
    );
    // A program path taken as a call argument.
    let mut command = toolwire(&["call", "echo", "message=hi", server]);
    command.current_dir(&empty);
    cli::with_home(&mut command, &empty);
    let run_path = run(command).expect(2);
    assert!(
        run_path.stderr.contains(&format!(
            "hint: a stdio server's command goes after `--`: toolwire call echo message=hi -- {server}"
        )),
        "{}",
        run_path.stderr
    );
    // With `--`, no hint.
    let fine = run_args(&["call", "echo", "message=hi", "--", server]).expect(0);
    assert!(!fine.stderr.contains("hint"), "{}", fine.stderr);
}

#[test]
fn a_program_that_is_not_an_mcp_server_is_named_as_such() {
    // It prints text and exits.
    let run = run_args(&[
        "tools",
        "--",
        "/bin/sh",
        "-c",
        "echo 'usage: frob [FILE]'; echo more",
    ])
    .expect(4);
    assert!(
        run.stderr.contains(
            "does not seem to be an MCP server: an MCP server reads JSON-RPC on stdin and \
             answers `initialize`; it printed 2 lines that are not JSON-RPC, the first: \
             \"usage: frob [FILE]\""
        ),
        "{}",
        run.stderr
    );
    // It echoes what it reads (so our request comes back as a request nobody knows).
    let run = run_args(&["tools", "--", "cat"]).expect(4);
    assert!(
        run.stderr
            .contains("`cat` does not seem to be an MCP server"),
        "{}",
        run.stderr
    );
    // A server that crashes with nothing on stdout is a crash, not "not MCP".
    let run = run_args(&["tools", "--", "/bin/sh", "-c", "echo broken >&2; exit 3"]).expect(4);
    assert!(!run.stderr.contains("does not seem"), "{}", run.stderr);
    assert!(run.stderr.contains("exit status: 3"), "{}", run.stderr);
}
