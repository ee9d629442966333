//! End of file on the server's stdin with calls in flight: the connection ends, every
//! running handler sees its cancel flag and gets the close grace to finish, answers already
//! made are written, and no thread is left: the stdio threads end with the connection, the
//! pool's with the server. The same through a real process: it exits by itself, code 0.

use crate::support::server as support;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, Method, RequestContext, Server, ServerConfig, StdioServer};

use support::{example, serial, threads_named, LONG};

fn line(value: Value) -> Vec<u8> {
    let mut text = value.to_string().into_bytes();
    text.push(b'\n');
    text
}

#[test]
fn end_of_input_ends_the_connection_and_cancels_what_runs() {
    let _serial = serial();
    let (seen_tx, seen) = mpsc::channel();
    let server = Server::new(ServerConfig::new("eof", "1").workers(3)).unwrap();
    let seen_tx = std::sync::Mutex::new(seen_tx);
    server
        .add_tool(LocalTool::with_context(
            "block",
            "Waits to be cancelled.",
            json!({"type": "object"}),
            move |context, _| {
                while !context.is_cancelled() {
                    std::thread::sleep(Duration::from_millis(2));
                }
                let id = RequestContext::of(context).expect("served").id().clone();
                let _ = seen_tx.lock().unwrap().send(id);
                Ok(CallToolResult::from_text("cancelled"))
            },
        ))
        .unwrap();
    let deferred = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = std::sync::Arc::clone(&deferred);
    server
        .add_method(
            Method::new("later", move |context, _| {
                // Deferred and never answered: the end of input gives it up too.
                keep.lock().unwrap().push(context.defer());
                Ok(Value::Null)
            })
            .inline(true),
        )
        .unwrap();
    let (mut to_server, server_stdin) = UnixStream::pair().unwrap();
    let (server_stdout, from_server) = UnixStream::pair().unwrap();
    let connection = server
        .connect(StdioServer::new(server_stdin, server_stdout))
        .unwrap();
    to_server
        .write_all(&line(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})))
        .unwrap();
    for id in [2, 3] {
        to_server
            .write_all(&line(
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                    "params": {"name": "block"}}),
            ))
            .unwrap();
    }
    to_server
        .write_all(&line(json!({"jsonrpc": "2.0", "id": 4, "method": "later"})))
        .unwrap();
    from_server.set_read_timeout(Some(LONG)).unwrap();
    let mut reader = BufReader::new(from_server);
    let mut answer = String::new();
    reader.read_line(&mut answer).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&answer).unwrap()["id"], 1);
    assert!(
        support::eventually(support::LONG, || server.busy_workers() == 2),
        "the blocks did not start"
    );
    // The deferred `later` was sent after the blocks and is read on its own time: wait for
    // it to be held too (2 running blocks and 1 deferred request).
    assert!(
        support::eventually(support::LONG, || connection.in_flight() == 3),
        "in flight: {}",
        connection.in_flight()
    );
    // End of input.
    to_server.shutdown(std::net::Shutdown::Write).unwrap();
    let waited = std::thread::scope(|scope| {
        let waiting = scope.spawn(|| connection.wait());
        let first = seen
            .recv_timeout(LONG)
            .expect("a handler saw its cancellation");
        let second = seen
            .recv_timeout(LONG)
            .expect("both handlers saw their cancellation");
        (waiting.join().unwrap(), first, second)
    });
    assert!(waited.0.to_string().contains("end of file"), "{}", waited.0);
    assert_eq!(connection.in_flight(), 0);
    assert!(server.wait_idle(LONG));
    assert!(
        support::eventually(support::LONG, || threads_named("toolwire-srv-").is_empty()),
        "stdio threads left: {:?}",
        threads_named("toolwire-srv-")
    );
    assert!(deferred.lock().unwrap()[0].is_cancelled());
    drop(connection);
    deferred.lock().unwrap().clear();
    drop(server);
    assert!(
        support::eventually(support::LONG, || threads_named("toolwire-server")
            .is_empty()),
        "pool threads left: {:?}",
        threads_named("toolwire-server")
    );
}

#[test]
fn a_server_process_exits_by_itself_at_end_of_input() {
    let _serial = crate::support::serial();
    let mut child = Command::new(example("http_server"))
        .arg("--stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdin
        .write_all(&line(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}),
        ))
        .unwrap();
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    stdin
        .write_all(&line(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "count", "arguments": {"steps": 10000, "ms": 5}}}),
        ))
        .unwrap();
    stdin
        .write_all(&line(
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "before the end"}}}),
        ))
        .unwrap();
    answer.clear();
    stdout.read_line(&mut answer).unwrap();
    assert!(answer.contains("before the end"), "{answer}");
    drop(stdin);
    let status = support::eventually(support::LONG, || child.try_wait().unwrap().is_some());
    assert!(status, "the server did not exit at the end of its input");
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("count cancelled"), "{stderr}");
}
