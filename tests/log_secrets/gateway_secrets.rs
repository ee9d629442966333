//! A gateway's backends that quote their credentials put them nowhere: a stdio backend
//! quoting the value of a variable its config entry set, and an HTTP backend quoting the
//! header values and URL password of its entry, in a JSON-RPC error (message and data), a
//! tool's `isError` text, a log message and stderr. Every log record (at every level, the
//! harness's `warn` with the error's detail among them), the gateway's transcript
//! (`response` and `finished` details) and the front client's answers show `***` instead.
#![cfg(feature = "gateway")]

use crate::support::gateway as support;
use crate::support::http_fake;

use std::sync::Arc;

use serde_json::{json, Value};
use support::{front, gateway_with, tool_server};
use toolwire::gateway::GatewayConfig;
use toolwire::harness::Transcript;
use toolwire::ProtocolMode;

use super::secrets_masked::{capture_logs, records};

/// The value of the stdio backend's `env`.
const ENV_SECRET: &str = "gw-env-S3CRET-0011";
/// The HTTP backend's `Authorization` header (a bearer token).
const BEARER_SECRET: &str = "gw-bearer-S3CRET-0012";
/// Another header of the HTTP backend.
const KEY_SECRET: &str = "gw-api-key-S3CRET-0013";
/// The HTTP backend's URL password.
const PASSWORD_SECRET: &str = "gw-password-S3CRET-0014";

const ALL: [&str; 4] = [ENV_SECRET, BEARER_SECRET, KEY_SECRET, PASSWORD_SECRET];

fn assert_hidden(what: &str, text: &str) {
    for secret in ALL {
        assert!(
            !text.contains(secret),
            "{what} shows the secret {secret:?}:\n{text}"
        );
    }
}

#[test]
fn backends_quoting_their_credentials_show_them_nowhere_through_the_gateway() {
    capture_logs();
    let folder =
        std::env::temp_dir().join(format!("toolwire-gateway-secrets-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("scratch folder");
    let path = folder.join("audit.jsonl");
    let transcript = Arc::new(Transcript::create(&path).expect("transcript"));
    let backend = http_fake::quoting_server(PASSWORD_SECRET);
    let url = backend
        .url
        .replacen("http://", &format!("http://agent:{PASSWORD_SECRET}@"), 1);
    let local = json!({"command": tool_server().display().to_string(), "args": ["--hostile"],
                       "env": {"PLANTED": ENV_SECRET}});
    let remote = json!({"type": "http", "url": url,
                        "headers": {"Authorization": format!("Bearer {BEARER_SECRET}"),
                                    "X-Api-Key": KEY_SECRET}});
    let gateway = gateway_with(
        &[("local", local), ("remote", remote)],
        "{}",
        // The fake speaks the handshake only.
        GatewayConfig::new()
            .transcript(transcript)
            .protocol(ProtocolMode::Legacy),
    );
    let (client, connection) = front(&gateway);
    // A backend's JSON-RPC error reaches the front as that JSON-RPC error (code, message and
    // data) and its `isError` text as a result: both passed on, masked.
    for (tool, arguments) in [
        (
            "mcp__local__leak",
            json!({"name": "PLANTED", "as": "rpc_error"}),
        ),
        (
            "mcp__local__leak",
            json!({"name": "PLANTED", "as": "error"}),
        ),
        ("mcp__remote__leak", json!({})),
        ("mcp__remote__fails", json!({})),
    ] {
        let answer = match client.call_tool(tool, arguments) {
            Ok(result) => {
                assert!(result.is_error, "{tool}: {result:?}");
                format!("{result:?} {}", result.to_value())
            }
            Err(error) => format!("{error} {error:?}"),
        };
        assert_hidden(&format!("the front client's answer to {tool}"), &answer);
        assert!(answer.contains("***"), "{tool}: {answer}");
    }
    client.close().expect("close");
    connection.wait();
    gateway.close();

    let text = std::fs::read_to_string(&path).expect("the transcript");
    assert_hidden("the gateway's transcript", &text);
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert!(
        lines.iter().any(|line| line.to_string().contains("***")),
        "the transcript records no masked detail:\n{text}"
    );
    let logged = records();
    for (level, target, message) in &logged {
        if target.starts_with("ureq_proto") && *level == log::Level::Trace {
            continue;
        }
        assert_hidden(&format!("a {level} record of {target}"), message);
    }
    // The backends' texts were logged, masked: the harness's report of the JSON-RPC error,
    // the server's log message.
    assert!(
        logged
            .iter()
            .any(|(_, _, message)| message.contains("Bearer *** is not valid")),
        "{logged:#?}"
    );
    assert!(
        logged
            .iter()
            .any(|(_, _, message)| message.contains("using PLANTED=***")),
        "{logged:#?}"
    );
    let _ = std::fs::remove_dir_all(&folder);
}
