//! How the costs grow with the scale of the work (issue #29, item 4): each table gives a
//! figure at several sizes and its growth factor against the smallest size in the same run,
//! so linear growth reads as a factor equal to the size's.
//!
//! - `list`: a listing of 100, 1,000 and 10,000 tools. The server side (a `toolwire::server`
//!   stdio server with N tools answering `tools/list` page by page to a raw pipe loop: its
//!   start, resident set, wall and CPU time per whole listing); the client side
//!   (`McpClient::refresh_tools` following every page: wall and CPU time, bytes allocated,
//!   bytes kept); the gateway (`Gateway::start` over one backend of N tools, then its front
//!   listing all pages to a raw pipe loop: time to ready, resident set, heap kept, CPU).
//! - `sessions`: `HttpServer` with handshake-era sessions, 0, 100 and 1,000 sessions opened
//!   over one kept-alive connection and left idle: the server process's resident set, heap,
//!   threads, and CPU over an idle interval; then 200 idle sockets at once (threads are per
//!   connection, bounded by `max_connections`).
//! - `backends`: a gateway of 1, 5 and 20 stdio backends: time from spawning it to its first
//!   `tools/list` answer, its resident set and threads, sequential µs per call to one
//!   backend and the gateway's CPU per call.
//! - `result`: a tool result of 16 B, 64 KiB, 1 MiB and 8 MiB, through a raw pipe loop
//!   straight to the server, through `McpClient`, and through the gateway: µs per call, MB/s,
//!   and bytes allocated per call in the measured process as a multiple of the result's size
//!   (copies). 16 MiB is over the default line bound (16 MiB a message, envelope included):
//!   the last line shows what a caller gets (the oversized line is dropped; the call waits
//!   for its deadline, 5 s here).
//!
//! Every server is a child process running this same binary (`--child …`), so its resident
//! set, threads and CPU (`/proc/PID/task/*/schedstat`) are its own; a child reports its heap
//! counts (a counting global allocator) on a loopback port it names on stderr.
//!
//! ```text
//! cargo bench --bench scale --features gateway          # under a minute on 2 cores
//! cargo bench --bench scale --features gateway -- list  # only the tables whose name has `list`
//! TOOLWIRE_BENCH_SCALE=0.2 cargo bench --bench scale --features gateway  # fewer repetitions
//! ```
//!
//! `TOOLWIRE_BENCH_SCALE` scales repetitions and idle intervals, never the sizes, which are the
//! point.

#[path = "support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{allocated, cpu_ns, load_average, proc_status, scale, scaled, Allocated};
use toolwire::config::LoadOptions;
use toolwire::gateway::{Gateway, GatewayConfig, Policy};
use toolwire::harness::{LocalTool, Overflow, ResultLimit, ToolOptions};
use toolwire::server::{CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig};
use toolwire::{McpClient, McpConfig, ProtocolMode, ServerConfigs, StdioConfig};

#[global_allocator]
static GLOBAL: support::Counting = support::Counting;

// ---- children ----

/// Answers each connection on a loopback port with this process's heap counts, and names
/// the port on stderr (`STATS PORT`), first thing.
fn serve_stats() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("stats port");
    eprintln!("STATS {}", listener.local_addr().expect("addr").port());
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let now = allocated();
            let mut stream = stream;
            let _ = writeln!(stream, "{} {} {}", now.count, now.bytes, now.live);
        }
    });
}

/// The stdio server of `n` tools: `echo`, `big {bytes}` (a text result of that many bytes)
/// and `n − 2` small tools with a one-property schema.
fn child_tools(n: usize) {
    let server = Server::new(ServerConfig::new("scale", "1.0")).expect("server");
    server
        .add_tool(
            LocalTool::with_context(
                "echo",
                "Returns the message.",
                json!({"type": "object", "properties": {"message": {"type": "string"}}}),
                |_, args| {
                    Ok(CallToolResult::from_text(
                        args["message"].as_str().unwrap_or_default(),
                    ))
                },
            )
            .inline(true),
        )
        .expect("echo");
    server
        .add_tool(
            LocalTool::with_context(
                "big",
                "Returns a text of `bytes` bytes.",
                json!({"type": "object", "properties": {"bytes": {"type": "integer"}}}),
                |_, args| {
                    let bytes = args["bytes"].as_u64().unwrap_or(0) as usize;
                    Ok(CallToolResult::from_text("x".repeat(bytes)))
                },
            )
            // A `LocalTool`'s results are cut at 16,384 characters by default; this one's
            // may have the most (16 Mi), as `ServerTool`'s may.
            .options(
                ToolOptions::new()
                    .result_limit(ResultLimit::new(16 * 1024 * 1024, Overflow::Truncate)),
            )
            .inline(true),
        )
        .expect("big");
    for index in 0..n.saturating_sub(2) {
        server
            .add_tool(LocalTool::new(
                format!("tool_{index:05}"),
                format!("Tool number {index}, one of many listed to measure a long listing."),
                json!({"type": "object", "properties": {"q": {"type": "string", "description": "a query"}}}),
                |_, _| Ok(None),
            ))
            .expect("tool");
    }
    server.serve_stdio().expect("serve");
}

/// A gateway (`Gateway::start`, then serving stdio) over the config file `path`; its policy
/// passes results of up to 16 Mi characters (the default cuts them at 16,384).
fn child_gateway(path: &str) {
    let text = std::fs::read_to_string(path).expect("config");
    let configs = ServerConfigs::parse(&text, &LoadOptions::new()).expect("config");
    let policy = Policy::parse(r#"{"calls_per_caller": 1000000, "result_chars": 16777216}"#)
        .expect("policy");
    let gateway = Gateway::start(&configs, policy, GatewayConfig::new()).expect("gateway");
    assert!(gateway.report().failed.is_empty(), "{:?}", gateway.report());
    gateway.serve_stdio().expect("serve");
    gateway.close();
}

/// An HTTP server with sessions (at most `sessions`), an `echo` tool; prints `URL …` and
/// serves until stdin ends.
fn child_http(sessions: usize) {
    let server = Server::new(ServerConfig::new("scale", "1.0")).expect("server");
    server
        .add_tool(LocalTool::new(
            "echo",
            "Returns its arguments.",
            json!({"type": "object"}),
            |args, _| Ok(Some(args.clone())),
        ))
        .expect("echo");
    let http =
        HttpServer::bind(&server, HttpServerConfig::new().max_sessions(sessions)).expect("bind");
    println!("URL {}", http.local_addr());
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
    http.close().expect("close");
}

// ---- the parent's tools ----

/// This binary with `--child` and `args`, as a command line for a config file.
fn child_command(args: &[&str]) -> (PathBuf, Vec<String>) {
    let exe = std::env::current_exe().expect("bench path");
    let mut all = vec!["--child".to_owned()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    (exe, all)
}

/// A child speaking JSON lines on its stdin and stdout, driven by a raw loop (no client
/// library: what is measured is the child).
struct Lines {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stats_port: u16,
    next_id: u64,
    line: String,
}

impl Lines {
    fn spawn(args: &[&str]) -> Lines {
        let (exe, args) = child_command(args);
        let mut child = Command::new(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut first = String::new();
        stderr.read_line(&mut first).expect("stats line");
        let stats_port = first
            .trim()
            .strip_prefix("STATS ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no STATS line: {first:?}"));
        // Anything else on stderr is drained, so the child never blocks on it.
        thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Lines {
            stdin: child.stdin.take().expect("stdin"),
            stdout: BufReader::new(child.stdout.take().expect("stdout")),
            child,
            stats_port,
            next_id: 1,
            line: String::new(),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn heap(&self) -> Allocated {
        heap_of(self.stats_port)
    }

    /// Sends a request and returns the text of its response (notifications skipped).
    fn request(&mut self, method: &str, params: Value) -> &str {
        let id = self.next_id;
        self.next_id += 1;
        let mut text =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        text.push('\n');
        self.stdin.write_all(text.as_bytes()).expect("write");
        self.stdin.flush().expect("flush");
        // A response ends with its id (`{"jsonrpc":"2.0","result":…,"id":N}`).
        let wanted = format!(",\"id\":{id}}}");
        loop {
            self.line.clear();
            let read = self.stdout.read_line(&mut self.line).expect("read");
            assert!(read > 0, "the child closed its stdout");
            if self.line.trim_end().ends_with(&wanted) {
                return &self.line;
            }
        }
    }

    fn handshake(&mut self) {
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "scale", "version": "1"}}),
        );
        assert!(answer.contains("\"result\""), "{answer}");
        self.stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .expect("write");
    }

    /// Lists every tool page by page: (tools, pages, bytes of answers).
    fn list_all(&mut self) -> (usize, usize, usize) {
        let (mut tools, mut pages, mut bytes) = (0, 0, 0);
        let mut cursor = Value::Null;
        loop {
            let params = if cursor.is_null() {
                json!({})
            } else {
                json!({"cursor": cursor})
            };
            let answer = self.request("tools/list", params);
            bytes += answer.len();
            let value: Value = serde_json::from_str(answer).expect("json");
            let result = &value["result"];
            tools += result["tools"].as_array().expect("tools").len();
            pages += 1;
            cursor = result["nextCursor"].clone();
            if cursor.is_null() {
                return (tools, pages, bytes);
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> usize {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(
            answer.contains("\"result\"") && !answer.contains("\"isError\":true"),
            "{}",
            &answer[..answer.len().min(300)]
        );
        answer.len()
    }

    fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn heap_of(port: u16) -> Allocated {
    let mut text = String::new();
    TcpStream::connect(("127.0.0.1", port))
        .and_then(|mut stream| stream.read_to_string(&mut text))
        .expect("stats");
    let numbers: Vec<i64> = text
        .split_whitespace()
        .map(|n| n.parse().expect("number"))
        .collect();
    Allocated {
        count: numbers[0] as u64,
        bytes: numbers[1] as u64,
        live: numbers[2],
    }
}

fn mb(bytes: f64) -> String {
    format!("{:.1}", bytes / 1e6)
}

/// `value ÷ base`, as a growth factor.
fn factor(value: f64, base: f64) -> String {
    if base <= 0.0 {
        "–".into()
    } else {
        format!("{:.1}×", value / base)
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    samples[samples.len() / 2]
}

/// A gateway config file of `backends` stdio backends `b0`, `b1`, … each this binary serving
/// `tools` tools.
fn gateway_config(backends: usize, tools: usize) -> PathBuf {
    let (exe, _) = child_command(&[]);
    let count = tools.to_string();
    let mut servers = serde_json::Map::new();
    for index in 0..backends {
        servers.insert(
            format!("b{index}"),
            json!({"command": exe, "args": ["--child", "tools", count]}),
        );
    }
    let path = std::env::temp_dir().join(format!(
        "toolwire-bench-scale-{}-{backends}-{tools}.json",
        std::process::id()
    ));
    std::fs::write(&path, json!({"mcpServers": servers}).to_string()).expect("config");
    path
}

// ---- (a) listings ----

const TOOL_COUNTS: [usize; 3] = [100, 1_000, 10_000];

fn listings() {
    let reps = scaled(5, 3);
    println!("**listing N tools: the server** (toolwire::server over stdio, default page size 100; a raw pipe loop lists every page; median of {reps} listings)");
    println!();
    println!("| tools | pages | answer bytes | server start ms (×) | server RSS MB (×) | server heap kept MB (×) | listing ms (×) | server CPU ms per listing (×) |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut base: Option<[f64; 5]> = None;
    for n in TOOL_COUNTS {
        let started = Instant::now();
        let mut server = Lines::spawn(&["tools", &n.to_string()]);
        server.handshake();
        let start_ms = started.elapsed().as_secs_f64() * 1e3;
        let rss = proc_status(Some(server.pid()), "VmRSS") as f64 * 1024.0;
        let heap = server.heap().live as f64;
        let mut walls = Vec::new();
        let mut cpus = Vec::new();
        let mut shape = (0, 0, 0);
        for _ in 0..reps {
            let cpu = cpu_ns(Some(server.pid()));
            let at = Instant::now();
            shape = server.list_all();
            walls.push(at.elapsed().as_secs_f64() * 1e3);
            cpus.push((cpu_ns(Some(server.pid())) - cpu) as f64 / 1e6);
        }
        assert_eq!(shape.0, n, "every tool listed");
        let row = [start_ms, rss, heap, median(walls), median(cpus)];
        let b = *base.get_or_insert(row);
        println!(
            "| {n} | {} | {} | {:.1} ({}) | {} ({}) | {} ({}) | {:.2} ({}) | {:.2} ({}) |",
            shape.1,
            shape.2,
            row[0],
            factor(row[0], b[0]),
            mb(row[1]),
            factor(row[1], b[1]),
            mb(row[2]),
            factor(row[2], b[2]),
            row[3],
            factor(row[3], b[3]),
            row[4],
            factor(row[4], b[4]),
        );
        server.finish();
    }

    println!();
    println!("**listing N tools: the client** (`McpClient::refresh_tools` over stdio, every page; this process's CPU, heap counted by a global allocator; median of {reps})");
    println!();
    println!("| tools | listing ms (×) | client CPU ms (×) | bytes allocated per listing MB (×) | kept (the `Arc<Vec<Tool>>`) MB (×) |");
    println!("|---|---|---|---|---|");
    let mut base: Option<[f64; 4]> = None;
    for n in TOOL_COUNTS {
        let (exe, args) = child_command(&["tools", &n.to_string()]);
        let client = McpClient::connect_stdio(
            StdioConfig::new(exe).args(args),
            McpConfig::default().mode(ProtocolMode::Legacy),
        )
        .expect("connect");
        let mut walls = Vec::new();
        let mut cpus = Vec::new();
        let mut allocs = Vec::new();
        let mut kept = 0.0;
        for rep in 0..reps {
            let heap = allocated();
            let cpu = cpu_ns(None);
            let at = Instant::now();
            let tools = client.refresh_tools().expect("list");
            walls.push(at.elapsed().as_secs_f64() * 1e3);
            cpus.push((cpu_ns(None) - cpu) as f64 / 1e6);
            let after = allocated();
            allocs.push((after.bytes - heap.bytes) as f64);
            drop(tools);
            // The client caches the list: what stays live after the first listing is the
            // list (a later one replaces it).
            if rep == 0 {
                kept = (allocated().live - heap.live) as f64;
            }
            assert_eq!(client.list_tools().expect("cached").len(), n);
        }
        client.close().expect("close");
        let row = [median(walls), median(cpus), median(allocs), kept];
        let b = *base.get_or_insert(row);
        println!(
            "| {n} | {:.2} ({}) | {:.2} ({}) | {} ({}) | {} ({}) |",
            row[0],
            factor(row[0], b[0]),
            row[1],
            factor(row[1], b[1]),
            mb(row[2]),
            factor(row[2], b[2]),
            mb(row[3]),
            factor(row[3], b[3]),
        );
    }

    println!();
    println!("**listing N tools: the gateway** (`Gateway::start` over one stdio backend of N tools, serving stdio; a raw pipe loop lists the front's every page; median of {reps})");
    println!();
    println!("| tools | ready ms (×) | gateway RSS MB (×) | gateway heap kept MB (×) | front listing ms (×) | gateway CPU ms per listing (×) | ready ms, 2 backends of N tools each (×) |");
    println!("|---|---|---|---|---|---|---|");
    let mut base: Option<[f64; 6]> = None;
    for n in TOOL_COUNTS {
        let config = gateway_config(1, n);
        let started = Instant::now();
        let mut gateway = Lines::spawn(&["gateway", config.to_str().expect("utf-8")]);
        gateway.handshake();
        let first = gateway.request("tools/list", json!({}));
        assert!(
            first.contains("mcp__b0__"),
            "{}",
            &first[..first.len().min(300)]
        );
        let ready_ms = started.elapsed().as_secs_f64() * 1e3;
        let rss = proc_status(Some(gateway.pid()), "VmRSS") as f64 * 1024.0;
        let heap = gateway.heap().live as f64;
        let mut walls = Vec::new();
        let mut cpus = Vec::new();
        for _ in 0..reps {
            let cpu = cpu_ns(Some(gateway.pid()));
            let at = Instant::now();
            let (tools, _, _) = gateway.list_all();
            walls.push(at.elapsed().as_secs_f64() * 1e3);
            cpus.push((cpu_ns(Some(gateway.pid())) - cpu) as f64 / 1e6);
            assert_eq!(tools, n, "every tool through the gateway");
        }
        gateway.finish();
        let _ = std::fs::remove_file(&config);
        let config = gateway_config(2, n);
        let started = Instant::now();
        let mut gateway = Lines::spawn(&["gateway", config.to_str().expect("utf-8")]);
        gateway.handshake();
        let first = gateway.request("tools/list", json!({}));
        assert!(
            first.contains("mcp__b"),
            "{}",
            &first[..first.len().min(300)]
        );
        let ready_two_ms = started.elapsed().as_secs_f64() * 1e3;
        gateway.finish();
        let _ = std::fs::remove_file(&config);
        let row = [
            ready_ms,
            rss,
            heap,
            median(walls),
            median(cpus),
            ready_two_ms,
        ];
        let b = *base.get_or_insert(row);
        println!(
            "| {n} | {:.1} ({}) | {} ({}) | {} ({}) | {:.2} ({}) | {:.2} ({}) | {:.1} ({}) |",
            row[0],
            factor(row[0], b[0]),
            mb(row[1]),
            factor(row[1], b[1]),
            mb(row[2]),
            factor(row[2], b[2]),
            row[3],
            factor(row[3], b[3]),
            row[4],
            factor(row[4], b[4]),
            row[5],
            factor(row[5], b[5]),
        );
    }
}

/// A small tool for the in-process catalog measurements.
fn small_tool(index: usize) -> LocalTool {
    LocalTool::new(
        format!("tool_{index:05}"),
        "A tool.",
        json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        |_, _| Ok(None),
    )
}

/// What a gateway does when a backend's list changes: one `Server::apply` removing the N
/// tools served and adding N (in process; the median of `reps`).
fn catalog_changes() {
    let reps = scaled(5, 3);
    println!("**replacing N tools in one `Server::apply`** (what the gateway does on a backend's list change: remove every tool it served, add the new list; in process, median of {reps})");
    println!();
    println!("| tools | add N ms (×) | remove N and add N ms (×) |");
    println!("|---|---|---|");
    let mut base: Option<[f64; 2]> = None;
    for n in TOOL_COUNTS {
        let mut adds = Vec::new();
        let mut replaces = Vec::new();
        for _ in 0..reps {
            let server = Server::new(ServerConfig::new("scale", "1.0")).expect("server");
            let mut change = toolwire::server::CatalogChange::new();
            for index in 0..n {
                change = change.add_tool(small_tool(index));
            }
            let at = Instant::now();
            assert!(server.apply(change).is_empty());
            adds.push(at.elapsed().as_secs_f64() * 1e3);
            let mut change = toolwire::server::CatalogChange::new();
            for index in 0..n {
                change = change.remove_tool(format!("tool_{index:05}"));
            }
            for index in 0..n {
                change = change.add_tool(small_tool(index));
            }
            let at = Instant::now();
            assert!(server.apply(change).is_empty());
            replaces.push(at.elapsed().as_secs_f64() * 1e3);
        }
        let row = [median(adds), median(replaces)];
        let b = *base.get_or_insert(row);
        println!(
            "| {n} | {:.2} ({}) | {:.2} ({}) |",
            row[0],
            factor(row[0], b[0]),
            row[1],
            factor(row[1], b[1]),
        );
    }
}

// ---- (b) HTTP sessions ----

/// One HTTP/1.1 exchange on a kept-alive connection: the response's session id (if any),
/// status and body.
fn exchange(
    stream: &mut BufReader<TcpStream>,
    host: &str,
    session: Option<&str>,
    body: &str,
) -> (u16, Option<String>, String) {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(id) = session {
        head.push_str(&format!(
            "Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n"
        ));
    }
    head.push_str("\r\n");
    head.push_str(body);
    stream.get_mut().write_all(head.as_bytes()).expect("write");
    let mut line = String::new();
    stream.read_line(&mut line).expect("status");
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {line:?}"));
    let mut length = 0;
    let mut id = None;
    loop {
        line.clear();
        stream.read_line(&mut line).expect("header");
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').expect("header");
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().expect("length"),
            "mcp-session-id" => id = Some(value.trim().to_owned()),
            "transfer-encoding" => panic!("a chunked answer: {value}"),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body).expect("body");
    (status, id, String::from_utf8(body).expect("utf-8"))
}

/// Opens one session on `stream` (initialize, then initialized); returns its id.
fn open_session(stream: &mut BufReader<TcpStream>, host: &str) -> String {
    let (status, id, body) = exchange(
        stream,
        host,
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"scale","version":"1"}}}"#,
    );
    assert_eq!(status, 200, "{body}");
    let id = id.expect("a session id");
    let (status, _, body) = exchange(
        stream,
        host,
        Some(&id),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(status, 202, "{body}");
    id
}

fn sessions() {
    const MOST: usize = 1_000;
    let idle = Duration::from_secs_f64((3.0 * scale()).max(1.0));
    let (exe, args) = child_command(&["http", &(MOST + 16).to_string()]);
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut first = String::new();
    stderr.read_line(&mut first).expect("stats");
    let stats_port: u16 = first.trim()["STATS ".len()..].parse().expect("port");
    thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut url = String::new();
    out.read_line(&mut url).expect("url");
    let host = url.trim().strip_prefix("URL ").expect("URL").to_owned();
    let mut stream = BufReader::new(TcpStream::connect(&host).expect("connect"));
    stream.get_ref().set_nodelay(true).expect("nodelay");
    // One request first, so the connection's thread and the pool exist in every row.
    let mut ids = vec![open_session(&mut stream, &host)];

    println!("**{MOST} idle HTTP sessions** (`HttpServer`, handshake-era sessions over one kept-alive connection, `max_sessions` {}; the server process's figures; CPU over {:.1} s idle)", MOST + 16, idle.as_secs_f64());
    println!();
    println!("| sessions | µs per session opened (×) | RSS MB | RSS growth per session KB | heap live MB | heap per session KB | threads | CPU µs per idle second | CPU per idle session per second |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut open = 1;
    let mut base: Option<(f64, f64, i64)> = None;
    for target in [1, 100, MOST] {
        let at = Instant::now();
        for _ in open..target {
            ids.push(open_session(&mut stream, &host));
        }
        let per_open = if target > open {
            at.elapsed().as_secs_f64() * 1e6 / (target - open) as f64
        } else {
            0.0
        };
        open = target;
        thread::sleep(Duration::from_millis(200));
        let rss = proc_status(Some(pid), "VmRSS") as f64 * 1024.0;
        let threads = proc_status(Some(pid), "Threads");
        let heap = heap_of(stats_port).live;
        let cpu = cpu_ns(Some(pid));
        thread::sleep(idle);
        let idle_cpu_us = (cpu_ns(Some(pid)) - cpu) as f64 / 1e3 / idle.as_secs_f64();
        let (base_rss, base_open, base_heap) = *base.get_or_insert((rss, per_open, heap));
        let extra = (target - 1).max(1) as f64;
        println!(
            "| {target} | {} | {} | {} | {} | {} | {threads} | {idle_cpu_us:.0} | {} |",
            if per_open > 0.0 {
                format!(
                    "{per_open:.0} ({})",
                    factor(per_open, if base_open > 0.0 { base_open } else { per_open })
                )
            } else {
                "–".into()
            },
            mb(rss),
            if target > 1 {
                format!("{:.1}", (rss - base_rss) / extra / 1e3)
            } else {
                "–".into()
            },
            mb(heap as f64),
            if target > 1 {
                format!("{:.1}", (heap - base_heap) as f64 / extra / 1e3)
            } else {
                "–".into()
            },
            if target > 1 {
                format!("{:.2} µs", idle_cpu_us / target as f64)
            } else {
                "–".into()
            },
        );
    }
    // Each session makes one call answered with JSON of about 16 KiB, then idles.
    let message = "m".repeat(8 * 1024);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"message": message}}})
    .to_string();
    let heap_before = heap_of(stats_port).live;
    let rss_before = proc_status(Some(pid), "VmRSS") as f64 * 1024.0;
    let mut answer_bytes = 0;
    for id in &ids {
        let (status, _, body) = exchange(&mut stream, &host, Some(id), &call);
        assert_eq!(status, 200, "{}", &body[..body.len().min(200)]);
        answer_bytes = body.len();
    }
    thread::sleep(Duration::from_millis(200));
    let heap_after = heap_of(stats_port).live;
    let rss_after = proc_status(Some(pid), "VmRSS") as f64 * 1024.0;
    println!();
    println!(
        "Then one `tools/call` in each of the {} sessions, answered as JSON ({answer_bytes} bytes), the sessions idle again: heap {} → {} MB ({:.1} KB more per session), RSS {} → {} MB (a session's replay buffer holds what a client could resume, `replay_buffer`: 256 events or 1 MiB a session by default; an answer sent as JSON is not kept).",
        ids.len(),
        mb(heap_before as f64),
        mb(heap_after as f64),
        (heap_after - heap_before) as f64 / ids.len() as f64 / 1e3,
        mb(rss_before),
        mb(rss_after),
    );
    drop(stream);

    // Idle sockets: each is a thread until it is closed to make room or times out.
    let sockets: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(&host).expect("connect"))
        .collect();
    thread::sleep(Duration::from_millis(300));
    let threads = proc_status(Some(pid), "Threads");
    let rss = proc_status(Some(pid), "VmRSS") as f64 * 1024.0;
    println!();
    println!(
        "200 idle sockets at once (no request): the server has {threads} threads, RSS {} MB (`max_connections` defaults to 64; a thread per connection, the idlest closed to make room).",
        mb(rss)
    );
    drop(sockets);
    drop(child.stdin.take());
    let _ = child.wait();
}

// ---- (c) many backends ----

fn backends() {
    const COUNTS: [usize; 3] = [1, 5, 20];
    const ROUNDS: usize = 3;
    let calls = scaled(1_000, 100);
    println!("**a gateway of N stdio backends** (each backend this binary serving 10 tools; `Gateway::start`, then stdio; ready = spawn to the first `tools/list` answer; per call: {calls} sequential calls of `echo` on backend b0 from a raw pipe loop, the gateways taking turns, median of {ROUNDS} rounds)");
    println!();
    println!("| backends | ready ms (×) | gateway RSS MB (×) | gateway threads | µs per call (×) | gateway CPU µs per call (×) |");
    println!("|---|---|---|---|---|---|");
    let arguments = json!({"message": "m"});
    let mut gateways = Vec::new();
    for count in COUNTS {
        let config = gateway_config(count, 10);
        let started = Instant::now();
        let mut gateway = Lines::spawn(&["gateway", config.to_str().expect("utf-8")]);
        gateway.handshake();
        let first = gateway.request("tools/list", json!({})).to_owned();
        let ready_ms = started.elapsed().as_secs_f64() * 1e3;
        let _ = std::fs::remove_file(&config);
        let listed = serde_json::from_str::<Value>(&first).expect("json")["result"]["tools"]
            .as_array()
            .map_or(0, Vec::len);
        assert_eq!(listed, (count * 10).min(100), "every backend listed");
        let rss = proc_status(Some(gateway.pid()), "VmRSS") as f64 * 1024.0;
        let threads = proc_status(Some(gateway.pid()), "Threads");
        for _ in 0..calls / 10 {
            gateway.call("mcp__b0__echo", arguments.clone());
        }
        gateways.push((
            count,
            gateway,
            ready_ms,
            rss,
            threads,
            Vec::new(),
            Vec::new(),
        ));
    }
    for _ in 0..ROUNDS {
        for (_, gateway, _, _, _, times, cpus) in gateways.iter_mut() {
            let cpu = cpu_ns(Some(gateway.pid()));
            let at = Instant::now();
            for _ in 0..calls {
                gateway.call("mcp__b0__echo", arguments.clone());
            }
            times.push(at.elapsed().as_secs_f64() * 1e6 / calls as f64);
            cpus.push((cpu_ns(Some(gateway.pid())) - cpu) as f64 / 1e3 / calls as f64);
        }
    }
    let mut base: Option<[f64; 4]> = None;
    for (count, gateway, ready_ms, rss, threads, times, cpus) in gateways {
        gateway.finish();
        let row = [ready_ms, rss, median(times), median(cpus)];
        let b = *base.get_or_insert(row);
        println!(
            "| {count} | {:.0} ({}) | {} ({}) | {threads} | {:.1} ({}) | {:.1} ({}) |",
            row[0],
            factor(row[0], b[0]),
            mb(row[1]),
            factor(row[1], b[1]),
            row[2],
            factor(row[2], b[2]),
            row[3],
            factor(row[3], b[3]),
        );
    }
}

// ---- (d) big results ----

const RESULT_SIZES: [usize; 4] = [16, 64 * 1024, 1024 * 1024, 8 * 1024 * 1024];

fn size_label(bytes: usize) -> String {
    match bytes {
        b if b >= 1024 * 1024 => format!("{} MiB", b / (1024 * 1024)),
        b if b >= 1024 => format!("{} KiB", b / 1024),
        b => format!("{b} B"),
    }
}

/// Calls for `bytes`: fewer for bigger results (about 128 MiB each size at scale 1).
fn calls_for(bytes: usize) -> usize {
    ((128 * 1024 * 1024 / bytes.max(1)) as f64 * scale()).clamp(4.0, scaled(2_000, 100) as f64)
        as usize
}

/// One row: µs per call, MB/s of result text, and the measured process's bytes allocated per
/// call (and CPU µs per call when it is a child).
struct ResultRow {
    us: f64,
    allocated: f64,
    cpu_us: f64,
}

fn raw_path(lines: &mut Lines, tool: &str, bytes: usize) -> ResultRow {
    let calls = calls_for(bytes);
    let arguments = json!({"bytes": bytes});
    for _ in 0..(calls / 10).max(1) {
        lines.call(tool, arguments.clone());
    }
    let heap = lines.heap();
    let cpu = cpu_ns(Some(lines.pid()));
    let at = Instant::now();
    for _ in 0..calls {
        let answer = lines.call(tool, arguments.clone());
        assert!(answer > bytes, "the whole result came");
    }
    let us = at.elapsed().as_secs_f64() * 1e6 / calls as f64;
    let cpu_us = (cpu_ns(Some(lines.pid())) - cpu) as f64 / 1e3 / calls as f64;
    let after = lines.heap();
    ResultRow {
        us,
        allocated: (after.bytes - heap.bytes) as f64 / calls as f64,
        cpu_us,
    }
}

fn client_path(client: &McpClient, bytes: usize) -> ResultRow {
    let calls = calls_for(bytes);
    let arguments = json!({"bytes": bytes});
    for _ in 0..(calls / 10).max(1) {
        client.call_tool("big", &arguments).expect("call");
    }
    let heap = allocated();
    let cpu = cpu_ns(None);
    let at = Instant::now();
    for _ in 0..calls {
        let result = client.call_tool("big", &arguments).expect("call");
        assert!(!result.is_error);
    }
    let us = at.elapsed().as_secs_f64() * 1e6 / calls as f64;
    let cpu_us = (cpu_ns(None) - cpu) as f64 / 1e3 / calls as f64;
    let after = allocated();
    ResultRow {
        us,
        allocated: (after.bytes - heap.bytes) as f64 / calls as f64,
        cpu_us,
    }
}

fn results() {
    let mut server = Lines::spawn(&["tools", "2"]);
    server.handshake();
    let (exe, args) = child_command(&["tools", "2"]);
    let client = McpClient::connect_stdio(
        StdioConfig::new(exe).args(args),
        McpConfig::default().mode(ProtocolMode::Legacy),
    )
    .expect("connect");
    let config = gateway_config(1, 2);
    let mut gateway = Lines::spawn(&["gateway", config.to_str().expect("utf-8")]);
    gateway.handshake();

    println!("**a big tool result** (`big {{bytes}}` returns a text of that size; µs per call (× the 16 B call), result MB/s, and bytes allocated per call by the measured process ÷ the result's size: the copies; the server's count includes the tool building its text once)");
    println!();
    println!("| result | path | calls | µs per call (×) | MB/s | CPU µs per call (measured process) | allocated per call | copies (allocated ÷ size) |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut base = [0.0f64; 3];
    for bytes in RESULT_SIZES {
        let rows = [
            (
                "server (raw pipe loop → toolwire::server)",
                raw_path(&mut server, "big", bytes),
            ),
            (
                "client (McpClient → toolwire::server)",
                client_path(&client, bytes),
            ),
            (
                "gateway (raw pipe loop → gateway → toolwire::server)",
                raw_path(&mut gateway, "mcp__b0__big", bytes),
            ),
        ];
        for (index, (path, row)) in rows.iter().enumerate() {
            if bytes == RESULT_SIZES[0] {
                base[index] = row.us;
            }
            println!(
                "| {} | {path} | {} | {:.0} ({}) | {:.0} | {:.0} | {} | {} |",
                size_label(bytes),
                calls_for(bytes),
                row.us,
                factor(row.us, base[index]),
                bytes as f64 / row.us,
                row.cpu_us,
                if row.allocated >= 1e6 {
                    format!("{} MB", mb(row.allocated))
                } else {
                    format!("{:.1} KB", row.allocated / 1e3)
                },
                if bytes >= 64 * 1024 {
                    format!("{:.1}", row.allocated / bytes as f64)
                } else {
                    "–".into()
                },
            );
        }
    }
    // 16 MiB: over the default bound of a message (16 MiB a line, envelope included). The
    // call gets a 5 s deadline here (the default is 60 s) to show what happens.
    let at = Instant::now();
    let refused = client.call_tool_with(
        "big",
        json!({"bytes": 16 * 1024 * 1024}),
        toolwire::CallOptions::new().timeout(Duration::from_secs(5)),
    );
    println!();
    match refused {
        Ok(result) => println!(
            "16 MiB through McpClient: answered ({} bytes of text)",
            result.text().len()
        ),
        Err(error) => println!(
            "16 MiB through McpClient (a 5 s deadline): after {:.1} s: {error}",
            at.elapsed().as_secs_f64()
        ),
    }
    let _ = client.close();
    server.finish();
    gateway.finish();
    let _ = std::fs::remove_file(&config);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|arg| arg == "--child") {
        serve_stats();
        match args[at + 1].as_str() {
            "tools" => child_tools(args[at + 2].parse().expect("N")),
            "gateway" => child_gateway(&args[at + 2]),
            "http" => child_http(args[at + 2].parse().expect("sessions")),
            other => panic!("unknown child {other}"),
        }
        return;
    }
    // `cargo bench` passes `--bench`; any other argument filters the tables by name.
    let filter: Vec<&String> = args[1..].iter().filter(|a| !a.starts_with("--")).collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "Scale of work: costs at growing sizes, growth factors against the smallest ({cpus} CPUs, TOOLWIRE_BENCH_SCALE={}, load average at start {})",
        scale(),
        load_average()
    );
    let tables: [(&str, fn()); 5] = [
        ("list", listings),
        ("catalog", catalog_changes),
        ("sessions", sessions),
        ("backends", backends),
        ("result", results),
    ];
    for (name, table) in tables {
        if wanted(name) {
            println!();
            table();
        }
    }
    println!();
    println!("load average at the end: {}", load_average());
}
