//! The backends' resources, templates and prompts through the gateway: resources keep their
//! URIs (a URI two backends list is served from the first in config order, and the clash is
//! reported), templates are listed as they are and read from their backend, prompts are
//! namespaced and filtered like tools and got from their backend with the arguments;
//! completion, subscriptions and list changes pass through.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Mutex;

use serde_json::{json, Value};
use support::{front_with, gateway_with, http_backend, tool_server, url_entry, LONG};
use toolwire::gateway::{Clash, GatewayConfig};
use toolwire::server::{
    content, PromptResult, Server, ServerConfig, ServerPrompt, ServerResource,
    ServerResourceTemplate,
};
use toolwire::{McpClient, McpConfig, ProtocolMode};

/// A backend whose resources and prompts say which backend they come from.
fn catalog_backend(tag: &'static str) -> Server {
    let server = Server::new(ServerConfig::new(tag, "1.0")).unwrap();
    for (uri, name) in [
        ("shared://readme".to_owned(), "readme"),
        (format!("{tag}://own"), "own"),
    ] {
        server
            .add_resource(
                ServerResource::new(uri, name, move |_, uri| {
                    Ok(vec![content::text_contents(
                        uri,
                        Some("text/plain"),
                        format!("{name} from {tag}"),
                    )])
                })
                .description(format!("the {name} of {tag}")),
            )
            .unwrap();
    }
    server
        .add_resource_template(
            ServerResourceTemplate::new(
                format!("{tag}://items/{{id}}"),
                "item",
                move |_, uri, vars: &BTreeMap<String, String>| {
                    Ok(vec![content::text_contents(
                        uri,
                        None,
                        format!("item {} from {tag}", vars["id"]),
                    )])
                },
            )
            .description("One item by id.")
            .mime_type("text/plain"),
        )
        .unwrap();
    for name in ["greet", "secret"] {
        server
            .add_prompt(
                ServerPrompt::new(name, "Greets someone.", move |_, args| {
                    let who = args.get("name").and_then(Value::as_str).unwrap_or("");
                    Ok(PromptResult::new()
                        .description(format!("{name} of {tag}"))
                        .user_text(format!("Hello {who} from {tag}")))
                })
                .argument("name", "Who to greet", true),
            )
            .unwrap();
    }
    server.set_completion(move |_, request| {
        Ok(["ada", "alan", "grace"]
            .iter()
            .filter(|name| name.starts_with(&request.value))
            .map(|name| format!("{name}@{tag}"))
            .collect())
    });
    server
}

/// A front client that hands every notification's method and params to a channel.
fn watched_front(
    gateway: &toolwire::gateway::Gateway,
) -> (
    McpClient,
    toolwire::server::ServerConnection,
    mpsc::Receiver<(String, Value)>,
) {
    let (sender, receiver) = mpsc::channel();
    let sender = Mutex::new(sender);
    let (client, connection) = front_with(
        gateway,
        McpConfig::default()
            .mode(ProtocolMode::Legacy)
            .on_notification(move |notification| {
                let _ = sender.lock().unwrap().send((
                    notification.method.clone(),
                    notification.params.clone().unwrap_or(Value::Null),
                ));
            }),
    );
    (client, connection, receiver)
}

/// Waits for a notification named `method`; the test fails when none comes.
fn wait_for(notifications: &mpsc::Receiver<(String, Value)>, method: &str) -> Value {
    loop {
        match notifications.recv_timeout(LONG) {
            Ok((seen, params)) if seen == method => return params,
            Ok(_) => continue,
            Err(_) => panic!("no {method} reached the front client"),
        }
    }
}

fn text_of(contents: &[toolwire::mcp::ResourceContents]) -> String {
    contents
        .iter()
        .filter_map(|item| item.text.clone())
        .collect::<Vec<_>>()
        .join("|")
}

#[test]
fn resources_templates_and_prompts_of_two_backends_are_served() {
    let (alpha, beta) = (catalog_backend("alpha"), catalog_backend("beta"));
    let (_alpha_http, alpha_url) = http_backend(&alpha);
    let (_beta_http, beta_url) = http_backend(&beta);
    let gateway = gateway_with(
        &[
            ("alpha", url_entry(&alpha_url)),
            ("beta", url_entry(&beta_url)),
        ],
        r#"{"servers": {"beta": {"deny": ["secret"]}}}"#,
        GatewayConfig::new().protocol(ProtocolMode::Legacy),
    );
    let report = gateway.report();
    assert!(report.failed.is_empty(), "{report:?}");
    let beta_report = report.started.iter().find(|b| b.name == "beta").unwrap();
    assert_eq!(
        beta_report.clashes,
        vec![Clash {
            key: "shared://readme".into(),
            served_by: "alpha".into()
        }],
        "{report:?}"
    );
    assert_eq!(beta_report.resources, vec!["beta://own".to_owned()]);
    assert_eq!(beta_report.prompts, vec!["mcp__beta__greet".to_owned()]);
    assert_eq!(beta_report.skipped_prompts[0].name, "secret");

    let (client, connection, notifications) = watched_front(&gateway);
    let info = client.session_info().unwrap();
    assert!(info.has_capability("resources"), "{:?}", info.capabilities);
    assert!(info.has_capability("prompts"), "{:?}", info.capabilities);
    assert!(
        info.has_capability("completions"),
        "{:?}",
        info.capabilities
    );

    // Resources keep their URIs; the clash is served once, from the first backend.
    let resources = client.list_resources().unwrap();
    let mut uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    uris.sort_unstable();
    assert_eq!(uris, ["alpha://own", "beta://own", "shared://readme"]);
    let own = resources.iter().find(|r| r.uri == "beta://own").unwrap();
    assert_eq!(own.description.as_deref(), Some("the own of beta"));
    assert_eq!(
        text_of(&client.read_resource("shared://readme").unwrap()),
        "readme from alpha"
    );
    assert_eq!(
        text_of(&client.read_resource("beta://own").unwrap()),
        "own from beta"
    );
    let missing = client.read_resource("nowhere://at-all").unwrap_err();
    assert_eq!(missing.rpc().map(|e| e.code.0), Some(-32002), "{missing}");

    // Templates are listed as they are, and a URI they match is read from their backend.
    let templates = client.list_resource_templates().unwrap();
    let mut listed: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    listed.sort_unstable();
    assert_eq!(listed, ["alpha://items/{id}", "beta://items/{id}"]);
    assert_eq!(templates[0].mime_type.as_deref(), Some("text/plain"));
    assert_eq!(
        text_of(&client.read_resource("beta://items/7").unwrap()),
        "item 7 from beta"
    );

    // Prompts are namespaced like tools, and the policy's deny list applies to them.
    let mut prompts: Vec<String> = client
        .list_prompts()
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    prompts.sort_unstable();
    assert_eq!(
        prompts,
        [
            "mcp__alpha__greet",
            "mcp__alpha__secret",
            "mcp__beta__greet"
        ]
    );
    let listed = client.list_prompts().unwrap();
    let greet = listed
        .iter()
        .find(|p| p.name == "mcp__beta__greet")
        .unwrap();
    assert!(greet.arguments[0].required, "{:?}", greet.raw);
    let got = client
        .get_prompt("mcp__beta__greet", json!({"name": "Ada"}))
        .unwrap();
    assert_eq!(got.description.as_deref(), Some("greet of beta"));
    assert_eq!(
        got.messages[0].content.as_text(),
        Some("Hello Ada from beta")
    );
    // The backend checks the arguments: its refusal is passed on.
    let no_name = client
        .get_prompt("mcp__alpha__greet", Value::Null)
        .unwrap_err();
    assert_eq!(no_name.rpc().map(|e| e.code.0), Some(-32602), "{no_name}");
    let denied = client
        .get_prompt("mcp__beta__secret", json!({"name": "Ada"}))
        .unwrap_err();
    assert_eq!(denied.rpc().map(|e| e.code.0), Some(-32602), "{denied}");

    // Completion goes to the backend that owns the prompt, or the template.
    let completed = client
        .complete(
            json!({"type": "ref/prompt", "name": "mcp__beta__greet"}),
            "name",
            "a",
        )
        .unwrap();
    assert_eq!(completed.values, ["ada@beta", "alan@beta"]);
    let completed = client
        .complete(
            json!({"type": "ref/resource", "uri": "alpha://items/{id}"}),
            "id",
            "g",
        )
        .unwrap();
    assert_eq!(completed.values, ["grace@alpha"]);

    // A subscription reaches the owning backend, and its updates come back.
    client.subscribe_resource("beta://own").unwrap();
    beta.notify_resource_updated("beta://own");
    let updated = wait_for(&notifications, "notifications/resources/updated");
    assert_eq!(updated["uri"], "beta://own");

    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn subscriptions_at_a_2026_backend_are_one_listen_and_its_updates_come_through() {
    // The gateway speaks 2026-07-28 to the backend, which has no `resources/subscribe`: the
    // front client's subscriptions become the backend's `subscriptions/listen`.
    let backend = catalog_backend("modern");
    let (_http, url) = http_backend(&backend);
    let gateway = gateway_with(
        &[("modern", url_entry(&url))],
        "{}",
        GatewayConfig::new().protocol(ProtocolMode::Modern),
    );
    let (client, connection, notifications) = watched_front(&gateway);
    // Answered once the backend listens: an update sent right after it comes through.
    client.subscribe_resource("modern://own").unwrap();
    backend.notify_resource_updated("modern://own");
    let updated = wait_for(&notifications, "notifications/resources/updated");
    assert_eq!(updated["uri"], "modern://own");

    // Unsubscribed, its updates stop; another URI's subscription is listened for instead.
    client.unsubscribe_resource("modern://own").unwrap();
    client.subscribe_resource("shared://readme").unwrap();
    backend.notify_resource_updated("modern://own");
    backend.notify_resource_updated("shared://readme");
    let updated = wait_for(&notifications, "notifications/resources/updated");
    assert_eq!(updated["uri"], "shared://readme");

    // A URI no backend serves is refused.
    let unknown = client.subscribe_resource("nowhere://x").unwrap_err();
    assert_eq!(unknown.rpc().map(|e| e.code.0), Some(-32002), "{unknown}");

    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn a_backends_resource_and_prompt_list_changes_are_listed_again() {
    let backend = catalog_backend("moving");
    let (_http, url) = http_backend(&backend);
    let gateway = gateway_with(
        &[("moving", url_entry(&url))],
        "{}",
        GatewayConfig::new().protocol(ProtocolMode::Legacy),
    );
    let (client, connection, notifications) = watched_front(&gateway);
    assert_eq!(client.list_prompts().unwrap().len(), 2);
    backend
        .add_prompt(ServerPrompt::new("later", "Added later.", |_, _| {
            Ok(PromptResult::new().user_text("later"))
        }))
        .unwrap();
    wait_for(&notifications, "notifications/prompts/list_changed");
    let prompts: Vec<String> = client
        .list_prompts()
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert!(
        prompts.contains(&"mcp__moving__later".to_owned()),
        "{prompts:?}"
    );
    assert_eq!(
        client
            .get_prompt("mcp__moving__later", Value::Null)
            .unwrap()
            .messages[0]
            .content
            .as_text(),
        Some("later")
    );
    backend
        .add_resource(ServerResource::new("moving://new", "new", |_, uri| {
            Ok(vec![content::text_contents(uri, None, "new")])
        }))
        .unwrap();
    wait_for(&notifications, "notifications/resources/list_changed");
    assert!(client
        .list_resources()
        .unwrap()
        .iter()
        .any(|r| r.uri == "moving://new"));
    assert_eq!(
        text_of(&client.read_resource("moving://new").unwrap()),
        "new"
    );
    client.close().unwrap();
    connection.wait();
    gateway.close();
}

#[test]
fn the_bundled_tool_servers_catalog_is_served_over_stdio() {
    let entry = json!({"command": tool_server().display().to_string(), "args": ["--catalog"]});
    let gateway = gateway_with(&[("notes", entry)], "{}", GatewayConfig::new());
    assert!(gateway.report().failed.is_empty(), "{:?}", gateway.report());
    let (client, connection, _notifications) = watched_front(&gateway);
    assert_eq!(
        text_of(&client.read_resource("note://readme").unwrap()),
        "Read me first."
    );
    assert_eq!(
        text_of(&client.read_resource("note://items/42").unwrap()),
        "item 42"
    );
    let got = client
        .get_prompt(
            "mcp__notes__greet",
            json!({"name": "Grace", "tone": "warm"}),
        )
        .unwrap();
    assert_eq!(
        got.messages[0].content.as_text(),
        Some("Please greet Grace, warmly.")
    );
    client.close().unwrap();
    connection.wait();
    gateway.close();
}
