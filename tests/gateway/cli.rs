//! `toolwire serve`: the gateway as a command, over stdio (for a host's config entry) and
//! HTTP, with the config file's "toolwire" section or a policy file, the servers left out
//! reported on stderr, and the counters per server and status printed on exit.
#![cfg(feature = "cli")]

use crate::support::cli;
use crate::support::gateway as support;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use serde_json::{json, Value};
use toolwire::{HttpConfig, McpClient, McpConfig};

/// `toolwire serve ARGS` over stdio: the child, its stdin, its stdout, and its stderr lines.
fn serve_stdio(
    args: &[&str],
) -> (
    std::process::Child,
    std::process::ChildStdin,
    BufReader<std::process::ChildStdout>,
    std::sync::mpsc::Receiver<String>,
) {
    let mut all = vec!["serve"];
    all.extend_from_slice(args);
    let mut child = cli::toolwire(&all)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    (child, stdin, stdout, lines)
}

fn write_config(folder: &std::path::Path, extra: Value) -> std::path::PathBuf {
    let mut config = json!({"mcpServers": {
        "alpha": support::tool_server_entry(),
        "beta": support::tool_server_entry(),
        "gone": {"command": "/nonexistent/toolwire-no-such-server"},
    }});
    if let (Value::Object(config), Value::Object(extra)) = (&mut config, extra) {
        config.extend(extra);
    }
    let path = folder.join("claude_desktop_config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

#[test]
fn serve_over_stdio_answers_a_host_and_prints_the_counters_on_exit() {
    let folder = cli::scratch("serve-stdio");
    let config = write_config(
        &folder,
        json!({"toolwire": {"servers": {"beta": {"deny": ["crash"]}}}}),
    );
    let (mut child, mut stdin, mut stdout, lines) =
        serve_stdio(&["--config", config.to_str().unwrap()]);
    let mut ask = |request: Value| -> Value {
        writeln!(stdin, "{request}").unwrap();
        if request.get("id").is_none() {
            return Value::Null;
        }
        // Notifications (the servers joining: the tool list changed) may come first.
        loop {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("id") == request.get("id") {
                return message;
            }
        }
    };
    let init = ask(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "host", "version": "1"}}}),
    );
    assert_eq!(
        init["result"]["serverInfo"]["name"],
        json!("toolwire-gateway"),
        "{init}"
    );
    ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // The servers join as they start; the gateway says what it serves once all have.
    let mut seen = cli::read_until(&lines, |line| line.contains("toolwire: serving "));
    let listed = ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"mcp__alpha__crash") && !names.contains(&"mcp__beta__crash"),
        "{names:?}"
    );
    let called = ask(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "mcp__beta__echo", "arguments": {"message": "through"}}}));
    assert_eq!(
        called["result"]["content"][0]["text"],
        json!("through"),
        "{called}"
    );
    let denied = ask(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "mcp__beta__crash", "arguments": {}}}));
    assert!(
        denied["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("UNKNOWN_TOOL: "),
        "{denied}"
    );
    drop(stdin);
    let code = cli::wait_bounded(&mut child, cli::LIMIT);
    seen.extend(lines.iter());
    let stderr = seen.join("\n");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stderr.matches("server \"gone\" is left out").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("/nonexistent/toolwire-no-such-server"),
        "{stderr}"
    );
    assert!(
        stderr.contains("beta: forwarded 1, cancelled 0, UNKNOWN_TOOL 1, OK 1"),
        "{stderr}"
    );
}

#[test]
fn serve_over_http_with_a_policy_file_until_ctrl_c() {
    let folder = cli::scratch("serve-http");
    let config = write_config(&folder, json!({}));
    let policy = folder.join("policy.json");
    std::fs::write(&policy, r#"{"servers": {"alpha": {"allow": ["echo"]}}}"#).unwrap();
    let transcript = folder.join("audit.jsonl");
    let mut command = cli::toolwire(&[
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
        "--transcript",
        transcript.to_str().unwrap(),
    ]);
    command.stdin(Stdio::null());
    let (mut child, lines) = cli::spawn_with_stderr_lines(command);
    let seen = cli::read_until_each(&lines, &["listening on ", "toolwire: serving "]);
    let url = seen
        .iter()
        .find(|line| line.contains("listening on "))
        .unwrap()
        .split("listening on ")
        .nth(1)
        .unwrap()
        .trim()
        .to_owned();
    let client = McpClient::connect_http(HttpConfig::new(url), McpConfig::default()).unwrap();
    let alpha: Vec<String> = client
        .list_tools()
        .unwrap()
        .iter()
        .map(|tool| tool.name.clone())
        .filter(|name| name.starts_with("mcp__alpha__"))
        .collect();
    assert_eq!(alpha, ["mcp__alpha__echo"]);
    assert_eq!(
        client
            .call_tool("mcp__alpha__echo", json!({"message": "http"}))
            .unwrap()
            .text(),
        "http"
    );
    client.close().unwrap();
    cli::sigint(child.id());
    let rest = cli::read_until(&lines, |line| line.contains("alpha: forwarded"));
    assert!(
        rest.iter().any(|line| line.contains("alpha: forwarded 1")),
        "{rest:?}"
    );
    assert_eq!(cli::wait_bounded(&mut child, cli::LIMIT), 0);
    let audit = std::fs::read_to_string(&transcript).unwrap();
    assert!(audit.contains("\"event\":\"request\""), "{audit}");
    assert!(audit.contains("\"tool\":\"mcp__alpha__echo\""), "{audit}");
}

#[test]
fn a_bad_policy_is_a_usage_error_naming_the_place() {
    let folder = cli::scratch("serve-bad-policy");
    let config = write_config(
        &folder,
        json!({"toolwire": {"servers": {"alpha": {"dney": []}}}}),
    );
    let run = cli::run(cli::toolwire(&[
        "serve",
        "--config",
        config.to_str().unwrap(),
    ]));
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("\"dney\" at /toolwire/servers/alpha"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_policy_naming_a_server_the_config_lacks_stops_serve_with_the_names() {
    let folder = cli::scratch("serve-unknown-server");
    let config = write_config(
        &folder,
        json!({"toolwire": {"servers": {"alpah": {"deny": ["crash"]}}}}),
    );
    let run = cli::run(cli::toolwire(&[
        "serve",
        "--config",
        config.to_str().unwrap(),
    ]));
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains(r#"server "alpah" (did you mean "alpha"?)"#),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(r#""alpha", "beta", "gone""#),
        "{}",
        run.stderr
    );
}

#[test]
fn serve_answers_initialize_while_a_server_hangs_and_reports_it_once() {
    let folder = cli::scratch("serve-hung");
    let config = folder.join("config.json");
    let entries = json!({"mcpServers": {
        "alpha": support::tool_server_entry(),
        // Starts, but never answers `initialize`.
        "hung": {"command": "sleep", "args": ["600"]},
    }});
    std::fs::write(&config, entries.to_string()).unwrap();
    let (mut child, mut stdin, mut stdout, lines) = serve_stdio(&[
        "--config",
        config.to_str().unwrap(),
        "--start-timeout",
        "3s",
    ]);
    let asked = std::time::Instant::now();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "host", "version": "1"}}})
    )
    .unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let took = asked.elapsed();
    let init: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(init["id"], json!(1), "{init}");
    assert!(init.get("result").is_some(), "{init}");
    // Answered before the hung server's deadline, which is when it is reported.
    assert!(took < std::time::Duration::from_secs(3), "{took:?}");
    let early: Vec<String> = lines.try_iter().collect();
    assert!(
        !early.iter().any(|line| line.contains("left out")),
        "{early:?}"
    );
    let mut seen = cli::read_until(&lines, |line| line.contains("toolwire: serving "));
    drop(stdin);
    assert_eq!(cli::wait_bounded(&mut child, cli::LIMIT), 0);
    seen.extend(early);
    seen.extend(lines.iter());
    let stderr = seen.join("\n");
    assert_eq!(
        stderr.matches("server \"hung\" is left out").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("within 3s"), "{stderr}");
}

#[test]
fn serve_shows_a_backends_quoted_env_value_nowhere() {
    const SECRET: &str = "serve-env-S3CRET-0021";
    let folder = cli::scratch("serve-secrets");
    let config = folder.join("claude_desktop_config.json");
    let entry = json!({"command": support::tool_server().display().to_string(),
                       "args": ["--hostile"], "env": {"PLANTED": SECRET}});
    std::fs::write(&config, json!({"mcpServers": {"leaky": entry}}).to_string()).unwrap();
    let transcript = folder.join("audit.jsonl");
    let mut child = cli::toolwire(&["serve", "--config", config.to_str().unwrap()])
        .args(["--log-level", "trace", "--transcript"])
        .arg(&transcript)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap());
    // Every line the host receives, up to the answer to `request`.
    let mut received = Vec::new();
    let mut ask = |request: Value| -> Value {
        writeln!(stdin, "{request}").unwrap();
        let Some(id) = request.get("id") else {
            return Value::Null;
        };
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "serve ended");
            received.push(line.clone());
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("id") == Some(id) {
                return message;
            }
        }
    };
    ask(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "host", "version": "1"}}}),
    );
    ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let refused = ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "mcp__leaky__leak",
                   "arguments": {"name": "PLANTED", "as": "rpc_error"}}}));
    // The backend's JSON-RPC error goes on as an error, its secrets masked.
    assert_eq!(refused["error"]["code"], json!(-32000), "{refused}");
    assert_eq!(refused["error"]["data"]["sent"], json!("***"), "{refused}");
    let failed = ask(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "mcp__leaky__leak",
                   "arguments": {"name": "PLANTED", "as": "error"}}}));
    assert_eq!(
        failed["result"]["content"][0]["text"],
        json!("rejected credential ***"),
        "{failed}"
    );
    drop(stdin);
    assert_eq!(cli::wait_bounded(&mut child, cli::LIMIT), 0);
    let stderr = stderr.join().unwrap();
    let transcript = std::fs::read_to_string(&transcript).unwrap();
    for (what, text) in [
        ("the host's answers", received.concat()),
        ("stderr", stderr.clone()),
        ("the transcript", transcript),
    ] {
        assert!(!text.contains(SECRET), "{what} shows the secret:\n{text}");
    }
    // The JSON-RPC error's text was logged for the operator, masked.
    assert!(stderr.contains("Bearer *** is not valid"), "{stderr}");
}
