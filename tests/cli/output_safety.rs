//! What the `toolwire` command prints is safe to print: a URL's password and every header
//! value stay out of its output, its logs and its transcript; and a server's control
//! characters (clear-screen, window-title OSC, colour CSI, C1) are shown escaped in human
//! output, and kept exact in JSON output, never written raw.
#![cfg(feature = "cli")]

use crate::support::cli;
use crate::support::http_fake;

use std::path::Path;

use cli::{closed_port_url, run, run_args, scratch, tool_server, toolwire, transcript, Run};
use http_fake::FakeServer;
use serde_json::{json, Value};

/// The secret planted as a URL password, a bearer token and header values.
const SECRET: &str = "S3CRET-TOKEN-1234";

/// The text of tool_server's `hostile` tool (examples/tool_server.rs).
const HOSTILE: &str = "\u{1b}[2J\u{1b}]0;pwned\u{7} and \u{9b}31m";
/// How human output shows it.
const SHOWN: &str = r"\u{1b}[2J\u{1b}]0;pwned\u{7} and \u{9b}31m";

/// Panics when `text` holds the secret, or any 8 of its characters in a row (a secret cut
/// across two lines of a dump still shows).
fn assert_hidden(what: &str, text: &str) {
    let chars: Vec<char> = SECRET.chars().collect();
    for window in chars.windows(8) {
        let piece: String = window.iter().collect();
        assert!(
            !text.contains(&piece),
            "{what} shows the secret ({piece:?}):\n{text}"
        );
    }
}

fn assert_run_hidden(run: &Run) {
    assert_hidden("stdout", &run.stdout);
    assert_hidden("stderr", &run.stderr);
}

/// Panics when `text` holds a control character other than newline and tab.
fn assert_no_raw_controls(what: &str, text: &str) {
    if let Some(c) = text
        .chars()
        .find(|c| c.is_control() && *c != '\n' && *c != '\t')
    {
        panic!("{what} holds the raw control character {c:?}:\n{text:?}");
    }
}

fn assert_run_safe(run: &Run) {
    assert_no_raw_controls("stdout", &run.stdout);
    assert_no_raw_controls("stderr", &run.stderr);
}

/// `url` with the secret as its password.
fn with_password(url: &str) -> String {
    url.replacen("http://", &format!("http://agent:{SECRET}@"), 1)
}

/// A server that refuses every request with 401, quoting the credentials it was sent.
fn refusing_server() -> FakeServer {
    FakeServer::start(|req, reply| {
        let body = json!({"error": "invalid_token",
                          "authorization": req.header("authorization").unwrap_or(""),
                          "key": req.header("x-api-key").unwrap_or("")});
        reply.send(
            401,
            "application/json",
            &[("WWW-Authenticate", "Bearer error=\"invalid_token\"")],
            &body.to_string(),
        );
    })
}

/// A `.mcp.json` with an HTTP entry carrying the secret in its URL and headers, and a stdio
/// entry carrying it in its environment.
fn secret_config(dir: &Path, url: &str) -> String {
    let path = dir.join(".mcp.json");
    let text = json!({"mcpServers": {
        "remote": {"type": "http", "url": with_password(url),
                   "headers": {"Authorization": format!("Bearer {SECRET}"), "X-Api-Key": SECRET}},
        "local": {"command": "server", "env": {"GITHUB_TOKEN": SECRET}}}});
    std::fs::write(&path, text.to_string()).expect("write the config");
    path.to_str().expect("a UTF-8 path").to_owned()
}

/// `toolwire ARGS -- tool_server --hostile`.
fn run_hostile(args: &[&str]) -> Run {
    let server = tool_server();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", server.to_str().expect("a UTF-8 path"), "--hostile"]);
    run_args(&all)
}

#[test]
fn servers_shows_url_passwords_and_header_values_masked() {
    let dir = scratch("servers-secrets");
    let config = secret_config(&dir, "http://127.0.0.1:9/mcp");
    let human = run_args(&["servers", "--config", &config]).expect(0);
    assert_run_hidden(&human);
    let remote = human
        .stdout
        .lines()
        .find(|line| line.starts_with("remote"))
        .expect("a row for remote");
    assert!(
        remote.contains("http://agent:***@127.0.0.1:9/mcp"),
        "{remote}"
    );
    assert!(remote.contains("Authorization: ***"), "{remote}");
    assert!(remote.contains("X-Api-Key: ***"), "{remote}");

    let listed = run_args(&["servers", "--config", &config, "--json"]).expect(0);
    assert_run_hidden(&listed);
    let document: Value = serde_json::from_str(&listed.stdout).expect("JSON");
    let remote = document["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .find(|server| server["name"] == "remote")
        .expect("remote")
        .clone();
    assert_eq!(remote["url"], "http://agent:***@127.0.0.1:9/mcp");
    assert_eq!(
        remote["headers"],
        json!({"Authorization": "***", "X-Api-Key": "***"})
    );
}

/// `tools --url` with the secret in the URL and two headers, at trace level, with a
/// transcript: nothing it leaves behind shows the secret.
fn failing_url_run(url: &str, name: &str) {
    let dir = scratch(name);
    let file = dir.join("transcript.jsonl");
    let url = with_password(&format!("{url}?api_key={SECRET}&v=1"));
    let bearer = format!("Authorization: Bearer {SECRET}");
    let key = format!("X-Api-Key: {SECRET}");
    let failed = run_args(&[
        "tools",
        "--url",
        &url,
        "--header",
        &bearer,
        "--header",
        &key,
        "--log-level",
        "trace",
        "--connect-timeout",
        "10s",
        "--transcript",
        file.to_str().expect("a UTF-8 path"),
    ])
    .expect(4);
    assert_run_hidden(&failed);
    assert!(
        failed
            .stderr
            .contains("toolwire: error: connecting to http://agent:***@127.0.0.1"),
        "{}",
        failed.stderr
    );
    // ureq's trace records dump the request's raw bytes: the command never enables them;
    // its debug records, redacted, still show.
    assert!(
        !failed
            .stderr
            .lines()
            .any(|line| line.starts_with("trace ureq")),
        "{}",
        failed.stderr
    );
    assert!(failed.stderr.contains("debug ureq"), "{}", failed.stderr);
    let text = std::fs::read_to_string(&file).expect("the transcript");
    assert_hidden("the transcript", &text);
    let lines = transcript(&file);
    let connect = lines
        .iter()
        .find(|line| line["event"] == "connect")
        .expect("a connect line");
    assert_eq!(connect["target"], json!(url.replace(SECRET, "***")));
    assert!(lines.iter().any(|line| line["event"] == "error"), "{text}");
}

#[test]
fn a_refused_url_keeps_its_secrets_out_of_output_logs_and_transcript() {
    failing_url_run(&closed_port_url(), "refused-secrets");
}

#[test]
fn a_401_keeps_the_secrets_it_quotes_out_of_output_logs_and_transcript() {
    let server = refusing_server();
    failing_url_run(&server.url, "refused-401-secrets");
    // The server was sent the credentials; they were masked on the way back only.
    assert!(server
        .requests()
        .iter()
        .any(|req| req.header("x-api-key") == Some(SECRET)));
}

#[test]
fn a_config_entry_keeps_its_secrets_when_it_fails() {
    let server = refusing_server();
    let dir = scratch("config-secrets");
    let config = secret_config(&dir, &server.url);
    let file = dir.join("transcript.jsonl");
    let failed = run_args(&[
        "tools",
        "--config",
        &config,
        "--server",
        "remote",
        "--log-level",
        "trace",
        "--transcript",
        file.to_str().expect("a UTF-8 path"),
    ])
    .expect(4);
    assert_run_hidden(&failed);
    assert!(failed.stderr.contains("HTTP 401"), "{}", failed.stderr);
    assert_hidden(
        "the transcript",
        &std::fs::read_to_string(&file).expect("the transcript"),
    );
}

#[test]
fn a_malformed_header_or_input_is_not_echoed() {
    let url = closed_port_url();
    let bad_header = format!("Bearer {SECRET}");
    let header = run_args(&["ping", "--url", &url, "--header", &bad_header]).expect(2);
    assert_run_hidden(&header);
    assert!(
        header.stderr.contains("--header: expected"),
        "{}",
        header.stderr
    );
    let bad_input = format!("={SECRET}");
    let input = run_args(&["servers", "--config", "none.json", "--input", &bad_input]).expect(2);
    assert_run_hidden(&input);
}

#[test]
fn the_tool_table_shows_control_characters_escaped() {
    let listed = run_hostile(&["tools"]).expect(0);
    assert_run_safe(&listed);
    let row = listed
        .stdout
        .lines()
        .find(|line| line.starts_with("hostile"))
        .expect("a row for hostile");
    assert!(row.ends_with(&format!("Prints {SHOWN}.")), "{row}");
}

#[test]
fn tools_json_holds_the_exact_strings() {
    let listed = run_hostile(&["tools", "--json"]).expect(0);
    assert_run_safe(&listed);
    let tools: Vec<Value> = serde_json::from_str(&listed.stdout).expect("JSON");
    let hostile = tools
        .iter()
        .find(|tool| tool["name"] == "hostile")
        .expect("hostile");
    assert_eq!(hostile["description"], format!("Prints {HOSTILE}."));
}

#[test]
fn a_result_and_the_servers_log_progress_and_stderr_are_escaped() {
    let dir = scratch("hostile-call");
    let file = dir.join("transcript.jsonl");
    let called = run_hostile(&[
        "call",
        "hostile",
        "--log-level",
        "debug",
        "--transcript",
        file.to_str().expect("a UTF-8 path"),
    ])
    .expect(0);
    assert_run_safe(&called);
    assert_eq!(called.stdout, format!("result {SHOWN}\n"));
    // The server's log message, its progress report and its stderr line, all on stderr.
    for line in [
        "server warning [hostile]: log ",
        &format!("progress 1/1 progress {SHOWN}"),
        &format!("tool_server: stderr {SHOWN}"),
    ] {
        assert!(
            called.stderr.contains(line),
            "{line:?} in:\n{}",
            called.stderr
        );
    }
    // The transcript keeps the exact text, as JSON escapes only.
    let text = std::fs::read_to_string(&file).expect("the transcript");
    assert_no_raw_controls("the transcript", &text);
    let result = transcript(&file)
        .into_iter()
        .find(|line| line["event"] == "recv" && line["message"]["result"]["content"].is_array())
        .expect("the result frame");
    assert_eq!(
        result["message"]["result"]["content"][0]["text"],
        format!("result {HOSTILE}")
    );
}

#[test]
fn call_json_holds_the_exact_result() {
    let called = run_hostile(&["call", "hostile", "--json"]).expect(0);
    assert_run_safe(&called);
    let result: Value = serde_json::from_str(&called.stdout).expect("JSON");
    assert_eq!(result["content"][0]["text"], format!("result {HOSTILE}"));
}

#[test]
fn errors_that_quote_the_server_are_escaped() {
    let failed = run_hostile(&["call", "hostile", "as=error"]).expect(1);
    assert_run_safe(&failed);
    assert_eq!(failed.stdout, format!("failed {SHOWN}\n"));
    let refused = run_hostile(&["call", "hostile", "as=rpc_error"]).expect(4);
    assert_run_safe(&refused);
    assert!(
        refused
            .stderr
            .contains(&format!("refused {SHOWN} (code -32000)")),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_bare_server_keeps_its_nine_tools() {
    // `--hostile` is what adds the tool: the server's other tests see the same nine tools.
    let mut command = toolwire(&["tools", "--json", "--"]);
    command.arg(tool_server());
    let listed = run(command).expect(0);
    let tools: Vec<Value> = serde_json::from_str(&listed.stdout).expect("JSON");
    assert_eq!(tools.len(), 9);
    assert!(tools.iter().all(|tool| tool["name"] != "hostile"));
}
