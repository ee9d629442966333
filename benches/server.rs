//! The MCP server's calls per second beside baselines in the same run: over stdio,
//! `examples/tool_server.rs` (on `toolwire::server`) beside `examples/handrolled_tool_server.rs`
//! (the std-and-serde_json server it replaced), driven by the same raw pipe loop; over HTTP,
//! `HttpServer` beside a minimal raw HTTP responder (one thread per connection, a fixed JSON
//! answer), driven by the same raw keep-alive POST loop. Prints a table of ratios.
//!
//! ```text
//! cargo bench --bench server            # TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! ```

#[path = "support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::scale;
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig};

const WINDOW: usize = 64;

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("bench path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--release", "--example", name])
        .status()
        .expect("cargo build");
    assert!(status.success());
    profile_dir.join("examples").join(name)
}

fn line(id: usize, tool: bool) -> String {
    if tool {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"message\":\"m{id}\"}}}}}}\n"
        )
    } else {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"echo\",\"params\":{{\"n\":{id}}}}}\n"
        )
    }
}

/// One thread keeps `window` requests in the server's stdin, writing one for each answer.
fn stdio_loop(server: &PathBuf, count: usize, window: usize, tool: bool) -> Duration {
    let mut child = Command::new(server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answer = String::new();
    let started = Instant::now();
    let mut next = 0;
    while next < window.min(count) {
        stdin.write_all(line(next, tool).as_bytes()).unwrap();
        next += 1;
    }
    stdin.flush().unwrap();
    for _ in 0..count {
        answer.clear();
        stdout.read_line(&mut answer).unwrap();
        assert!(answer.contains("\"result\""), "{answer}");
        if next < count {
            stdin.write_all(line(next, tool).as_bytes()).unwrap();
            stdin.flush().unwrap();
            next += 1;
        }
    }
    let elapsed = started.elapsed();
    drop(stdin);
    let _ = child.wait();
    elapsed
}

/// A minimal HTTP responder: reads a request head and its `Content-Length` body, answers a
/// fixed JSON-RPC result with the request's id; one thread per connection, keep-alive.
fn raw_responder() -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let thread = std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    let mut header = String::new();
                    loop {
                        header.clear();
                        if reader.read_line(&mut header).unwrap_or(0) == 0 {
                            return;
                        }
                        if header == "\r\n" {
                            break;
                        }
                        if let Some(value) =
                            header.to_ascii_lowercase().strip_prefix("content-length:")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let id = serde_json::from_slice::<serde_json::Value>(&body)
                        .map(|v| v["id"].clone())
                        .unwrap_or_default();
                    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "m"}], "isError": false}}).to_string();
                    let response = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
                        answer.len()
                    );
                    if writer.write_all(response.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, thread)
}

/// One keep-alive connection posting `count` 2026-07-28 tool calls in a row.
fn http_loop(url: &str, count: usize) -> Duration {
    let host = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let stream = TcpStream::connect(&host).unwrap();
    stream.set_nodelay(true).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let started = Instant::now();
    for id in 0..count {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "m"},
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        writer.write_all(request.as_bytes()).unwrap();
        let mut length = 0usize;
        let mut head = String::new();
        let mut header = String::new();
        loop {
            header.clear();
            if reader.read_line(&mut header).unwrap() == 0 {
                panic!("call {id}: the server closed the connection after {head:?}");
            }
            head.push_str(&header);
            if header == "\r\n" {
                break;
            }
            if let Some(value) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
        }
        let mut answer = vec![0u8; length];
        reader.read_exact(&mut answer).unwrap();
        assert!(
            serde_json::from_slice::<serde_json::Value>(&answer)
                .is_ok_and(|answer| answer["jsonrpc"] == "2.0" && answer["id"] == id),
            "call {id}: {head}{}",
            String::from_utf8_lossy(&answer)
        );
    }
    started.elapsed()
}

/// `threads` connections at once, `count` calls each; the calls per second of all of them.
fn http_rate(url: &str, threads: usize, count: usize) -> f64 {
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let url = url.to_owned();
            std::thread::spawn(move || http_loop(&url, count))
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    (threads * count) as f64 / started.elapsed().as_secs_f64()
}

fn median(runs: usize, mut measure: impl FnMut() -> f64) -> f64 {
    let mut samples: Vec<f64> = (0..runs).map(|_| measure()).collect();
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    samples[runs / 2]
}

fn rate(count: usize, took: Duration) -> f64 {
    count as f64 / took.as_secs_f64()
}

fn main() {
    let new = example("tool_server");
    let old = example("handrolled_tool_server");
    let sequential = ((20_000.0 * scale()) as usize).max(200);
    let pipelined = ((100_000.0 * scale()) as usize).max(1000);
    stdio_loop(&new, 500, 1, false);
    stdio_loop(&old, 500, 1, false);
    println!(
        "MCP server calls per second: toolwire::server beside its baselines (median of 3 runs, {} CPUs)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "| transport, load | baseline | calls/s baseline | calls/s toolwire::server | ratio |"
    );
    println!("|---|---|---|---|---|");
    for (label, count, window, tool) in [
        ("stdio, `echo` method, one at a time", sequential, 1, false),
        (
            "stdio, `tools/call echo`, one at a time",
            sequential,
            1,
            true,
        ),
        (
            "stdio, `echo` method, 64 in flight",
            pipelined,
            WINDOW,
            false,
        ),
        (
            "stdio, `tools/call echo`, 64 in flight",
            pipelined,
            WINDOW,
            true,
        ),
    ] {
        let base = median(3, || rate(count, stdio_loop(&old, count, window, tool)));
        let ours = median(3, || rate(count, stdio_loop(&new, count, window, tool)));
        println!(
            "| {label} | hand-rolled tool_server | {base:.0} | {ours:.0} | {:.2}× |",
            ours / base
        );
    }

    let server = Server::new(ServerConfig::new("bench", "1")).unwrap();
    server
        .add_tool(
            LocalTool::with_context("echo", "Echoes.", json!({"type": "object"}), |_, args| {
                Ok(CallToolResult::from_text(
                    args["message"].as_str().unwrap_or_default(),
                ))
            })
            .inline(true),
        )
        .unwrap();
    let http = HttpServer::bind(&server, HttpServerConfig::new()).unwrap();
    let (raw_url, _raw) = raw_responder();
    let calls = ((5_000.0 * scale()) as usize).max(100);
    http_loop(&http.url(), 200);
    http_loop(&raw_url, 200);
    for threads in [1, 4] {
        let base = median(3, || http_rate(&raw_url, threads, calls));
        let ours = median(3, || http_rate(&http.url(), threads, calls));
        println!(
            "| HTTP, 2026-07-28 `tools/call`, {threads} keep-alive connection(s) | raw HTTP responder | {base:.0} | {ours:.0} | {:.2}× |",
            ours / base
        );
    }
    http.close().unwrap();
}
