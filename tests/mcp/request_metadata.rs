//! 2026-07-28 requests as a stateless server sees them, against a fake HTTP server that
//! refuses the first request of each kind with -32022 (as the conformance suite's
//! request-metadata mock does): every POST carries `MCP-Protocol-Version` equal to its
//! `_meta` version and the `_meta` capabilities, and a refused request is sent again under a
//! new id, on every path (the probe, blocking calls, handles, listings). Tools designating
//! parameters with `x-mcp-header` get `Mcp-Param-*` headers; a tool whose designation is
//! invalid is left out and reported; a tool's input schema is kept byte for byte.
#![cfg(feature = "http")]

use crate::support::http_fake as fake;

use std::collections::HashSet;
use std::sync::Mutex;

use fake::{result, FakeServer, Reply, Req};
use serde_json::{json, Value};
use toolwire::{CallOptions, HttpConfig, McpClient, McpConfig, ProtocolMode};

const SCHEMA: &str = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"flag":{"type":"boolean","x-mcp-header":"Flag"},"note":{"type":"string"},"where":{"$ref":"#/$defs/place"}},"$defs":{"place":{"$anchor":"p","type":"string"}},"additionalProperties":false}"##;

fn tools() -> Value {
    json!([
        {"name": "mirror", "inputSchema": serde_json::from_str::<Value>(SCHEMA).unwrap()},
        {"name": "broken", "inputSchema": {"type": "object", "properties": {
            "data": {"type": "object", "x-mcp-header": "Data"}}}},
        {"name": "bad_name", "inputSchema": {"type": "object", "properties": {
            "v": {"type": "string", "x-mcp-header": "My Region"}}}},
        {"name": "old_dialect", "inputSchema": {"$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object", "properties": {"n": {"type": "number", "maximum": 5, "exclusiveMaximum": true}}}},
    ])
}

/// A stateless server that refuses the first request of every method with -32022.
fn server() -> FakeServer {
    let refused: Mutex<HashSet<String>> = Mutex::new(HashSet::new());
    FakeServer::start(move |req: &Req, reply: &mut Reply<'_>| {
        let method = req.rpc();
        if req.id().is_null() {
            return reply.accepted();
        }
        if refused.lock().unwrap().insert(method.clone()) {
            let error = json!({"jsonrpc": "2.0", "id": req.id(), "error": {
                "code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}});
            return reply.json(400, &error, &[]);
        }
        let answer = match method.as_str() {
            "server/discover" => {
                json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "fake", "version": "1"}})
            }
            "tools/list" => json!({"resultType": "complete", "tools": tools()}),
            "tools/call" => {
                json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]})
            }
            _ => json!({"resultType": "complete"}),
        };
        reply.json(200, &result(req, answer), &[]);
    })
}

fn connect(server: &FakeServer) -> McpClient {
    let config = McpConfig::default().mode(ProtocolMode::Modern);
    McpClient::connect_http(HttpConfig::new(server.url.clone()), config).unwrap()
}

fn posts(server: &FakeServer) -> Vec<Req> {
    server
        .requests()
        .into_iter()
        .filter(|req| req.method == "POST")
        .collect()
}

#[test]
fn every_request_carries_the_version_and_meta_and_a_refused_one_is_sent_again_under_a_new_id() {
    let server = server();
    let client = connect(&server);
    let tools = client.list_tools().unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(
        names,
        ["mirror", "old_dialect"],
        "the tools with invalid designations are left out"
    );
    // A blocking call, then a handle: both refused once, both answered.
    let args = json!({"region": "us west 1", "n": 42, "flag": false, "note": "x", "where": "here"});
    assert_eq!(client.call_tool("mirror", &args).unwrap().text(), "ok");
    let handle = client
        .start_tool(
            "mirror",
            json!({"region": " lead", "flag": null}),
            CallOptions::new(),
        )
        .unwrap();
    assert_eq!(handle.wait().unwrap().text(), "ok");
    let posts = posts(&server);
    for post in &posts {
        let meta = &post.json()["params"]["_meta"];
        assert_eq!(
            post.header("MCP-Protocol-Version"),
            Some("2026-07-28"),
            "{}",
            post.body
        );
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
        assert!(meta["io.modelcontextprotocol/clientInfo"]["name"].is_string());
        assert_eq!(post.header("Mcp-Method"), Some(post.rpc().as_str()));
    }
    for method in ["server/discover", "tools/list"] {
        let ids: Vec<Value> = posts
            .iter()
            .filter(|post| post.rpc() == method)
            .map(Req::id)
            .collect();
        assert_eq!(ids.len(), 2, "{method} was sent twice: {ids:?}");
        assert_ne!(ids[0], ids[1], "{method}'s retry has a new id");
    }
    let calls: Vec<&Req> = posts
        .iter()
        .filter(|post| post.rpc() == "tools/call")
        .collect();
    assert_eq!(
        calls.len(),
        3,
        "the first call refused and sent again, then the handle's"
    );
    let ids: HashSet<String> = calls.iter().map(|call| call.id().to_string()).collect();
    assert_eq!(ids.len(), 3);
    // Mirrored parameters: plain, decimal, boolean; unannotated ones never.
    let first = calls[1];
    assert_eq!(first.header("Mcp-Name"), Some("mirror"));
    assert_eq!(first.header("Mcp-Param-Region"), Some("us west 1"));
    assert_eq!(first.header("Mcp-Param-N"), Some("42"));
    assert_eq!(first.header("Mcp-Param-Flag"), Some("false"));
    assert!(first.header("Mcp-Param-Note").is_none());
    // Leading whitespace is base64; a null sends no header.
    let second = calls[2];
    assert_eq!(
        second.header("Mcp-Param-Region"),
        Some("=?base64?IGxlYWQ=?=")
    );
    assert!(second.header("Mcp-Param-Flag").is_none());
    assert!(second.header("Mcp-Param-N").is_none());
    client.close().unwrap();
}

#[test]
fn an_invalid_designation_is_reported_and_its_tool_refused() {
    let server = server();
    let client = connect(&server);
    client.list_tools().unwrap();
    let rejected = client.rejected_tools();
    let names: Vec<&str> = rejected.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["broken", "bad_name"]);
    assert!(rejected[0].1.contains("object"), "{}", rejected[0].1);
    assert!(rejected[1].1.contains("' '"), "{}", rejected[1].1);
    let refused = client.call_tool("broken", json!({"data": {}})).unwrap_err();
    assert!(refused.to_string().contains("left out"), "{refused}");
    assert!(
        posts(&server)
            .iter()
            .all(|post| post.json()["params"]["name"] != "broken"),
        "the invalid tool was never called"
    );
    client.close().unwrap();
}

#[test]
fn a_tool_schema_is_kept_byte_for_byte() {
    let server = server();
    let client = connect(&server);
    let tools = client.list_tools().unwrap();
    let mirror = &tools[0];
    // The server's JSON text went through serde_json's Value (keys sorted) on its way out of
    // the fake; what the client keeps is exactly the text it received.
    let sent: Value = serde_json::from_str(SCHEMA).unwrap();
    assert_eq!(mirror.input_schema_json(), sent.to_string());
    assert_eq!(mirror.input_schema().unwrap(), sent);
    assert!(mirror
        .input_schema_json()
        .contains(r##""$ref":"#/$defs/place""##));
    client.close().unwrap();
}

#[test]
fn a_schema_is_validated_in_the_dialect_it_declares() {
    let server = server();
    let client = connect(&server);
    let tools = client.list_tools().unwrap();
    let old = tools
        .iter()
        .find(|tool| tool.name == "old_dialect")
        .unwrap();
    // Draft 4's boolean exclusiveMaximum: 5 is out, 4.5 is in (2020-12 has no boolean form).
    let schema = toolwire::schema::Schema::compile(&old.input_schema().unwrap()).unwrap();
    assert!(schema.validate(&json!({"n": 5})).is_err());
    assert!(schema.validate(&json!({"n": 4.5})).is_ok());
    client.close().unwrap();
}

#[test]
fn a_batch_is_stamped_and_each_refused_request_sent_again() {
    let server = server();
    let client = connect(&server);
    let results = client
        .batch(
            vec![
                ("resources/list".into(), json!({})),
                ("prompts/list".into(), Value::Null),
            ],
            CallOptions::new(),
        )
        .unwrap();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    for method in ["resources/list", "prompts/list"] {
        let sent: Vec<Req> = posts(&server)
            .into_iter()
            .filter(|post| post.rpc() == method)
            .collect();
        assert_eq!(sent.len(), 2, "{method}: refused once, then answered");
        assert_ne!(sent[0].id(), sent[1].id());
        for post in sent {
            assert_eq!(post.header("MCP-Protocol-Version"), Some("2026-07-28"));
            assert_eq!(
                post.json()["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
                "2026-07-28"
            );
        }
    }
    client.close().unwrap();
}
