//! The one load client of the comparisons (the servers side by side, and the gateways': the
//! `gateways` binary includes this file): raw newline-delimited JSON-RPC over a child's
//! pipes, and raw keep-alive HTTP/1.1 POSTs over std's `TcpStream`. It builds every
//! frame with `format!`, looks in an answer only for what tells it apart (the `"result"` of a
//! response, the `hello` the echo tool gives back), and parses no JSON, so that it costs
//! every server the same.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::process::{ChildStdin, ChildStdout};
use std::time::{Duration, Instant};

/// Calls in flight in the pipelined phase (over HTTP: connections).
pub const WINDOW: usize = 64;

/// `COMPARE_SCALE` (1 by default): what every comparison's call counts and times are scaled by.
pub fn scale() -> f64 {
    std::env::var("COMPARE_SCALE")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1.0)
}

/// `n` calls scaled, never fewer than a window's.
pub fn scaled(n: usize) -> usize {
    ((n as f64 * scale()) as usize).max(WINDOW)
}

/// The handshake-era version the load client asks for by default.
pub const VERSION: &str = "2025-11-25";

/// What the load client says: the handshake-era version it asks for and the tool it calls
/// (an `echo`, however a gateway names it).
#[derive(Clone, Copy, Debug)]
pub struct Speech {
    /// The `protocolVersion` of `initialize` and the `MCP-Protocol-Version` after it.
    pub version: &'static str,
    /// The tool called.
    pub tool: &'static str,
}

impl Speech {
    /// [`VERSION`], `echo`.
    pub const ECHO: Speech = Speech {
        version: VERSION,
        tool: "echo",
    };
}

fn initialize(id: u64, version: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"{version}\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\"load\",\"version\":\"0\"}}}}}}"
    )
}

const INITIALIZED: &str = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";

const LIST: &str = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";

/// A `tools/call` of `tool`; `meta`: with the 2026-07-28 per-request `_meta`.
fn call(id: u64, tool: &str, meta: bool) -> String {
    let meta = if meta {
        ",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{},\"io.modelcontextprotocol/clientInfo\":{\"name\":\"load\",\"version\":\"0\"}}"
    } else {
        ""
    };
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"{tool}\",\"arguments\":{{\"message\":\"hello\"}}{meta}}}}}"
    )
}

/// Panics unless `answer` is a tool's success (the hand-written loop answers its own text).
fn check(answer: &[u8]) {
    let found = |needle: &[u8]| answer.windows(needle.len()).any(|w| w == needle);
    assert!(
        found(b"\"result\"") && found(b"\"content\"") && !found(b"\"isError\":true"),
        "not an echo answer: {}",
        String::from_utf8_lossy(answer)
    );
}

/// A server on the other end of a child's pipes, after the handshake.
pub struct Stdio {
    input: BufWriter<ChildStdin>,
    output: BufReader<ChildStdout>,
    line: Vec<u8>,
    next: u64,
    speech: Speech,
}

impl Stdio {
    /// Shakes hands (`initialize`, its answer, `notifications/initialized`), to call `echo`.
    pub fn connect(input: ChildStdin, output: ChildStdout) -> Stdio {
        Stdio::connect_speaking(input, output, Speech::ECHO)
    }

    /// The same, speaking `speech`.
    pub fn connect_speaking(input: ChildStdin, output: ChildStdout, speech: Speech) -> Stdio {
        let mut stdio = Stdio {
            input: BufWriter::with_capacity(1 << 16, input),
            output: BufReader::with_capacity(1 << 16, output),
            line: Vec::with_capacity(512),
            next: 2,
            speech,
        };
        stdio.send(&initialize(0, speech.version));
        stdio.input.flush().expect("flush");
        let answer = stdio.answer();
        assert!(
            answer.windows(8).any(|w| w == b"\"result\""),
            "initialize: {}",
            String::from_utf8_lossy(answer)
        );
        stdio.send(INITIALIZED);
        stdio.input.flush().expect("flush");
        stdio
    }

    fn send(&mut self, frame: &str) {
        self.input.write_all(frame.as_bytes()).expect("write");
        self.input.write_all(b"\n").expect("write");
    }

    /// The next response line (server requests and notifications skipped); flushes what is
    /// buffered before it could block.
    fn answer(&mut self) -> &[u8] {
        loop {
            if self.output.buffer().is_empty() {
                self.input.flush().expect("flush");
            }
            self.line.clear();
            let n = self.output.read_until(b'\n', &mut self.line).expect("read");
            assert!(n > 0, "the server closed its stdout");
            if !self.line.windows(9).any(|w| w == b"\"method\":") {
                return &self.line;
            }
        }
    }

    /// Panics unless `tools/list` names the tool called (a gateway's backends are up).
    pub fn check_listed(&mut self) {
        self.send(LIST);
        let tool = self.speech.tool;
        let answer = self.answer();
        assert!(
            answer.windows(tool.len()).any(|w| w == tool.as_bytes()),
            "{tool} not listed: {}",
            String::from_utf8_lossy(answer)
        );
    }

    fn call(&mut self) {
        let frame = call(self.next, self.speech.tool, false);
        self.next += 1;
        self.send(&frame);
    }

    /// Sequential calls: up to `n`, until `until`; how many were made.
    pub fn sequential(&mut self, n: usize, until: Instant) -> usize {
        let mut done = 0;
        while done < n && (done == 0 || Instant::now() < until) {
            self.call();
            check(self.answer());
            done += 1;
        }
        done
    }

    /// `WINDOW` calls in flight: up to `n`, no new one after `until`; how many were made.
    pub fn pipelined(&mut self, n: usize, until: Instant) -> usize {
        let (mut sent, mut done) = (0, 0);
        while sent < n.min(WINDOW) {
            self.call();
            sent += 1;
        }
        while done < sent {
            check(self.answer());
            done += 1;
            if sent < n && Instant::now() < until {
                self.call();
                sent += 1;
            }
        }
        done
    }
}

/// How a server's HTTP endpoint is spoken to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Wire {
    /// 2026-07-28: no handshake, every `tools/call` carries its `_meta` and the
    /// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers.
    Stateless2026,
    /// `initialize` (no session id comes back), then plain handshake-era calls.
    Handshake,
    /// `initialize`, its `Mcp-Session-Id` on every later request.
    Session,
}

/// One keep-alive HTTP/1.1 connection.
pub struct Http {
    port: u16,
    speech: Speech,
    stream: Option<(TcpStream, BufReader<TcpStream>)>,
    request: Vec<u8>,
    body: Vec<u8>,
    line: String,
}

/// What an answer's head said that the client needs.
struct Head {
    status: u16,
    session: Option<String>,
}

impl Http {
    /// Connects to `127.0.0.1:port`, to call `echo`.
    pub fn connect(port: u16) -> Http {
        Http::connect_speaking(port, Speech::ECHO)
    }

    /// The same, speaking `speech`.
    pub fn connect_speaking(port: u16, speech: Speech) -> Http {
        let mut http = Http {
            port,
            speech,
            stream: None,
            request: Vec::with_capacity(1024),
            body: Vec::with_capacity(1024),
            line: String::with_capacity(128),
        };
        http.reconnect();
        http
    }

    fn reconnect(&mut self) {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let reader = BufReader::with_capacity(1 << 14, stream.try_clone().expect("clone"));
        self.stream = Some((stream, reader));
    }

    /// POSTs `body` with `headers` (each ending in CRLF); the answer's body is in `self.body`.
    fn post(&mut self, headers: &str, body: &str) -> Head {
        if self.stream.is_none() {
            self.reconnect();
        }
        self.request.clear();
        write!(
            self.request,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
            self.port,
            body.len()
        )
        .expect("format");
        let (stream, reader) = self.stream.as_mut().expect("connected");
        stream.write_all(&self.request).expect("send");
        let (head, close) = read_answer(reader, &mut self.line, &mut self.body);
        if close {
            self.stream = None;
        }
        head
    }

    /// Opens what `wire` needs before calls: the session id for [`Wire::Session`].
    pub fn open(&mut self, wire: Wire) -> Option<String> {
        if wire == Wire::Stateless2026 {
            return None;
        }
        let head = self.post("", &initialize(0, self.speech.version));
        assert_eq!(
            head.status,
            200,
            "initialize: {}",
            String::from_utf8_lossy(&self.body)
        );
        let session = head.session;
        assert_eq!(
            session.is_some(),
            wire == Wire::Session,
            "session id: {session:?}"
        );
        let headers = headers(wire, session.as_deref(), "", self.speech.version);
        let head = self.post(&headers, INITIALIZED);
        assert!(head.status < 300, "initialized: {}", head.status);
        session
    }

    /// Panics unless `tools/list` names the tool called (a gateway's backends are up).
    pub fn check_listed(&mut self, wire: Wire, session: Option<&str>) {
        let headers = headers(wire, session, "", self.speech.version);
        let head = self.post(&headers, LIST);
        let tool = self.speech.tool;
        assert!(
            head.status == 200 && self.body.windows(tool.len()).any(|w| w == tool.as_bytes()),
            "{tool} not listed: HTTP {} {}",
            head.status,
            String::from_utf8_lossy(&self.body)
        );
    }

    /// One `tools/call` of the tool, checked.
    pub fn call(&mut self, wire: Wire, session: Option<&str>, id: u64) {
        let (tool, version) = (self.speech.tool, self.speech.version);
        let headers = headers(wire, session, tool, version);
        let head = self.post(&headers, &call(id, tool, wire == Wire::Stateless2026));
        assert_eq!(
            head.status,
            200,
            "tools/call: {}",
            String::from_utf8_lossy(&self.body)
        );
        check(&self.body);
    }
}

/// The headers of a request after the handshake (`tool`: the `Mcp-Name` of a 2026-07-28 call).
fn headers(wire: Wire, session: Option<&str>, tool: &str, version: &str) -> String {
    match wire {
        Wire::Stateless2026 => format!(
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n"
        ),
        Wire::Handshake => format!("MCP-Protocol-Version: {version}\r\n"),
        Wire::Session => format!(
            "MCP-Protocol-Version: {version}\r\nMcp-Session-Id: {}\r\n",
            session.expect("a session")
        ),
    }
}

/// Reads one answer (head, then a `Content-Length`, chunked, or until-close body into
/// `body`); whether the connection is to be closed after it.
fn read_answer(
    reader: &mut BufReader<TcpStream>,
    line: &mut String,
    body: &mut Vec<u8>,
) -> (Head, bool) {
    let mut head = Head {
        status: 0,
        session: None,
    };
    let mut length = None;
    let mut chunked = false;
    let mut close = false;
    line.clear();
    reader.read_line(line).expect("status line");
    head.status = line
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or_else(|| panic!("status line {line:?}"));
    loop {
        line.clear();
        reader.read_line(line).expect("header");
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("mcp-session-id") {
            head.session = Some(value.to_owned());
        } else if name.eq_ignore_ascii_case("connection") {
            close = value.eq_ignore_ascii_case("close");
        }
    }
    body.clear();
    if chunked {
        loop {
            line.clear();
            reader.read_line(line).expect("chunk size");
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .unwrap_or_else(|_| panic!("chunk size {line:?}"));
            if size == 0 {
                // Trailers, then the blank line.
                loop {
                    line.clear();
                    reader.read_line(line).expect("trailer");
                    if line.trim_end().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..]).expect("chunk");
            line.clear();
            reader.read_line(line).expect("chunk end");
        }
    } else if let Some(length) = length {
        body.resize(length, 0);
        reader.read_exact(body).expect("body");
    } else if !matches!(head.status, 202 | 204 | 304) {
        reader.read_to_end(body).expect("body to close");
        close = true;
    }
    (head, close)
}
