//! A new user's first hour (issue 27): each message they met, as it reads now. A server path
//! that is wrong, a URL without its scheme, a login to a server that needs none, a web page
//! where the endpoint is not, `doctor` on a server it cannot reach, a Claude Desktop-style
//! file under another name, `complete` without its target, `serve --help`, and a server that
//! cannot ask its question in a 2026-07-28 session.
#![cfg(feature = "cli")]

use crate::support::cli;
use crate::support::http_fake::{initialize_result, result, FakeServer};

use cli::{closed_port_url, run, run_args, scratch, toolwire};
use serde_json::{json, Value};
use toolwire::harness::LocalTool;
use toolwire::server::{HttpServer, HttpServerConfig, Server, ServerConfig};
use toolwire::CallToolResult;

#[test]
fn a_server_program_that_is_not_there_is_said_in_words() {
    let missing = run_args(&["tools", "--", "target/debug/examples/no-such-server"]).expect(4);
    assert!(
        missing.stderr.contains(
            "could not start `target/debug/examples/no-such-server`: there is no file \
             `target/debug/examples/no-such-server` (a relative path is taken from the working \
             folder"
        ),
        "{}",
        missing.stderr
    );
    assert!(!missing.stderr.contains("os error"), "{}", missing.stderr);
    let unknown = run_args(&["tools", "--", "no-such-mcp-server-program"]).expect(4);
    assert!(
        unknown
            .stderr
            .contains("there is no program `no-such-mcp-server-program` in PATH"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn a_url_without_its_scheme_is_answered_with_the_url_it_meant() {
    let run = run_args(&["--url", "127.0.0.1:3911/mcp", "info"]).expect(2);
    assert!(
        run.stderr.contains(
            "--url `127.0.0.1:3911/mcp` has no scheme: did you mean http://127.0.0.1:3911/mcp?"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("authorization"), "{}", run.stderr);
}

/// An MCP server over HTTP that needs no authorization at all.
fn open_server() -> (Server, HttpServer) {
    let server = Server::new(ServerConfig::new("open", "1.0")).unwrap();
    server
        .add_tool(LocalTool::with_context(
            "hello",
            "Says hello.",
            json!({"type": "object"}),
            |_context, _args| Ok(CallToolResult::from_text("hello")),
        ))
        .unwrap();
    let http = HttpServer::bind(&server, HttpServerConfig::new().port(0)).unwrap();
    (server, http)
}

#[test]
fn login_to_a_server_that_needs_none_says_so() {
    let (_server, http) = open_server();
    let tokens = scratch("newuser-login").join("tokens.json");
    let mut command = toolwire(&["--url", &http.url(), "login", "--no-browser"]);
    command
        .env("TOOLWIRE_TOKEN_FILE", &tokens)
        .env_remove("MCP_CLIENT_SECRET");
    let login = run(command).expect(0);
    assert!(
        login
            .stderr
            .contains("needs no login: it answers without authorization"),
        "{}",
        login.stderr
    );
    assert!(!tokens.exists(), "a token file was written");
    http.close().unwrap();
}

#[test]
fn a_web_page_where_the_endpoint_is_not_is_one_line_with_the_usual_path() {
    let page = format!(
        "<!DOCTYPE html><html><head><title>404 Not Found</title></head><body>{}</body></html>",
        "<p>Nothing here. Try the home page.</p>\n".repeat(200)
    );
    let web = FakeServer::start(move |_request, reply| {
        reply.send(404, "text/html; charset=utf-8", &[], &page);
    });
    let root = web.url.trim_end_matches("/mcp").to_owned();
    let run = run_args(&["--url", &format!("{root}/"), "--no-login", "tools"]).expect(4);
    assert!(
        run.stderr.contains(&format!(
            "HTTP 404 for `initialize` from {root}/: an HTML page: 404 Not Found (no MCP endpoint \
             at this path? the endpoint is usually `/mcp`: try {root}/mcp)"
        )),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("Nothing here"), "{}", run.stderr);
    assert!(run.stderr.len() < 1_000, "{}", run.stderr);
}

#[test]
fn doctor_does_not_call_a_refused_server_free_of_authorization() {
    let dir = scratch("newuser-doctor");
    let config = dir.join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"down": {"type": "http", "url": closed_port_url()}}}).to_string(),
    )
    .unwrap();
    let mut command = toolwire(&[
        "doctor",
        "--config",
        config.to_str().unwrap(),
        "--connect-timeout",
        "2s",
        "--json",
    ]);
    command
        .env("TOOLWIRE_TOKEN_FILE", dir.join("tokens.json"))
        .env_remove("MCP_CLIENT_SECRET");
    let report = run(command).expect(4);
    let document: Value = serde_json::from_str(&report.stdout).unwrap();
    let down = &document["servers"][0];
    assert_eq!(down["status"], "failed", "{document}");
    assert_eq!(down["authorization"], "-", "{document}");
}

#[test]
fn a_desktop_style_file_under_another_name_is_named_claude_desktop() {
    let dir = scratch("newuser-format");
    let config = dir.join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"tools": {"command": "tool_server", "args": ["--catalog"]}}})
            .to_string(),
    )
    .unwrap();
    let servers = run_args(&["servers", "--config", config.to_str().unwrap()]).expect(0);
    assert!(
        servers.stdout.contains("(Claude Desktop format, 1 server)"),
        "{}",
        servers.stdout
    );
}

#[test]
fn complete_names_both_of_its_targets() {
    let run = run_args(&["complete", "arg", "--", "true"]).expect(2);
    assert!(
        run.stderr
            .contains("--prompt <NAME>|--template <URI_TEMPLATE>"),
        "{}",
        run.stderr
    );
}

#[test]
fn serve_help_shows_only_the_options_serve_uses() {
    let help = run_args(&["serve", "--help"]).expect(0).stdout;
    for shown in [
        "--policy",
        "--http",
        "--config",
        "--protocol",
        "--transcript",
    ] {
        assert!(help.contains(shown), "{shown} is missing:\n{help}");
    }
    for hidden in [
        "--url",
        "--header",
        "--timeout ",
        "--elicit",
        "--sampling-command",
        "--root",
        "--client-id",
        "--headless",
        "--grant",
        "--ca-cert",
    ] {
        assert!(!help.contains(hidden), "{hidden} shows:\n{help}");
    }
}

/// A server whose tool `ask` fails the way the Python SDK's eliciting tools fail in a
/// 2026-07-28 session: a JSON-RPC error saying the request could not be sent. It speaks both
/// eras.
fn cannot_ask() -> FakeServer {
    FakeServer::start(|request, reply| {
        let answer = match request.rpc().as_str() {
            "server/discover" => result(
                request,
                json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                       "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private",
                       "_meta": {"io.modelcontextprotocol/serverInfo":
                                 {"name": "asker", "version": "1"}}}),
            ),
            "initialize" => initialize_result(request, "2025-11-25"),
            "tools/list" => result(
                request,
                json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                       "tools": [{"name": "ask", "inputSchema": {"type": "object"}}]}),
            ),
            "tools/call" => json!({"jsonrpc": "2.0", "id": request.id(), "error": {
                "code": -32600,
                "message": "Cannot send 'elicitation/create': this transport context has no \
                            back-channel for server-initiated requests."}}),
            _ => return reply.accepted(),
        };
        reply.json(200, &answer, &[]);
    })
}

#[test]
fn a_server_that_cannot_ask_in_a_2026_session_gets_the_legacy_hint() {
    let server = cannot_ask();
    let call = |protocol: &str| {
        run_args(&[
            "--url",
            &server.url,
            "--protocol",
            protocol,
            "--no-login",
            "call",
            "ask",
        ])
        .expect(4)
        .stderr
    };
    let modern = call("modern");
    assert!(
        modern.contains(
            "hint: the server could not send its request (elicitation/create) in this \
             2026-07-28 session"
        ) && modern
            .trim_end()
            .ends_with("try again with --protocol legacy"),
        "{modern}"
    );
    // In the handshake era the same failure is the server's own: no hint.
    let legacy = call("legacy");
    assert!(legacy.contains("no back-channel"), "{legacy}");
    assert!(!legacy.contains("hint:"), "{legacy}");
}

#[test]
fn tools_says_why_tools_that_use_declared_capabilities_are_listed() {
    let server = FakeServer::start(|request, reply| {
        let answer = match request.rpc().as_str() {
            "initialize" => initialize_result(request, "2025-11-25"),
            "tools/list" => result(
                request,
                json!({"tools": [
                    {"name": "echo", "description": "Echoes.", "inputSchema": {"type": "object"}},
                    {"name": "trigger-sampling-request", "description": "Asks the client's model.",
                     "inputSchema": {"type": "object"}}]}),
            ),
            _ => return reply.accepted(),
        };
        reply.json(200, &answer, &[]);
    });
    let listed = run_args(&["--url", &server.url, "--protocol", "legacy", "tools"]).expect(0);
    assert!(
        listed.stdout.trim_end().ends_with("2 tools"),
        "{}",
        listed.stdout
    );
    assert!(
        listed.stderr.contains(
            "toolwire declares the roots, sampling and elicitation capabilities, and some \
             servers list the tools that use them only to a client that declares them: \
             trigger-sampling-request may be missing"
        ),
        "{}",
        listed.stderr
    );
    assert!(!listed.stderr.contains("echo"), "{}", listed.stderr);
    let quiet = run_args(&["--url", &server.url, "--protocol", "legacy", "-q", "tools"]).expect(0);
    assert!(quiet.stderr.is_empty(), "{}", quiet.stderr);
}

/// The official servers themselves: server-everything's error for an unknown resource (its
/// message already says `MCP error -32602`), its capability-dependent tools, and the Python
/// SDK server's eliciting tool over 2026-07-28 and with `--protocol legacy`.
#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh)"]
fn the_peers_messages_read_once_and_point_the_way() {
    let peers = crate::support::mcp::peers("the_peers_messages_read_once_and_point_the_way");
    let node = peers.path("TOOLWIRE_NODE").display().to_string();
    let everything = peers.path("TOOLWIRE_EVERYTHING_JS").display().to_string();
    let read = run_args(&["read", "demo://nosuch", "--", &node, &everything, "stdio"]).expect(4);
    assert_eq!(read.stderr.matches("-32602").count(), 1, "{}", read.stderr);
    let tools = run_args(&["tools", "--", &node, &everything, "stdio"]).expect(0);
    for tool in ["trigger-elicitation-request", "trigger-sampling-request"] {
        assert!(tools.stderr.contains(tool), "{}", tools.stderr);
    }

    // This repository's py_server.py (its `ask` tool), whatever TOOLWIRE_PYSERVER names.
    let python = peers.path("TOOLWIRE_PYTHON").display().to_string();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_server.py");
    let script = script.to_str().unwrap();
    let ask = |extra: &[&str]| {
        let mut args = vec!["call", "ask", "--elicit", "accept-defaults"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", &python, script, "stdio"]);
        run_args(&args)
    };
    let modern = ask(&[]).expect(4);
    assert!(
        modern.stderr.contains("no back-channel"),
        "{}",
        modern.stderr
    );
    assert!(
        modern.stderr.contains("try again with --protocol legacy"),
        "{}",
        modern.stderr
    );
    let legacy = ask(&["--protocol", "legacy"]).expect(0);
    assert_eq!(legacy.stdout.trim(), "hello, nobody", "{}", legacy.stderr);
}
