//! The one load client: raw JSON-RPC, newline-delimited over pipes, and keep-alive HTTP/1.1
//! POSTs over `std::net::TcpStream` (the session id carried, an answer read as JSON or as the
//! `data:` of SSE events, chunked or sized).

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::process::{ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::{
    call_frame, check_echo, cpu, find, initialize_frame, is_response, Cpu, INITIALIZED, LIST,
    VERSION, WINDOW,
};

pub fn stdio_send(out: &mut BufWriter<ChildStdin>, frame: &[u8]) {
    out.write_all(frame).expect("write");
    out.write_all(b"\n").expect("write");
}

/// The next response line (server requests and notifications skipped).
pub fn stdio_response(
    out: &mut BufWriter<ChildStdin>,
    input: &mut BufReader<ChildStdout>,
    line: &mut Vec<u8>,
) {
    loop {
        if input.buffer().is_empty() {
            out.flush().expect("flush");
        }
        line.clear();
        assert!(input.read_until(b'\n', line).expect("read") > 0, "EOF");
        if is_response(line) {
            return;
        }
    }
}

pub fn stdio_handshake(out: &mut BufWriter<ChildStdin>, input: &mut BufReader<ChildStdout>) {
    let mut line = Vec::new();
    stdio_send(out, &initialize_frame());
    stdio_response(out, input, &mut line);
    stdio_send(out, INITIALIZED);
    stdio_send(out, LIST);
    stdio_response(out, input, &mut line);
}

pub fn stdio_seq(
    out: &mut BufWriter<ChildStdin>,
    input: &mut BufReader<ChildStdout>,
    tool: &str,
    n: usize,
    cap: Duration,
) -> (usize, Duration) {
    let mut line = Vec::new();
    let started = Instant::now();
    let mut done = 0;
    while done < n && started.elapsed() < cap {
        stdio_send(out, &call_frame(10 + done, tool));
        stdio_response(out, input, &mut line);
        check_echo(&line);
        done += 1;
    }
    (done, started.elapsed())
}

pub fn stdio_par(
    out: &mut BufWriter<ChildStdin>,
    input: &mut BufReader<ChildStdout>,
    tool: &str,
    n: usize,
    cap: Duration,
) -> (usize, Duration) {
    let mut line = Vec::new();
    let started = Instant::now();
    let (mut sent, mut done) = (0, 0);
    while done < sent || sent == 0 {
        while sent < n && sent - done < WINDOW && started.elapsed() < cap {
            stdio_send(out, &call_frame(1_000_000 + sent, tool));
            sent += 1;
        }
        if done == sent {
            break;
        }
        stdio_response(out, input, &mut line);
        check_echo(&line);
        done += 1;
    }
    (done, started.elapsed())
}

// ---------------------------------------------------------------------------------------------
// The load client over HTTP: keep-alive POSTs, the answer as JSON or as SSE events.

pub struct HttpConn {
    port: u16,
    input: BufReader<TcpStream>,
    pub session: Option<String>,
    request: Vec<u8>,
    body: Vec<u8>,
}

impl HttpConn {
    pub fn open(port: u16, session: Option<String>) -> HttpConn {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        HttpConn {
            port,
            input: BufReader::with_capacity(1 << 16, stream),
            session,
            request: Vec::with_capacity(1024),
            body: Vec::with_capacity(4096),
        }
    }

    /// POSTs one message; the JSON-RPC response among the answer's messages, if any.
    pub fn post(&mut self, message: &[u8]) -> Option<Vec<u8>> {
        self.request.clear();
        write!(
            self.request,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.port,
            message.len()
        )
        .expect("format");
        if let Some(session) = &self.session {
            write!(
                self.request,
                "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {VERSION}\r\n"
            )
            .expect("format");
        }
        self.request.extend_from_slice(b"\r\n");
        self.request.extend_from_slice(message);
        self.input
            .get_mut()
            .write_all(&self.request)
            .expect("send the request");
        let (status, sse, close) = self.read_answer();
        assert!(
            (200..300).contains(&status),
            "HTTP {status}: {}",
            String::from_utf8_lossy(&self.body)
        );
        let answer = if sse {
            sse_response(&self.body)
        } else if self.body.is_empty() {
            None
        } else {
            Some(self.body.clone())
        };
        if close {
            let session = self.session.take();
            *self = HttpConn::open(self.port, session);
        }
        answer
    }

    /// Reads status, head and body into `self.body`: (status, is SSE, connection closes).
    fn read_answer(&mut self) -> (u16, bool, bool) {
        let mut line = String::new();
        self.input.read_line(&mut line).expect("status line");
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("a status line, got {line:?}"));
        let (mut length, mut chunked, mut sse, mut close) = (None, false, false, false);
        loop {
            line.clear();
            self.input.read_line(&mut line).expect("header");
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "content-type" => sse = value.starts_with("text/event-stream"),
                "connection" => close = value.eq_ignore_ascii_case("close"),
                "mcp-session-id" if self.session.is_none() => self.session = Some(value.to_owned()),
                _ => {}
            }
        }
        self.body.clear();
        if chunked {
            loop {
                line.clear();
                self.input.read_line(&mut line).expect("chunk size");
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                    .expect("a chunk size");
                if size == 0 {
                    loop {
                        line.clear();
                        self.input.read_line(&mut line).expect("trailer");
                        if line.trim().is_empty() {
                            break;
                        }
                    }
                    break;
                }
                let at = self.body.len();
                self.body.resize(at + size, 0);
                self.input.read_exact(&mut self.body[at..]).expect("chunk");
                line.clear();
                self.input.read_line(&mut line).expect("chunk end");
            }
        } else if let Some(length) = length {
            self.body.resize(length, 0);
            self.input.read_exact(&mut self.body).expect("body");
        } else if !(status == 202 || status == 204) {
            self.input.read_to_end(&mut self.body).expect("body");
            close = true;
        }
        (status, sse, close)
    }
}

/// The JSON-RPC response among the `data:` of an event stream.
pub fn sse_response(body: &[u8]) -> Option<Vec<u8>> {
    let text = String::from_utf8_lossy(body);
    let mut data = String::new();
    for line in text.split('\n').map(|line| line.trim_end_matches('\r')) {
        if line.is_empty() {
            if is_response(data.as_bytes()) {
                return Some(data.into_bytes());
            }
            data.clear();
        } else if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        }
    }
    is_response(data.as_bytes()).then(|| data.into_bytes())
}

pub fn http_handshake(port: u16) -> HttpConn {
    let mut conn = HttpConn::open(port, None);
    let answer = conn.post(&initialize_frame()).expect("initialize answered");
    assert!(find(&answer, b"\"result\"").is_some(), "initialize failed");
    conn.post(INITIALIZED);
    let list = conn.post(LIST).expect("tools/list answered");
    assert!(find(&list, b"echo").is_some(), "no echo tool listed");
    conn
}

pub fn http_seq(conn: &mut HttpConn, tool: &str, n: usize, cap: Duration) -> (usize, Duration) {
    let started = Instant::now();
    let mut done = 0;
    while done < n && started.elapsed() < cap {
        let answer = conn.post(&call_frame(10 + done, tool)).expect("an answer");
        check_echo(&answer);
        done += 1;
    }
    (done, started.elapsed())
}

/// 64 connections of one session, one thread each; the CPU read once all are open and
/// again before any closes (so the gateway's connection threads are all alive for both).
pub fn http_par(
    port: u16,
    session: Option<String>,
    tool: &str,
    n: usize,
    cap: Duration,
    pid: u32,
) -> (usize, Duration, Cpu, Cpu) {
    let open = Arc::new(Barrier::new(WINDOW + 1));
    let go = Arc::new(Barrier::new(WINDOW + 1));
    let finished = Arc::new(Barrier::new(WINDOW + 1));
    let close = Arc::new(Barrier::new(WINDOW + 1));
    let next = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..WINDOW)
        .map(|_| {
            let barriers = [open.clone(), go.clone(), finished.clone(), close.clone()];
            let (next, session, tool) = (next.clone(), session.clone(), tool.to_owned());
            std::thread::spawn(move || {
                let mut conn = HttpConn::open(port, session);
                barriers[0].wait();
                barriers[1].wait();
                let started = Instant::now();
                let mut done = 0;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n || started.elapsed() >= cap {
                        break;
                    }
                    let answer = conn.post(&call_frame(1_000_000 + i, &tool));
                    check_echo(&answer.expect("an answer"));
                    done += 1;
                }
                barriers[2].wait();
                barriers[3].wait();
                drop(conn);
                done
            })
        })
        .collect();
    open.wait();
    let before = cpu(pid);
    let started = Instant::now();
    go.wait();
    finished.wait();
    let took = started.elapsed();
    let after = cpu(pid);
    close.wait();
    let done = threads
        .into_iter()
        .map(|t| t.join().expect("a caller"))
        .sum();
    (done, took, before, after)
}
