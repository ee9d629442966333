//! Skills (SEP-2640) through the gateway: the backends' skills keep their URIs and names, a
//! skill URI two backends list is served from the first in config order (the clash in the
//! start report), and a front client loads and verifies them through the gateway, directory
//! reads included.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;

use serde_json::{json, Value};
use support::{front, gateway_with, http_backend, url_entry};
use toolwire::gateway::{Clash, GatewayConfig};
use toolwire::mcp::SKILLS_EXTENSION;
use toolwire::server::{Server, ServerConfig, SkillSet};
use toolwire::CallOptions;

fn skill_md(name: &str, tag: &str) -> Vec<u8> {
    format!("---\nname: {name}\ndescription: {name} from {tag}\n---\nBody of {tag}.\n").into_bytes()
}

/// A backend serving `own` (with a subdirectory) and `shared/common`, both saying `tag`.
fn backend(tag: &str, own: &str) -> Server {
    let server = Server::new(ServerConfig::new(tag, "1")).unwrap();
    let mut skills = SkillSet::new();
    skills
        .add_skill(
            own,
            [
                ("SKILL.md".to_owned(), skill_md(own, tag)),
                (
                    "docs/NOTES.md".to_owned(),
                    format!("notes of {tag}\n").into_bytes(),
                ),
            ],
        )
        .unwrap();
    skills
        .add_skill(
            "shared/common",
            [("SKILL.md".to_owned(), skill_md("common", tag))],
        )
        .unwrap();
    skills.serve(&server).unwrap();
    server
}

#[test]
fn backends_skills_pass_through_and_the_first_wins_a_clash() {
    let (first, second) = (backend("first", "alpha"), backend("second", "beta"));
    let (_http_a, url_a) = http_backend(&first);
    let (_http_b, url_b) = http_backend(&second);
    let gateway = gateway_with(
        &[("a", url_entry(&url_a)), ("b", url_entry(&url_b))],
        "{}",
        GatewayConfig::new(),
    );
    let report = gateway.report();
    assert!(report.failed.is_empty(), "{report:?}");
    let b = report.started.iter().find(|s| s.name == "b").unwrap();
    assert!(b.clashes.contains(&Clash {
        key: "skill://shared/common/SKILL.md".into(),
        served_by: "a".into(),
    }));

    let (client, _connection) = front(&gateway);
    let info = client.session_info().unwrap();
    assert_eq!(
        info.capabilities["extensions"][SKILLS_EXTENSION],
        json!({"directoryRead": true})
    );
    let entries = client.list_skills().unwrap();
    let listed: Vec<(&str, &str)> = entries
        .iter()
        .map(|entry| (entry.uri.as_str(), entry.description()))
        .collect();
    assert_eq!(
        listed,
        [
            ("skill://alpha/SKILL.md", "alpha from first"),
            ("skill://shared/common/SKILL.md", "common from first"),
            ("skill://beta/SKILL.md", "beta from second"),
        ]
    );

    // Loaded and read through the gateway, verified against the backend's own entry.
    let beta = client.get_skill("skill://beta/SKILL.md").unwrap();
    let mut skill = client.load_skill(&beta).unwrap();
    assert_eq!(skill.body(), "Body of second.\n");
    assert_eq!(
        skill.read(&client, "skill://beta/docs/NOTES.md").unwrap(),
        b"notes of second\n"
    );
    let common = client.load_skill(&entries[1]).unwrap();
    assert_eq!(common.body(), "Body of first.\n");

    let read = |uri: &str| {
        client.request(
            "resources/directory/read",
            json!({"uri": uri}),
            CallOptions::new(),
        )
    };
    let children = read("skill://beta").unwrap();
    let uris: Vec<&str> = children["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|child| child["uri"].as_str())
        .collect();
    assert_eq!(uris, ["skill://beta/SKILL.md", "skill://beta/docs"]);
    assert_eq!(children["resources"][1]["mimeType"], "inode/directory");
    match read("skill://nowhere") {
        Err(toolwire::Error::Rpc(error)) => assert_eq!(error.code.0, -32602),
        other => panic!("expected -32602, got {other:?}"),
    }
    match client.request(
        "skills/get",
        json!({"uri": "skill://nowhere/SKILL.md"}),
        CallOptions::new(),
    ) {
        Err(toolwire::Error::Rpc(error)) => assert_eq!(error.code.0, -32602),
        other => panic!("expected -32602, got {other:?}"),
    }
}

#[test]
fn without_a_backend_declaring_skills_the_gateway_does_not_declare_them() {
    let plain = Server::new(ServerConfig::new("plain", "1")).unwrap();
    let (_http, url) = http_backend(&plain);
    let gateway = gateway_with(&[("p", url_entry(&url))], "{}", GatewayConfig::new());
    let (client, _connection) = front(&gateway);
    let info = client.session_info().unwrap();
    assert_eq!(info.capabilities.get("extensions"), None::<&Value>);
    match client.request("skills/list", json!({}), CallOptions::new()) {
        Err(toolwire::Error::Rpc(error)) => assert_eq!(error.code.0, -32601),
        other => panic!("expected -32601, got {other:?}"),
    }
}
