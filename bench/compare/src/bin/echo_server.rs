//! The one fast MCP server every client in the comparison talks to, over stdio: frames are
//! hand-parsed (the id and method are found in the line's bytes, nothing is built into a
//! tree), answers are written from the request's own bytes, and output is flushed only when
//! no more input is buffered, so a pipelined client gets its answers in large writes.
//!
//! It answers `initialize` (echoing the requested version), `ping`, `tools/list` (one tool,
//! `echo`), `tools/call` of `echo` (a one-line text), and never answers `tools/call` of
//! `hang` (for the timeout and memory phases). Anything else with an id gets -32601, which
//! makes both clients fall back from `server/discover` to `initialize`. Notifications are
//! read and dropped.
//!
//! `echo_server http` serves the same over Streamable HTTP instead: it prints the port it
//! listens on (127.0.0.1, chosen by the OS), answers each POST with one JSON response
//! (202 for notifications), refuses GET (no server stream; 405, as the spec allows) and takes
//! DELETE. One thread per connection, keep-alive.

use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};

/// The raw JSON text after `"key":` (a number, a string with its quotes, or `null`).
fn raw_value<'a>(line: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let start = find(line, key)? + key.len();
    let rest = &line[start..];
    let rest = &rest[rest.iter().position(|b| *b != b' ' && *b != b':')?..];
    let end = if rest.first() == Some(&b'"') {
        1 + rest[1..].iter().position(|b| *b == b'"')? + 1
    } else {
        rest.iter()
            .position(|b| matches!(b, b',' | b'}' | b' '))
            .unwrap_or(rest.len())
    };
    Some(&rest[..end])
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn respond(out: &mut impl Write, id: &[u8], result: &[u8]) -> io::Result<()> {
    out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
    out.write_all(id)?;
    out.write_all(b",\"result\":")?;
    out.write_all(result)?;
    out.write_all(b"}\n")
}

/// Writes the answer to one frame, if it gets one.
fn answer(line: &[u8], out: &mut impl Write) -> io::Result<()> {
    // The method comes before params in both clients' frames; `"id":` inside params
    // would only matter for notifications, which carry none at the top.
    let method = raw_value(line, b"\"method\"");
    let id = raw_value(line, b"\"id\"");
    match (method, id) {
            (Some(_), None) | (None, _) => {}
            (Some(method), Some(id)) => match method {
                b"\"tools/call\"" => {
                    if find(line, b"\"name\":\"hang\"").is_none() {
                        respond(
                            out,
                            id,
                            b"{\"content\":[{\"type\":\"text\",\"text\":\"echo\"}]}",
                        )?;
                    }
                }
                b"\"ping\"" => respond(out, id, b"{}")?,
                b"\"initialize\"" => {
                    let version = raw_value(line, b"\"protocolVersion\"")
                        .unwrap_or(b"\"2025-06-18\"")
                        .to_vec();
                    out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
                    out.write_all(id)?;
                    out.write_all(b",\"result\":{\"protocolVersion\":")?;
                    out.write_all(&version)?;
                    out.write_all(
                        b",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"echo\",\"version\":\"0\"}}}\n",
                    )?;
                }
                b"\"tools/list\"" => respond(
                    out,
                    id,
                    b"{\"tools\":[{\"name\":\"echo\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"hang\",\"inputSchema\":{\"type\":\"object\"}}]}",
                )?,
                _ => {
                    out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
                    out.write_all(id)?;
                    out.write_all(
                        b",\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}\n",
                    )?;
                }
            },
        }
    Ok(())
}

fn main() -> io::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("http") {
        return serve_http();
    }
    let mut input = BufReader::with_capacity(1 << 16, io::stdin().lock());
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        answer(&line, &mut out)?;
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
    out.flush()
}

fn serve_http() -> io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    println!("{}", listener.local_addr()?.port());
    io::stdout().flush()?;
    for stream in listener.incoming() {
        let stream = stream?;
        std::thread::spawn(move || {
            let _ = connection(stream);
        });
    }
    Ok(())
}

fn connection(stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut input = BufReader::new(stream.try_clone()?);
    let mut output = stream;
    let mut head = String::new();
    let mut body = Vec::new();
    let mut reply = Vec::new();
    loop {
        head.clear();
        if input.read_line(&mut head)? == 0 {
            return Ok(());
        }
        let method = head.split(' ').next().unwrap_or("").to_owned();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if input.read_line(&mut header)? == 0 {
                return Ok(());
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        body.resize(length, 0);
        input.read_exact(&mut body)?;
        reply.clear();
        let status = match method.as_str() {
            "POST" => {
                answer(&body, &mut reply)?;
                if reply.is_empty() {
                    "202 Accepted"
                } else {
                    reply.pop(); // the newline
                    "200 OK"
                }
            }
            "DELETE" => "200 OK",
            _ => "405 Method Not Allowed",
        };
        let content_type = if reply.is_empty() {
            ""
        } else {
            "Content-Type: application/json\r\n"
        };
        write!(
            output,
            "HTTP/1.1 {status}\r\n{content_type}Content-Length: {}\r\n\r\n",
            reply.len()
        )?;
        output.write_all(&reply)?;
        output.flush()?;
    }
}
