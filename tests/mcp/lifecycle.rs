//! The MCP lifecycle over the in-memory transport: the `initialize` handshake, the versions a
//! client accepts, the Auto probe with `server/discover` and its fallbacks, and the 2026-07-28
//! `_meta` stamp on every request.
use crate::support::mcp as support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::*;
use toolwire::jsonrpc::{ErrorCode, ErrorObject};
use toolwire::mcp::{
    ElicitResult, Era, Root, HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, META_CLIENT_INFO,
    STATELESS_VERSION,
};
use toolwire::{CallOptions, Error, ProtocolMode};

#[test]
fn initialize_offers_the_latest_version_and_declares_no_capabilities_without_handlers() {
    let (client, peer, params) = connect_scripted(config(ProtocolMode::Legacy), |peer| {
        let request = expect_request(peer, "initialize");
        // Nothing may follow `initialize` before its reply: `initialized` comes after it.
        assert_eq!(peer.recv_line(Duration::ZERO), None);
        answer(
            peer,
            &request.id,
            initialize_result(LATEST_HANDSHAKE_VERSION),
        );
        let initialized = expect_notification(peer, "notifications/initialized");
        assert_eq!(initialized.params, None);
        params(&request)
    });
    let client = client.expect("connect");
    assert_eq!(params["protocolVersion"], "2025-11-25");
    assert_eq!(params["capabilities"], json!({}));
    assert_eq!(params["clientInfo"]["name"], "toolwire");
    assert!(params["clientInfo"]["version"].is_string(), "{params}");
    assert!(
        params.get("_meta").is_none(),
        "no stamp in the handshake era: {params}"
    );
    finish(&client, &peer);
}

#[test]
fn an_initialize_that_times_out_is_never_cancelled() {
    let slow = config(ProtocolMode::Legacy).initialize_timeout(Duration::from_millis(50));
    let (client, peer, _) = connect_scripted(slow, |peer| {
        // Read `initialize` and never answer it.
        expect_request(peer, "initialize");
    });
    match client {
        Err(Error::Timeout { method, .. }) => assert_eq!(method, "initialize"),
        other => panic!("expected the initialize timeout, got {other:?}"),
    }
    // The failed connect closed its connection: everything the client sent is queued by
    // now, and no `notifications/cancelled` is among it.
    let mut rest = Vec::new();
    while let Some(line) = peer.recv_line(Duration::ZERO) {
        rest.push(line);
    }
    assert!(
        rest.iter()
            .all(|line| !line.contains("notifications/cancelled")),
        "{rest:?}"
    );
}

#[test]
fn capabilities_are_declared_for_the_supplied_handlers_only() {
    let with_roots = config(ProtocolMode::Legacy).roots(Vec::new);
    let (client, peer, params) =
        connect_scripted(with_roots, |peer| serve_handshake(peer, "2025-11-25"));
    let client = client.expect("connect");
    let capabilities = params["capabilities"].as_object().expect("an object");
    assert_eq!(
        capabilities.keys().collect::<Vec<_>>(),
        ["roots"],
        "{params}"
    );
    assert!(capabilities["roots"].is_object());
    finish(&client, &peer);

    let with_all = config(ProtocolMode::Legacy)
        .roots(Vec::new)
        .sampling(|_| Ok(json!({})))
        .elicitation(|_| ElicitResult::Decline);
    let (client, peer, params) =
        connect_scripted(with_all, |peer| serve_handshake(peer, "2025-11-25"));
    let client = client.expect("connect");
    let mut keys: Vec<&String> = params["capabilities"]
        .as_object()
        .expect("an object")
        .keys()
        .collect();
    keys.sort();
    assert_eq!(keys, ["elicitation", "roots", "sampling"], "{params}");
    finish(&client, &peer);
}

#[test]
fn every_handshake_version_the_server_chooses_is_accepted() {
    for version in HANDSHAKE_VERSIONS {
        let (client, peer, _) = connect_scripted(config(ProtocolMode::Legacy), |peer| {
            serve_handshake(peer, version)
        });
        let client = client.unwrap_or_else(|error| panic!("{version}: {error}"));
        let info = client.session_info().expect("session info");
        assert_eq!(info.era, Era::Handshake);
        assert_eq!(info.protocol_version, *version);
        finish(&client, &peer);
    }
}

#[test]
fn an_unknown_version_from_the_server_is_a_protocol_error_naming_it() {
    let (client, peer, ()) = connect_scripted(config(ProtocolMode::Legacy), |peer| {
        serve(peer, "initialize", initialize_result("2099-01-01"));
    });
    match client {
        Err(Error::Protocol(message)) => assert!(message.contains("2099-01-01"), "{message}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
    // No `initialized` was sent, and the connection was closed.
    assert_eq!(peer.recv_line(SOON), None);
}

#[test]
fn session_info_exposes_the_server_after_a_handshake() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    let info = client.session_info().expect("session info");
    assert_eq!(info.server.name, SERVER_NAME);
    assert_eq!(info.server.version, SERVER_VERSION);
    assert_eq!(info.server.title.as_deref(), Some("Memory"));
    assert_eq!(info.instructions.as_deref(), Some(INSTRUCTIONS));
    assert_eq!(
        info.capabilities,
        json!({"tools": {"listChanged": true}, "logging": {}})
    );
    assert!(info.has_capability("tools"));
    assert!(!info.has_capability("resources"));
    finish(&client, &peer);
}

#[test]
fn auto_falls_back_to_initialize_when_discover_is_refused() {
    let (client, peer, (discover, initialize)) =
        connect_scripted(config(ProtocolMode::Auto), |peer| {
            let discover = expect_request(peer, "server/discover");
            answer_error(
                peer,
                &discover.id,
                ErrorObject::method_not_found("server/discover"),
            );
            let initialize = serve_handshake(peer, "2025-06-18");
            (params(&discover), initialize)
        });
    let client = client.expect("connect");
    assert_stamped(&discover, &json!({}));
    assert_eq!(discover["_meta"][META_CLIENT_INFO]["name"], "toolwire");
    assert_eq!(initialize["protocolVersion"], "2025-11-25");
    let info = client.session_info().expect("session info");
    assert_eq!(info.era, Era::Handshake);
    assert_eq!(info.protocol_version, "2025-06-18");
    finish(&client, &peer);
}

#[test]
fn auto_falls_back_on_any_error_not_only_method_not_found() {
    let (client, peer, ()) = connect_scripted(config(ProtocolMode::Auto), |peer| {
        let discover = expect_request(peer, "server/discover");
        answer_error(
            peer,
            &discover.id,
            ErrorObject::new(ErrorCode(-32602), "Invalid request parameters"),
        );
        serve_handshake(peer, "2025-11-25");
    });
    let client = client.expect("connect");
    assert_eq!(
        client.session_info().expect("session info").era,
        Era::Handshake
    );
    finish(&client, &peer);
}

#[test]
fn auto_falls_back_when_discover_offers_no_version_it_speaks() {
    let (client, peer, ()) = connect_scripted(config(ProtocolMode::Auto), |peer| {
        serve(peer, "server/discover", discover_result(&["2025-11-25"]));
        serve_handshake(peer, "2025-11-25");
    });
    let client = client.expect("connect");
    assert_eq!(
        client.session_info().expect("session info").era,
        Era::Handshake
    );
    finish(&client, &peer);
}

#[test]
fn auto_falls_back_after_the_discover_timeout_when_the_server_is_silent() {
    const DISCOVER_TIMEOUT: Duration = Duration::from_millis(300);
    let mut silent = config(ProtocolMode::Auto);
    silent = silent.discover_timeout(DISCOVER_TIMEOUT);
    // Taken before the client starts its probe, so a lower bound on the probe's wait.
    let started = Instant::now();
    let (client, peer, (discover_id, fell_back_after)) = connect_scripted(silent, |peer| {
        let discover = expect_request(peer, "server/discover");
        // The probe is abandoned without `notifications/cancelled`: next comes `initialize`.
        let initialize = expect_request(peer, "initialize");
        let fell_back_after = started.elapsed();
        answer(peer, &initialize.id, initialize_result("2025-11-25"));
        expect_notification(peer, "notifications/initialized");
        (discover.id, fell_back_after)
    });
    let client = client.expect("connect");
    assert!(
        fell_back_after >= DISCOVER_TIMEOUT,
        "fell back after {fell_back_after:?}"
    );
    assert_eq!(
        client.session_info().expect("session info").era,
        Era::Handshake
    );

    // A discover answer arriving now is a late response: dropped, and the session goes on.
    answer(&peer, &discover_id, discover_result(&[STATELESS_VERSION]));
    let (pinged, _) = exchange(
        &peer,
        || client.ping(),
        |peer| serve(peer, "ping", json!({})),
    );
    pinged.expect("ping after the late answer");
    let rpc = client.rpc().expect("rpc");
    assert_eq!(rpc.stats().late_responses, 1);
    assert_eq!(
        client.session_info().expect("session info").era,
        Era::Handshake
    );
    finish(&client, &peer);
}

/// A 2026-07-28 server that starts slowly answers the probe only after the client gave up on
/// it; by then it serves 2026-07-28 and refuses the handshake with -32022, naming the versions
/// it supports. The client goes back to the stateless era instead of failing.
#[test]
fn auto_recovers_when_a_late_stateless_server_refuses_the_handshake() {
    let mut slow = config(ProtocolMode::Auto);
    slow = slow.discover_timeout(Duration::from_millis(100));
    let (client, peer, again) = connect_scripted(slow, |peer| {
        let late = expect_request(peer, "server/discover");
        let initialize = expect_request(peer, "initialize");
        answer(peer, &late.id, discover_result(&[STATELESS_VERSION]));
        answer_error(
            peer,
            &initialize.id,
            ErrorObject::new(
                ErrorCode(-32022),
                "connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted",
            )
            .with_data(json!({"requested": "2025-11-25", "supported": [STATELESS_VERSION]})),
        );
        serve_discover(peer)
    });
    let client = client.expect("connect");
    assert_stamped(&again, &json!({}));
    let info = client.session_info().expect("session info");
    assert_eq!(info.era, Era::Stateless);
    assert_eq!(info.protocol_version, STATELESS_VERSION);
    finish(&client, &peer);
}

#[test]
fn auto_does_not_retry_discover_after_other_handshake_errors() {
    let mut slow = config(ProtocolMode::Auto);
    slow = slow.discover_timeout(Duration::from_millis(100));
    let (client, peer, ()) = connect_scripted(slow, |peer| {
        expect_request(peer, "server/discover");
        let initialize = expect_request(peer, "initialize");
        answer_error(
            peer,
            &initialize.id,
            ErrorObject::new(ErrorCode(-32022), "unsupported")
                .with_data(json!({"supported": ["2024-01-01"]})),
        );
    });
    let error = client.expect_err("no version in common");
    assert_eq!(error.rpc().map(|error| error.code), Some(ErrorCode(-32022)));
    // Nothing else was tried; the connection was closed.
    assert_eq!(peer.recv_line(SOON), None);
}

/// `discover_timeout` bounds the Auto probe only: in Modern mode `server/discover` is the
/// lifecycle itself, as patient as `initialize`.
#[test]
fn modern_mode_waits_for_a_slow_discover_like_for_initialize() {
    const PROBE_BOUND: Duration = Duration::from_millis(50);
    let mut modern = config(ProtocolMode::Modern);
    modern = modern.discover_timeout(PROBE_BOUND);
    let (client, peer, ()) = connect_scripted(modern, |peer| {
        let discover = expect_request(peer, "server/discover");
        // A slow server start: time passes on the server's side only.
        std::thread::sleep(4 * PROBE_BOUND);
        answer(peer, &discover.id, discover_result(&[STATELESS_VERSION]));
    });
    let client = client.expect("a slow discover still connects in Modern mode");
    assert_eq!(
        client.session_info().expect("session info").era,
        Era::Stateless
    );
    let rpc = client.rpc().expect("rpc");
    assert_eq!(rpc.stats().timeouts, 0);
    finish(&client, &peer);
}

#[test]
fn legacy_mode_never_probes() {
    let (client, peer, first) = connect_scripted(config(ProtocolMode::Legacy), |peer| {
        let first = next_message(peer);
        if let toolwire::jsonrpc::Message::Request(request) = &first {
            answer(peer, &request.id, initialize_result("2025-11-25"));
            expect_notification(peer, "notifications/initialized");
        }
        first
    });
    let client = client.expect("connect");
    assert!(
        matches!(&first, toolwire::jsonrpc::Message::Request(request) if request.method == "initialize"),
        "{first:?}"
    );
    finish(&client, &peer);
}

#[test]
fn modern_mode_does_not_fall_back() {
    let (client, peer, ()) = connect_scripted(config(ProtocolMode::Modern), |peer| {
        let discover = expect_request(peer, "server/discover");
        answer_error(
            peer,
            &discover.id,
            ErrorObject::method_not_found("server/discover"),
        );
    });
    let error = client.expect_err("a modern-only client against a handshake-era server");
    assert_eq!(
        error.rpc().map(|error| error.code),
        Some(ErrorCode::METHOD_NOT_FOUND),
        "{error:?}"
    );
    // No `initialize` followed; the connection was closed.
    assert_eq!(peer.recv_line(SOON), None);
}

#[test]
fn auto_picks_the_stateless_era_and_stamps_every_later_request() {
    let stamped_config = config(ProtocolMode::Auto).roots(|| {
        vec![Root {
            uri: "file:///work".into(),
            name: None,
        }]
    });
    let capabilities = json!({"roots": {"listChanged": true}});
    let (client, peer, discover) = connect_scripted(stamped_config, serve_discover);
    let client = client.expect("connect");
    assert_stamped(&discover, &capabilities);
    let info = client.session_info().expect("session info");
    assert_eq!(info.era, Era::Stateless);
    assert_eq!(info.protocol_version, STATELESS_VERSION);
    assert_eq!(info.server.name, SERVER_NAME);
    assert_eq!(info.server.version, SERVER_VERSION);
    assert_eq!(info.instructions.as_deref(), Some(INSTRUCTIONS));
    assert_eq!(
        info.capabilities,
        json!({"tools": {"listChanged": true}, "prompts": {}})
    );

    // No `initialized` in this era: the first thing after discover is the caller's request.
    let (tools, list) = exchange(
        &peer,
        || client.list_tools(),
        |peer| {
            serve(
                peer,
                "tools/list",
                json!({"resultType": "complete", "tools": [add_tool()], "ttlMs": 0, "cacheScope": "private"}),
            )
        },
    );
    assert_eq!(names(&tools.expect("tools")), ["add"]);
    assert_stamped(&params(&list), &capabilities);

    // A tool call with progress: the stamp and the progress token share `_meta`.
    let (sum, call) = exchange(
        &peer,
        || {
            client.call_tool_with(
                "add",
                json!({"a": 1, "b": 2}),
                CallOptions::new().want_progress(true),
            )
        },
        |peer| {
            serve(
                peer,
                "tools/call",
                json!({"content": [{"type": "text", "text": "3"}], "structuredContent": {"sum": 3}}),
            )
        },
    );
    assert_eq!(
        sum.expect("add").structured_content,
        Some(json!({"sum": 3}))
    );
    let call = params(&call);
    // A tool call also declares the tasks extension (a server may answer with a task).
    let mut with_tasks = capabilities.clone();
    with_tasks["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    assert_stamped(&call, &with_tasks);
    assert_eq!(call["name"], "add");
    assert_eq!(call["arguments"], json!({"a": 1, "b": 2}));
    assert!(call["_meta"]["progressToken"].is_number(), "{call}");

    // Any request, with or without params of its own.
    let (custom, request) = exchange(
        &peer,
        || client.request("custom/method", json!({"x": 1}), CallOptions::new()),
        |peer| serve(peer, "custom/method", json!({"ok": true})),
    );
    assert_eq!(custom.expect("custom"), json!({"ok": true}));
    assert_eq!(params(&request)["x"], 1);
    assert_stamped(&params(&request), &capabilities);
    let (pinged, ping) = exchange(
        &peer,
        || client.ping(),
        // 2026-07-28 has no `ping`; the client uses the cheap discover instead.
        |peer| {
            serve(
                peer,
                "server/discover",
                discover_result(&[STATELESS_VERSION]),
            )
        },
    );
    pinged.expect("ping");
    assert_stamped(&params(&ping), &capabilities);
    finish(&client, &peer);
}

#[test]
fn an_unknown_result_type_is_a_protocol_error() {
    let (client, peer) = connect_modern(config(ProtocolMode::Modern));
    let (outcome, _) = exchange(
        &peer,
        || client.request("custom/method", Value::Null, CallOptions::new()),
        |peer| {
            serve(
                peer,
                "custom/method",
                json!({"resultType": "partial", "value": 1}),
            )
        },
    );
    match outcome {
        Err(Error::Protocol(message)) => assert!(message.contains("partial"), "{message}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
    // An explicit "complete" is fine.
    let (outcome, _) = exchange(
        &peer,
        || client.request("custom/method", Value::Null, CallOptions::new()),
        |peer| {
            serve(
                peer,
                "custom/method",
                json!({"resultType": "complete", "value": 2}),
            )
        },
    );
    assert_eq!(outcome.expect("complete")["value"], 2);
    finish(&client, &peer);
}
