//! One trace across three processes (issue #26): a `toolwire call` through `toolwire serve`
//! to `examples/tool_server`, each configured only by the standard `OTEL_*` variables (the
//! gateway passes them to the backend it starts; the entry names its own service), exports
//! spans that make one trace: the CLI's CLIENT span, the gateway's SERVER span, the
//! harness's `execute_tool`, the gateway's CLIENT span to the backend, and the backend's
//! SERVER span, every parent link resolved, and no argument value or header secret sent.
//!
//! Hermetic here with a collector of ours reading http/json; with the official protobuf
//! definitions (`opentelemetry-proto`, tests/peers/otlp_receiver.py) in the peer tests,
//! which also check that the official Python SDK's trace context is continued.
#![cfg(feature = "cli")]

use crate::support::cli::{self, KillOnDrop};
use crate::support::http_fake::FakeServer;
use crate::support::{eventually, mcp, LONG};

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use serde_json::{json, Value};

const ARGUMENT: &str = "argument-value-7f3a";
const SECRET: &str = "collector-secret-91c2";

/// One exported span, whichever encoding carried it.
#[derive(Debug, Clone)]
struct Span {
    service: String,
    trace_id: String,
    span_id: String,
    parent: String,
    name: String,
    kind: u64,
    attributes: HashMap<String, Value>,
}

impl Span {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }
}

/// The spans of OTLP/JSON export bodies.
fn spans_of_json(bodies: &[Value]) -> Vec<Span> {
    let mut spans = Vec::new();
    let value = |any: &Value| {
        any.get("stringValue")
            .or_else(|| any.get("intValue"))
            .or_else(|| any.get("boolValue"))
            .cloned()
            .unwrap_or(Value::Null)
    };
    for body in bodies {
        for resource in body["resourceSpans"].as_array().into_iter().flatten() {
            let service = resource["resource"]["attributes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|kv| kv["key"] == "service.name")
                .map(|kv| value(&kv["value"]))
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                for span in scope["spans"].as_array().into_iter().flatten() {
                    spans.push(Span {
                        service: service.clone(),
                        trace_id: span["traceId"].as_str().unwrap_or("").to_owned(),
                        span_id: span["spanId"].as_str().unwrap_or("").to_owned(),
                        parent: span["parentSpanId"].as_str().unwrap_or("").to_owned(),
                        name: span["name"].as_str().unwrap_or("").to_owned(),
                        kind: span["kind"].as_u64().unwrap_or(0),
                        attributes: span["attributes"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|kv| (kv["key"].as_str().unwrap().to_owned(), value(&kv["value"])))
                            .collect(),
                    });
                }
            }
        }
    }
    spans
}

/// The spans the Python receiver printed.
fn spans_of_receiver(lines: &[Value]) -> Vec<Span> {
    lines
        .iter()
        .filter_map(|line| line.get("span"))
        .map(|span| Span {
            service: span["service"].as_str().unwrap_or("").to_owned(),
            trace_id: span["trace_id"].as_str().unwrap().to_owned(),
            span_id: span["span_id"].as_str().unwrap().to_owned(),
            parent: span["parent_span_id"].as_str().unwrap().to_owned(),
            name: span["name"].as_str().unwrap().to_owned(),
            kind: span["kind"].as_u64().unwrap(),
            attributes: span["attributes"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        })
        .collect()
}

/// The OTEL_* variables every process of the chain gets, for the collector at `endpoint`.
fn otel_env(command: &mut Command, endpoint: &str, service: &str, protocol: &str) {
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        .env("OTEL_EXPORTER_OTLP_HEADERS", format!("x-api-key={SECRET}"))
        .env("OTEL_SERVICE_NAME", service)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100");
}

/// Starts `toolwire serve` over HTTP in front of tool_server (its entry names the service
/// `backend`), with `policy` when given, exporting with `protocol`: the child and its URL.
fn start_serve(
    folder: &std::path::Path,
    endpoint: &str,
    protocol: &str,
    policy: Option<&str>,
) -> (KillOnDrop, String) {
    let config = folder.join("servers.json");
    let mut entry = crate::support::gateway::tool_server_entry();
    entry["env"] = json!({"OTEL_SERVICE_NAME": "backend"});
    std::fs::write(&config, json!({"mcpServers": {"alpha": entry}}).to_string()).unwrap();
    let mut args = vec![
        "serve".to_owned(),
        "--config".to_owned(),
        config.to_str().unwrap().to_owned(),
        "--http".to_owned(),
        "127.0.0.1:0".to_owned(),
    ];
    if let Some(policy) = policy {
        let file = folder.join("policy.json");
        std::fs::write(&file, policy).unwrap();
        args.extend(["--policy".to_owned(), file.to_str().unwrap().to_owned()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut serve = cli::toolwire(&args);
    otel_env(&mut serve, endpoint, "gateway", protocol);
    let (child, lines) = cli::spawn_with_stderr_lines(serve);
    let seen = cli::read_until(&lines, |line| line.contains("listening on "));
    let url = seen
        .iter()
        .find_map(|line| line.split("listening on ").nth(1))
        .unwrap()
        .trim()
        .to_owned();
    (child, url)
}

/// One `toolwire call` of the echo tool through the gateway at `url`, exporting with
/// `protocol`.
fn call_through(url: &str, endpoint: &str, protocol: &str) -> cli::Run {
    call_with(url, endpoint, protocol, &[])
}

/// [`call_through`] with more arguments for the CLI.
fn call_with(url: &str, endpoint: &str, protocol: &str, more: &[&str]) -> cli::Run {
    let message = format!("message={ARGUMENT}");
    let mut args = vec!["call", "mcp__alpha__echo", &message, "--url", url];
    args.extend_from_slice(more);
    let mut call = cli::toolwire(&args);
    otel_env(&mut call, endpoint, "cli", protocol);
    cli::run(call)
}

/// Runs the chain: the gateway, and one call through it that succeeds (`more`: the CLI's
/// further arguments). The gateway (and its
/// backend) export with `gateway_protocol`, the CLI with `cli_protocol`.
fn run_chain(
    folder: &std::path::Path,
    endpoint: &str,
    gateway_protocol: &str,
    cli_protocol: &str,
    more: &[&str],
) -> KillOnDrop {
    let (child, url) = start_serve(folder, endpoint, gateway_protocol, None);
    let run = call_with(&url, endpoint, cli_protocol, more).expect(0);
    assert!(run.stdout.contains(ARGUMENT), "{}", run.stdout);
    child
}

/// The trace of the CLI's `tools/call`, once its spans from all three services are in.
fn chain_trace(spans: &[Span]) -> Option<Vec<Span>> {
    let root = spans.iter().find(|span| {
        span.service == "cli" && span.name == "tools/call mcp__alpha__echo" && span.kind == 3
    })?;
    let trace: Vec<Span> = spans
        .iter()
        .filter(|span| span.trace_id == root.trace_id)
        .cloned()
        .collect();
    let backend = trace
        .iter()
        .any(|span| span.service == "backend" && span.kind == 2);
    let resolved = trace
        .iter()
        .all(|span| span.parent.is_empty() || trace.iter().any(|p| p.span_id == span.parent));
    (backend && resolved && trace.len() >= 5).then_some(trace)
}

/// What every run of the chain must show.
fn check_chain(trace: &[Span]) {
    let services: BTreeSet<&str> = trace.iter().map(|span| span.service.as_str()).collect();
    assert_eq!(
        services,
        BTreeSet::from(["backend", "cli", "gateway"]),
        "{trace:#?}"
    );
    let by_id = |id: &str| trace.iter().find(|span| span.span_id == id).unwrap();
    let roots: Vec<&Span> = trace.iter().filter(|span| span.parent.is_empty()).collect();
    assert_eq!(roots.len(), 1, "one root: {trace:#?}");
    let root = roots[0];
    assert_eq!((root.service.as_str(), root.kind), ("cli", 3));
    // From the backend's SERVER span up to the CLI's CLIENT span, every hop as it should be.
    let backend = trace
        .iter()
        .find(|span| span.service == "backend" && span.kind == 2)
        .unwrap();
    assert_eq!(backend.name, "tools/call echo");
    assert_eq!(backend.attr("gen_ai.tool.name"), Some("echo"));
    let gateway_client = by_id(&backend.parent);
    assert_eq!(
        (gateway_client.service.as_str(), gateway_client.kind),
        ("gateway", 3)
    );
    assert_eq!(gateway_client.name, "tools/call echo");
    let execute = by_id(&gateway_client.parent);
    assert_eq!(
        (
            execute.service.as_str(),
            execute.kind,
            execute.name.as_str()
        ),
        ("gateway", 1, "execute_tool mcp__alpha__echo")
    );
    assert_eq!(execute.attr("gen_ai.operation.name"), Some("execute_tool"));
    let gateway_server = by_id(&execute.parent);
    assert_eq!(
        (gateway_server.service.as_str(), gateway_server.kind),
        ("gateway", 2)
    );
    assert_eq!(gateway_server.name, "tools/call mcp__alpha__echo");
    assert_eq!(gateway_server.parent, root.span_id);
    for span in [root, gateway_server, gateway_client, backend] {
        assert_eq!(span.attr("mcp.method.name"), Some("tools/call"), "{span:?}");
        assert!(span.attr("jsonrpc.request.id").is_some(), "{span:?}");
        assert!(span.attr("mcp.protocol.version").is_some(), "{span:?}");
        assert!(span.attr("error.type").is_none(), "{span:?}");
    }
    // Nothing of the call's arguments or the exporter's credentials in any span.
    for span in trace {
        let text = format!("{span:?}");
        assert!(!text.contains(ARGUMENT) && !text.contains(SECRET), "{text}");
    }
}

#[test]
fn one_call_through_serve_is_one_trace_of_three_services() {
    let folder = cli::scratch("gateway-traces");
    let collector = FakeServer::start(|_req, reply| reply.json(200, &json!({}), &[]));
    let endpoint = collector.url.trim_end_matches("/mcp").to_owned();
    // The handshake era over HTTP: a session, whose id both ends of the hop record.
    let serve = run_chain(
        &folder,
        &endpoint,
        "http/json",
        "http/json",
        &["--protocol", "legacy"],
    );
    let mut trace = None;
    let complete = eventually(LONG, || {
        let bodies: Vec<Value> = collector.requests().iter().map(|r| r.json()).collect();
        trace = chain_trace(&spans_of_json(&bodies));
        trace.is_some()
    });
    drop(serve);
    let requests = collector.requests();
    assert!(
        complete,
        "no complete trace; got {:#?}",
        spans_of_json(&requests.iter().map(|r| r.json()).collect::<Vec<_>>())
    );
    let trace = trace.unwrap();
    check_chain(&trace);
    let session = |service: &str, kind: u64| {
        trace
            .iter()
            .find(|span| span.service == service && span.kind == kind)
            .and_then(|span| span.attr("mcp.session.id").map(str::to_owned))
    };
    let (client_session, server_session) = (session("cli", 3), session("gateway", 2));
    assert!(client_session.is_some(), "{trace:#?}");
    assert_eq!(client_session, server_session);
    for request in &requests {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/v1/traces");
        assert_eq!(request.header("content-type"), Some("application/json"));
        assert_eq!(request.header("x-api-key"), Some(SECRET));
        assert!(!request.body.contains(ARGUMENT) && !request.body.contains(SECRET));
    }
}

#[test]
fn a_refusal_by_the_gateway_is_recorded_by_its_status_word() {
    let folder = cli::scratch("gateway-traces-budget");
    let collector = FakeServer::start(|_req, reply| reply.json(200, &json!({}), &[]));
    let endpoint = collector.url.trim_end_matches("/mcp").to_owned();
    let (serve, url) = start_serve(
        &folder,
        &endpoint,
        "http/json",
        Some(r#"{"calls_per_caller": 1, "budget_window": "1h"}"#),
    );
    call_through(&url, &endpoint, "http/json").expect(0);
    // The same caller (this address) again: the harness refuses, BUDGET.
    let refused = call_through(&url, &endpoint, "http/json");
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stdout.contains("BUDGET") || refused.stderr.contains("BUDGET"));
    let mut spans = Vec::new();
    let found = eventually(LONG, || {
        let bodies: Vec<Value> = collector.requests().iter().map(|r| r.json()).collect();
        spans = spans_of_json(&bodies);
        spans
            .iter()
            .filter(|span| span.name == "execute_tool mcp__alpha__echo")
            .count()
            == 2
            && spans
                .iter()
                .filter(|span| span.service == "gateway" && span.kind == 2)
                .any(|span| span.attr("error.type").is_some())
            // The backend's span of the first call (it exports on its own schedule).
            && spans
                .iter()
                .any(|span| span.service == "backend" && span.name == "tools/call echo")
    });
    drop(serve);
    assert!(found, "{spans:#?}");
    let refused_execute = spans
        .iter()
        .find(|span| {
            span.name == "execute_tool mcp__alpha__echo" && span.attr("error.type").is_some()
        })
        .unwrap();
    assert_eq!(refused_execute.attr("error.type"), Some("BUDGET"));
    let front = spans
        .iter()
        .find(|span| span.span_id == refused_execute.parent)
        .unwrap();
    assert_eq!((front.service.as_str(), front.kind), ("gateway", 2));
    // The front client reads a tool's error result; the gateway's span says why.
    assert_eq!(front.attr("error.type"), Some("BUDGET"));
    let client = spans
        .iter()
        .find(|span| span.span_id == front.parent)
        .unwrap();
    assert_eq!((client.service.as_str(), client.kind), ("cli", 3));
    assert_eq!(client.attr("error.type"), Some("tool_error"));
    // No request reached the backend for the refused call.
    let backend_calls = spans
        .iter()
        .filter(|span| span.service == "backend" && span.name == "tools/call echo")
        .count();
    assert_eq!(backend_calls, 1);
}

#[test]
fn a_stdio_server_continues_the_context_in_meta_and_flushes_at_exit() {
    let collector = FakeServer::start(|_req, reply| reply.json(200, &json!({}), &[]));
    let endpoint = collector.url.trim_end_matches("/mcp").to_owned();
    // A minute's schedule delay: only the flush at exit sends the spans in time.
    let config = toolwire::StdioConfig::new(crate::support::tool_server_path())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env("OTEL_SERVICE_NAME", "stdio-server")
        .env("OTEL_BSP_SCHEDULE_DELAY", "60000");
    let client =
        toolwire::McpClient::connect_stdio(config, toolwire::McpConfig::default()).unwrap();
    let (trace_id, span_id) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let call = |meta: Value| {
        let params = json!({"name": "echo", "arguments": {"message": ARGUMENT}, "_meta": meta});
        client
            .request("tools/call", params, toolwire::CallOptions::new())
            .unwrap()
    };
    call(json!({"traceparent": format!("00-{trace_id}-{span_id}-01"), "tracestate": "vendor=x"}));
    // A malformed parent (uppercase hex) is no parent: a trace of its own.
    call(json!({"traceparent": format!("00-{}-{span_id}-01", trace_id.to_uppercase())}));
    client.close().unwrap();
    let mut spans = Vec::new();
    let arrived = eventually(LONG, || {
        let bodies: Vec<Value> = collector.requests().iter().map(|r| r.json()).collect();
        spans = spans_of_json(&bodies);
        spans
            .iter()
            .filter(|span| span.name == "tools/call echo")
            .count()
            == 2
    });
    assert!(arrived, "{spans:#?}");
    let calls: Vec<&Span> = spans
        .iter()
        .filter(|span| span.name == "tools/call echo")
        .collect();
    let continued = calls.iter().find(|span| span.parent == span_id).unwrap();
    assert_eq!(continued.trace_id, trace_id);
    assert_eq!(continued.service, "stdio-server");
    assert_eq!(continued.kind, 2);
    let fresh = calls.iter().find(|span| span.parent.is_empty()).unwrap();
    assert_ne!(fresh.trace_id, trace_id);
    let bodies: Vec<Value> = collector.requests().iter().map(|r| r.json()).collect();
    let text = serde_json::to_string(&bodies).unwrap();
    assert!(text.contains("\"traceState\":\"vendor=x\""), "{text}");
    assert!(!text.contains(ARGUMENT));
}

/// tests/peers/otlp_receiver.py on the otel venv's python: the child and its stdout lines.
fn receiver(peers: &mcp::Peers) -> (KillOnDrop, mpsc::Receiver<Value>, String) {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/otlp_receiver.py");
    let mut child = Command::new(peers.path("TOOLWIRE_OTEL_PYTHON"))
        .arg(script)
        .args(["--header", &format!("x-api-key={SECRET}")])
        .args(["--forbid", ARGUMENT, "--forbid", SECRET])
        .args(["--forbid", "py-argument-value"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the OTLP receiver");
    let stdout = child.stdout.take().unwrap();
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender
                .send(serde_json::from_str::<Value>(&line).unwrap())
                .is_err()
            {
                return;
            }
        }
    });
    let first = lines.recv_timeout(LONG).expect("the receiver's port");
    let port = first["listening"].as_u64().expect("a port");
    (KillOnDrop(child), lines, format!("http://127.0.0.1:{port}"))
}

/// Drains what the receiver printed so far into `seen`.
fn gather(lines: &mpsc::Receiver<Value>, seen: &mut Vec<Value>) {
    while let Ok(line) = lines.try_recv() {
        seen.push(line);
    }
}

/// Every export the receiver took: decoded, with the expected header, nothing forbidden.
fn check_requests(seen: &[Value]) -> BTreeSet<String> {
    let requests: Vec<&Value> = seen.iter().filter_map(|line| line.get("request")).collect();
    assert!(!requests.is_empty());
    for request in &requests {
        assert!(request.get("error").is_none(), "{request}");
        assert_eq!(request["header_ok"], true, "{request}");
        assert_eq!(request["forbidden"], json!([]), "{request}");
    }
    requests
        .iter()
        .map(|r| r["content_type"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_official_otlp_definitions_decode_one_trace_of_three_services() {
    let peers = mcp::peers("the_official_otlp_definitions_decode_one_trace_of_three_services");
    let (receiver_child, lines, endpoint) = receiver(&peers);
    let folder = cli::scratch("gateway-traces-peer");
    // The gateway and the backend send protobuf (the default), the CLI JSON.
    let serve = run_chain(&folder, &endpoint, "http/protobuf", "http/json", &[]);
    let mut seen = Vec::new();
    let mut trace = None;
    let complete = eventually(LONG, || {
        gather(&lines, &mut seen);
        trace = chain_trace(&spans_of_receiver(&seen));
        trace.is_some()
    });
    drop(serve);
    assert!(
        complete,
        "no complete trace; the receiver printed {seen:#?}"
    );
    check_chain(&trace.unwrap());
    let types = check_requests(&seen);
    assert!(types.contains("application/x-protobuf"), "{types:?}");
    assert!(types.contains("application/json"), "{types:?}");
    drop(receiver_child);
}

#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn a_trace_context_from_the_python_sdk_is_continued_by_the_server() {
    let peers = mcp::peers("a_trace_context_from_the_python_sdk_is_continued_by_the_server");
    let (receiver_child, lines, endpoint) = receiver(&peers);
    let (trace_id, span_id) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_trace_client.py");
    let mut client = Command::new(peers.path("TOOLWIRE_PYTHON"));
    client
        .arg(script)
        .args([trace_id, span_id])
        .arg(crate::support::tool_server_path())
        .stdin(Stdio::null());
    otel_env(&mut client, &endpoint, "py-backend", "http/protobuf");
    let run = cli::run(client);
    assert!(run.stdout.contains("PYTRACE PASSED"), "{run:?}");
    let mut seen = Vec::new();
    let mut server_span = None;
    let found = eventually(LONG, || {
        gather(&lines, &mut seen);
        server_span = spans_of_receiver(&seen)
            .into_iter()
            .find(|span| span.name == "tools/call echo");
        server_span.is_some()
    });
    assert!(found, "no server span; the receiver printed {seen:#?}");
    let span = server_span.unwrap();
    assert_eq!(span.service, "py-backend");
    assert_eq!(span.kind, 2);
    assert_eq!(span.trace_id, trace_id);
    assert_eq!(span.parent, span_id);
    check_requests(&seen);
    drop(receiver_child);
}
