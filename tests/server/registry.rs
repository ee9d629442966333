//! A harness `ToolRegistry` served as it is: its names, descriptions, input and output
//! schemas, titles and annotations listed; each call through the registry's own checks
//! (the repair message as the tool error, the integer bound), its failures as the harness
//! words them (a safe message shown, an internal one or a panic withheld), its result cut to
//! its result limit and checked against its output schema.

use crate::support::server as support;

use serde_json::{json, Value};
use toolwire::harness::{LocalTool, Overflow, ResultLimit, ToolFailure, ToolOptions, ToolRegistry};
use toolwire::mcp::ToolAnnotations;
use toolwire::server::{Server, ServerConfig};

use support::memory_client;

fn registry() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry
        .register(
            LocalTool::new(
                "sum",
                "Adds integers.",
                json!({"type": "object", "required": ["a", "b"], "additionalProperties": false,
                       "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
                |args, _| Ok(Some(json!({"sum": args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap()}))),
            )
            .title("Sum")
            .output_schema(json!({"type": "object", "required": ["sum"], "properties": {"sum": {"type": "integer"}}}))
            .options(ToolOptions::new().idempotent(true)),
        )
        .unwrap();
    registry
        .register(
            LocalTool::new(
                "liar",
                "Breaks its output schema.",
                json!({"type": "object"}),
                |_, _| Ok(Some(json!({"sum": "not a number"}))),
            )
            .output_schema(json!({"type": "object", "properties": {"sum": {"type": "integer"}}}))
            .annotations(ToolAnnotations {
                read_only_hint: Some(true),
                ..ToolAnnotations::default()
            }),
        )
        .unwrap();
    registry
        .register(LocalTool::new(
            "refuse",
            "Fails safely.",
            json!({"type": "object"}),
            |_, _| Err(ToolFailure::safe("no city named Atlantis")),
        ))
        .unwrap();
    registry
        .register(LocalTool::new(
            "secret",
            "Fails internally.",
            json!({"type": "object"}),
            |_, _| Err(ToolFailure::internal("password=hunter2")),
        ))
        .unwrap();
    registry
        .register(LocalTool::new(
            "panic",
            "Panics.",
            json!({"type": "object"}),
            |_, _| panic!("token=abc"),
        ))
        .unwrap();
    registry
        .register(
            LocalTool::new("long", "Says a lot.", json!({"type": "object"}), |_, _| {
                Ok(Some(json!("x".repeat(100))))
            })
            .options(ToolOptions::new().result_limit(ResultLimit::new(10, Overflow::Truncate))),
        )
        .unwrap();
    registry
}

fn call(client: &toolwire::Client, name: &str, arguments: Value) -> Value {
    client
        .call("tools/call", json!({"name": name, "arguments": arguments}))
        .unwrap()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

#[test]
fn a_registry_is_served_as_it_is() {
    let server = Server::new(ServerConfig::new("registry", "1")).unwrap();
    server.add_registry(&registry()).unwrap();
    assert!(
        server.add_registry(&registry()).is_err(),
        "the same names twice"
    );
    let (client, connection) = memory_client(&server);
    let listed = client.call("tools/list", Value::Null).unwrap();
    let tools = listed["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["liar", "long", "panic", "refuse", "secret", "sum"]);
    let sum = tools.iter().find(|tool| tool["name"] == "sum").unwrap();
    assert_eq!(sum["title"], "Sum");
    assert_eq!(sum["description"], "Adds integers.");
    assert_eq!(sum["inputSchema"]["additionalProperties"], false);
    assert_eq!(sum["outputSchema"]["required"], json!(["sum"]));
    assert_eq!(sum["annotations"], json!({"idempotentHint": true}));
    let liar = tools.iter().find(|tool| tool["name"] == "liar").unwrap();
    assert_eq!(liar["annotations"], json!({"readOnlyHint": true}));

    let result = call(&client, "sum", json!({"a": 2, "b": 3}));
    assert_eq!(result["structuredContent"], json!({"sum": 5}));
    assert_eq!(result["isError"], false);
    let refused = call(&client, "sum", json!({"a": "two", "b": 3, "c": 1}));
    assert_eq!(refused["isError"], true);
    assert!(
        text(&refused).contains("do not match its input schema"),
        "{refused}"
    );
    assert!(text(&refused).contains("/a"), "{refused}");
    let wide = call(&client, "sum", json!({"a": 9007199254740993i64, "b": 0}));
    assert!(text(&wide).contains("2^53"), "{wide}");
    let liar = call(&client, "liar", json!({}));
    assert_eq!(liar["isError"], true);
    assert!(liar.get("structuredContent").is_none());
    assert!(text(&liar).contains("output schema"), "{liar}");
    assert_eq!(
        text(&call(&client, "refuse", json!({}))),
        "no city named Atlantis"
    );
    for withheld in ["secret", "panic"] {
        let result = call(&client, withheld, json!({}));
        assert_eq!(result["isError"], true);
        assert!(
            !result.to_string().contains("hunter2") && !result.to_string().contains("abc"),
            "{result}"
        );
    }
    let long = call(&client, "long", json!({}));
    assert!(
        text(&long).starts_with("xxxxxxxxxx\n[truncated: showing 10 of 100 characters]"),
        "{long}"
    );
    client.close().unwrap();
    connection.wait();
}

/// Issue 21: one tool-name rule. `get_weather`, `test_simple_text` and `a.b` are served and
/// called, whether added as server tools or from a harness registry; a name with `/` is not.
#[test]
fn provider_style_and_dotted_names_are_served_and_called() {
    use toolwire::server::CallToolResult;
    let names = ["get_weather", "test_simple_text", "a.b"];
    let native = Server::new(ServerConfig::new("native", "1")).unwrap();
    let mut registry = ToolRegistry::new();
    for name in names {
        native
            .add_tool(LocalTool::with_context(
                name,
                "Says its name.",
                json!({"type": "object"}),
                move |_, _| Ok(CallToolResult::from_text(name)),
            ))
            .unwrap();
        registry
            .register(LocalTool::new(
                name,
                "Says its name.",
                json!({"type": "object"}),
                move |_, _| Ok(Some(json!(name))),
            ))
            .unwrap();
    }
    let bad = LocalTool::with_context("a/b", "", json!({"type": "object"}), |_, _| {
        Ok(CallToolResult::from_text(""))
    });
    let error = native.add_tool(bad).unwrap_err();
    assert!(
        error.to_string().contains("is not a valid tool name"),
        "{error}"
    );
    let served = Server::new(ServerConfig::new("registry", "1")).unwrap();
    served.add_registry(&registry).unwrap();
    for server in [&native, &served] {
        let (client, connection) = memory_client(server);
        let listed = client.call("tools/list", Value::Null).unwrap();
        let mut listed: Vec<&str> = listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        listed.sort_unstable();
        assert_eq!(listed, ["a.b", "get_weather", "test_simple_text"]);
        for name in names {
            let result = call(&client, name, json!({}));
            assert_eq!(result["isError"], false, "{name}: {result}");
            assert_eq!(text(&result), name);
        }
        client.close().unwrap();
        connection.wait();
    }
}

/// The served registry uses the harness's one result limit: text and `structuredContent`
/// count together, and a result over the limit of a tool with an output schema is a tool
/// error saying so (no `structuredContent`, which every client accepts), not a cut text.
#[test]
fn a_structured_result_over_the_limit_is_a_tool_error_naming_the_limit() {
    let mut registry = ToolRegistry::new();
    registry
        .register(
            LocalTool::new(
                "report",
                "A long report.",
                json!({"type": "object"}),
                |_, _| Ok(Some(json!({"body": "y".repeat(60)}))),
            )
            .output_schema(json!({"type": "object", "properties": {"body": {"type": "string"}}}))
            .options(ToolOptions::new().result_limit(ResultLimit::new(100, Overflow::Truncate))),
        )
        .unwrap();
    let server = Server::new(ServerConfig::new("limit", "1")).unwrap();
    server.add_registry(&registry).unwrap();
    let (client, connection) = memory_client(&server);
    // 71 characters of text and 71 of structuredContent: each alone fits, together not.
    let result = call(&client, "report", json!({}));
    assert_eq!(result["isError"], true, "{result}");
    assert!(result.get("structuredContent").is_none(), "{result}");
    assert!(
        text(&result).starts_with("TOOL_ERROR: the result is 142 characters long"),
        "{result}"
    );
    assert!(
        text(&result).contains("over this tool's limit of 100 characters"),
        "{result}"
    );
    client.close().unwrap();
    connection.wait();
}

/// Issue 21: a tool written once with the one handler signature is served by
/// `Server::add_tool` with the request's context: progress and log messages reach the client,
/// an input request is asked of it (a blocking request on the handshake era, an input round
/// on 2026-07-28), an internal failure is withheld; the same kind of tool runs in a local
/// harness in tests/harness/context.rs.
#[test]
fn a_tool_with_the_one_signature_is_served_with_the_request_context() {
    use std::sync::{Arc, Mutex};
    use toolwire::harness::ToolContext;
    use toolwire::mcp::{ElicitResult, McpConfig};
    use toolwire::server::CallToolResult;
    use toolwire::{CallOptions, McpClient, ProtocolMode};

    let server = Server::new(ServerConfig::new("context", "1")).unwrap();
    server
        .add_tool(LocalTool::with_context(
            "get_weather",
            "The weather, after asking for the city.",
            json!({"type": "object", "properties": {"mode": {"type": "string"}}}),
            |context: &dyn ToolContext, args: &Value| {
                if args["mode"] == "secret" {
                    return Err(ToolFailure::internal("password=hunter2"));
                }
                if args["mode"] == "who" {
                    // What only a server has, through the request's own context.
                    let request = toolwire::server::RequestContext::of(context)
                        .expect("served: the request's context");
                    let client = request.client_info().map(|info| info.name.clone());
                    return Ok(CallToolResult::from_text(format!("{client:?}")));
                }
                context.report_progress(1.0, Some(2.0), Some("asking"));
                context.log_message(log::Level::Warn, "asking for the city");
                let city = context.request_input(
                    "city",
                    "elicitation/create",
                    json!({"message": "Which city?",
                           "requestedSchema": {"type": "object",
                                               "properties": {"city": {"type": "string"}}}}),
                )?;
                Ok(CallToolResult::from_text(format!(
                    "clear in {}",
                    city["content"]["city"].as_str().unwrap_or("?")
                )))
            },
        ))
        .unwrap();
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&logs);
        let (client_end, server_end) = toolwire::transport::MemoryTransport::pair();
        let connection = server
            .connect(toolwire::server::PeerTransport::new(server_end))
            .unwrap();
        let config = McpConfig::default()
            .mode(mode)
            .elicitation(|_| ElicitResult::Accept(json!({"city": "Lima"})))
            .on_log(move |message| sink.lock().unwrap().push(message.data.clone()));
        let client = McpClient::connect(client_end, config).unwrap();
        let progress = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&progress);
        let result = client
            .call_tool_with(
                "get_weather",
                json!({}),
                CallOptions::new()
                    .on_progress(move |report| seen.lock().unwrap().push(report.progress)),
            )
            .unwrap();
        assert!(!result.is_error, "{mode:?}: {result:?}");
        assert_eq!(result.text(), "clear in Lima", "{mode:?}");
        assert!(
            progress.lock().unwrap().contains(&1.0),
            "{mode:?}: no progress"
        );
        if mode == ProtocolMode::Legacy {
            assert!(
                logs.lock().unwrap().contains(&json!("asking for the city")),
                "{mode:?}: no log message"
            );
        }
        let secret = client
            .call_tool("get_weather", json!({"mode": "secret"}))
            .unwrap();
        assert!(secret.is_error);
        assert!(!format!("{secret:?}").contains("hunter2"), "{secret:?}");
        let who = client
            .call_tool("get_weather", json!({"mode": "who"}))
            .unwrap();
        assert!(!who.is_error, "{who:?}");
        assert!(who.text().starts_with("Some("), "{who:?}");
        client.close().unwrap();
        connection.wait();
    }
}

/// Issue 21: the deprecated `ServerTool` still compiles and serves for one release, as the
/// one tool type it builds: its handler's `HandlerError` is the JSON-RPC answer, its options
/// (unchecked schemas, a timeout, a required capability, a step before a task) apply, and a
/// timeout out of bounds is refused when it is added.
#[test]
#[allow(deprecated)]
fn the_deprecated_server_tool_serves_as_the_one_tool_type() {
    use std::time::Duration;
    use toolwire::server::{
        CallToolResult, HandlerError, ServerTool, TaskSupport, MISSING_CAPABILITY,
    };
    let server = Server::new(ServerConfig::new("old", "1")).unwrap();
    let strict = json!({"type": "object", "required": ["n"],
                        "properties": {"n": {"type": "integer"}}});
    server
        .add_tool(
            ServerTool::new("echo", "Echoes.", strict.clone(), |context, args| {
                assert!(!context.is_cancelled());
                Ok(CallToolResult::from_text(args.to_string()))
            })
            .check_schemas(false)
            .timeout(Duration::from_secs(5))
            .inline(true),
        )
        .unwrap();
    server
        .add_tool(ServerTool::new(
            "broken",
            "Fails.",
            strict.clone(),
            |_, _| Err(HandlerError::invalid_params("no such n")),
        ))
        .unwrap();
    server
        .add_tool(
            ServerTool::new("needs", "Needs sampling.", strict.clone(), |_, _| {
                Ok(CallToolResult::from_text("ran"))
            })
            .requires("sampling")
            .task(TaskSupport::Optional)
            .before_task(|_, args| Ok(args.clone())),
        )
        .unwrap();
    let converted: LocalTool =
        ServerTool::new("zero", "", strict, |_, _| Ok(CallToolResult::from_text("")))
            .timeout(Duration::ZERO)
            .into();
    let error = server.add_tool(converted).unwrap_err();
    assert!(error.to_string().contains("1 ms to 1 hour"), "{error}");

    let (client, connection) = memory_client(&server);
    let listed = client.call("tools/list", Value::Null).unwrap();
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "broken", "needs"]);
    // Unchecked: arguments that break the schema reach the handler.
    let echoed = client
        .call(
            "tools/call",
            json!({"name": "echo", "arguments": {"n": "x"}}),
        )
        .unwrap();
    assert_eq!(echoed["content"][0]["text"], r#"{"n":"x"}"#, "{echoed}");
    let refused = client
        .call(
            "tools/call",
            json!({"name": "broken", "arguments": {"n": 1}}),
        )
        .unwrap_err();
    assert_eq!(
        refused.rpc().map(|error| error.code),
        Some(toolwire::jsonrpc::ErrorCode::INVALID_PARAMS),
        "{refused}"
    );
    let missing = client
        .call(
            "tools/call",
            json!({"name": "needs", "arguments": {"n": 1}}),
        )
        .unwrap_err();
    assert_eq!(
        missing.rpc().map(|error| error.code),
        Some(MISSING_CAPABILITY),
        "{missing}"
    );
    client.close().unwrap();
    connection.wait();
}
