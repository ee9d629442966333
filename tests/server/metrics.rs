//! Prometheus metrics of a server (`ServerConfig::metrics`, `HttpServer::bind_metrics`): the
//! text parses as the exposition format, `mcp_server_operation_duration_seconds` is a
//! histogram with the conventions' buckets, counted per method, tool and `error.type`, and
//! label values stay bounded: a tool or method a client makes up makes no new value.

use crate::support::server as support;

use std::collections::BTreeMap;

use serde_json::{json, Value};
use toolwire::harness::LocalTool;
use toolwire::metrics::{Metrics, DURATION_BUCKETS};
use toolwire::server::{CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig};

use support::{authority, exchange, memory_client, RawResponse};

/// One sample: its name, its labels, its value.
type Sample = (String, BTreeMap<String, String>, f64);

/// Parses the text format strictly: `# HELP`/`# TYPE` lines, then `name{k="v",…} value`
/// lines with escaped label values. Panics on anything else.
fn parse(text: &str) -> (BTreeMap<String, String>, Vec<Sample>) {
    let mut types = BTreeMap::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            assert!(
                types.insert(name.to_owned(), kind.to_owned()).is_none(),
                "two TYPE lines for {name}"
            );
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        assert!(
            !line.is_empty() && !line.starts_with('#'),
            "unexpected line {line:?}"
        );
        let name_end = line.find(['{', ' ']).expect("a name");
        let name = &line[..name_end];
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name {name:?}"
        );
        let mut labels = BTreeMap::new();
        let mut rest = &line[name_end..];
        if let Some(inner) = rest.strip_prefix('{') {
            let mut chars = inner.char_indices().peekable();
            let mut end = None;
            while let Some((at, c)) = chars.next() {
                if c == '}' {
                    end = Some(at);
                    break;
                }
                let key_start = at;
                let mut key_end = at;
                for (at, c) in chars.by_ref() {
                    if c == '=' {
                        key_end = at;
                        break;
                    }
                }
                let key = inner[key_start..key_end].to_owned();
                assert_eq!(
                    chars.next().map(|(_, c)| c),
                    Some('"'),
                    "label {key} unquoted"
                );
                let mut value = String::new();
                loop {
                    match chars.next().expect("an unterminated label value").1 {
                        '\\' => match chars.next().expect("an escape").1 {
                            'n' => value.push('\n'),
                            c @ ('\\' | '"') => value.push(c),
                            c => panic!("bad escape \\{c}"),
                        },
                        '"' => break,
                        c => value.push(c),
                    }
                }
                labels.insert(key, value);
                if let Some((_, ',')) = chars.peek() {
                    chars.next();
                }
            }
            rest = &inner[end.expect("a closing brace") + 1..];
        }
        let value = rest.trim_start_matches(' ');
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            value => value
                .parse()
                .unwrap_or_else(|_| panic!("bad value in {line:?}")),
        };
        samples.push((name.to_owned(), labels, value));
    }
    (types, samples)
}

fn scrape(url: &str) -> RawResponse {
    let head = format!("GET /metrics HTTP/1.1\r\nHost: {}\r\n", authority(url));
    exchange(url, &head, "")
}

fn served() -> (Server, Metrics) {
    let metrics = Metrics::new();
    let server = Server::new(ServerConfig::new("metered", "1").metrics(metrics.clone())).unwrap();
    server
        .add_tool(LocalTool::with_context(
            "add",
            "Adds.",
            json!({"type": "object"}),
            |_, arguments| {
                let sum =
                    arguments["a"].as_i64().unwrap_or(0) + arguments["b"].as_i64().unwrap_or(0);
                Ok(CallToolResult::from_text(sum.to_string()))
            },
        ))
        .unwrap();
    server
        .add_tool(LocalTool::with_context(
            "fail",
            "Fails.",
            json!({"type": "object"}),
            |_, _| Ok(CallToolResult::error("no")),
        ))
        .unwrap();
    (server, metrics)
}

fn call(client: &toolwire::Client, method: &str, params: Value) -> Result<Value, toolwire::Error> {
    client.call(method, params)
}

/// The samples of one series of the duration histogram, by suffix and `le`.
fn series<'a>(samples: &'a [Sample], labels: &[(&str, &str)]) -> Vec<&'a Sample> {
    samples
        .iter()
        .filter(|(name, _, _)| name.starts_with("mcp_server_operation_duration_seconds"))
        .filter(|(_, have, _)| {
            let mut have = have.clone();
            have.remove("le");
            have.len() == labels.len()
                && labels
                    .iter()
                    .all(|(key, value)| have.get(*key).map(String::as_str) == Some(*value))
        })
        .collect()
}

#[test]
fn the_listener_serves_each_answer_as_a_histogram_by_method_tool_and_error_type() {
    let (server, _metrics) = served();
    let (client, _connection) = memory_client(&server);
    for n in 0..3 {
        let result = call(
            &client,
            "tools/call",
            json!({"name": "add", "arguments": {"a": n, "b": 1}}),
        )
        .unwrap();
        assert_eq!(result["content"][0]["text"], (n + 1).to_string());
    }
    let failed = call(&client, "tools/call", json!({"name": "fail"})).unwrap();
    assert_eq!(failed["isError"], true);
    assert!(call(&client, "made/up", Value::Null).is_err());
    call(&client, "ping", Value::Null).unwrap();

    let listener =
        HttpServer::bind_metrics(&server, HttpServerConfig::new().path("/metrics")).unwrap();
    let url = format!("http://{}/metrics", listener.local_addr());
    let response = scrape(&url);
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let (types, samples) = parse(&response.body);
    assert_eq!(types["mcp_server_operation_duration_seconds"], "histogram");

    let add = series(
        &samples,
        &[
            ("mcp_method_name", "tools/call"),
            ("gen_ai_tool_name", "add"),
        ],
    );
    let buckets: Vec<(f64, f64)> = add
        .iter()
        .filter(|(name, _, _)| name.ends_with("_bucket"))
        .map(|(_, labels, value)| {
            let le = match labels["le"].as_str() {
                "+Inf" => f64::INFINITY,
                le => le.parse().unwrap(),
            };
            (le, *value)
        })
        .collect();
    let bounds: Vec<f64> = buckets.iter().map(|(le, _)| *le).collect();
    let mut expected = DURATION_BUCKETS.to_vec();
    expected.push(f64::INFINITY);
    assert_eq!(bounds, expected, "the conventions' buckets, then +Inf");
    assert!(
        buckets.windows(2).all(|pair| pair[0].1 <= pair[1].1),
        "buckets are cumulative: {buckets:?}"
    );
    let value = |suffix: &str| {
        add.iter()
            .find(|(name, _, _)| name.ends_with(suffix))
            .map(|(_, _, value)| *value)
            .unwrap_or_else(|| panic!("no {suffix}"))
    };
    assert_eq!(value("_count"), 3.0);
    assert_eq!(buckets.last().unwrap().1, 3.0, "+Inf is the count");
    assert!(value("_sum") >= 0.0);

    let failed = series(
        &samples,
        &[
            ("mcp_method_name", "tools/call"),
            ("gen_ai_tool_name", "fail"),
            ("error_type", "tool_error"),
        ],
    );
    assert!(
        failed
            .iter()
            .any(|(name, _, value)| name.ends_with("_count") && *value == 1.0),
        "{failed:?}"
    );
    let other = series(
        &samples,
        &[("mcp_method_name", "_OTHER"), ("error_type", "-32601")],
    );
    assert!(
        other
            .iter()
            .any(|(name, _, value)| name.ends_with("_count") && *value == 1.0),
        "{other:?}"
    );
    assert!(
        !response.body.contains("made/up"),
        "a method the server does not route is a label value"
    );
    let ping = series(&samples, &[("mcp_method_name", "ping")]);
    assert!(ping
        .iter()
        .any(|(name, _, value)| name.ends_with("_count") && *value == 1.0));
    listener.close().unwrap();
}

#[test]
fn a_tool_name_the_catalog_does_not_have_makes_no_label_value() {
    let (server, metrics) = served();
    let (client, _connection) = memory_client(&server);
    call(
        &client,
        "tools/call",
        json!({"name": "add", "arguments": {}}),
    )
    .unwrap();
    let before = parse(&metrics.render()).1.len();
    for n in 0..50 {
        let name = format!("invented-{n}");
        let result = call(&client, "tools/call", json!({"name": name})).unwrap();
        assert_eq!(result["isError"], true);
    }
    let text = metrics.render();
    assert!(
        !text.contains("invented"),
        "an unknown tool's name became a label value"
    );
    let (_, samples) = parse(&text);
    // One new series for all fifty: tools/call with error_type tool_error and no tool.
    let unknown = series(
        &samples,
        &[
            ("mcp_method_name", "tools/call"),
            ("error_type", "tool_error"),
        ],
    );
    assert!(
        unknown
            .iter()
            .any(|(name, _, value)| name.ends_with("_count") && *value == 50.0),
        "{unknown:?}"
    );
    assert_eq!(samples.len(), before + DURATION_BUCKETS.len() + 3);
}

#[test]
fn the_listener_answers_get_at_its_path_only_and_checks_the_host() {
    let (server, _metrics) = served();
    let listener =
        HttpServer::bind_metrics(&server, HttpServerConfig::new().path("/metrics")).unwrap();
    let url = format!("http://{}/metrics", listener.local_addr());
    let host = authority(&url).to_owned();
    let post = exchange(
        &url,
        &format!("POST /metrics HTTP/1.1\r\nHost: {host}\r\n"),
        "{}",
    );
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET"));
    let mcp = exchange(&url, &format!("GET /mcp HTTP/1.1\r\nHost: {host}\r\n"), "");
    assert_eq!(mcp.status, 404);
    let rebound = exchange(
        &url,
        "GET /metrics HTTP/1.1\r\nHost: evil.example.com\r\n",
        "",
    );
    assert_eq!(rebound.status, 421);
    listener.close().unwrap();
    let plain = Server::new(ServerConfig::new("unmetered", "1")).unwrap();
    let refused = HttpServer::bind_metrics(&plain, HttpServerConfig::new());
    assert!(
        matches!(refused, Err(toolwire::Error::Config(_))),
        "{refused:?}"
    );
}
