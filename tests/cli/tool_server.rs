//! The `toolwire` command against the bundled tool_server (stdio), config files, and a URL
//! where nothing listens: output, progress lines, and every exit code but 130 (see
//! cli_interrupt.rs).
#![cfg(feature = "cli")]

use crate::support::cli;

use cli::{
    assert_in_order, closed_port_url, run, run_args, run_tool_server, scratch, sent, tool_server,
    toolwire, transcript, with_home,
};
use serde_json::{json, Value};

#[test]
fn tools_prints_a_table_of_every_tool() {
    let run = run_tool_server(&["tools"]).expect(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("ARGUMENTS"),
        "{}",
        run.stdout
    );
    assert!(lines[0].ends_with("DESCRIPTION"), "{}", run.stdout);
    let sleep = lines
        .iter()
        .find(|line| line.starts_with("sleep "))
        .expect("a row for sleep");
    assert!(sleep.contains("ms: integer, progress?: integer"), "{sleep}");
    assert!(sleep.contains("Waits ms milliseconds"), "{sleep}");
    // The columns line up: every row's second column starts where the header's does.
    let column = lines[0].find("ARGUMENTS").unwrap();
    let add = lines.iter().find(|line| line.starts_with("add ")).unwrap();
    assert_eq!(add.find("a: number").unwrap(), column, "{}", run.stdout);
    assert_eq!(lines.last(), Some(&"9 tools"));
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn tools_json_prints_the_definitions() {
    let run = run_tool_server(&["tools", "--json"]).expect(0);
    let tools: Vec<Value> = serde_json::from_str(&run.stdout).expect("JSON");
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "echo",
            "add",
            "sleep",
            "hang",
            "crash",
            "stderr_flood",
            "garbage",
            "fail",
            "big_text"
        ]
    );
    assert_eq!(tools[1]["outputSchema"]["required"], json!(["sum"]));
}

#[test]
fn info_shows_the_server_the_protocol_and_its_era_and_capabilities() {
    let run = run_tool_server(&["info"]).expect(0);
    assert_in_order(
        &run.stdout,
        &[
            "server:",
            "toolwire-tool-server 0.1.0",
            "protocol:",
            "2025-11-25",
            "era:",
            "handshake",
            "capabilities:",
            "logging",
            "tools {\"listChanged\":true}",
            "instructions:",
        ],
    );
    let run = run_tool_server(&["info", "--json", "--protocol", "legacy"]).expect(0);
    let info: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(info["protocolVersion"], "2025-11-25");
    assert_eq!(info["era"], "handshake");
    assert_eq!(info["server"]["name"], "toolwire-tool-server");
    assert_eq!(info["capabilities"]["tools"]["listChanged"], true);
    // tool_server does not speak 2026-07-28: insisting on it is a protocol failure.
    let run = run_tool_server(&["info", "--protocol", "modern"]).expect(4);
    assert!(run.stderr.contains("server/discover"), "{}", run.stderr);
}

#[test]
fn ping_answers() {
    let run = run_tool_server(&["ping"]).expect(0);
    assert!(
        run.stdout.starts_with("pong from toolwire-tool-server in "),
        "{}",
        run.stdout
    );
}

#[test]
fn call_prints_text_or_the_whole_result() {
    let run = run_tool_server(&["call", "add", "a=2", "b=3"]).expect(0);
    assert_eq!(run.stdout, "{\"sum\":5}\n");
    let run = run_tool_server(&["call", "add", "a=2", "b=0.5", "--json"]).expect(0);
    let result: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(result["structuredContent"], json!({"sum": 2.5}));
    assert_eq!(result["isError"], false);
    // One JSON object, or `-` for a JSON object on stdin.
    let run = run_tool_server(&["call", "echo", r#"{"message": "hi there"}"#]).expect(0);
    assert_eq!(run.stdout, "hi there\n");
    let server = tool_server();
    let mut command = toolwire(&["call", "echo", "-", "--", server.to_str().unwrap()]);
    let stdin = scratch("stdin").join("args.json");
    std::fs::write(&stdin, r#"{"message": "from stdin"}"#).unwrap();
    command.stdin(std::fs::File::open(&stdin).unwrap());
    assert_eq!(cli::run(command).expect(0).stdout, "from stdin\n");
}

#[test]
fn key_value_arguments_take_the_types_of_the_schema() {
    // `message` is a string: 42 stays text; `ms` is an integer: 5 becomes a number.
    let run = run_tool_server(&["call", "echo", "message=42"]).expect(0);
    assert_eq!(run.stdout, "42\n");
    let run = run_tool_server(&["call", "sleep", "ms=5", "progress=0"]).expect(0);
    assert_eq!(run.stdout, "slept 5 ms\n");
    // key:=JSON passes a raw value, which the schema then judges.
    let run = run_tool_server(&["call", "echo", "message:=42"]).expect(2);
    assert!(
        run.stderr.contains("`message`: 42 is not of type"),
        "{}",
        run.stderr
    );
}

#[test]
fn call_shows_progress_lines_when_not_on_a_terminal() {
    let run = run_tool_server(&["call", "sleep", "ms=400", "progress=4"]).expect(0);
    assert_eq!(run.stdout, "slept 400 ms\n");
    assert_eq!(
        run.stderr.lines().collect::<Vec<_>>(),
        [
            "calling sleep",
            "progress 1/4 step 1 of 4",
            "progress 2/4 step 2 of 4",
            "progress 3/4 step 3 of 4",
            "progress 4/4 step 4 of 4",
        ],
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains('\x1b'),
        "no escape codes off a terminal"
    );
    let quiet = run_tool_server(&["call", "sleep", "ms=100", "progress=2", "--quiet"]).expect(0);
    assert!(quiet.stderr.is_empty(), "{}", quiet.stderr);
}

#[test]
fn progress_restarts_the_timeout() {
    // 1200 ms in all, a report every 150 ms: a 600 ms timeout never passes.
    let run = run_tool_server(&[
        "call",
        "sleep",
        "ms=1200",
        "progress=8",
        "--timeout",
        "600ms",
    ])
    .expect(0);
    assert_eq!(run.stdout, "slept 1200 ms\n");
    // ...but --max-total bounds the whole call: a ten-minute sleep reporting every 100 ms,
    // which nothing else could end before the run's hang guard (LIMIT) fails the test.
    let run = run_tool_server(&[
        "call",
        "sleep",
        "ms=600000",
        "progress=6000",
        "--timeout",
        "400ms",
        "--max-total",
        "700ms",
    ])
    .expect(3);
    assert!(run.stderr.contains("timed out after"), "{}", run.stderr);
}

#[test]
fn a_tool_error_exits_1() {
    let run = run_tool_server(&["call", "fail", "message=boom"]).expect(1);
    assert_eq!(run.stdout, "boom\n");
    assert!(run.stderr.contains("returned isError"), "{}", run.stderr);
    let run = run_tool_server(&["call", "fail", "--json"]).expect(1);
    let result: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(result["isError"], true);
}

#[test]
fn a_timeout_exits_3_and_cancels_the_request() {
    let dir = scratch("timeout");
    let file = dir.join("t.jsonl");
    let run = run_tool_server(&[
        "call",
        "hang",
        "--timeout",
        "300ms",
        "--log-level",
        "debug",
        "--transcript",
        file.to_str().unwrap(),
    ])
    .expect(3);
    assert!(run.stderr.contains("timed out after"), "{}", run.stderr);
    // The server's own stderr (shown at debug) says it got the cancellation before it closed.
    assert!(
        run.stderr.contains("tool_server: client cancelled request"),
        "{}",
        run.stderr
    );
    let lines = transcript(&file);
    let call = &sent(&lines, "tools/call")[0];
    let cancelled = sent(&lines, "notifications/cancelled");
    assert_eq!(cancelled.len(), 1, "{lines:#?}");
    assert_eq!(cancelled[0]["params"]["requestId"], call["id"]);
    let result = lines.iter().find(|line| line["event"] == "result").unwrap();
    assert_eq!(result["status"], "TIMEOUT");
}

#[test]
fn arguments_that_break_the_schema_exit_2_with_the_repair_message_and_nothing_is_sent() {
    let dir = scratch("invalid");
    let file = dir.join("t.jsonl");
    let run = run_tool_server(&[
        "call",
        "sleep",
        "ms=abc",
        "--transcript",
        file.to_str().unwrap(),
    ])
    .expect(2);
    assert_in_order(
        &run.stderr,
        &[
            "the arguments do not fit the input schema of `sleep`; nothing was run",
            "`ms`: \"abc\" is not of type \"integer\" (expected integer, ≥ 0)",
            "usage: toolwire call sleep ms=<integer> [progress=<integer>]",
        ],
    );
    let lines = transcript(&file);
    // The transcript keeps the harness's repair message, for programs.
    let invalid = lines
        .iter()
        .find(|line| line["event"] == "invalid")
        .expect("an invalid line");
    assert!(
        invalid["detail"]
            .as_str()
            .unwrap()
            .contains("Fix these fields and call sleep again"),
        "{invalid}"
    );
    assert!(sent(&lines, "tools/call").is_empty(), "{lines:#?}");
    assert!(lines
        .iter()
        .any(|line| line["event"] == "invalid" && line["status"] == "INVALID"));
    assert_eq!(lines.last().unwrap()["code"], 2);

    let run = run_tool_server(&["call", "sleep"]).expect(2);
    assert!(
        run.stderr.contains("\"ms\" is a required property"),
        "{}",
        run.stderr
    );
    let run = run_tool_server(&["call", "echo", "{not json"]).expect(2);
    assert!(run.stderr.contains("not valid JSON"), "{}", run.stderr);
    let run = run_tool_server(&["call", "echo", "message"]).expect(2);
    assert!(run.stderr.contains("neither key=value"), "{}", run.stderr);
}

#[test]
fn an_unknown_tool_exits_2_listing_the_tools() {
    let run = run_tool_server(&["call", "nope"]).expect(2);
    assert!(
        run.stderr
            .contains("no tool named `nope`; nothing was run (it has: echo, add, sleep"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_server_that_dies_exits_4_with_its_exit_status() {
    let run = run_tool_server(&["call", "crash", "code=7"]).expect(4);
    assert!(run.stderr.contains("exit status: 7"), "{}", run.stderr);
    assert!(
        run.stderr.contains("tool_server: crashing with code 7"),
        "the stderr tail: {}",
        run.stderr
    );
}

#[test]
fn a_command_that_cannot_start_exits_4() {
    let run = run_args(&["tools", "--", "/nonexistent/toolwire-test-server"]).expect(4);
    assert!(
        run.stderr.contains("/nonexistent/toolwire-test-server"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unreachable_url_exits_4() {
    let url = closed_port_url();
    // Every bound an hour away: a run that retried the refused connection until a deadline
    // would outlast the run's hang guard (LIMIT); the refusal itself ends it.
    let run = run_args(&[
        "tools",
        "--url",
        &url,
        "--connect-timeout",
        "1h",
        "--timeout",
        "1h",
    ])
    .expect(4);
    assert!(run.stderr.contains(&url), "{}", run.stderr);
    assert!(run.stderr.contains("refused"), "{}", run.stderr);
    let run = run_args(&["ping", "--url", &url, "-H", "Authorization: Bearer x"]).expect(4);
    assert!(run.stderr.contains("refused"), "{}", run.stderr);
}

#[test]
fn a_broken_config_exits_2_naming_the_server_and_the_field() {
    let dir = scratch("broken");
    let file = dir.join("servers.json");
    std::fs::write(
        &file,
        r#"{"mcpServers": {"good": {"command": "true"}, "broken": {"command": 42}}}"#,
    )
    .unwrap();
    // The bad entry is skipped: naming it gives its error; the good one stays usable (here
    // `true`, which exits at once: a transport failure, not a config error).
    let run = run_args(&[
        "tools",
        "--config",
        file.to_str().unwrap(),
        "--server",
        "broken",
    ])
    .expect(2);
    assert!(
        run.stderr
            .contains("server `broken`, field `command`: must be a string"),
        "{}",
        run.stderr
    );
    run_args(&[
        "tools",
        "--config",
        file.to_str().unwrap(),
        "--server",
        "good",
    ])
    .expect(4);

    let vscode = dir.join(".vscode");
    std::fs::create_dir_all(&vscode).unwrap();
    let file = vscode.join("mcp.json");
    std::fs::write(&file, r#"{"servers": {"local": {"command": "x"}}}"#).unwrap();
    let run = run_args(&["tools", "--config", file.to_str().unwrap()]).expect(2);
    assert!(
        run.stderr.contains("server `local`, field `type`"),
        "{}",
        run.stderr
    );

    std::fs::write(dir.join("bad.json"), "{ nope").unwrap();
    let run = run_args(&[
        "servers",
        "--config",
        dir.join("bad.json").to_str().unwrap(),
    ])
    .expect(2);
    assert!(run.stderr.contains("not valid JSON"), "{}", run.stderr);
    let run = run_args(&[
        "servers",
        "--config",
        dir.join("missing.json").to_str().unwrap(),
    ])
    .expect(2);
    assert!(run.stderr.contains("missing.json"), "{}", run.stderr);
}

/// A Claude Code `.mcp.json` with tool_server under each of `names`.
fn mcp_json(names: &[&str]) -> String {
    let server = tool_server();
    let servers: serde_json::Map<String, Value> = names
        .iter()
        .map(|name| ((*name).to_owned(), json!({"command": server})))
        .collect();
    json!({"mcpServers": servers}).to_string()
}

#[test]
fn config_files_are_found_in_the_current_folder() {
    // .mcp.json first.
    let dir = scratch("found");
    std::fs::write(dir.join(".mcp.json"), mcp_json(&["tools"])).unwrap();
    let mut command = toolwire(&["call", "echo", "message=found"]);
    command.current_dir(&dir);
    assert_eq!(run(command).expect(0).stdout, "found\n");

    // Then .vscode/mcp.json.
    let dir = scratch("vscode");
    std::fs::create_dir_all(dir.join(".vscode")).unwrap();
    let server = tool_server();
    let text = json!({"servers": {"ts": {"type": "stdio", "command": server}}}).to_string();
    std::fs::write(dir.join(".vscode/mcp.json"), text).unwrap();
    let mut command = toolwire(&["servers"]);
    command.current_dir(&dir);
    let run_servers = run(command).expect(0);
    assert_in_order(
        &run_servers.stdout,
        &[
            ".vscode/mcp.json (VS Code format, 1 server)",
            "NAME",
            "ts",
            "stdio",
        ],
    );
    let mut command = toolwire(&["ping"]);
    command.current_dir(&dir);
    run(command).expect(0);

    // Nothing there: a usage error that says what to give.
    let empty = scratch("empty");
    let mut command = toolwire(&["tools"]);
    command.current_dir(&empty);
    with_home(&mut command, &empty);
    let failed = run(command).expect(2);
    assert!(
        failed.stderr.contains("--config FILE --server NAME"),
        "{}",
        failed.stderr
    );
}

#[test]
fn a_config_with_several_servers_needs_server() {
    let dir = scratch("several");
    let file = dir.join("claude_desktop_config.json");
    std::fs::write(&file, mcp_json(&["alpha", "beta"])).unwrap();
    let path = file.to_str().unwrap();
    let run_all = run_args(&["servers", "--config", path]).expect(0);
    assert_in_order(
        &run_all.stdout,
        &[
            "(Claude Desktop format, 2 servers)",
            "alpha",
            "stdio",
            "beta",
            "stdio",
        ],
    );
    let listed = run_args(&["servers", "--config", path, "--json"]).expect(0);
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed["servers"][1]["name"], "beta");

    let run_one = run_args(&["tools", "--config", path]).expect(2);
    assert!(
        run_one
            .stderr
            .contains("2 servers (alpha, beta): choose one with --server NAME"),
        "{}",
        run_one.stderr
    );
    let missing = run_args(&["tools", "--config", path, "--server", "gamma"]).expect(2);
    assert!(
        missing
            .stderr
            .contains("no server named `gamma` (it has: alpha, beta)"),
        "{}",
        missing.stderr
    );
    run_args(&["call", "add", "a=1", "b=1", "--config", path, "-s", "beta"]).expect(0);
}

#[test]
fn usage_errors_exit_2_and_help_lists_the_exit_codes() {
    let help = run_args(&["--help"]).expect(0);
    assert_in_order(
        &help.stdout,
        &[
            "Exit codes:",
            "0    ok",
            "1    the tool returned isError",
            "2    usage or config error",
            "3    timeout",
            "4    transport or protocol failure",
            "130",
        ],
    );
    let url = closed_port_url();
    let both = run_tool_server(&["tools", "--url", &url]).expect(2);
    assert!(both.stderr.contains("give one server"), "{}", both.stderr);
    run_tool_server(&["tools", "--timeout", "soon"]).expect(2);
    run_tool_server(&["frobnicate"]).expect(2);
    let header = run_tool_server(&["tools", "-H", "X-A: b"]).expect(2);
    assert!(
        header.stderr.contains("--header applies to --url"),
        "{}",
        header.stderr
    );
    let bad_url = run_args(&["tools", "--url", "ftp://example.invalid/"]).expect(2);
    assert!(bad_url.stderr.contains("not an http"), "{}", bad_url.stderr);
}

#[test]
fn env_reaches_a_command_server() {
    // The server starts only when the variable reached it.
    let server = tool_server();
    let script = format!(
        "test \"$TOOLWIRE_CLI_TEST\" = yes && exec {}",
        server.display()
    );
    let run = run_args(&[
        "ping",
        "-e",
        "TOOLWIRE_CLI_TEST=yes",
        "--",
        "/bin/sh",
        "-c",
        &script,
    ])
    .expect(0);
    assert!(run.stdout.starts_with("pong"), "{}", run.stdout);
    run_args(&["ping", "--", "/bin/sh", "-c", &script]).expect(4);
}

#[test]
fn the_transcript_has_decisions_and_every_wire_message() {
    let dir = scratch("transcript");
    let file = dir.join("t.jsonl");
    run_tool_server(&[
        "call",
        "sleep",
        "ms=100",
        "progress=2",
        "--transcript",
        file.to_str().unwrap(),
    ])
    .expect(0);
    let lines = transcript(&file);
    let events: Vec<&str> = lines
        .iter()
        .map(|line| line["event"].as_str().unwrap())
        .collect();
    assert_eq!(events[0], "connect");
    assert_in_order(
        &events.join(" "),
        &[
            "connect",
            "send",
            "recv",
            "connected",
            "send",
            "recv",
            "call",
            "send",
            "recv",
            "progress",
            "result",
            "exit",
        ],
    );
    assert_eq!(
        events.iter().filter(|event| **event == "progress").count(),
        2
    );
    assert_eq!(sent(&lines, "initialize").len(), 1);
    assert_eq!(sent(&lines, "notifications/initialized").len(), 1);
    let call = &sent(&lines, "tools/call")[0];
    assert_eq!(
        call["params"]["arguments"],
        json!({"ms": 100, "progress": 2})
    );
    let answer = lines
        .iter()
        .find(|line| line["event"] == "recv" && line["message"]["id"] == call["id"])
        .expect("the response");
    assert_eq!(
        answer["message"]["result"]["content"][0]["text"],
        "slept 100 ms"
    );
    let result = lines.iter().find(|line| line["event"] == "result").unwrap();
    assert_eq!(result["status"], "OK");
    assert_eq!(result["tool"], "sleep");
    assert!(result["duration_us"].as_u64().unwrap() >= 100_000);
    let exit = lines.last().unwrap();
    assert_eq!(
        (exit["event"].as_str(), exit["code"].as_u64()),
        (Some("exit"), Some(0))
    );
    let times: Vec<u64> = lines
        .iter()
        .map(|line| line["elapsed_us"].as_u64().unwrap())
        .collect();
    assert!(times.windows(2).all(|pair| pair[0] <= pair[1]), "{times:?}");
}

#[test]
fn log_level_shows_the_library_and_the_servers_stderr() {
    let run = run_tool_server(&["ping", "--log-level", "debug"]).expect(0);
    assert!(run.stderr.contains("debug toolwire::"), "{}", run.stderr);
    assert!(run
        .stderr
        .contains("info toolwire::target: connected to toolwire-tool-server"));
    let quiet = run_tool_server(&["ping", "--log-level", "off"]).expect(0);
    assert!(quiet.stderr.is_empty(), "{}", quiet.stderr);
}
