//! The hand-rolled stdio server that `examples/tool_server.rs` replaced, kept unchanged (but
//! for this paragraph) as the baseline of `benches/server.rs`: the same methods and tools,
//! written on `std` and `serde_json` alone, answering cheap methods inline on its reading
//! thread and slow ones on a thread each. Nothing else uses it; `tool_server` is now built on
//! `toolwire::server`.
//!
//! It depends only on `std` and `serde_json`, so it exercises the client from the outside, the
//! way a real tool server would.
//!
//! # Usage
//!
//! ```text
//! cargo run --example handrolled_tool_server -- [--ignore-eof] [--banner] [--hostile]
//! ```
//!
//! * `--ignore-eof` keeps the process running (sleeping forever) after stdin reaches end of file.
//! * `--banner` writes the non-JSON line `tool_server ready` to stdout at start.
//! * `--hostile` adds the tool `hostile` (see below), whose texts carry terminal escape
//!   sequences, for the tests of what the `toolwire` command prints.
//!
//! Any other argument prints the usage on stderr and exits with code 2.
//!
//! # Wire format
//!
//! One compact JSON message per line of UTF-8 in both directions; stdout is flushed after every
//! line and stderr carries free-form logging. A line that is not JSON gets no reply (only a note
//! on stderr). An object with `method` and `id` is a request: an unknown method gets error
//! -32601 `Method not found: X` and bad params get -32602 saying what is wrong. An object with
//! `method` and no `id` is a notification and is never answered. An object with `id` and
//! `result` or `error` but no `method` is the client's response to an `ask_client` request.
//!
//! Cheap methods are answered inline by the reading thread; `sleep`, `ask_client` and
//! `tools/call` of `sleep` each get a thread of their own so other requests keep flowing. At end
//! of stdin the server lets replies already computed be written, then exits with code 0; it
//! does not wait for `hang` or for a `sleep` still running.
//!
//! # Methods
//!
//! * `echo` (any params): the result is the params value itself, or null when absent.
//! * `add {a, b}`: `a + b`, an integer when both are 64-bit integers, otherwise a float.
//! * `sleep {ms, progress?}`: sleeps `ms` milliseconds and answers `{"slept_ms": ms}`. When the
//!   params hold `_meta.progressToken` (a string or an integer), it sends `progress` (default 5)
//!   `notifications/progress` notifications evenly spaced over the sleep. A cancellation of the
//!   request is recorded but does not stop it: the answer still comes at the end.
//! * `hang`: never answered.
//! * `crash {code?}`: writes `tool_server: crashing with code N` to stderr and exits at once with
//!   that code (default 3), without answering.
//! * `stderr_flood {bytes}`: writes `bytes` bytes to stderr in 100-byte lines of `e`, the last
//!   line being `END-OF-FLOOD`, then answers `{"written": n}`. When `bytes` is smaller than the
//!   marker line, the marker alone is written and `n` is its length.
//! * `garbage`: writes the line `this is not json` to stdout, then answers `{"ok": true}`.
//! * `huge_line {bytes}`: writes one stdout line of `bytes` `x` characters (in 64 KiB chunks),
//!   then answers `{"ok": true}`.
//! * `reply_unknown`: writes a response for an id nobody asked for (`"no-such-id-N"`), then
//!   answers `{"ok": true}`.
//! * `cancellations`: `{"cancelled": [...], "reasons": [...]}`, the `requestId` and `reason`
//!   (null when absent) of every `notifications/cancelled` received so far, in order.
//! * `env {name}`: the value of that environment variable as a string, or null when unset.
//! * `cwd`: the current directory as a string.
//! * `pid`: the process id as an integer.
//! * `notify_client {method, params?}`: sends that notification to the client, then answers
//!   `{"ok": true}`.
//! * `ask_client {method, params?}`: sends a request with id `"srv-N"` to the client, waits for
//!   its response and answers `{"result": ...}` or `{"error": ...}` with what the client sent.
//!   Without a response within 10 seconds it answers error -32000 `client did not answer`.
//! * `ping`: `{}`.
//!
//! # MCP subset
//!
//! * `initialize`: echoes the client's `protocolVersion` when it is one this server knows
//!   (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25), otherwise offers 2025-11-25, and
//!   declares the `tools` (with `listChanged`) and `logging` capabilities.
//! * `notifications/initialized` is ignored; `server/discover` is an unknown method (-32601).
//! * `tools/list`: the tools `echo`, `add`, `sleep`, `hang`, `crash`, `stderr_flood`,
//!   `garbage`, `fail` and `big_text`, with input schemas and annotations.
//! * `tools/call {name, arguments, _meta?}`: runs a tool and answers an MCP `CallToolResult`.
//!   `fail`, an unknown tool name and bad arguments give a result with `isError: true` rather
//!   than a JSON-RPC error, as official servers do. `sleep` takes its progress token from the
//!   `_meta` of the `tools/call` params.
//! * With `--hostile` only, the tool `hostile {as?}`, listed last: its description, and
//!   everything calling it produces, carry [`HOSTILE`] (clear-screen, a window-title OSC ended
//!   by BEL, and a one-byte C1 CSI). A call sends a `notifications/message` warning and, with
//!   a progress token, one progress notification, both with that text; writes it to stderr;
//!   then answers it as a text result (`as` absent or `"text"`), as a result with `isError`
//!   (`"error"`), or as JSON-RPC error -32000 (`"rpc_error"`).

use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

/// The protocol versions `initialize` accepts from the client.
const KNOWN_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The version offered when the client asks for one this server does not know.
const LATEST_VERSION: &str = "2025-11-25";
/// How long `ask_client` waits for the client's response.
const ASK_TIMEOUT: Duration = Duration::from_secs(10);
/// The non-JSON line written by `garbage`.
const JUNK_LINE: &str = "this is not json";
/// The text of the `hostile` tool: clear the screen, set the window title (an OSC ended by
/// BEL), and a red colour through the one-byte C1 CSI.
const HOSTILE: &str = "\u{1b}[2J\u{1b}]0;pwned\u{7} and \u{9b}31m";
/// The last line written by `stderr_flood`.
const FLOOD_END: &[u8] = b"END-OF-FLOOD\n";
/// The size of the pieces `huge_line` writes.
const CHUNK: usize = 64 * 1024;

/// What a method produces for its request.
enum Reply {
    /// A successful result.
    Result(Value),
    /// A JSON-RPC error with its code and message.
    Error(i64, String),
    /// No answer at all (used by `hang`).
    Silent,
}

/// State shared by the reading thread and the worker threads.
struct Server {
    /// Stdout; every line is written and flushed while this lock is held.
    out: Mutex<io::Stdout>,
    /// The `(requestId, reason)` pairs of every cancellation received.
    cancellations: Mutex<Vec<(Value, Value)>>,
    /// The `ask_client` calls waiting for the client's response, by request id.
    asks: Mutex<HashMap<String, mpsc::Sender<Value>>>,
    /// Numbers the server-to-client requests.
    next_ask: AtomicU64,
    /// Numbers the stray responses written by `reply_unknown`.
    next_stray: AtomicU64,
    /// How many worker replies are computed but not yet written.
    replies_in_flight: AtomicUsize,
    /// `--hostile`: the `hostile` tool is offered.
    hostile: bool,
}

/// Locks a mutex, carrying on if another thread panicked while holding it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Server {
    /// Runs `write` on stdout under the lock, then flushes. A client that has gone away ends the
    /// process quietly.
    fn with_out(&self, write: impl FnOnce(&mut io::Stdout) -> io::Result<()>) {
        let mut out = lock(&self.out);
        if let Err(e) = write(&mut out).and_then(|()| out.flush()) {
            eprintln!("tool_server: cannot write to stdout ({e}); exiting");
            std::process::exit(0);
        }
    }

    /// Writes one line of text followed by a newline.
    fn write_line(&self, text: &str) {
        let mut line = String::with_capacity(text.len() + 1);
        line.push_str(text);
        line.push('\n');
        self.with_out(|out| out.write_all(line.as_bytes()));
    }

    /// Writes one JSON message as a compact line.
    fn send(&self, msg: &Value) {
        self.write_line(&msg.to_string());
    }

    /// Writes the answer to request `id`, if there is one.
    fn answer(&self, id: Value, reply: Reply) {
        match reply {
            Reply::Result(result) => {
                self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            }
            Reply::Error(code, message) => self.send(&json!({
                "jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}
            })),
            Reply::Silent => {}
        }
    }
}

fn main() {
    let mut ignore_eof = false;
    let mut banner = false;
    let mut hostile = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--ignore-eof" => ignore_eof = true,
            "--banner" => banner = true,
            "--hostile" => hostile = true,
            _ => {
                eprintln!("tool_server: unknown argument {arg:?}");
                eprintln!("usage: tool_server [--ignore-eof] [--banner] [--hostile]");
                std::process::exit(2);
            }
        }
    }

    let server = Arc::new(Server {
        out: Mutex::new(io::stdout()),
        cancellations: Mutex::new(Vec::new()),
        asks: Mutex::new(HashMap::new()),
        next_ask: AtomicU64::new(1),
        next_stray: AtomicU64::new(1),
        replies_in_flight: AtomicUsize::new(0),
        hostile,
    });
    if banner {
        server.write_line("tool_server ready");
    }

    // Lines are read as bytes so that input that is not UTF-8 is reported rather than fatal.
    let mut input = io::stdin().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => handle_line(&server, &line),
            Err(e) => {
                eprintln!("tool_server: cannot read stdin ({e})");
                break;
            }
        }
    }

    if ignore_eof {
        eprintln!("tool_server: stdin closed; --ignore-eof given, staying up");
        loop {
            thread::sleep(Duration::from_secs(3600));
        }
    }
    // Give worker replies that are already computed a moment to be written, then take the
    // output lock so that no line is cut in half by the exit.
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.replies_in_flight.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(1));
    }
    let _out = lock(&server.out);
    std::process::exit(0);
}

/// Parses one input line and routes it as a request, a notification or a response.
fn handle_line(server: &Arc<Server>, line: &[u8]) {
    let line = line.trim_ascii();
    if line.is_empty() {
        return;
    }
    let msg: Value = match serde_json::from_slice(line) {
        Ok(msg) => msg,
        Err(e) => {
            eprintln!("tool_server: ignoring a line that is not JSON ({e})");
            return;
        }
    };
    let Value::Object(mut msg) = msg else {
        eprintln!("tool_server: ignoring a JSON value that is not an object");
        return;
    };
    let id = msg.remove("id");
    match (msg.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => {
            let params = msg.remove("params").unwrap_or(Value::Null);
            dispatch(server, id, method, params);
        }
        (Some(Value::String(method)), None) => {
            on_notification(server, &method, msg.get("params").unwrap_or(&Value::Null));
        }
        (None, Some(id)) if msg.contains_key("result") || msg.contains_key("error") => {
            on_response(server, &id, msg.into());
        }
        (_, Some(id)) => {
            let why = "Invalid Request: expected a string method, or a result or an error";
            server.answer(id, Reply::Error(-32600, why.to_owned()));
        }
        (_, None) => eprintln!("tool_server: ignoring an object that is not JSON-RPC"),
    }
}

/// Answers a request, inline for cheap methods or on a new thread for slow ones.
fn dispatch(server: &Arc<Server>, id: Value, method: String, params: Value) {
    let slow = match method.as_str() {
        "sleep" | "ask_client" => true,
        "tools/call" => params.get("name").and_then(Value::as_str) == Some("sleep"),
        _ => false,
    };
    if !slow {
        let reply = handle(server, &method, &params);
        server.answer(id, reply);
        return;
    }
    let worker = Arc::clone(server);
    let id_copy = id.clone();
    let spawned = thread::Builder::new()
        .name(format!("tool_server {method}"))
        .spawn(move || {
            let reply = handle(&worker, &method, &params);
            worker.replies_in_flight.fetch_add(1, Ordering::SeqCst);
            worker.answer(id, reply);
            worker.replies_in_flight.fetch_sub(1, Ordering::SeqCst);
        });
    if let Err(e) = spawned {
        server.answer(
            id_copy,
            Reply::Error(-32603, format!("cannot start a worker thread: {e}")),
        );
    }
}

/// Records what a notification from the client says.
fn on_notification(server: &Server, method: &str, params: &Value) {
    match method {
        "notifications/cancelled" => {
            let id = params.get("requestId").cloned().unwrap_or(Value::Null);
            let reason = params.get("reason").cloned().unwrap_or(Value::Null);
            eprintln!("tool_server: client cancelled request {id} (reason: {reason})");
            lock(&server.cancellations).push((id, reason));
        }
        "notifications/initialized" => {}
        other => eprintln!("tool_server: ignoring notification {other}"),
    }
}

/// Hands a client response to the `ask_client` call waiting for it.
fn on_response(server: &Server, id: &Value, response: Value) {
    let waiter = id.as_str().and_then(|key| lock(&server.asks).remove(key));
    match waiter {
        Some(waiter) => {
            // The waiter may have timed out already, in which case the response is dropped.
            let _ = waiter.send(response);
        }
        None => eprintln!("tool_server: ignoring a response for unknown request id {id}"),
    }
}

/// Runs a method; a params problem becomes error -32602.
fn handle(server: &Server, method: &str, params: &Value) -> Reply {
    run_method(server, method, params).unwrap_or_else(|why| Reply::Error(-32602, why))
}

/// Runs a method, returning `Err` with an explanation when its params are invalid.
fn run_method(server: &Server, method: &str, params: &Value) -> Result<Reply, String> {
    let ok = || json!({"ok": true});
    let result = match method {
        "echo" => params.clone(),
        "add" => add(params)?,
        "sleep" => json!({"slept_ms": sleep(server, params, params)?}),
        "hang" => return Ok(Reply::Silent),
        "crash" => crash(opt_i32(params, "code")?.unwrap_or(3)),
        "stderr_flood" => json!({"written": stderr_flood(req_u64(params, "bytes")?)}),
        "garbage" => {
            server.write_line(JUNK_LINE);
            ok()
        }
        "huge_line" => {
            huge_line(server, req_u64(params, "bytes")?);
            ok()
        }
        "reply_unknown" => {
            let n = server.next_stray.fetch_add(1, Ordering::SeqCst);
            server.send(&json!({"jsonrpc": "2.0", "id": format!("no-such-id-{n}"), "result": {}}));
            ok()
        }
        "cancellations" => {
            let seen = lock(&server.cancellations);
            let ids: Vec<Value> = seen.iter().map(|(id, _)| id.clone()).collect();
            let reasons: Vec<Value> = seen.iter().map(|(_, reason)| reason.clone()).collect();
            json!({"cancelled": ids, "reasons": reasons})
        }
        "env" => {
            let value = std::env::var_os(req_str(params, "name")?);
            json!(value.map(|v| v.to_string_lossy().into_owned()))
        }
        "cwd" => match std::env::current_dir() {
            Ok(dir) => json!(dir.to_string_lossy()),
            Err(e) => return Ok(Reply::Error(-32603, format!("no current directory: {e}"))),
        },
        "pid" => json!(std::process::id()),
        "notify_client" => {
            let mut note = json!({"jsonrpc": "2.0", "method": req_str(params, "method")?});
            if let Some(p) = arg(params, "params")? {
                note["params"] = p.clone();
            }
            server.send(&note);
            ok()
        }
        "ask_client" => return ask_client(server, params),
        "ping" => json!({}),
        "initialize" => initialize(params)?,
        "tools/list" => {
            let mut tools = tool_list();
            if server.hostile {
                if let Value::Array(list) = &mut tools {
                    list.push(hostile_tool());
                }
            }
            json!({"tools": tools})
        }
        "tools/call" => return tools_call(server, params),
        _ => return Ok(Reply::Error(-32601, format!("Method not found: {method}"))),
    };
    Ok(Reply::Result(result))
}

/// Looks up an optional field of an object; null counts as absent.
fn arg<'a>(params: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
    match params {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(map.get(key).filter(|v| !v.is_null())),
        _ => Err("params must be a JSON object".to_owned()),
    }
}

/// Looks up a required field of an object.
fn req<'a>(params: &'a Value, key: &str) -> Result<&'a Value, String> {
    arg(params, key)?.ok_or_else(|| format!("missing required field '{key}'"))
}

/// Reads an optional field through `convert`, saying what it must be when that fails.
fn opt<'a, T>(
    params: &'a Value,
    key: &str,
    what: &str,
    convert: impl FnOnce(&'a Value) -> Option<T>,
) -> Result<Option<T>, String> {
    let bad = || format!("'{key}' must be {what}");
    arg(params, key)?
        .map(|v| convert(v).ok_or_else(bad))
        .transpose()
}

/// Reads a required string field.
fn req_str<'a>(params: &'a Value, key: &str) -> Result<&'a str, String> {
    opt(params, key, "a string", Value::as_str)?
        .ok_or_else(|| format!("missing required field '{key}'"))
}

/// Reads an optional string field.
fn opt_str<'a>(params: &'a Value, key: &str) -> Result<Option<&'a str>, String> {
    opt(params, key, "a string", Value::as_str)
}

/// Reads an optional non-negative integer field.
fn opt_u64(params: &Value, key: &str) -> Result<Option<u64>, String> {
    opt(params, key, "a non-negative integer", Value::as_u64)
}

/// Reads a required non-negative integer field.
fn req_u64(params: &Value, key: &str) -> Result<u64, String> {
    opt_u64(params, key)?.ok_or_else(|| format!("missing required field '{key}'"))
}

/// Reads an optional field that must fit an `i32` (an exit code).
fn opt_i32(params: &Value, key: &str) -> Result<Option<i32>, String> {
    opt(params, key, "a 32-bit integer", |v| {
        v.as_i64().and_then(|n| i32::try_from(n).ok())
    })
}

/// Adds `a` and `b`, as integers when both are integers and the sum fits, else as floats.
fn add(params: &Value) -> Result<Value, String> {
    let (a, b) = (req(params, "a")?, req(params, "b")?);
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        if let Some(sum) = x.checked_add(y) {
            return Ok(json!(sum));
        }
    }
    let x = a.as_f64().ok_or("'a' must be a number")?;
    let y = b.as_f64().ok_or("'b' must be a number")?;
    Ok(json!(x + y))
}

/// Sleeps `params.ms` milliseconds, sending progress notifications when `meta_holder` carries
/// `_meta.progressToken`, and returns the number of milliseconds slept.
fn sleep(server: &Server, params: &Value, meta_holder: &Value) -> Result<u64, String> {
    let ms = req_u64(params, "ms")?;
    let steps = opt_u64(params, "progress")?.unwrap_or(5);
    let token = meta_holder
        .get("_meta")
        .and_then(|meta| meta.get("progressToken"))
        .filter(|t| t.is_string() || t.is_i64() || t.is_u64());
    let start = Instant::now();
    match token {
        Some(token) if steps > 0 => {
            for i in 1..=steps {
                // Each step ends at its share of the total, so rounding never adds up to drift.
                let due_ms = u128::from(ms) * u128::from(i) / u128::from(steps);
                let due = start + Duration::from_millis(due_ms as u64);
                thread::sleep(due.saturating_duration_since(Instant::now()));
                let message = format!("step {i} of {steps}");
                server.send(
                    &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": i, "total": steps,
                               "message": message}}),
                );
            }
        }
        _ => thread::sleep(Duration::from_millis(ms)),
    }
    Ok(ms)
}

/// Reports and exits the process at once with `code`.
fn crash(code: i32) -> ! {
    eprintln!("tool_server: crashing with code {code}");
    std::process::exit(code)
}

/// Writes `bytes` bytes (at least the marker line) to stderr and returns how many were written.
fn stderr_flood(bytes: u64) -> u64 {
    let filler = bytes.saturating_sub(FLOOD_END.len() as u64);
    let mut line = [b'e'; 100];
    line[99] = b'\n';
    // A block of 655 whole lines (65,500 bytes) is written over and over.
    let block = line.repeat(655);
    let mut err = io::stderr().lock();
    let mut left = filler;
    let mut write = |bytes: &[u8]| {
        // A closed stderr is not worth failing the request over.
        let _ = err.write_all(bytes);
    };
    while left >= block.len() as u64 {
        write(&block);
        left -= block.len() as u64;
    }
    // What remains is under one block: whole lines, then one shorter line if needed.
    let left = left as usize;
    let whole = left / 100 * 100;
    write(&block[..whole]);
    if left > whole {
        write(&block[..left - whole - 1]);
        write(b"\n");
    }
    write(FLOOD_END);
    filler + FLOOD_END.len() as u64
}

/// Writes one stdout line of `bytes` `x` characters, in 64 KiB pieces, under a single lock.
fn huge_line(server: &Server, bytes: u64) {
    let chunk = vec![b'x'; CHUNK];
    server.with_out(|out| {
        let mut left = bytes;
        while left > 0 {
            let n = left.min(CHUNK as u64) as usize;
            out.write_all(&chunk[..n])?;
            left -= n as u64;
        }
        out.write_all(b"\n")
    });
}

/// Sends a request to the client and answers with the client's result or error.
fn ask_client(server: &Server, params: &Value) -> Result<Reply, String> {
    let mut request = json!({"jsonrpc": "2.0", "method": req_str(params, "method")?});
    if let Some(p) = arg(params, "params")? {
        request["params"] = p.clone();
    }
    let key = format!("srv-{}", server.next_ask.fetch_add(1, Ordering::SeqCst));
    request["id"] = json!(key);
    // Register before sending, so a fast response cannot arrive before anyone waits for it.
    let (tx, rx) = mpsc::channel();
    lock(&server.asks).insert(key.clone(), tx);
    server.send(&request);
    let response = rx.recv_timeout(ASK_TIMEOUT);
    lock(&server.asks).remove(&key);
    Ok(match response {
        Ok(response) => match response.get("error").filter(|e| !e.is_null()) {
            Some(error) => Reply::Result(json!({"error": error})),
            None => Reply::Result(json!({"result": response.get("result").cloned()})),
        },
        Err(_) => Reply::Error(-32000, "client did not answer".to_owned()),
    })
}

/// Answers `initialize`, agreeing to the client's protocol version when it is a known one.
fn initialize(params: &Value) -> Result<Value, String> {
    let asked = arg(params, "protocolVersion")?.and_then(Value::as_str);
    let version = asked
        .filter(|v| KNOWN_VERSIONS.contains(v))
        .unwrap_or(LATEST_VERSION);
    Ok(json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": true}, "logging": {}},
        "serverInfo": {"name": "toolwire-tool-server", "version": "0.1.0"},
        "instructions": "A small server for toolwire's demo and tests.",
    }))
}

/// The tools this server offers through `tools/list`.
fn tool_list() -> Value {
    // Annotations shared by several tools: pure tools can be retried freely.
    let pure = json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false});
    let quiet = json!({"readOnlyHint": true, "openWorldHint": false});
    let none = json!({"type": "object", "properties": {}});
    json!([
        {"name": "echo", "description": "Returns the message it is given.", "annotations": pure,
         "inputSchema": {"type": "object", "required": ["message"],
                         "properties": {"message": {"type": "string"}}}},
        {"name": "add", "description": "Adds two numbers.", "annotations": pure,
         "inputSchema": {"type": "object", "required": ["a", "b"],
                         "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
         "outputSchema": {"type": "object", "required": ["sum"],
                          "properties": {"sum": {"type": "number"}}}},
        {"name": "sleep", "description": "Waits ms milliseconds, reporting progress if asked.",
         "annotations": quiet,
         "inputSchema": {"type": "object", "required": ["ms"],
                         "properties": {"ms": {"type": "integer", "minimum": 0},
                                        "progress": {"type": "integer", "minimum": 0}}}},
        {"name": "hang", "description": "Never answers.", "annotations": quiet,
         "inputSchema": none},
        {"name": "crash", "description": "Makes the server exit at once (default code 3).",
         "annotations": {"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false},
         "inputSchema": {"type": "object", "properties": {"code": {"type": "integer"}}}},
        {"name": "stderr_flood", "description": "Writes many bytes to the server's stderr.",
         "annotations": quiet,
         "inputSchema": {"type": "object", "required": ["bytes"],
                         "properties": {"bytes": {"type": "integer", "minimum": 0}}}},
        {"name": "garbage", "description": "Writes a non-JSON line to stdout, then answers.",
         "annotations": quiet, "inputSchema": none},
        {"name": "fail", "description": "Always fails, with the given message.",
         "annotations": pure,
         "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
        {"name": "big_text", "description": "Returns a text of the given number of characters.",
         "annotations": pure,
         "inputSchema": {"type": "object", "required": ["bytes"],
                         "properties": {"bytes": {"type": "integer", "minimum": 0}}}},
    ])
}

/// The definition of the `hostile` tool (`--hostile` only).
fn hostile_tool() -> Value {
    json!({"name": "hostile", "description": format!("Prints {HOSTILE}."),
           "inputSchema": {"type": "object",
                           "properties": {"as": {"type": "string",
                                                 "enum": ["text", "error", "rpc_error"]}}}})
}

/// Runs the `hostile` tool: a log message, a progress report and a stderr line carrying
/// [`HOSTILE`], then the answer `as` asks for.
fn hostile(server: &Server, args: &Value, params: &Value) -> Result<Reply, String> {
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "warning", "logger": "hostile", "data": format!("log {HOSTILE}")}}));
    let token = params
        .get("_meta")
        .and_then(|meta| meta.get("progressToken"));
    if let Some(token) = token {
        server.send(
            &json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1, "total": 1,
                       "message": format!("progress {HOSTILE}")}}),
        );
    }
    eprintln!("tool_server: stderr {HOSTILE}");
    Ok(match opt_str(args, "as")?.unwrap_or("text") {
        "error" => Reply::Result(tool_error(format!("failed {HOSTILE}"))),
        "rpc_error" => Reply::Error(-32000, format!("refused {HOSTILE}")),
        _ => Reply::Result(text_result(format!("result {HOSTILE}"))),
    })
}

/// A successful tool result holding one text block.
fn text_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": false})
}

/// A failed tool result holding one text block.
fn tool_error(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": true})
}

/// Answers `tools/call`; tool failures are results with `isError` set, not JSON-RPC errors.
fn tools_call(server: &Server, params: &Value) -> Result<Reply, String> {
    let name = req_str(params, "name")?;
    let args = arg(params, "arguments")?.unwrap_or(&Value::Null);
    if !args.is_object() && !args.is_null() {
        let why = format!("Invalid arguments for tool '{name}': arguments must be a JSON object");
        return Ok(Reply::Result(tool_error(why)));
    }
    if name == "hostile" && server.hostile {
        return hostile(server, args, params);
    }
    Ok(match run_tool(server, name, args, params) {
        Ok(Some(result)) => Reply::Result(result),
        Ok(None) => Reply::Silent,
        Err(why) => Reply::Result(tool_error(format!(
            "Invalid arguments for tool '{name}': {why}"
        ))),
    })
}

/// Runs one tool; `Ok(None)` means the call is never answered.
fn run_tool(
    server: &Server,
    name: &str,
    args: &Value,
    params: &Value,
) -> Result<Option<Value>, String> {
    let result = match name {
        "echo" => text_result(req_str(args, "message")?),
        "add" => {
            let sum = json!({"sum": add(args)?});
            json!({
                "content": [{"type": "text", "text": sum.to_string()}],
                "structuredContent": sum,
                "isError": false,
            })
        }
        "sleep" => text_result(format!("slept {} ms", sleep(server, args, params)?)),
        "hang" => return Ok(None),
        "crash" => crash(opt_i32(args, "code")?.unwrap_or(3)),
        "stderr_flood" => text_result(format!(
            "wrote {} bytes",
            stderr_flood(req_u64(args, "bytes")?)
        )),
        "garbage" => {
            server.write_line(JUNK_LINE);
            text_result("ok")
        }
        "fail" => tool_error(opt_str(args, "message")?.unwrap_or("the tool failed")),
        "big_text" => {
            let bytes =
                usize::try_from(req_u64(args, "bytes")?).map_err(|_| "'bytes' is too large")?;
            text_result("a".repeat(bytes))
        }
        other => tool_error(format!("Unknown tool: {other}")),
    };
    Ok(Some(result))
}
