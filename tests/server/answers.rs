//! The server answers every request it was sent. A Streamable HTTP POST whose body cannot be
//! taken (not JSON, `[]`, nested 200,000 deep, a request whose id cannot be read, params
//! nested 50,000 deep) gets 400 with the JSON-RPC error it is owed inside a live session as
//! outside one, never a silent 202; a batch's elements are answered each, in one array. The
//! stdio server answers the same lines with the same errors.

use crate::support::server as support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;

use serde_json::{json, Value};
use toolwire::server::{HttpServer, HttpServerConfig, Server, ServerConfig, StdioServer};

use support::{authority, read_response, RawResponse, LONG};

/// `depth` arrays around nothing: `[[[…]]]`.
fn nested(depth: usize) -> Vec<u8> {
    let mut text = "[".repeat(depth).into_bytes();
    text.extend("]".repeat(depth).into_bytes());
    text
}

/// A request whose params nest `depth` arrays deep; its id can be read by a scan.
fn deep_params(id: i64, depth: usize) -> Vec<u8> {
    let mut text =
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"a":"#).into_bytes();
    text.extend(nested(depth));
    text.extend(b"}}");
    text
}

/// The bodies no server can take as requests, and the answer each is owed: (body, code, id).
fn unreadable() -> Vec<(Vec<u8>, i64, Value)> {
    vec![
        (b"{nope".to_vec(), -32700, Value::Null),
        (b"[]".to_vec(), -32600, Value::Null),
        (nested(200_000), -32700, Value::Null),
        // Invalid UTF-8 inside a string id.
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":\"a\xff\",\"method\":\"ping\"}".to_vec(),
            -32700,
            Value::Null,
        ),
        // A lone surrogate as the id.
        (
            br#"{"jsonrpc":"2.0","id":"\ud800","method":"ping"}"#.to_vec(),
            -32700,
            Value::Null,
        ),
        // JSON, but an id no request may carry.
        (
            br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.to_vec(),
            -32600,
            Value::Null,
        ),
        // Params too deep for the parser; the id is still read.
        (deep_params(5, 50_000), -32700, json!(5)),
        // Params that are not an object; the id is read.
        (
            br#"{"jsonrpc":"2.0","id":6,"method":"ping","params":3}"#.to_vec(),
            -32600,
            json!(6),
        ),
    ]
}

fn serve() -> HttpServer {
    let server = Server::new(ServerConfig::new("answers", "1")).unwrap();
    HttpServer::bind(&server, HttpServerConfig::new()).unwrap()
}

/// A POST of raw bytes with the session's headers.
fn post_bytes(url: &str, session: Option<&str>, body: &[u8]) -> RawResponse {
    let host = authority(url);
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    if let Some(session) = session {
        head.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
    }
    head.push_str("\r\n");
    let stream = TcpStream::connect(host).unwrap();
    stream.set_read_timeout(Some(LONG)).unwrap();
    let mut writer = stream.try_clone().unwrap();
    writer.write_all(head.as_bytes()).unwrap();
    writer.write_all(body).unwrap();
    read_response(&mut BufReader::new(stream))
}

fn initialize(url: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}});
    let response = post_bytes(url, None, body.to_string().as_bytes());
    assert_eq!(response.status, 200, "{response:?}");
    let session = response.header("mcp-session-id").unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = post_bytes(url, Some(&session), initialized.to_string().as_bytes());
    assert_eq!(response.status, 202);
    session
}

fn assert_error(answer: &Value, code: i64, id: &Value, what: &str) {
    assert_eq!(answer["jsonrpc"], "2.0", "{what}: {answer}");
    assert_eq!(answer["error"]["code"], code, "{what}: {answer}");
    assert_eq!(&answer["id"], id, "{what}: {answer}");
}

#[test]
fn every_body_a_session_cannot_take_is_refused_with_its_error() {
    let http = serve();
    let url = http.url();
    let session = initialize(&url);
    for (body, code, id) in unreadable() {
        let what = String::from_utf8_lossy(&body[..body.len().min(60)]).into_owned();
        for session in [Some(session.as_str()), None] {
            let response = post_bytes(&url, session, &body);
            assert_eq!(
                response.status, 400,
                "{what} (session {session:?}): {response:?}"
            );
            let messages = response.messages();
            assert_eq!(messages.len(), 1, "{what}");
            assert_error(&messages[0], code, &id, &what);
        }
    }
    // The session still serves.
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    let response = post_bytes(&url, Some(&session), ping.to_string().as_bytes());
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.messages()[0]["id"], 9);
    http.close().unwrap();
}

#[test]
fn a_session_answers_each_element_of_a_batch() {
    let http = serve();
    let url = http.url();
    let session = initialize(&url);
    // No element's id can be read: answered at once, one error each, in one array.
    let response = post_bytes(
        &url,
        Some(&session),
        br#"[1, {"jsonrpc":"2.0","id":1.5,"method":"ping"}, {"jsonrpc":"2.0","method":"notifications/x"}]"#,
    );
    assert_eq!(response.status, 400, "{response:?}");
    let answers = response.messages();
    let answers = answers[0].as_array().expect("an array");
    assert_eq!(answers.len(), 2, "{answers:?}");
    for answer in answers {
        assert_error(answer, -32600, &Value::Null, "batch");
    }
    // Requests, a request gone wrong with its id, and elements with none: one array.
    let response = post_bytes(
        &url,
        Some(&session),
        br#"[{"jsonrpc":"2.0","id":7,"method":"ping"}, 1, {"jsonrpc":"2.0","id":8,"method":"ping","params":3}]"#,
    );
    assert_eq!(response.status, 200, "{response:?}");
    let answers = response.messages();
    let answers = answers[0].as_array().expect("an array").clone();
    assert_eq!(answers.len(), 3, "{answers:?}");
    let find = |id: Value| {
        answers
            .iter()
            .find(|answer| answer["id"] == id)
            .unwrap_or_else(|| panic!("no answer for {id} in {answers:?}"))
            .clone()
    };
    assert_eq!(find(json!(7))["result"], json!({}));
    assert_error(&find(json!(8)), -32600, &json!(8), "batch id 8");
    assert_error(&find(Value::Null), -32600, &Value::Null, "batch element 1");
    // Only errors, one with an id: answered on the POST as well.
    let response = post_bytes(
        &url,
        Some(&session),
        br#"[{"jsonrpc":"2.0","id":"q","method":5}, 2]"#,
    );
    assert_eq!(response.status, 200, "{response:?}");
    let answers = response.messages();
    assert_eq!(answers[0].as_array().map(Vec::len), Some(2), "{answers:?}");
    http.close().unwrap();
}

#[test]
fn the_stdio_server_answers_the_same_lines() {
    let server = Server::new(ServerConfig::new("answers", "1")).unwrap();
    let (mut to_server, server_stdin) = UnixStream::pair().unwrap();
    let (server_stdout, from_server) = UnixStream::pair().unwrap();
    let connection = server
        .connect(StdioServer::new(server_stdin, server_stdout))
        .unwrap();
    from_server.set_read_timeout(Some(LONG)).unwrap();
    let mut reader = BufReader::new(from_server);
    let mut next = || {
        let mut line = String::new();
        reader.read_line(&mut line).expect("an answer");
        serde_json::from_str::<Value>(&line).expect("JSON")
    };
    for (mut body, code, id) in unreadable() {
        let what = String::from_utf8_lossy(&body[..body.len().min(60)]).into_owned();
        body.push(b'\n');
        to_server.write_all(&body).unwrap();
        assert_error(&next(), code, &id, &what);
    }
    to_server.write_all(b"[1]\n").unwrap();
    let answer = next();
    assert_error(&answer[0], -32600, &Value::Null, "[1]");
    to_server
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n")
        .unwrap();
    assert_eq!(next()["id"], 9);
    drop(to_server);
    connection.wait();
}
