//! Helpers shared by the `server_*` tests: the example servers built on first use, an HTTP
//! server example started on a port the system picks (stopped by closing its stdin, or by
//! its PID), in-process servers, and a raw HTTP client for the fault tests. Each test file
//! names it with `use crate::support::server as support;`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub use super::{eventually, serial, threads_named, LONG};

/// The path of a built example, building it once per test binary.
pub fn example(name: &'static str) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<Vec<&'static str>>> = OnceLock::new();
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir")
        .to_path_buf();
    let path = profile_dir.join("examples").join(name);
    let built = BUILT.get_or_init(|| std::sync::Mutex::new(Vec::new()));
    let mut built = built
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if !built.contains(&name) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "--quiet", "--example", name]);
        // The examples built as `cargo test` built them: with the shared state store when the
        // tests have it (a build without would replace theirs).
        if cfg!(feature = "redis") {
            build.args(["--features", "redis"]);
        }
        if profile_dir.file_name().is_some_and(|dir| dir == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo build --example");
        assert!(status.success(), "building {name} failed");
        built.push(name);
    }
    assert!(path.exists(), "{} missing after build", path.display());
    path
}

/// An example server listening on HTTP, with its stderr collected; it stops when dropped
/// (its stdin closed, then its PID killed if it is still there).
pub struct HttpExample {
    pub url: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl HttpExample {
    /// Starts `name` with `args` (it must print `listening on URL` and serve until its stdin
    /// ends).
    pub fn start(name: &'static str, args: &[&str]) -> HttpExample {
        HttpExample::start_program(&example(name), args)
    }

    /// Starts the program at `path` (an example built already, e.g. one that needs a
    /// feature [`example`] does not name) the same way.
    pub fn start_program(path: &std::path::Path, args: &[&str]) -> HttpExample {
        let mut child = Command::new(path)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the example server");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("the server's first line");
        let url = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_owned();
        HttpExample {
            url,
            child,
            stdin,
            stderr: rx,
            seen: Vec::new(),
        }
    }

    /// Waits (at most [`LONG`]) for a stderr line containing `needle`.
    pub fn expect_stderr(&mut self, needle: &str) -> String {
        if let Some(line) = self.seen.iter().find(|line| line.contains(needle)) {
            return line.clone();
        }
        let deadline = Instant::now() + LONG;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(needle);
                    self.seen.push(line.clone());
                    if found {
                        return line;
                    }
                }
                Err(_) => panic!("no stderr line with {needle:?}; saw {:?}", self.seen),
            }
        }
    }

    /// Kills it with SIGKILL (nothing of it runs on) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Closes its stdin and waits for it to exit by itself; its exit code.
    pub fn stop(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let deadline = Instant::now() + LONG;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the example server did not stop at the end of its stdin");
    }
}

impl Drop for HttpExample {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A raw HTTP/1.1 exchange on its own connection: the status, the headers (names lower case)
/// and the body (chunked bodies joined).
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, value)| value.as_str())
    }

    /// The JSON-RPC messages of the body: the body itself, or each `data:` line of an SSE body.
    pub fn messages(&self) -> Vec<Value> {
        if self
            .header("content-type")
            .is_some_and(|ct| ct.starts_with("text/event-stream"))
        {
            self.body
                .lines()
                .filter_map(|line| line.strip_prefix("data: "))
                .filter(|data| !data.trim().is_empty())
                .map(|data| serde_json::from_str(data).expect("an SSE data line is JSON"))
                .collect()
        } else if self.body.is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_str(&self.body).expect("a JSON body")]
        }
    }
}

/// Reads one response from `reader`.
pub fn read_response<R: Read>(reader: &mut BufReader<R>) -> RawResponse {
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').expect("a header");
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, value): &(String, String)| value.clone())
    };
    let mut body = Vec::new();
    if find("transfer-encoding").as_deref() == Some("chunked") {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).expect("chunk size");
            let size = usize::from_str_radix(size.trim(), 16).expect("hex chunk size");
            let mut chunk = vec![0u8; size + 2];
            reader.read_exact(&mut chunk).expect("chunk");
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = find("content-length") {
        let mut chunk = vec![0u8; length.parse().expect("a length")];
        reader.read_exact(&mut chunk).expect("body");
        body = chunk;
    } else if status != 202 && status != 204 {
        let _ = reader.read_to_end(&mut body);
    }
    RawResponse {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// The `host:port` of a URL like `http://127.0.0.1:1234/mcp`.
pub fn authority(url: &str) -> &str {
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .expect("authority")
}

/// Sends `head` (without its final CRLF) and `body` on a new connection and reads the answer.
pub fn exchange(url: &str, head: &str, body: &str) -> RawResponse {
    let stream = TcpStream::connect(authority(url)).expect("connect");
    stream.set_read_timeout(Some(LONG)).expect("timeout");
    let mut writer = stream.try_clone().expect("clone");
    let request = format!("{head}Content-Length: {}\r\n\r\n{body}", body.len());
    writer.write_all(request.as_bytes()).expect("send");
    read_response(&mut BufReader::new(stream))
}

/// A POST of a JSON body with the headers given (each `Name: value\r\n`).
pub fn post(url: &str, headers: &str, body: &Value) -> RawResponse {
    let host = authority(url);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}"
    );
    exchange(url, &head, &body.to_string())
}

/// The headers and `_meta` of a 2026-07-28 request.
pub fn stateless_headers(method: &str, name: Option<&str>) -> String {
    let mut headers = format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n");
    if let Some(name) = name {
        headers.push_str(&format!("Mcp-Name: {name}\r\n"));
    }
    headers
}

/// A 2026-07-28 request body.
pub fn stateless_request(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A plain JSON-RPC client connected in memory to `server`, and the server's side.
pub fn memory_client(
    server: &toolwire::server::Server,
) -> (toolwire::Client, toolwire::server::ServerConnection) {
    let (client_end, server_end) = toolwire::transport::MemoryTransport::pair();
    let connection = server
        .connect(toolwire::server::PeerTransport::new(server_end))
        .expect("connect");
    let client = toolwire::Client::with_config(
        client_end,
        toolwire::ClientConfig::default().dialect(toolwire::mcp::McpDialect),
    )
    .expect("client");
    (client, connection)
}

/// The `_meta` of a 2026-07-28 request with these client capabilities.
pub fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// A task-capable tool that waits for the test to release it (or for its cancellation, which
/// it reports).
pub fn gated(
    name: &str,
    release: crossbeam_channel::Receiver<()>,
    saw_cancel: crossbeam_channel::Sender<()>,
) -> toolwire::harness::LocalTool {
    toolwire::harness::LocalTool::with_context(
        name,
        "Waits for the test.",
        json!({"type": "object"}),
        move |context, _| loop {
            if context.is_cancelled() {
                let _ = saw_cancel.send(());
                return Ok(toolwire::server::CallToolResult::from_text("cancelled"));
            }
            if release.recv_timeout(Duration::from_millis(5)).is_ok() {
                return Ok(toolwire::server::CallToolResult::from_text("released"));
            }
        },
    )
    .task(toolwire::server::TaskSupport::Optional)
}
