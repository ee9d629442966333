//! A response longer than the line transport's frame limit is skipped and the stream goes on,
//! and the call it answered fails at once with a protocol error naming the size and the
//! limit, whether the peer writes the id before the result (serde's order) or after it
//! (`JSON.stringify`'s): no caller waits for its deadline, and the other calls are unaffected.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};
use toolwire::mcp::McpDialect;
use toolwire::transport::{SocketConfig, SocketTransport};
use toolwire::{CallOptions, Client, ClientConfig, Error};

/// The frame limit of the client under test.
const LIMIT: usize = 4096;
/// A deadline no call may reach here: a regression hangs rather than passing on TIMEOUT.
const NEVER: Duration = Duration::from_secs(3600);
/// The hang guard for each wait.
const GUARD: Duration = Duration::from_secs(30);

/// Answers `big_first` and `big_last` with a result of twice the limit (the id before or
/// after it), first sends an oversized request of its own, and echoes everything else.
fn serve(listener: TcpListener) {
    let (stream, _) = listener.accept().unwrap();
    let mut writer = stream.try_clone().unwrap();
    let padding = "x".repeat(LIMIT * 2);
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { return };
        let request: Value = serde_json::from_str(&line).unwrap();
        let Some(id) = request.get("id").cloned() else {
            continue;
        };
        let id = id.to_string();
        let answer = match request["method"].as_str().unwrap() {
            "big_first" => {
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"text":"{padding}"}}}}"#)
            }
            "big_last" => {
                // An oversized request from the peer, carrying this very id: not a response,
                // so it must fail nothing.
                let request = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"p":"{padding}"}}}}"#
                );
                writer.write_all(format!("{request}\n").as_bytes()).unwrap();
                format!(
                    r#"{{"result":{{"text":"{padding}","nested":{{"id":0}}}},"jsonrpc":"2.0","id":{id}}}"#
                )
            }
            _ => json!({"jsonrpc": "2.0", "id": request["id"], "result": request["params"]})
                .to_string(),
        };
        writer.write_all(format!("{answer}\n").as_bytes()).unwrap();
    }
}

#[test]
fn an_oversized_response_fails_its_call_at_once_and_the_stream_goes_on() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let peer = thread::spawn(move || serve(listener));
    let transport =
        SocketTransport::connect(SocketConfig::tcp(address.to_string()).max_line_bytes(LIMIT))
            .expect("connect");
    let config = ClientConfig::default()
        .dialect(McpDialect)
        .request_timeout(NEVER);
    let client = Client::with_config(transport, config).unwrap();

    let options = || CallOptions::new().timeout(NEVER);
    let mut last = client.start("big_last", json!({}), options()).unwrap();
    let mut echo = client.start("echo", json!({"n": 1}), options()).unwrap();
    let mut first = client.start("big_first", json!({}), options()).unwrap();
    for (method, handle) in [("big_last", &mut last), ("big_first", &mut first)] {
        match handle.wait_timeout(GUARD) {
            Some(Err(Error::Protocol(message))) => {
                assert!(
                    message.contains(&format!("the response to `{method}`")),
                    "{message}"
                );
                assert!(
                    message.contains("over the 4,096-byte frame limit"),
                    "{message}"
                );
                assert!(
                    message.contains("SocketConfig::max_line_bytes"),
                    "{message}"
                );
            }
            None => panic!("`{method}` still waiting after {GUARD:?}"),
            other => panic!("`{method}`: expected a protocol error, got {other:?}"),
        }
    }
    let echoed = echo.wait_timeout(GUARD).expect("echo still waiting");
    assert_eq!(echoed.unwrap(), json!({"n": 1}));
    // The stream goes on after the skipped lines.
    assert_eq!(
        client.call("echo", json!(["after"])).unwrap(),
        json!(["after"])
    );

    let stats = client.stats();
    assert_eq!(stats.in_flight, 0, "{stats:?}");
    assert_eq!(stats.oversized_frames, 3, "{stats:?}");
    assert_eq!(stats.timeouts, 0, "{stats:?}");
    client.close().unwrap();
    peer.join().unwrap();
}
