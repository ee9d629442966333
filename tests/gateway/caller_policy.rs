//! The policy's `scopes` and `subjects` decide per authenticated caller: a tool a subject may
//! not use is not listed to them and is UNKNOWN_TOOL if called; a missing scope is HTTP 403
//! `insufficient_scope` naming the scopes needed; a policy naming callers does not start
//! without authorization in front.
#![cfg(all(feature = "gateway", feature = "oauth"))]

use crate::support::gateway as support;
use crate::support::server::{post, stateless_headers, stateless_request};

use serde_json::json;
use support::{call, configs, tool_server_entry};
use toolwire::gateway::{Gateway, GatewayConfig, Policy};
use toolwire::server::{Authorization, HttpServerConfig, StaticTokens};
use toolwire::{HttpConfig, McpClient, McpConfig, ProtocolMode};

/// `add` needs the scope `tools:add`; `echo` is for ann only.
const POLICY: &str = r#"{"servers": {"tools": {"tools": {
    "add": {"scopes": ["tools:add"]},
    "echo": {"subjects": {"allow": ["ann"]}}
}}}}"#;

fn names(client: &McpClient) -> Vec<String> {
    let tools = client.list_tools().expect("tools/list");
    tools.iter().map(|tool| tool.name.clone()).collect()
}

#[test]
fn a_policy_requiring_a_scope_for_one_tool_and_a_subject_for_another_is_enforced_per_caller() {
    let tokens = StaticTokens::new()
        .with(&crate::support::hex_sha256("ann-secret"), "ann", &[])
        .unwrap()
        .with(
            &crate::support::hex_sha256("bob-secret"),
            "bob",
            &["tools:add"],
        )
        .unwrap();
    let auth = Authorization::static_tokens("http://127.0.0.1/mcp", tokens);
    let gateway = support::gateway_with(
        &[("tools", tool_server_entry())],
        POLICY,
        GatewayConfig::new().http(HttpServerConfig::new().authorization(auth)),
    );
    let http = gateway.serve_http("127.0.0.1:0".parse().unwrap()).unwrap();
    let as_caller = |token: &str, mode: ProtocolMode| {
        McpClient::connect_http(
            HttpConfig::new(http.url()).bearer_token(token),
            McpConfig::default().mode(mode),
        )
        .expect("front client with a token")
    };
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        // Ann sees echo and add (a missing scope is for step-up, not hiding) and calls echo.
        let ann = as_caller("ann-secret", mode);
        let listed = names(&ann);
        assert!(
            listed.contains(&"mcp__tools__echo".to_owned()),
            "{mode:?}: {listed:?}"
        );
        assert!(
            listed.contains(&"mcp__tools__add".to_owned()),
            "{mode:?}: {listed:?}"
        );
        assert_eq!(
            call(&ann, "mcp__tools__echo", json!({"message": "hi"})).text(),
            "hi"
        );
        // Her token lacks tools:add: refused, nothing runs.
        assert!(
            ann.call_tool("mcp__tools__add", json!({"a": 1, "b": 2}))
                .is_err(),
            "{mode:?}: a call without the scope was served"
        );
        ann.close().unwrap();
        // Bob is not allowed echo: not listed, UNKNOWN_TOOL if called; add is his.
        let bob = as_caller("bob-secret", mode);
        let listed = names(&bob);
        assert!(
            !listed.contains(&"mcp__tools__echo".to_owned()),
            "{mode:?}: {listed:?}"
        );
        assert!(
            listed.contains(&"mcp__tools__add".to_owned()),
            "{mode:?}: {listed:?}"
        );
        let text = call(&bob, "mcp__tools__echo", json!({"message": "hi"})).text();
        assert!(text.starts_with("UNKNOWN_TOOL: "), "{mode:?}: {text}");
        assert_eq!(
            call(&bob, "mcp__tools__add", json!({"a": 1, "b": 2})).text(),
            r#"{"sum":3}"#
        );
        bob.close().unwrap();
    }
    // Only bob's two adds and ann's two echoes were forwarded.
    assert_eq!(gateway.stats()["backends"]["tools"]["forwarded"], json!(4));

    // The missing scope is HTTP 403 with the step-up challenge naming it.
    let body = stateless_request(
        7,
        "tools/call",
        json!({"name": "mcp__tools__add", "arguments": {"a": 1, "b": 2}}),
    );
    let headers = format!(
        "{}Authorization: Bearer ann-secret\r\n",
        stateless_headers("tools/call", Some("mcp__tools__add"))
    );
    let answer = post(&http.url(), &headers, &body);
    assert_eq!(answer.status, 403, "{answer:?}");
    let challenge = answer.header("www-authenticate").expect("a challenge");
    assert!(
        challenge.starts_with("Bearer ")
            && challenge.contains("error=\"insufficient_scope\"")
            && challenge.contains("scope=\"tools:add\""),
        "{challenge}"
    );
    assert!(!answer.body.contains("ann-secret"));
    assert_eq!(gateway.stats()["backends"]["tools"]["forwarded"], json!(4));
    http.close().unwrap();
}

#[test]
fn a_policy_naming_callers_does_not_start_without_authorization_in_front() {
    let policy = Policy::parse(POLICY).unwrap();
    let started = Gateway::start(
        &configs(&[("tools", tool_server_entry())]),
        policy,
        GatewayConfig::new(),
    );
    let Err(error) = started else {
        panic!("a policy naming callers started without authorization");
    };
    let error = error.to_string();
    assert!(
        error.contains("scopes or subjects") && error.contains("--auth-tokens"),
        "{error}"
    );
}

/// A backend that accepts both the front caller's token and the gateway's own, and says whose
/// it was given: the gateway always sends its own (the MCP authorization specification
/// forbids passing the caller's token through), in both eras.
#[test]
fn the_front_callers_token_is_never_sent_to_a_backend() {
    use toolwire::harness::LocalTool;
    use toolwire::server::{CallToolResult, RequestContext, Server, ServerConfig};

    let backend_tokens = StaticTokens::new()
        .with(&crate::support::hex_sha256("ann-secret"), "ann", &[])
        .unwrap()
        .with(
            &crate::support::hex_sha256("gateway-secret"),
            "gateway",
            &[],
        )
        .unwrap();
    let backend = Server::new(ServerConfig::new("backend", "1")).unwrap();
    backend
        .add_tool(LocalTool::with_context(
            "whoami",
            "Says whose token came.",
            json!({"type": "object"}),
            |context, _| {
                let subject = RequestContext::of(context)
                    .and_then(|c| c.caller())
                    .map_or("nobody".to_owned(), |caller| caller.subject().to_owned());
                Ok(CallToolResult::from_text(subject))
            },
        ))
        .unwrap();
    let backend_http = toolwire::server::HttpServer::bind(
        &backend,
        HttpServerConfig::new().authorization(Authorization::static_tokens(
            "http://127.0.0.1/mcp",
            backend_tokens,
        )),
    )
    .unwrap();
    let entry = json!({"url": backend_http.url(),
        "headers": {"Authorization": "Bearer gateway-secret"}});
    let front_tokens = StaticTokens::new()
        .with(&crate::support::hex_sha256("ann-secret"), "ann", &[])
        .unwrap();
    let gateway = support::gateway_with(
        &[("remote", entry)],
        "{}",
        GatewayConfig::new().http(HttpServerConfig::new().authorization(
            Authorization::static_tokens("http://127.0.0.1/mcp", front_tokens),
        )),
    );
    assert!(gateway.report().failed.is_empty(), "{:?}", gateway.report());
    let http = gateway.serve_http("127.0.0.1:0".parse().unwrap()).unwrap();
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let ann = McpClient::connect_http(
            HttpConfig::new(http.url()).bearer_token("ann-secret"),
            McpConfig::default().mode(mode),
        )
        .expect("front client with a token");
        assert_eq!(
            call(&ann, "mcp__remote__whoami", json!({})).text(),
            "gateway",
            "{mode:?}"
        );
        ann.close().unwrap();
    }
    http.close().unwrap();
    backend_http.close().unwrap();
}
