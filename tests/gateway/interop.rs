//! `toolwire serve` in front of server-everything, the Python SDK's server and the bundled
//! tool server, with hosts nobody here wrote: the official Python SDK's client
//! (tests/peers/py_gateway_client.py: tools of all three listed and called, progress through
//! two of them, a sampling round trip through server-everything, a denied tool, bad
//! arguments, a cancellation that reaches the backend) and the MCP Inspector's command line
//! (tools of all three listed and called, a resource read and a prompt got through
//! server-everything), each over stdio and Streamable HTTP. Runs when
//! TOOLWIRE_PEERS=1 or TOOLWIRE_PEERS_DIR is set (see tests/peers/install.sh); ignored
//! otherwise.
#![cfg(feature = "cli")]

use crate::support::cli;
use crate::support::gateway as support;
use crate::support::mcp;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use toolwire::{CallOptions, HttpConfig, McpClient, McpConfig, ProtocolMode};

/// A config of the three servers, `crash` of the tool server denied; its path.
fn write_config(peers: &mcp::Peers, folder: &Path) -> PathBuf {
    let config = json!({
        "mcpServers": {
            "everything": {"command": peers.path("TOOLWIRE_NODE"),
                           "args": [peers.path("TOOLWIRE_EVERYTHING_JS"), "stdio"]},
            "python": {"command": peers.path("TOOLWIRE_PYTHON"), "args": [peers.py_server(), "stdio"]},
            "tools": support::tool_server_entry(),
        },
        "toolwire": {"servers": {"tools": {"deny": ["crash"]}}},
    });
    let path = folder.join("claude_desktop_config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// Runs the Python host; its stdout and stderr, after checking it passed.
fn py_host(python: &Path, args: &[&str]) -> (String, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_gateway_client.py");
    let output = Command::new(python)
        .arg(script)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run the Python host");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success() && stdout.contains("PYGATEWAY PASSED"),
        "the Python host failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    (stdout, stderr)
}

/// `toolwire serve --http 127.0.0.1:0` on `config`; the child, its stderr and its URL.
fn serve_http(config: &Path) -> (cli::KillOnDrop, std::sync::mpsc::Receiver<String>, String) {
    serve_http_with(config, &[])
}

/// [`serve_http`] with more options (`--protocol legacy`).
pub(crate) fn serve_http_with(
    config: &Path,
    options: &[&str],
) -> (cli::KillOnDrop, std::sync::mpsc::Receiver<String>, String) {
    let mut args = options.to_vec();
    args.extend(["serve", "--config", config.to_str().unwrap()]);
    args.extend(["--http", "127.0.0.1:0"]);
    let mut command = cli::toolwire(&args);
    command.stdin(Stdio::null());
    let (child, lines) = cli::spawn_with_stderr_lines(command);
    // The servers join as they start: once all have, the gateway says what it serves.
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
    assert!(
        !seen.iter().any(|line| line.contains("left out")),
        "{seen:?}"
    );
    (child, lines, url)
}

pub(crate) fn stats_over_http(url: &str) -> Value {
    let client = McpClient::connect_http(
        HttpConfig::new(url),
        McpConfig::default().mode(ProtocolMode::Legacy),
    )
    .unwrap();
    let stats = client
        .request("toolwire/stats", json!({}), CallOptions::new())
        .unwrap();
    client.close().unwrap();
    stats
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_python_sdk_host_over_stdio() {
    let peers = mcp::peers("the_python_sdk_host_over_stdio");
    let folder = cli::scratch("gateway-py-stdio");
    let config = write_config(&peers, &folder);
    let bin = cli::bin();
    let (stdout, stderr) = py_host(
        &peers.path("TOOLWIRE_PYTHON"),
        &[
            "legacy",
            bin.to_str().unwrap(),
            "serve",
            "--config",
            config.to_str().unwrap(),
        ],
    );
    assert!(stdout.contains("protocol 2025-11-25"), "{stdout}");
    assert!(
        stdout.contains("ok: sampling request reached the host"),
        "{stdout}"
    );
    // The counters `toolwire serve` printed on exit: the cancelled call reached the backend.
    let python = stderr
        .lines()
        .find(|line| line.contains("python: forwarded"))
        .unwrap_or_else(|| panic!("no counters on stderr:\n{stderr}"));
    assert!(python.contains("cancelled 1"), "{python}");
    assert!(stderr.contains("tools: forwarded"), "{stderr}");
    assert!(stderr.contains("UNKNOWN_TOOL 1"), "{stderr}");
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_python_sdk_host_over_http() {
    let peers = mcp::peers("the_python_sdk_host_over_http");
    let folder = cli::scratch("gateway-py-http");
    let config = write_config(&peers, &folder);
    let (mut child, lines, url) = serve_http(&config);
    let (stdout, _) = py_host(&peers.path("TOOLWIRE_PYTHON"), &["legacy", &url]);
    assert!(stdout.contains("protocol 2025-11-25"), "{stdout}");
    let stats = stats_over_http(&url);
    assert_eq!(
        stats["backends"]["python"]["cancelled"],
        json!(1),
        "{stats}"
    );
    assert!(
        support::status_count(&stats, "everything", "OK") >= 2,
        "{stats}"
    );
    assert_eq!(
        support::status_count(&stats, "tools", "INVALID"),
        1,
        "{stats}"
    );
    cli::sigint(child.id());
    cli::read_until(&lines, |line| line.contains("python: forwarded"));
    assert_eq!(cli::wait_bounded(&mut child, cli::LIMIT), 0);
}

/// Runs the Inspector's CLI with `args`: whether it exited 0, its JSON answer (the first line
/// of its standard output) and everything it wrote, for messages.
fn inspector_run(peers: &mcp::Peers, args: &[&str]) -> (bool, Value, String) {
    let output = Command::new(peers.path("TOOLWIRE_NODE22"))
        .arg(peers.path("TOOLWIRE_INSPECTOR_JS"))
        .args(["--cli", "--format", "json"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run the Inspector");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let all = format!(
        "the Inspector ({}) on {args:?}:\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let first = stdout.lines().next().unwrap_or("");
    let answer =
        serde_json::from_str(first.trim()).unwrap_or_else(|error| panic!("{error}: {all}"));
    (output.status.success(), answer, all)
}

/// Runs the Inspector's CLI with `args`; its JSON answer, after checking it exited 0.
fn inspector(peers: &mcp::Peers, args: &[&str]) -> Value {
    let (succeeded, answer, all) = inspector_run(peers, args);
    assert!(succeeded, "failed: {all}");
    answer
}

fn exercise_inspector(peers: &mcp::Peers, target: &[&str]) {
    let run = |extra: &[&str]| {
        let args: Vec<&str> = target.iter().chain(extra).copied().collect();
        inspector(peers, &args)
    };
    let tools = run(&["--method", "tools/list"]);
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    for wanted in [
        "mcp__everything__echo",
        "mcp__python__echo",
        "mcp__tools__echo",
    ] {
        assert!(names.contains(&wanted), "{wanted}: {names:?}");
    }
    assert!(!names.contains(&"mcp__tools__crash"), "{names:?}");
    for (tool, expected) in [
        ("mcp__everything__echo", "Echo: hi"),
        ("mcp__python__echo", "echo: hi"),
        ("mcp__tools__echo", "hi"),
    ] {
        let echoed = run(&[
            "--method",
            "tools/call",
            "--tool-name",
            tool,
            "--tool-arg",
            "message=hi",
        ]);
        assert_eq!(echoed["result"]["content"][0]["text"], expected, "{echoed}");
    }
    let sum = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "mcp__tools__add",
        "--tool-args-json",
        r#"{"a":2,"b":3}"#,
    ]);
    assert_eq!(sum["result"]["structuredContent"]["sum"], 5.0, "{sum}");
    // A resource read through server-everything's template, under its own URI, and a prompt
    // got under its front name.
    let uri = "demo://resource/dynamic/text/1";
    let read = run(&["--method", "resources/read", "--uri", uri]);
    assert_eq!(read["result"]["contents"][0]["uri"], uri, "{read}");
    assert!(read["result"]["contents"][0]["text"].is_string(), "{read}");
    let prompt = run(&[
        "--method",
        "prompts/get",
        "--prompt-name",
        "mcp__everything__simple-prompt",
    ]);
    assert!(
        prompt["result"]["messages"][0]["content"]["text"].is_string(),
        "{prompt}"
    );
}

/// A script in `folder` that runs `toolwire serve --config CONFIG`: the Inspector takes the
/// command to start, and would read `serve --config` as its own options.
fn gateway_wrapper(folder: &Path, config: &Path) -> PathBuf {
    let wrapper = folder.join("gateway.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec '{}' serve --config '{}'\n",
            cli::bin().display(),
            config.display()
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&wrapper).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&wrapper, permissions).unwrap();
    wrapper
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_inspector_cli_host_over_stdio() {
    let peers = mcp::peers("the_inspector_cli_host_over_stdio");
    let folder = cli::scratch("gateway-inspector-stdio");
    let config = write_config(&peers, &folder);
    let wrapper = gateway_wrapper(&folder, &config);
    exercise_inspector(&peers, &[wrapper.to_str().unwrap()]);
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_inspector_cli_host_over_http() {
    let peers = mcp::peers("the_inspector_cli_host_over_http");
    let folder = cli::scratch("gateway-inspector-http");
    let config = write_config(&peers, &folder);
    let (mut child, lines, url) = serve_http(&config);
    exercise_inspector(&peers, &[&url]);
    cli::sigint(child.id());
    cli::read_until(&lines, |line| line.contains("everything: forwarded"));
    assert_eq!(cli::wait_bounded(&mut child, cli::LIMIT), 0);
}

/// The official filesystem server behind `toolwire serve` under the default policy (a result
/// limit of 16,384 characters), serving a folder with a 20,000-character file and a small
/// one: the config's path and the two files' paths.
fn filesystem_config(peers: &mcp::Peers, folder: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let data = folder.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let large = data.join("large.txt");
    let line = format!("{}\n", "x".repeat(99));
    std::fs::write(&large, line.repeat(200)).unwrap();
    let small = data.join("small.txt");
    std::fs::write(&small, "hello from the filesystem server\n").unwrap();
    // The server names the folder by its real path; so do the calls.
    let data = data.canonicalize().unwrap();
    let config = json!({
        "mcpServers": {
            "fs": {"command": peers.path("TOOLWIRE_NODE"),
                   "args": [peers.path("TOOLWIRE_FILESYSTEM_JS"), data]},
        },
    });
    let path = folder.join("filesystem.json");
    std::fs::write(&path, config.to_string()).unwrap();
    (path, data.join("large.txt"), data.join("small.txt"))
}

/// The front name of the filesystem server's text reader under the default namespace.
const READ_TEXT: &str = "mcp__fs__read_text_file";

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_python_sdk_accepts_a_result_over_the_limit() {
    let peers = mcp::peers("the_python_sdk_accepts_a_result_over_the_limit");
    let folder = cli::scratch("gateway-fs-python");
    let (config, large, small) = filesystem_config(&peers, &folder);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_read_large.py");
    let read = |file: &Path| {
        let output = Command::new(peers.path("TOOLWIRE_PYTHON"))
            .arg(&script)
            .args([READ_TEXT, file.to_str().unwrap()])
            .arg(cli::bin())
            .args(["serve", "--config", config.to_str().unwrap()])
            .stdin(Stdio::null())
            .output()
            .expect("run the Python host");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success() && stdout.contains("PYREAD ACCEPTED"),
            "the Python SDK refused the answer ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    };
    // Within the limit: a success with the structured content its output schema promises.
    let stdout = read(&small);
    assert!(stdout.contains("isError=False structured=True"), "{stdout}");
    // Over it: a tool error without structured content, saying why.
    let stdout = read(&large);
    assert!(stdout.contains("isError=True structured=False"), "{stdout}");
    assert!(stdout.contains("16384"), "{stdout}");
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_inspector_cli_accepts_a_result_over_the_limit() {
    let peers = mcp::peers("the_inspector_cli_accepts_a_result_over_the_limit");
    let folder = cli::scratch("gateway-fs-inspector");
    let (config, large, small) = filesystem_config(&peers, &folder);
    let wrapper = gateway_wrapper(&folder, &config);
    let read = |file: &Path| {
        let path = format!("path={}", file.display());
        inspector_run(
            &peers,
            &[
                wrapper.to_str().unwrap(),
                "--method",
                "tools/call",
                "--tool-name",
                READ_TEXT,
                "--tool-arg",
                &path,
            ],
        )
    };
    let (succeeded, answer, all) = read(&small);
    assert!(succeeded, "{all}");
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    assert!(
        answer["result"]["structuredContent"].is_object(),
        "{answer}"
    );
    // The Inspector shows the result, then exits non-zero for the tool's own error
    // (`tool_is_error`), not for an answer it refused.
    let (_, answer, all) = read(&large);
    assert!(all.contains("tool_is_error"), "{all}");
    assert!(!all.contains("output schema"), "{all}");
    assert_eq!(answer["result"]["isError"], json!(true), "{answer}");
    assert!(
        answer["result"].get("structuredContent").is_none(),
        "{answer}"
    );
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("16384"), "{answer}");
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_toolwire_cli_accepts_a_result_over_the_limit() {
    let peers = mcp::peers("the_toolwire_cli_accepts_a_result_over_the_limit");
    let folder = cli::scratch("gateway-fs-cli");
    let (config, large, small) = filesystem_config(&peers, &folder);
    let bin = cli::bin();
    let read = |file: &Path| {
        let path = format!("path={}", file.display());
        cli::run_args(&[
            "call",
            READ_TEXT,
            &path,
            "--json",
            "--",
            bin.to_str().unwrap(),
            "serve",
            "--config",
            config.to_str().unwrap(),
        ])
    };
    let within = read(&small).expect(0);
    let answer: Value = serde_json::from_str(&within.stdout).unwrap();
    assert_eq!(answer["isError"], json!(false), "{answer}");
    assert!(answer["structuredContent"].is_object(), "{answer}");
    // The tool's own failure (exit 1), not a refused answer (exit 4 or 5).
    let over = read(&large).expect(1);
    assert!(!over.stderr.contains("output schema"), "{}", over.stderr);
    let answer: Value = serde_json::from_str(&over.stdout).unwrap();
    assert_eq!(answer["isError"], json!(true), "{answer}");
    assert!(answer.get("structuredContent").is_none(), "{answer}");
    assert!(
        answer["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("16384"),
        "{answer}"
    );
}

/// The 2026-07-28 input-round tools of `examples/conformance_server` and what each answers
/// once the host has answered its requests (tests/peers/py_rounds_host.py fills each
/// elicited field with its own name and samples "Paris").
const ROUND_TOOLS: [&str; 5] = [
    "test_input_required_result_elicitation=Hello, name!",
    "test_input_required_result_sampling=The model answered: Paris",
    "test_input_required_result_list_roots=The client has 1 root(s)",
    "test_input_required_result_multiple_inputs=All three inputs received",
    "test_input_required_result_multi_round=name likes color",
];

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn a_modern_backends_input_rounds_reach_a_handshake_era_python_host_as_requests() {
    let peers =
        mcp::peers("a_modern_backends_input_rounds_reach_a_handshake_era_python_host_as_requests");
    let backend = crate::support::server::HttpExample::start(
        "conformance_server",
        &["--port", "0", "--until-eof"],
    );
    let folder = cli::scratch("gateway-py-rounds");
    let config = folder.join("config.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"conformance": {"url": backend.url}},
               "toolwire": {"namespace": "{tool}"}})
        .to_string(),
    )
    .unwrap();
    let (_gateway, _lines, url) = serve_http(&config);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_rounds_host.py");
    let output = Command::new(peers.path("TOOLWIRE_PYTHON"))
        .arg(script)
        .args(["legacy", &url])
        .args(ROUND_TOOLS)
        .stdin(Stdio::null())
        .output()
        .expect("run the Python host");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("PYROUNDS PASSED"),
        "the Python host failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    // The host spoke the handshake protocol and was asked with ordinary requests, each kind.
    assert!(stdout.contains("protocol 2025-11-25"), "{stdout}");
    for asked in ["elicitation/create", "sampling/createMessage", "roots/list"] {
        assert!(
            stdout.contains(&format!("asked: {asked}")),
            "{asked}: {stdout}"
        );
    }
}
