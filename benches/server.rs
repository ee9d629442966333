//! The MCP server's calls per second beside baselines in the same run: over stdio,
//! `examples/tool_server.rs` (on `toolwire::server`) beside `examples/handrolled_tool_server.rs`
//! (the std-and-serde_json server it replaced), driven by the same raw pipe loop; over HTTP,
//! `HttpServer` beside a minimal raw HTTP responder (one thread per connection, a fixed JSON
//! answer), driven by the same raw keep-alive POST loop. Prints a table of ratios: calls per
//! second, and the server's CPU time per call (over stdio the server process's, from
//! `getrusage(RUSAGE_CHILDREN)`; over HTTP this process's less the load threads' own). The
//! baseline and toolwire alternate within each of five rounds; each ratio is the median of
//! the rounds' ratios.
//!
//! ```text
//! cargo bench --bench server            # TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! ```
//!
//! `cargo bench --bench server -- http` (or `stdio`, or any part of a row's label) runs only
//! the rows whose label has it. `TOOLWIRE_BENCH_TOOL_SERVER=PATH` measures that build of `examples/tool_server.rs` (one
//! with `--pooled`, from another revision) over stdio instead of building this one.

#[path = "support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{cpu_time, scale, thread_cpu};
use toolwire::harness::LocalTool;
use toolwire::server::{CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig};

const WINDOW: usize = 64;

/// The release build of the example `name`, built now; `TOOLWIRE_BENCH_TOOL_SERVER` names
/// another build of `tool_server` to measure instead (an earlier revision's, say).
fn example(name: &str) -> PathBuf {
    if name == "tool_server" {
        if let Some(path) = std::env::var_os("TOOLWIRE_BENCH_TOOL_SERVER") {
            return PathBuf::from(path);
        }
    }
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

/// Calls per second and the server's CPU µs per call of one run.
#[derive(Clone, Copy)]
struct Run {
    rate: f64,
    cpu_us: f64,
}

/// One thread keeps `window` requests in the server's stdin, writing one for each answer;
/// the server process's CPU time counts from its start to its exit.
fn stdio_loop(server: &(PathBuf, &[&str]), count: usize, window: usize, tool: bool) -> Run {
    let cpu_before = cpu_time(libc::RUSAGE_CHILDREN);
    let mut child = Command::new(&server.0)
        .args(server.1)
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
    let cpu = cpu_time(libc::RUSAGE_CHILDREN) - cpu_before;
    Run {
        rate: count as f64 / elapsed.as_secs_f64(),
        cpu_us: cpu.as_secs_f64() * 1e6 / count as f64,
    }
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

/// One keep-alive connection posting `count` 2026-07-28 calls of `tool` in a row; the time
/// it took and the CPU time this thread spent.
fn http_loop(url: &str, tool: &str, count: usize) -> (Duration, Duration) {
    let cpu_before = thread_cpu();
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
            "params": {"name": tool, "arguments": {"message": "m"},
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\nContent-Length: {}\r\n\r\n{body}",
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
    (started.elapsed(), thread_cpu() - cpu_before)
}

/// `threads` connections at once, `count` calls of `tool` each: the calls per second of all
/// of them, and the CPU time per call of this process less the load threads' own (the
/// server's, since nothing else runs).
fn http_rate(url: &str, tool: &str, threads: usize, count: usize) -> Run {
    let cpu_before = cpu_time(libc::RUSAGE_SELF);
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let url = url.to_owned();
            let tool = tool.to_owned();
            std::thread::spawn(move || http_loop(&url, &tool, count))
        })
        .collect();
    let mut load_cpu = Duration::ZERO;
    for worker in workers {
        load_cpu += worker.join().unwrap().1;
    }
    let elapsed = started.elapsed();
    let cpu = cpu_time(libc::RUSAGE_SELF).saturating_sub(cpu_before + load_cpu);
    let calls = (threads * count) as f64;
    Run {
        rate: calls / elapsed.as_secs_f64(),
        cpu_us: cpu.as_secs_f64() * 1e6 / calls,
    }
}

const ROUNDS: usize = 5;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    samples[samples.len() / 2]
}

/// `ROUNDS` rounds, each running the baseline then toolwire: the medians of each one's
/// rate and CPU per call, and of the rounds' ratios (toolwire / baseline).
fn interleaved(mut base: impl FnMut() -> Run, mut ours: impl FnMut() -> Run) -> [f64; 6] {
    let runs: Vec<(Run, Run)> = (0..ROUNDS).map(|_| (base(), ours())).collect();
    let pick = |f: &dyn Fn(&(Run, Run)) -> f64| median(runs.iter().map(f).collect());
    [
        pick(&|(b, _)| b.rate),
        pick(&|(_, o)| o.rate),
        pick(&|(b, o)| o.rate / b.rate),
        pick(&|(b, _)| b.cpu_us),
        pick(&|(_, o)| o.cpu_us),
        pick(&|(b, o)| o.cpu_us / b.cpu_us),
    ]
}

fn row(label: &str, baseline: &str, figures: [f64; 6]) {
    let [base, ours, ratio, base_cpu, ours_cpu, cpu_ratio] = figures;
    println!(
        "| {label} | {baseline} | {base:.0} | {ours:.0} | {ratio:.2}× | {base_cpu:.1} | {ours_cpu:.1} | {cpu_ratio:.2}× |"
    );
}

fn main() {
    // `cargo bench --bench server -- http` (or `stdio`): only the rows whose label has it.
    let filter = std::env::args()
        .skip(1)
        .find(|arg| !arg.starts_with("--"))
        .unwrap_or_default()
        .to_lowercase();
    let wanted = |label: &str| label.to_lowercase().contains(&filter);
    let handrolled = (example("handrolled_tool_server"), &[][..]);
    let inline = (example("tool_server"), &[][..]);
    let pooled = (inline.0.clone(), &["--pooled"][..]);
    let sequential = ((20_000.0 * scale()) as usize).max(200);
    let pipelined = ((100_000.0 * scale()) as usize).max(1000);
    stdio_loop(&inline, 500, 1, false);
    stdio_loop(&handrolled, 500, 1, false);
    println!(
        "MCP server calls per second and server CPU µs per call: toolwire::server beside its \
         baselines (medians of {ROUNDS} interleaved rounds, {} CPUs)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "| transport, load | baseline | calls/s baseline | calls/s toolwire::server | ratio | \
         CPU µs/call baseline | CPU µs/call toolwire::server | CPU ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (label, server, count, window, tool) in [
        ("`echo` method", &inline, sequential, 1, false),
        ("`tools/call echo` (inline)", &inline, sequential, 1, true),
        (
            "`tools/call echo` (worker pool)",
            &pooled,
            sequential,
            1,
            true,
        ),
        ("`echo` method", &inline, pipelined, WINDOW, false),
        (
            "`tools/call echo` (inline)",
            &inline,
            pipelined,
            WINDOW,
            true,
        ),
        (
            "`tools/call echo` (worker pool)",
            &pooled,
            pipelined,
            WINDOW,
            true,
        ),
    ] {
        let load = if window == 1 {
            "one at a time".to_owned()
        } else {
            format!("{window} in flight")
        };
        let label = format!("stdio, {label}, {load}");
        if !wanted(&label) {
            continue;
        }
        let figures = interleaved(
            || stdio_loop(&handrolled, count, window, tool),
            || stdio_loop(server, count, window, tool),
        );
        row(&label, "hand-rolled tool_server", figures);
    }

    let server = Server::new(ServerConfig::new("bench", "1").workers(WINDOW)).unwrap();
    let echo = |name: &str| {
        LocalTool::with_context(name, "Echoes.", json!({"type": "object"}), |_, args| {
            Ok(CallToolResult::from_text(
                args["message"].as_str().unwrap_or_default(),
            ))
        })
    };
    server.add_tool(echo("echo")).unwrap();
    server.add_tool(echo("echo_inline").inline(true)).unwrap();
    let config = HttpServerConfig::new()
        .max_connections(2 * WINDOW)
        .max_connections_per_address(2 * WINDOW);
    let http = HttpServer::bind(&server, config).unwrap();
    let (raw_url, _raw) = raw_responder();
    let calls = ((5_000.0 * scale()) as usize).max(100);
    http_loop(&http.url(), "echo", 200);
    http_loop(&raw_url, "echo", 200);
    for (tool, label) in [("echo_inline", "inline"), ("echo", "worker pool")] {
        for threads in [1, 4, WINDOW] {
            let label = format!(
                "HTTP, 2026-07-28 `tools/call` ({label}), {threads} keep-alive connection(s)"
            );
            if !wanted(&label) {
                continue;
            }
            // The same number of calls in all: fewer per connection when there are more.
            let each = (calls * 4 / threads).max(20);
            let figures = interleaved(
                || http_rate(&raw_url, tool, threads, each),
                || http_rate(&http.url(), tool, threads, each),
            );
            row(&label, "raw HTTP responder", figures);
        }
    }
    http.close().unwrap();
}
