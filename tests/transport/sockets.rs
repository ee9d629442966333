//! JSON-RPC over TCP, a Unix-domain socket (newline-delimited JSON) and WebSocket (one
//! message per text frame), each against a peer the test starts on 127.0.0.1 or in a temp
//! folder: echo, progress, a dropped connection failing the pending call at once, an
//! oversize frame (skipped on the line transports, the stream going on; on WebSocket the
//! connection is closed with 1009 and the call fails at once saying so), and a bounded close.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};
use toolwire::mcp::McpDialect;
use toolwire::transport::{SocketConfig, SocketTransport, Transport};
use toolwire::{CallOptions, Client, ClientConfig, Error};

/// Long enough never to be what ends a call here: ending before it proves "at once".
const PATIENT: Duration = Duration::from_secs(60);

/// Runs `body` on its own thread; fails the test instead of hanging it (a hang guard).
fn within<T: Send + 'static>(what: &str, body: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(body());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{what}: still blocked after 10 s"))
}

/// One side of a connection as the peer sees it: frames in, frames out.
trait Wire: Send {
    fn recv(&mut self) -> Option<String>;
    fn send(&mut self, text: &str);
    /// Ends the connection without a goodbye.
    fn cut(self: Box<Self>);
}

struct Lines<S: std::io::Read + Write + Send> {
    reader: BufReader<S>,
    writer: S,
}

impl<S: std::io::Read + Write + Send> Wire for Lines<S> {
    fn recv(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    }
    fn send(&mut self, text: &str) {
        let _ = self.writer.write_all(format!("{text}\n").as_bytes());
        let _ = self.writer.flush();
    }
    fn cut(self: Box<Self>) {}
}

/// The peer's script: `echo` answers its params, `progress` reports three times first,
/// `drop` cuts the connection, `big` sends a frame of `big` bytes before the answer.
fn serve(mut wire: Box<dyn Wire>, big: usize) {
    while let Some(text) = wire.recv() {
        let request: Value = serde_json::from_str(text.trim()).unwrap();
        let Some(id) = request.get("id").cloned() else {
            continue;
        };
        let params = request["params"].clone();
        match request["method"].as_str().unwrap() {
            "progress" => {
                let token = params["_meta"]["progressToken"].clone();
                for step in 1..=3 {
                    wire.send(
                        &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                                "params": {"progressToken": token, "progress": step, "total": 3}})
                        .to_string(),
                    );
                }
            }
            "drop" => return wire.cut(),
            "big" => wire.send(&format!("\"{}\"", "x".repeat(big))),
            _ => {}
        }
        wire.send(&json!({"jsonrpc": "2.0", "id": id, "result": params}).to_string());
    }
}

fn client(transport: impl Transport) -> Client {
    let config = ClientConfig::default()
        .dialect(McpDialect)
        .request_timeout(PATIENT);
    Client::with_config(transport, config).unwrap()
}

/// The behaviours every transport shares: echo, progress, the line of `big`, a cut.
fn exercise(connect: impl Fn() -> Client, oversize_keeps_the_stream: bool) {
    let client = connect();
    assert_eq!(
        client.call("echo", json!({"a": [1, "two"]})).unwrap(),
        json!({"a": [1, "two"]})
    );
    let reports = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&reports);
    client
        .call_with(
            "progress",
            json!({}),
            CallOptions::new().on_progress(move |p| seen.lock().unwrap().push(p.progress)),
        )
        .unwrap();
    assert_eq!(*reports.lock().unwrap(), [1.0, 2.0, 3.0]);
    let caller = client.clone();
    let big = within("an oversize frame", move || {
        caller.call("big", json!({"n": 1}))
    });
    if oversize_keeps_the_stream {
        assert_eq!(big.unwrap(), json!({"n": 1}), "the stream went on");
        assert_eq!(client.stats().oversized_frames, 1);
        // A cut connection fails the pending call at once (not at its 60 s deadline).
        let caller = client.clone();
        let error = within("a cut connection", move || {
            caller.call("drop", json!({})).unwrap_err()
        });
        assert!(error.is_closed(), "{error:?}");
    } else {
        let error = big.unwrap_err();
        assert!(error.is_closed(), "{error:?}");
        assert!(error.to_string().contains("over the limit"), "{error}");
        assert_eq!(client.stats().oversized_frames, 1);
        let client = connect();
        let caller = client.clone();
        let error = within("a cut connection", move || {
            caller.call("drop", json!({})).unwrap_err()
        });
        assert!(error.is_closed(), "{error:?}");
        within("close", move || client.close().unwrap());
    }
    within("close", move || client.close().unwrap());
}

#[test]
fn tcp_echo_progress_oversize_and_a_cut_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let reader = BufReader::new(stream.try_clone().unwrap());
            thread::spawn(move || {
                serve(
                    Box::new(Lines {
                        reader,
                        writer: stream,
                    }),
                    4096,
                )
            });
        }
    });
    let config = SocketConfig::tcp(address).max_line_bytes(1024);
    exercise(
        || client(SocketTransport::connect(config.clone()).unwrap()),
        true,
    );
}

#[test]
fn unix_socket_echo_progress_oversize_and_a_cut_connection() {
    let dir = std::env::temp_dir().join(format!("toolwire-unix-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("peer.sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let reader = BufReader::new(stream.try_clone().unwrap());
            thread::spawn(move || {
                serve(
                    Box::new(Lines {
                        reader,
                        writer: stream,
                    }),
                    4096,
                )
            });
        }
    });
    let config = SocketConfig::unix(&path).max_line_bytes(1024);
    exercise(
        || client(SocketTransport::connect(config.clone()).unwrap()),
        true,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_refused_connection_is_an_error_naming_the_address() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    drop(listener);
    let error = SocketTransport::connect(SocketConfig::tcp(address.clone())).unwrap_err();
    assert!(matches!(error, Error::Io(_)), "{error:?}");
    assert!(error.to_string().contains(&address), "{error}");
    let missing = std::env::temp_dir().join("toolwire-no-such-socket.sock");
    let error = SocketTransport::connect(SocketConfig::unix(&missing)).unwrap_err();
    assert!(error.to_string().contains("no-such-socket"), "{error}");
}

#[cfg(feature = "websocket")]
mod websocket {
    use super::*;
    use std::net::TcpStream;
    use toolwire::transport::{WebSocketConfig, WebSocketTransport};
    use tungstenite::{Message, WebSocket};

    struct Frames(WebSocket<TcpStream>);

    impl Wire for Frames {
        fn recv(&mut self) -> Option<String> {
            loop {
                match self.0.read() {
                    Ok(Message::Text(text)) => return Some(text.to_string()),
                    Ok(Message::Close(_)) | Err(_) => return None,
                    Ok(_) => {}
                }
            }
        }
        fn send(&mut self, text: &str) {
            let _ = self.0.send(Message::text(text));
        }
        fn cut(self: Box<Self>) {
            let _ = self.0.get_ref().shutdown(std::net::Shutdown::Both);
        }
    }

    #[test]
    fn websocket_echo_progress_oversize_and_a_cut_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("ws://{}/rpc", listener.local_addr().unwrap());
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                thread::spawn(move || {
                    if let Ok(socket) = tungstenite::accept(stream) {
                        serve(Box::new(Frames(socket)), 4096);
                    }
                });
            }
        });
        let config = WebSocketConfig::new(url).max_frame_bytes(1024);
        exercise(
            || client(WebSocketTransport::connect(config.clone()).unwrap()),
            false,
        );
    }

    #[test]
    fn a_close_sends_the_close_frame_and_ends_within_its_bounds() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("ws://{}/", listener.local_addr().unwrap());
        let (saw_close, closed) = mpsc::channel();
        thread::spawn(move || {
            let stream = listener.incoming().flatten().next().unwrap();
            let mut socket = tungstenite::accept(stream).unwrap();
            loop {
                match socket.read() {
                    Ok(Message::Close(_)) => {
                        let _ = saw_close.send(());
                        let _ = socket.flush();
                        return;
                    }
                    Ok(Message::Text(text)) => {
                        let request: Value = serde_json::from_str(&text).unwrap();
                        let _ = socket.send(Message::text(
                            json!({"jsonrpc": "2.0", "id": request["id"], "result": "ok"})
                                .to_string(),
                        ));
                    }
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
        });
        let client = client(WebSocketTransport::connect(WebSocketConfig::new(url)).unwrap());
        assert_eq!(client.call("anything", json!({})).unwrap(), "ok");
        within("close", move || client.close().unwrap());
        closed
            .recv_timeout(Duration::from_secs(10))
            .expect("the peer saw the close frame");
    }

    #[test]
    fn urls_that_are_not_websocket_are_refused() {
        let error =
            WebSocketTransport::connect(WebSocketConfig::new("http://127.0.0.1:1/")).unwrap_err();
        assert!(matches!(error, Error::Config(_)), "{error:?}");
    }
}
