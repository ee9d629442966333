//! SEP-2243 on the server: a 2026-07-28 `tools/call` over HTTP must mirror each parameter
//! the tool designates with `x-mcp-header` in its `Mcp-Param-{name}` header. The value is
//! compared with the body's (base64 in `=?base64?…?=` decoded first, anything else literal);
//! a missing, undecodable or different header is 400 with -32020 and the tool never runs.
//! A tool whose designation a client would have to refuse cannot be added.

use crate::support::server as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig};
use toolwire::Error;

use support::{post, stateless_headers, stateless_request, RawResponse};

struct Fixture {
    http: HttpServer,
    runs: Arc<AtomicUsize>,
}

fn fixture() -> Fixture {
    let server = Server::new(ServerConfig::new("params", "1.0")).unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    server
        .add_tool(LocalTool::with_context(
            "route",
            "Routes by region and shard.",
            json!({"type": "object", "required": ["region"], "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "shard": {"type": "integer", "x-mcp-header": "Shard"},
                "note": {"type": "string"}}}),
            move |_, args| {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok(CallToolResult::from_text(format!("{}", args["region"])))
            },
        ))
        .unwrap();
    let http = HttpServer::bind(&server, HttpServerConfig::new()).unwrap();
    Fixture { http, runs }
}

fn call(fixture: &Fixture, arguments: Value, params: &[(&str, &str)]) -> RawResponse {
    let mut headers = stateless_headers("tools/call", Some("route"));
    for (name, value) in params {
        headers.push_str(&format!("Mcp-Param-{name}: {value}\r\n"));
    }
    let body = stateless_request(
        1,
        "tools/call",
        json!({"name": "route", "arguments": arguments}),
    );
    post(&fixture.http.url(), &headers, &body)
}

fn accepted(response: &RawResponse) -> Value {
    assert_eq!(response.status, 200, "{response:?}");
    let answer = response.messages().pop().expect("an answer");
    assert!(answer.get("error").is_none(), "{answer}");
    answer["result"].clone()
}

fn refused(response: &RawResponse) -> String {
    assert_eq!(response.status, 400, "{response:?}");
    let answer = response.messages().pop().expect("an answer");
    assert_eq!(answer["error"]["code"], -32020, "{answer}");
    answer["error"]["message"].as_str().unwrap().to_owned()
}

#[test]
fn a_matching_header_plain_or_base64_lets_the_call_run() {
    let fixture = fixture();
    let result = accepted(&call(
        &fixture,
        json!({"region": "eu"}),
        &[("Region", "eu")],
    ));
    assert_eq!(result["content"][0]["text"], "\"eu\"");
    // "Hello" in base64, and a name in another case: header names are case-insensitive.
    accepted(&call(
        &fixture,
        json!({"region": "Hello"}),
        &[("region", "=?base64?SGVsbG8=?=")],
    ));
    // An integer in decimal; absent optional parameters need no header.
    accepted(&call(
        &fixture,
        json!({"region": "eu", "shard": 7}),
        &[("Region", "eu"), ("Shard", "7")],
    ));
    assert_eq!(fixture.runs.load(Ordering::SeqCst), 3);
}

#[test]
fn a_value_missing_the_prefix_or_the_suffix_is_literal_text() {
    let fixture = fixture();
    accepted(&call(
        &fixture,
        json!({"region": "SGVsbG8="}),
        &[("Region", "SGVsbG8=")],
    ));
    accepted(&call(
        &fixture,
        json!({"region": "=?base64?SGVsbG8="}),
        &[("Region", "=?base64?SGVsbG8=")],
    ));
    // Literal text is not decoded: it must equal the body as it is.
    refused(&call(
        &fixture,
        json!({"region": "Hello"}),
        &[("Region", "SGVsbG8=")],
    ));
}

#[test]
fn bad_base64_a_missing_header_or_a_different_value_is_refused_before_the_tool_runs() {
    let fixture = fixture();
    let padding = refused(&call(
        &fixture,
        json!({"region": "Hello"}),
        &[("Region", "=?base64?SGVsbG8?=")],
    ));
    assert!(padding.contains("Mcp-Param-Region"), "{padding}");
    assert!(padding.contains("base64"), "{padding}");
    refused(&call(
        &fixture,
        json!({"region": "Hello"}),
        &[("Region", "=?base64?SGVs!!!bG8=?=")],
    ));
    let missing = refused(&call(&fixture, json!({"region": "eu"}), &[]));
    assert!(missing.contains("required"), "{missing}");
    assert!(missing.contains("region"), "{missing}");
    let different = refused(&call(
        &fixture,
        json!({"region": "eu", "shard": 7}),
        &[("Region", "eu"), ("Shard", "8")],
    ));
    assert!(different.contains("Mcp-Param-Shard"), "{different}");
    // A header for a value the body does not hold says something the body does not.
    refused(&call(
        &fixture,
        json!({"region": "eu"}),
        &[("Region", "eu"), ("Shard", "8")],
    ));
    assert_eq!(fixture.runs.load(Ordering::SeqCst), 0, "a refused call ran");
}

#[test]
fn a_tool_whose_designation_a_client_must_refuse_cannot_be_added() {
    let server = Server::new(ServerConfig::new("params", "1.0")).unwrap();
    for schema in [
        json!({"type": "object", "properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
        json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Has Space"}}}),
        json!({"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "Same"},
            "b": {"type": "string", "x-mcp-header": "same"}}}),
    ] {
        let error = server
            .add_tool(LocalTool::with_context(
                "bad",
                "Bad.",
                schema.clone(),
                |_, _| Ok(CallToolResult::from_text("never")),
            ))
            .expect_err("an invalid designation");
        assert!(matches!(error, Error::Registry(_)), "{error:?}");
        assert!(
            error.to_string().contains("x-mcp-header"),
            "{schema}: {error}"
        );
    }
}
