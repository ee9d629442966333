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

use std::io::{self, BufRead, BufReader, BufWriter, Write};

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

fn main() -> io::Result<()> {
    let mut input = BufReader::with_capacity(1 << 16, io::stdin().lock());
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        // The method comes before params in both clients' frames; `"id":` inside params
        // would only matter for notifications, which carry none at the top.
        let method = raw_value(&line, b"\"method\"");
        let id = raw_value(&line, b"\"id\"");
        match (method, id) {
            (Some(_), None) | (None, _) => {}
            (Some(method), Some(id)) => match method {
                b"\"tools/call\"" => {
                    if find(&line, b"\"name\":\"hang\"").is_none() {
                        respond(
                            &mut out,
                            id,
                            b"{\"content\":[{\"type\":\"text\",\"text\":\"echo\"}]}",
                        )?;
                    }
                }
                b"\"ping\"" => respond(&mut out, id, b"{}")?,
                b"\"initialize\"" => {
                    let version = raw_value(&line, b"\"protocolVersion\"")
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
                    &mut out,
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
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
    out.flush()
}
