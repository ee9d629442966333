//! A small hand-written HTTP/1.1 server on 127.0.0.1 for the HTTP transport tests: every
//! connection on its own thread, keep-alive for sized replies, close-delimited event streams,
//! and a record of every request it saw.
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub path: String,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub at: Instant,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The JSON-RPC method of a POST ("" for others).
    pub fn rpc(&self) -> String {
        self.json()
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    }

    pub fn id(&self) -> Value {
        self.json().get("id").cloned().unwrap_or(Value::Null)
    }

    /// "POST initialize", "GET", "DELETE".
    pub fn label(&self) -> String {
        match self.method.as_str() {
            "POST" => format!("POST {}", self.rpc()),
            other => other.to_owned(),
        }
    }
}

/// Writes the reply to one request.
pub struct Reply<'a> {
    stream: &'a mut TcpStream,
    /// False once the reply is close-delimited: the connection ends after the handler.
    pub keep_alive: bool,
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

impl Reply<'_> {
    /// A sized reply (keeps the connection).
    pub fn send(&mut self, status: u16, content_type: &str, headers: &[(&str, &str)], body: &str) {
        let mut head = format!(
            "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\n",
            reason(status),
            body.len()
        );
        if !content_type.is_empty() {
            head.push_str(&format!("Content-Type: {content_type}\r\n"));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let _ = self.stream.write_all(head.as_bytes());
        let _ = self.stream.write_all(body.as_bytes());
        let _ = self.stream.flush();
    }

    pub fn json(&mut self, status: u16, body: &Value, headers: &[(&str, &str)]) {
        self.send(status, "application/json", headers, &body.to_string());
    }

    pub fn accepted(&mut self) {
        self.send(202, "", &[], "");
    }

    /// Starts a close-delimited event stream.
    pub fn sse_start(&mut self, headers: &[(&str, &str)]) {
        self.keep_alive = false;
        let mut head =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n"
                .to_owned();
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let _ = self.stream.write_all(head.as_bytes());
        let _ = self.stream.flush();
    }

    /// Writes raw event-stream text; false when the client has gone.
    pub fn sse_raw(&mut self, text: &str) -> bool {
        self.stream.write_all(text.as_bytes()).is_ok() && self.stream.flush().is_ok()
    }

    /// One `message` event carrying `value`.
    pub fn sse_message(&mut self, value: &Value) -> bool {
        self.sse_raw(&format!("event: message\ndata: {value}\n\n"))
    }

    /// Whether the client closed its end (reads EOF within `wait`).
    pub fn client_closed_within(&mut self, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        let mut byte = [0u8; 1];
        while Instant::now() < deadline {
            let _ = self
                .stream
                .set_read_timeout(Some(Duration::from_millis(20)));
            match self.stream.read(&mut byte) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(error)
                    if error.kind() == io::ErrorKind::WouldBlock
                        || error.kind() == io::ErrorKind::TimedOut => {}
                Err(_) => return true,
            }
        }
        false
    }
}

pub type Handler = Arc<dyn Fn(&Req, &mut Reply<'_>) + Send + Sync>;

/// How long [`within`] waits: a hang guard only, the tests' `support::SOON`. A constant of
/// this file's own because benches/http.rs and examples/oauth_login.rs include it too.
const WITHIN: Duration = Duration::from_secs(10);

/// Runs `body` on its own thread and returns its result, failing the test (instead of hanging
/// it) when that takes longer than [`WITHIN`]. A hang guard, not a claim about speed.
pub fn within<T: Send + 'static>(what: &str, body: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(body());
    });
    match rx.recv_timeout(WITHIN) {
        Ok(value) => value,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: still blocked after {WITHIN:?}")
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

pub struct FakeServer {
    pub url: String,
    requests: Arc<Mutex<Vec<Req>>>,
    stop: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
}

impl FakeServer {
    pub fn start(handler: impl Fn(&Req, &mut Reply<'_>) + Send + Sync + 'static) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Handler = Arc::new(handler);
        {
            let requests = Arc::clone(&requests);
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    // Replies go out in several writes; without this, Nagle's algorithm and the
                    // peer's delayed ACK add 40 ms to many of them.
                    let _ = stream.set_nodelay(true);
                    let handler = Arc::clone(&handler);
                    let requests = Arc::clone(&requests);
                    let stop = Arc::clone(&stop);
                    thread::spawn(move || serve(stream, &handler, &requests, &stop));
                }
            });
        }
        FakeServer {
            url: format!("http://{addr}/mcp"),
            requests,
            stop,
            addr,
        }
    }

    pub fn requests(&self) -> Vec<Req> {
        self.requests.lock().unwrap().clone()
    }

    pub fn labels(&self) -> Vec<String> {
        self.requests().iter().map(Req::label).collect()
    }

    /// Waits until a request matches, or panics after `wait`.
    pub fn wait_for(&self, wait: Duration, mut found: impl FnMut(&Req) -> bool) -> Req {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(req) = self.requests().into_iter().find(|req| found(req)) {
                return req;
            }
            assert!(
                Instant::now() < deadline,
                "no matching request; saw {:?}",
                self.labels()
            );
            thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(stream: TcpStream, handler: &Handler, requests: &Mutex<Vec<Req>>, stop: &AtomicBool) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut writer = stream.try_clone().expect("clone the socket");
    let mut reader = BufReader::new(stream);
    loop {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Some(req) = read_request(&mut reader) else {
            break;
        };
        requests.lock().unwrap().push(req.clone());
        let mut reply = Reply {
            stream: &mut writer,
            keep_alive: true,
        };
        handler(&req, &mut reply);
        if !reply.keep_alive {
            break;
        }
    }
    let _ = writer.shutdown(Shutdown::Both);
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Req> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some(Req {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        at: Instant::now(),
    })
}

/// The JSON-RPC result reply to `req`.
pub fn result(req: &Req, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": req.id(), "result": result})
}

/// An `initialize` result naming `version`.
pub fn initialize_result(req: &Req, version: &str) -> Value {
    result(
        req,
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake", "version": "1.0.0"}
        }),
    )
}

/// A text tool result.
pub fn text_result(req: &Req, text: &str) -> Value {
    result(req, json!({"content": [{"type": "text", "text": text}]}))
}

/// An MCP server over HTTP that quotes what it received back (its `Authorization` and
/// `X-Api-Key` headers, and `password`, the URL's password the test gave it) in a JSON-RPC
/// error (message and data) for `leak` and in an `isError` text for `fails`: the peer that
/// the secret-masking tests must show nowhere.
pub fn quoting_server(password: &'static str) -> FakeServer {
    FakeServer::start(move |req: &Req, reply: &mut Reply<'_>| {
        let quoted = format!(
            "{} {} {password}",
            req.header("authorization").unwrap_or(""),
            req.header("x-api-key").unwrap_or("")
        );
        match (req.method.as_str(), req.rpc().as_str()) {
            ("POST", "initialize") => reply.json(
                200,
                &initialize_result(req, "2025-11-25"),
                &[("Mcp-Session-Id", "s-1")],
            ),
            ("POST", "tools/list") => reply.json(
                200,
                &result(
                    req,
                    json!({"tools": [{"name": "leak", "inputSchema": {"type": "object"}},
                                     {"name": "fails", "inputSchema": {"type": "object"}}]}),
                ),
                &[],
            ),
            ("POST", "tools/call") if req.json()["params"]["name"] == "fails" => reply.json(
                200,
                &result(
                    req,
                    json!({"content": [{"type": "text", "text": format!("denied: {quoted}")}],
                           "isError": true}),
                ),
                &[],
            ),
            ("POST", "tools/call") => reply.json(
                200,
                &json!({"jsonrpc": "2.0", "id": req.id(),
                        "error": {"code": -32000, "message": format!("denied: {quoted}"),
                                  "data": {"received": quoted}}}),
                &[],
            ),
            ("POST", _) => reply.accepted(),
            ("GET", _) => reply.send(405, "", &[], ""),
            _ => reply.send(200, "", &[], ""),
        }
    })
}
