//! Both protocol eras on one connection: the handshake (`initialize`, `ping` and
//! `logging/setLevel` answered with exactly `{}`), and 2026-07-28 requests told apart by their
//! `_meta`, checked in the revision's order (-32602 for a missing key, -32022 with the
//! supported versions, -32601 for a removed method, -32021 for a missing capability), their
//! results stamped (`resultType`, `ttlMs`/`cacheScope` on the cacheable ones, the server's
//! identity in `_meta`), and input rounds whose `requestState` is signed and checked.

use crate::support::server as support;

use serde_json::{json, Value};
use toolwire::harness::LocalTool;
use toolwire::server::{
    CallToolResult, InputRequired, RequestContext, Server, ServerConfig, MISSING_CAPABILITY,
    UNSUPPORTED_VERSION,
};
use toolwire::{Client, Error};

use support::{memory_client, meta};

fn server() -> Server {
    let server = Server::new(ServerConfig::new("eras", "2.0").instructions("Be brief.")).unwrap();
    server
        .add_tool(LocalTool::with_context(
            "hello",
            "Says hello.",
            json!({"type": "object"}),
            |_, _| Ok(CallToolResult::from_text("hello")),
        ))
        .unwrap();
    server
        .add_tool(LocalTool::with_context(
            "ask",
            "Asks for a name, with a state.",
            json!({"type": "object"}),
            |context, _| {
                let context = RequestContext::of(context).expect("served");
                match (context.request_state(), context.input_response("name")) {
                    (Some(state), Some(answer)) => Ok(CallToolResult::from_text(format!(
                        "{} {}",
                        state["greeting"].as_str().unwrap_or(""),
                        answer["content"]["name"].as_str().unwrap_or("")
                    ))),
                    _ => Err(InputRequired::new()
                        .elicit(
                            "name",
                            json!({"message": "Name?", "requestedSchema": {"type": "object"}}),
                        )
                        .state(json!({"greeting": "Hello,"}))
                        .into()),
                }
            },
        ))
        .unwrap();
    server
        .add_tool(
            LocalTool::with_context(
                "needs",
                "Needs sampling.",
                json!({"type": "object"}),
                |_, _| Ok(CallToolResult::from_text("x")),
            )
            .requires("sampling"),
        )
        .unwrap();
    server
}

fn rpc_error(result: toolwire::Result<Value>) -> toolwire::jsonrpc::ErrorObject {
    match result {
        Err(Error::Rpc(error)) => *error,
        other => panic!("expected an error, got {other:?}"),
    }
}

fn stateless(client: &Client, method: &str, mut params: Value) -> toolwire::Result<Value> {
    params["_meta"] = meta(json!({"elicitation": {}}));
    client.call(method, params)
}

#[test]
fn the_handshake_era() {
    let (client, connection) = memory_client(&server());
    let init = client
        .call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "t", "version": "1"}}),
        )
        .unwrap();
    assert_eq!(init["protocolVersion"], "2025-06-18");
    assert_eq!(
        init["serverInfo"],
        json!({"name": "eras", "version": "2.0"})
    );
    assert_eq!(init["instructions"], "Be brief.");
    assert_eq!(init["capabilities"]["tools"], json!({"listChanged": true}));
    let newest = client
        .call("initialize", json!({"protocolVersion": "2099-01-01"}))
        .unwrap();
    assert_eq!(newest["protocolVersion"], "2025-11-25");
    client
        .notify("notifications/initialized", Value::Null)
        .unwrap();
    assert_eq!(client.call("ping", Value::Null).unwrap(), json!({}));
    assert_eq!(
        client
            .call("logging/setLevel", json!({"level": "debug"}))
            .unwrap(),
        json!({})
    );
    assert_eq!(
        rpc_error(client.call("logging/setLevel", json!({"level": "loud"})))
            .code
            .0,
        -32602
    );
    let listed = client.call("tools/list", Value::Null).unwrap();
    assert!(listed.get("resultType").is_none(), "{listed}");
    assert_eq!(listed["tools"].as_array().unwrap().len(), 3);
    // server/discover belongs to 2026-07-28: without its `_meta` it is refused.
    assert_eq!(
        rpc_error(client.call("server/discover", Value::Null))
            .code
            .0,
        -32602
    );
    client.close().unwrap();
    connection.wait();
}

#[test]
fn the_stateless_era_on_the_same_kind_of_connection() {
    let (client, connection) = memory_client(&server());
    let discover = stateless(&client, "server/discover", json!({})).unwrap();
    assert_eq!(discover["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(discover["resultType"], "complete");
    assert_eq!(
        discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "eras"
    );
    assert!(
        discover["ttlMs"].is_u64() && discover["cacheScope"] == "private",
        "{discover}"
    );
    let listed = stateless(&client, "tools/list", json!({})).unwrap();
    assert_eq!(
        (listed["resultType"].as_str(), listed["cacheScope"].as_str()),
        (Some("complete"), Some("public"))
    );
    assert!(listed["ttlMs"].as_u64().unwrap() > 0);
    let called = stateless(&client, "tools/call", json!({"name": "hello"})).unwrap();
    assert_eq!(called["resultType"], "complete");
    assert!(called.get("ttlMs").is_none());

    // The envelope's checks, in order.
    let missing = rpc_error(client.call(
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    ));
    assert_eq!(missing.code.0, -32602, "{missing}");
    let mut unsupported = json!({"_meta": meta(json!({}))});
    unsupported["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let error = rpc_error(client.call("tools/list", unsupported));
    assert_eq!(error.code, UNSUPPORTED_VERSION);
    assert_eq!(
        error.data,
        Some(json!({"supported": ["2026-07-28"], "requested": "v999.0.0"}))
    );
    for removed in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
    ] {
        assert_eq!(
            rpc_error(stateless(&client, removed, json!({}))).code.0,
            -32601,
            "{removed}"
        );
    }
    let error = rpc_error(stateless(&client, "tools/call", json!({"name": "needs"})));
    assert_eq!(error.code, MISSING_CAPABILITY);
    assert_eq!(
        error.data.unwrap()["requiredCapabilities"],
        json!({"sampling": {}})
    );
    client.close().unwrap();
    connection.wait();
}

#[test]
fn input_rounds_sign_their_state_and_refuse_a_changed_one() {
    let (client, connection) = memory_client(&server());
    let first = stateless(&client, "tools/call", json!({"name": "ask"})).unwrap();
    assert_eq!(first["resultType"], "input_required");
    assert_eq!(
        first["inputRequests"]["name"]["method"],
        "elicitation/create"
    );
    let state = first["requestState"].as_str().expect("a state").to_owned();
    assert!(!state.contains("Hello"), "the state is opaque: {state}");
    let answer = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let done = stateless(
        &client,
        "tools/call",
        json!({"name": "ask", "inputResponses": answer, "requestState": state}),
    )
    .unwrap();
    assert_eq!(done["content"][0]["text"], "Hello, Ada");
    assert_eq!(done["resultType"], "complete");
    let tampered = rpc_error(stateless(
        &client,
        "tools/call",
        json!({"name": "ask", "inputResponses": answer, "requestState": format!("{state}-TAMPERED")}),
    ));
    assert_eq!(tampered.code.0, -32602);
    assert!(tampered.message.contains("integrity"), "{tampered}");
    // A state is bound to its tool.
    let elsewhere = rpc_error(stateless(
        &client,
        "tools/call",
        json!({"name": "hello", "requestState": state}),
    ));
    assert_eq!(elsewhere.code.0, -32602);
    // No capability, no input request: the server will not ask what the client cannot answer.
    let mut no_caps = json!({"name": "ask", "_meta": meta(json!({}))});
    no_caps["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let refused = rpc_error(client.call("tools/call", no_caps));
    assert_eq!(refused.code, MISSING_CAPABILITY);
    client.close().unwrap();
    connection.wait();
}
