//! `toolwire serve` as one of several instances: `--state-key-file` (a bad file is a usage
//! error that never shows a key), `--instance-id` (checked before anything starts), the
//! load balancer's `/readyz` (ready once the backends have started), and SIGTERM, which
//! drains: the call in flight is answered, new connections are refused, and it exits 0.
#![cfg(feature = "cli")]

use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crossbeam_channel::bounded;
use serde_json::json;
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, Server, ServerConfig};
use toolwire::{HttpConfig, McpClient, McpConfig, ProtocolMode};

use crate::support::cli;
use crate::support::gateway as support;
use crate::support::server::exchange;

#[test]
fn a_bad_state_key_file_or_instance_id_is_a_usage_error_that_shows_no_key() {
    let folder = cli::scratch("serve-keys");
    let marker = folder.join("started");
    let config = folder.join("servers.json");
    let entry = json!({"command": "sh", "args": ["-c", format!("touch '{}'", marker.display())]});
    std::fs::write(&config, json!({"mcpServers": {"one": entry}}).to_string()).unwrap();
    let config = config.to_str().unwrap();
    let keys = folder.join("keys");
    let good = "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=";
    let short = "c2hvcnQta2V5LXRleHQ=";
    std::fs::write(&keys, format!("{good}\n{short}\n")).unwrap();
    let keys = keys.to_str().unwrap();
    let args = ["serve", "--config", config, "--http", "127.0.0.1:0"];
    let run = cli::run_args(&[&args[..], &["--state-key-file", keys]].concat()).expect(2);
    assert!(run.stderr.contains("--state-key-file"), "{}", run.stderr);
    assert!(run.stderr.contains("line 2"), "{}", run.stderr);
    assert!(run.stderr.contains("at least 32"), "{}", run.stderr);
    assert!(
        !run.stderr.contains(short) && !run.stderr.contains(good),
        "{}",
        run.stderr
    );
    let missing = folder.join("no-such-file");
    let missing = missing.to_str().unwrap();
    let run = cli::run_args(&[&args[..], &["--state-key-file", missing]].concat()).expect(2);
    assert!(run.stderr.contains("no-such-file"), "{}", run.stderr);
    let run = cli::run_args(&[&args[..], &["--instance-id", "not/ok"]].concat()).expect(2);
    assert!(run.stderr.contains("instance id"), "{}", run.stderr);
    assert!(!marker.exists(), "no backend was started");
}

#[test]
fn sigterm_drains_answering_the_call_in_flight_and_refusing_new_connections() {
    // The backend: an in-process HTTP server whose tool waits for the test's release.
    let backend = Server::new(ServerConfig::new("held", "1.0")).unwrap();
    let (started_tx, started) = bounded::<()>(1);
    let (release, released) = bounded::<()>(1);
    backend
        .add_tool(LocalTool::with_context(
            "hold",
            "Waits until the test lets it go.",
            json!({"type": "object"}),
            move |_, _| {
                let _ = started_tx.send(());
                let _ = released.recv_timeout(cli::LIMIT);
                Ok(CallToolResult::from_text("let go"))
            },
        ))
        .unwrap();
    let (_backend_http, backend_url) = support::http_backend(&backend);
    let folder = cli::scratch("serve-drain");
    let config = folder.join("servers.json");
    let servers = json!({"mcpServers": {"held": support::url_entry(&backend_url)}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let mut command = cli::toolwire(&[
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
        "--instance-id",
        "gw-1",
        "--drain-timeout",
        "60s",
    ]);
    command.stdin(Stdio::null());
    let (mut child, lines) = cli::spawn_with_stderr_lines(command);
    let seen = cli::read_until_each(&lines, &["listening on ", "toolwire: serving "]);
    let url = seen
        .iter()
        .find_map(|line| line.split("listening on ").nth(1))
        .unwrap()
        .trim()
        .to_owned();
    let authority = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let readyz = exchange(
        &url,
        &format!("GET /readyz HTTP/1.1\r\nHost: {authority}\r\n"),
        "",
    );
    assert_eq!(
        (readyz.status, readyz.body.as_str()),
        (200, r#"{"status":"ready"}"#)
    );
    let calling = url.clone();
    let call = std::thread::spawn(move || {
        // A handshake-era session (its GET stream, if any, is ended by the drain).
        let config = McpConfig::default().mode(ProtocolMode::Legacy);
        let client = McpClient::connect_http(HttpConfig::new(calling), config).unwrap();
        client
            .call_tool("mcp__held__hold", json!({}))
            .map(|result| result.text())
    });
    started
        .recv_timeout(cli::LIMIT)
        .expect("the call reached the backend");
    let began = Instant::now();
    cli::signal(child.id(), "TERM");
    cli::read_until(&lines, |line| line.contains("SIGTERM; draining"));
    assert!(
        support::eventually(cli::LIMIT, || TcpStream::connect(authority).is_err()),
        "new connections are refused while draining"
    );
    release.send(()).unwrap();
    assert_eq!(call.join().unwrap().unwrap(), "let go");
    let rest = cli::read_until(&lines, |line| line.contains("drained"));
    assert!(
        rest.iter()
            .any(|line| line.contains("every request was answered")),
        "{rest:?}"
    );
    assert_eq!(cli::wait_bounded(&mut child, cli::LIMIT), 0);
    assert!(
        began.elapsed() < Duration::from_secs(60),
        "within the grace"
    );
}

#[test]
fn readyz_is_ready_once_a_backend_serves_and_says_backends_otherwise() {
    let get_readyz = |gateway: &toolwire::gateway::Gateway| {
        let http = gateway.serve_http("127.0.0.1:0".parse().unwrap()).unwrap();
        let url = http.url();
        let head = format!("GET /readyz HTTP/1.1\r\nHost: {}\r\n", http.local_addr());
        let answer = exchange(&url, &head, "");
        (answer.status, answer.body)
    };
    let serving = support::gateway(&[("alpha", support::tool_server_entry())], "{}");
    assert_eq!(
        get_readyz(&serving),
        (200, r#"{"status":"ready"}"#.to_owned())
    );
    serving.close();
    // Closed, it is no longer ready.
    assert_eq!(
        get_readyz(&serving),
        (
            503,
            r#"{"reason":"backends","status":"unready"}"#.to_owned()
        )
    );
    // Every backend left out: nothing is served, so not ready either.
    let broken = support::gateway(&[("broken", json!({"command": "false"}))], "{}");
    assert_eq!(
        get_readyz(&broken),
        (
            503,
            r#"{"reason":"backends","status":"unready"}"#.to_owned()
        )
    );
}
