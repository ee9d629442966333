//! Several instances of one server: `requestState` keys from configuration (a state signed by
//! one instance verifies on another with the same ring, a rotated ring still takes the old
//! key's states, a different key is refused), session ids minted with the instance's prefix
//! (and another instance answers them 404), the load balancer's `/healthz` and `/readyz`, and
//! a drain that answers the request in flight while refusing new connections.

use crate::support::server as support;

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::bounded;
use serde_json::{json, Value};
use toolwire::harness::LocalTool;
use toolwire::server::{
    Authorization, CallToolResult, HttpServer, HttpServerConfig, InputRequired, RequestContext,
    Server, ServerConfig, StateKeys, StaticTokens,
};

use support::{exchange, post, stateless_headers, RawResponse, LONG};

const KEY_A: &str = "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=";
const KEY_B: &str = "QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI=";

/// A server with one tool that asks for a name in a 2026-07-28 input round, with a state.
fn asking_server(keys: &str) -> Server {
    let config = ServerConfig::new("scaleout", "1.0").state_keys(StateKeys::parse(keys).unwrap());
    let server = Server::new(config).unwrap();
    server
        .add_tool(LocalTool::with_context(
            "ask",
            "Asks for a name.",
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
}

fn call_ask(url: &str, extra: Value) -> Value {
    let mut params = json!({"name": "ask", "_meta": support::meta(json!({"elicitation": {}}))});
    for (key, value) in extra.as_object().unwrap() {
        params[key] = value.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let answer = post(url, &stateless_headers("tools/call", Some("ask")), &body);
    assert_eq!(answer.status, 200, "{answer:?}");
    answer.messages().pop().expect("an answer")
}

fn serve(server: &Server, config: HttpServerConfig) -> HttpServer {
    HttpServer::bind(server, config).unwrap()
}

#[test]
fn a_state_signed_by_one_instance_verifies_on_another_with_the_same_keys() {
    let a = serve(&asking_server(KEY_A), HttpServerConfig::new());
    let b = serve(&asking_server(KEY_A), HttpServerConfig::new());
    let rotated = serve(
        &asking_server(&format!("{KEY_B}\n{KEY_A}\n")),
        HttpServerConfig::new(),
    );
    let other = serve(&asking_server(KEY_B), HttpServerConfig::new());
    let first = call_ask(&a.url(), json!({}));
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let retry = json!({"inputResponses": answer, "requestState": state});
    // The retry lands on another instance with the same keys, and on one whose ring was
    // rotated (the new key first, the old one kept second).
    for (instance, url) in [("b", b.url()), ("rotated", rotated.url())] {
        let done = call_ask(&url, retry.clone());
        assert_eq!(
            done["result"]["content"][0]["text"], "Hello, Ada",
            "{instance}: {done}"
        );
    }
    // A state the rotated ring signs (with its new key) verifies where the old key is gone
    // too, but not on an instance that only has the old key.
    let from_rotated = call_ask(&rotated.url(), json!({}));
    let state = from_rotated["result"]["requestState"].as_str().unwrap();
    let retry_new = json!({"inputResponses": answer, "requestState": state});
    assert_eq!(
        call_ask(&other.url(), retry_new.clone())["result"]["content"][0]["text"],
        "Hello, Ada"
    );
    let refused = call_ask(&a.url(), retry_new);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // An instance with a different key refuses the first state as tampered.
    let refused = call_ask(&other.url(), retry);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("integrity"),
        "{refused}"
    );
}

fn initialize(url: &str) -> RawResponse {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    post(url, "", &body)
}

#[test]
fn session_ids_carry_the_instance_prefix_and_another_instance_answers_them_404() {
    let server = Server::new(ServerConfig::new("scaleout", "1.0")).unwrap();
    let a = serve(&server, HttpServerConfig::new().instance_id("alpha-1"));
    let b = serve(&server, HttpServerConfig::new().instance_id("beta"));
    let opened = initialize(&a.url());
    let id = opened
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let (prefix, random) = id.split_once('.').expect("NAME.HEX");
    assert_eq!(prefix, "alpha-1");
    assert_eq!(random.len(), 32);
    assert!(random.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let headers = format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n");
    assert_eq!(post(&a.url(), &headers, &ping).status, 200);
    // The instance that never saw the session: 404, so the client starts a new one.
    assert_eq!(post(&b.url(), &headers, &ping).status, 404);
    // Without an instance id, the id is the 32 hex digits alone.
    let plain = serve(&server, HttpServerConfig::new());
    let id = initialize(&plain.url())
        .header("mcp-session-id")
        .unwrap()
        .to_owned();
    assert_eq!(id.len(), 32, "{id}");
    for bad in ["", "has space", "dot.ted", &"x".repeat(33)] {
        let refused = HttpServer::bind(&server, HttpServerConfig::new().instance_id(bad));
        assert!(
            matches!(refused, Err(toolwire::Error::Config(_))),
            "{bad:?}"
        );
    }
}

fn get(url: &str, path: &str, host: &str) -> RawResponse {
    let head = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n");
    exchange(url, &head, "")
}

#[test]
fn healthz_and_readyz_answer_before_authorization_and_reveal_nothing() {
    let server = Server::new(ServerConfig::new("scaleout", "1.0")).unwrap();
    let ready = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ready);
    server
        .add_readiness_check("store", move || flag.load(Ordering::SeqCst))
        .unwrap();
    assert!(server.add_readiness_check("Bad Name", || true).is_err());
    let tokens = StaticTokens::from_json(br#"{"tokens": []}"#).unwrap();
    let auth = Authorization::static_tokens("https://mcp.example/mcp", tokens);
    let http = serve(&server, HttpServerConfig::new().authorization(auth));
    let url = http.url();
    // The endpoint itself needs a token; the checks do not, nor a Host naming the server.
    assert_eq!(get(&url, "/mcp", support::authority(&url)).status, 401);
    let alive = get(&url, "/healthz", "10.1.2.3:8080");
    assert_eq!(alive.status, 200);
    assert_eq!(alive.body, r#"{"status":"alive"}"#);
    assert_eq!(alive.header("cache-control"), Some("no-store"));
    let unready = get(&url, "/readyz", "10.1.2.3:8080");
    assert_eq!(unready.status, 503);
    assert_eq!(unready.body, r#"{"reason":"store","status":"unready"}"#);
    ready.store(true, Ordering::SeqCst);
    let now = get(&url, "/readyz", "10.1.2.3:8080");
    assert_eq!(
        (now.status, now.body.as_str()),
        (200, r#"{"status":"ready"}"#)
    );
    let head = format!(
        "POST /readyz HTTP/1.1\r\nHost: {}\r\n",
        support::authority(&url)
    );
    assert_eq!(exchange(&url, &head, "{}").status, 405);
    // Turned off, they are paths like any other.
    let off = serve(&server, HttpServerConfig::new().health_paths(None));
    assert_eq!(get(&off.url(), "/healthz", "localhost").status, 404);
    let clash = HttpServerConfig::new().health_paths(Some(("/mcp", "/readyz")));
    assert!(HttpServer::bind(&server, clash).is_err());
}

#[test]
fn a_drain_answers_the_call_in_flight_and_refuses_new_connections() {
    let server = Server::new(ServerConfig::new("scaleout", "1.0")).unwrap();
    let (started_tx, started) = bounded::<()>(1);
    let (release, released) = bounded::<()>(1);
    server
        .add_tool(LocalTool::with_context(
            "hold",
            "Waits until the test lets it go.",
            json!({"type": "object"}),
            move |_, _| {
                let _ = started_tx.send(());
                let _ = released.recv_timeout(LONG);
                Ok(CallToolResult::from_text("let go"))
            },
        ))
        .unwrap();
    let http = Arc::new(serve(&server, HttpServerConfig::new()));
    let url = http.url();
    let addr = http.local_addr();
    let calling = url.clone();
    let call = std::thread::spawn(move || {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "hold", "_meta": support::meta(json!({}))}});
        post(
            &calling,
            &stateless_headers("tools/call", Some("hold")),
            &body,
        )
    });
    started.recv_timeout(LONG).expect("the call runs");
    // An idle kept-alive connection is closed by the drain, not waited for.
    let idle = TcpStream::connect(addr).unwrap();
    let draining = Arc::clone(&http);
    let began = Instant::now();
    let drain = std::thread::spawn(move || draining.drain(LONG).unwrap());
    assert!(
        support::eventually(LONG, || TcpStream::connect(addr).is_err()),
        "new connections are refused while draining"
    );
    release.send(()).unwrap();
    let answered = call.join().unwrap();
    assert_eq!(answered.status, 200, "{answered:?}");
    assert_eq!(
        answered.messages()[0]["result"]["content"][0]["text"],
        "let go"
    );
    // The answer says the connection ends with it, so a proxy sends nothing more on it.
    assert_eq!(answered.header("connection"), Some("close"));
    assert_eq!(drain.join().unwrap(), 0, "every request was answered");
    assert!(began.elapsed() < LONG);
    drop(idle);
    assert_eq!(http.connections(), 0);
}

#[test]
fn a_drain_past_its_grace_closes_what_still_runs() {
    let server = Server::new(ServerConfig::new("scaleout", "1.0")).unwrap();
    let (started_tx, started) = bounded::<()>(1);
    let (_release, released) = bounded::<()>(1);
    server
        .add_tool(LocalTool::with_context(
            "stuck",
            "Waits for a release that never comes.",
            json!({"type": "object"}),
            move |_, _| {
                let _ = started_tx.send(());
                let _ = released.recv_timeout(LONG);
                Ok(CallToolResult::from_text("late"))
            },
        ))
        .unwrap();
    let http = serve(&server, HttpServerConfig::new());
    let url = http.url();
    let call = std::thread::spawn(move || {
        let body = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
            "name": "stuck", "_meta": support::meta(json!({}))}});
        let stream = TcpStream::connect(support::authority(&url)).unwrap();
        stream.set_read_timeout(Some(LONG)).unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json\r\n{}Content-Length: {}\r\n\r\n{body}",
            support::authority(&url),
            stateless_headers("tools/call", Some("stuck")),
            body.to_string().len()
        );
        use std::io::{Read, Write};
        (&stream).write_all(head.as_bytes()).unwrap();
        let mut rest = String::new();
        let _ = (&stream).read_to_string(&mut rest);
        rest
    });
    started.recv_timeout(LONG).expect("the call runs");
    let grace = Duration::from_millis(200);
    let began = Instant::now();
    assert_eq!(
        http.drain(grace).unwrap(),
        1,
        "one connection was still serving"
    );
    assert!(began.elapsed() >= grace);
    // The client is told, or its connection ends: it never waits out the handler.
    let rest = call.join().unwrap();
    assert!(!rest.contains("late"), "{rest}");
}

#[test]
fn a_head_of_a_health_path_has_the_get_s_headers_and_no_body() {
    let server = Server::new(ServerConfig::new("scaleout", "1.0")).unwrap();
    let http = serve(&server, HttpServerConfig::new());
    let stream = TcpStream::connect(http.local_addr()).unwrap();
    stream.set_read_timeout(Some(LONG)).unwrap();
    use std::io::{Read, Write};
    (&stream)
        .write_all(b"HEAD /healthz HTTP/1.1\r\nHost: localhost\r\n\r\nGET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut both = String::new();
    (&stream).read_to_string(&mut both).unwrap();
    let length = r#"{"status":"alive"}"#.len();
    let (first, second) = both.split_once("\r\n\r\n").unwrap();
    assert!(first.starts_with("HTTP/1.1 200"), "{both}");
    assert!(
        first.contains(&format!("Content-Length: {length}")),
        "{both}"
    );
    // The next response starts right after the HEAD's head: it had no body.
    assert!(second.starts_with("HTTP/1.1 200"), "{both}");
    assert!(second.ends_with(r#"{"status":"alive"}"#), "{both}");
}
