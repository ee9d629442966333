//! `toolwire serve --metrics ADDR`: its `/metrics` counts the front server's answers and the
//! harness's statuses, and a real Prometheus server (the distribution's `prometheus` package,
//! which `.ci/run` installs) scraping it counts, after N calls through the gateway, at least N
//! `tools/call` answers in `mcp_server_operation_duration_seconds_count`.
#![cfg(feature = "cli")]

use crate::support::gateway as support;
use crate::support::server::{authority, exchange};
use crate::support::{cli, eventually, mcp, LONG};

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};
use toolwire::{HttpConfig, McpClient, McpConfig};

/// The `prometheus` program: `TOOLWIRE_PROMETHEUS`, else the first on `PATH`.
fn prometheus() -> PathBuf {
    crate::support::distribution_program("prometheus", "TOOLWIRE_PROMETHEUS")
}

/// A Prometheus child, ended when dropped.
struct Scraper(Child);

impl Drop for Scraper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first line's text after `marker`.
fn after(lines: &[String], marker: &str) -> String {
    lines
        .iter()
        .find_map(|line| line.split(marker).nth(1))
        .unwrap_or_else(|| panic!("no {marker:?} in {lines:?}"))
        .trim()
        .to_owned()
}

/// What Prometheus's query API answers for `query`: the sum of the vector's values, if any.
fn query(base: &str, query: &str) -> Option<f64> {
    let encoded: String = query
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (byte as char).to_string()
            }
            byte => format!("%{byte:02X}"),
        })
        .collect();
    let head = format!(
        "GET /api/v1/query?query={encoded} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        authority(base)
    );
    // Prometheus may not listen yet.
    TcpStream::connect(authority(base)).ok()?;
    let response = exchange(base, &head, "");
    if response.status != 200 {
        return None;
    }
    let body: Value = serde_json::from_str(&response.body).ok()?;
    let results = body["data"]["result"].as_array()?;
    if results.is_empty() {
        return None;
    }
    results
        .iter()
        .map(|sample| sample["value"][1].as_str()?.parse::<f64>().ok())
        .sum()
}

/// Starts `toolwire serve` over HTTP with metrics: the child, its stderr, the MCP URL and
/// the metrics URL.
fn serve_with_metrics(
    folder: &std::path::Path,
) -> (
    cli::KillOnDrop,
    std::sync::mpsc::Receiver<String>,
    String,
    String,
) {
    let config = folder.join("servers.json");
    let servers = json!({"mcpServers": {"alpha": support::tool_server_entry()}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let mut command = cli::toolwire(&[
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
    ]);
    command.stdin(Stdio::null());
    let (child, lines) = cli::spawn_with_stderr_lines(command);
    let seen = cli::read_until(&lines, |line| line.contains("listening on "));
    let metrics_url = after(&seen, "metrics at ");
    let url = after(&seen, "listening on ");
    (child, lines, url, metrics_url)
}

#[test]
fn serve_counts_the_front_answers_and_the_harness_statuses() {
    let folder = cli::scratch("gateway-metrics");
    let (mut child, _lines, url, metrics_url) = serve_with_metrics(&folder);
    let client = McpClient::connect_http(HttpConfig::new(url), McpConfig::default()).unwrap();
    let echoed = client
        .call_tool("mcp__alpha__echo", json!({"message": "secret-argument"}))
        .unwrap();
    assert_eq!(echoed.text(), "secret-argument");
    let unknown = client.call_tool("mcp__alpha__made_up", json!({})).unwrap();
    assert!(unknown.is_error);
    client.close().unwrap();
    let head = format!(
        "GET /metrics HTTP/1.1\r\nHost: {}\r\n",
        authority(&metrics_url)
    );
    let text = exchange(&metrics_url, &head, "").body;
    let has = |needle: &str| text.lines().any(|line| line.starts_with(needle));
    assert!(
        has(
            r#"mcp_server_operation_duration_seconds_count{gen_ai_tool_name="mcp__alpha__echo",mcp_method_name="tools/call"} 1"#
        ),
        "{text}"
    );
    assert!(
        has(
            r#"mcp_server_operation_duration_seconds_count{error_type="tool_error",mcp_method_name="tools/call"} 1"#
        ),
        "{text}"
    );
    assert!(
        has(r#"toolwire_harness_calls_total{gen_ai_tool_name="mcp__alpha__echo",status="OK"} 1"#),
        "{text}"
    );
    assert!(
        has(r#"toolwire_harness_calls_total{status="UNKNOWN_TOOL"} 1"#),
        "{text}"
    );
    assert!(
        !text.contains("made_up") && !text.contains("secret-argument"),
        "{text}"
    );
    cli::sigint(child.id());
    assert_eq!(cli::wait_bounded(&mut child, cli::LIMIT), 0);
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh), and prometheus"]
fn prometheus_scrapes_the_operation_durations_of_toolwire_serve() {
    let _peers = mcp::peers("prometheus_scrapes_the_operation_durations_of_toolwire_serve");
    let program = prometheus();
    let folder = cli::scratch("gateway-prometheus");
    let (mut child, _lines, url, metrics_url) = serve_with_metrics(&folder);
    let target = authority(&metrics_url).to_owned();

    // A port for Prometheus's own API, free a moment ago.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let settings = folder.join("prometheus.yml");
    std::fs::write(
        &settings,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: toolwire\n    metrics_path: /metrics\n    \
             static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let api = format!("http://127.0.0.1:{port}");
    let log = folder.join("prometheus.log");
    let scraper = Scraper(
        Command::new(&program)
            .arg(format!("--config.file={}", settings.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                folder.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", program.display())),
    );

    const N: usize = 5;
    let client = McpClient::connect_http(HttpConfig::new(url), McpConfig::default()).unwrap();
    for n in 0..N {
        let result = client
            .call_tool("mcp__alpha__echo", json!({"message": format!("call {n}")}))
            .unwrap();
        assert_eq!(result.text(), format!("call {n}"));
    }
    client.close().unwrap();

    let wanted = r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"}"#;
    let mut last = None;
    let counted = eventually(LONG, || {
        last = query(&api, wanted);
        last.is_some_and(|count| count >= N as f64)
    });
    assert!(
        counted,
        "Prometheus did not count {N} tools/call answers in time; last answer {last:?}; its \
         log:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    // Every tools/call series names the tool the catalog has, and no argument leaked.
    let tool = query(
        &api,
        r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="mcp__alpha__echo"}"#,
    );
    assert!(tool.is_some_and(|count| count >= N as f64), "{tool:?}");
    drop(scraper);
    cli::sigint(child.id());
    assert_eq!(cli::wait_bounded(&mut child, cli::LIMIT), 0);
}
