//! A small MCP and JSON-RPC 2.0 server on stdin/stdout, built on `toolwire::server`, used by
//! toolwire's demo, tests and benchmarks. Its faults (a tool that hangs, one that crashes the
//! process, stderr floods, garbage on stdout, huge lines, stray responses) are what the
//! client's tests need from a server; the protocol itself is the library's.
//!
//! # Usage
//!
//! ```text
//! cargo run --example tool_server -- [--ignore-eof] [--banner] [--hostile] [--catalog]
//!     [--pooled] [--skills DIR]
//! ```
//!
//! * `--ignore-eof` keeps the process running (sleeping forever) after stdin reaches end of file.
//! * `--banner` writes the non-JSON line `tool_server ready` to stdout at start.
//! * `--hostile` adds the tool `hostile` (see below), whose texts carry terminal escape
//!   sequences, for the tests of what the `toolwire` command prints.
//! * `--catalog` adds resources, a template, a prompt, completion and the tools `log` and
//!   `ask` (see `examples/support/tool_server_catalog.rs`), for the tests of the `toolwire`
//!   command's catalog and client-capability commands.
//! * `--pooled` runs the tools on the server's worker pool instead of inline on the reading
//!   thread (what a tool not marked inline gets), for the benchmarks of that path.
//! * `--skills DIR` serves the skills of the directory tree `DIR` (every directory holding a
//!   `SKILL.md`; the Skills extension, `toolwire::server::SkillSet::add_tree`).
//!
//! Any other argument prints the usage on stderr and exits with code 2.
//!
//! # Wire format
//!
//! One compact JSON message per line of UTF-8 in both directions; stderr carries free-form
//! logging. A line that is not JSON gets no reply; an invalid request gets -32600; an unknown
//! method gets -32601 `Method not found: X` and bad params -32602 saying what is wrong;
//! notifications are never answered; a response answers one of the server's own requests
//! (`ask_client`).
//!
//! Cheap methods run inline on the reading thread; `sleep`, `ask_client` and the `sleep` tool
//! run on the server's worker pool. A cancellation of a request is recorded (see
//! `cancellations`) and sets its cancel flag, but `sleep` ignores it: the answer and its
//! progress still come at the end (the server is configured to answer cancelled requests, so
//! clients can be tested against late answers). At end of stdin the server writes the replies
//! already computed and exits with code 0; it does not wait for `hang` or for a `sleep` still
//! running.
//!
//! # Methods
//!
//! * `echo` (any params): the result is the params value itself, or null when absent.
//! * `add {a, b}`: `a + b`, an integer when both are 64-bit integers, otherwise a float.
//! * `sleep {ms, progress?}`: sleeps `ms` milliseconds and answers `{"slept_ms": ms}`. When the
//!   params hold `_meta.progressToken` (a string or an integer), it sends `progress` (default 5)
//!   `notifications/progress` notifications evenly spaced over the sleep.
//! * `hang`: never answered (deferred, for an hour; it holds no worker).
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
//! * `ask_client {method, params?}`: sends a request to the client, waits for its response and
//!   answers `{"result": ...}` or `{"error": ...}` with what the client sent. Without a
//!   response within 10 seconds it answers error -32000 `client did not answer`.
//! * `ping`: `{}`.
//!
//! # MCP
//!
//! * `initialize`: echoes the client's `protocolVersion` when it is one this server knows
//!   (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25), otherwise offers 2025-11-25, and
//!   declares the `tools` (with `listChanged`) and `logging` capabilities.
//! * The 2026-07-28 protocol is turned off: `server/discover` is an unknown method (-32601).
//! * `tools/list`: the tools `echo`, `add`, `sleep`, `hang`, `crash`, `stderr_flood`,
//!   `garbage`, `fail` and `big_text`, with input schemas and annotations.
//! * `tools/call {name, arguments, _meta?}`: runs a tool and answers an MCP `CallToolResult`.
//!   `fail` and arguments that break the tool's schema give a result with `isError: true`
//!   rather than a JSON-RPC error; an unknown tool is -32602. `sleep` takes its progress
//!   token from the `_meta` of the `tools/call` params.
//! * With `--hostile` only, the tool `hostile {as?}`, listed last: its description, and
//!   everything calling it produces, carry [`HOSTILE`] (clear-screen, a window-title OSC ended
//!   by BEL, and a one-byte C1 CSI). A call sends a `notifications/message` warning and, with
//!   a progress token, one progress notification, both with that text; writes it to stderr;
//!   then answers it as a text result (`as` absent or `"text"`), as a result with `isError`
//!   (`"error"`), or as JSON-RPC error -32000 (`"rpc_error"`).
//! * With `--hostile` only, the tool `leak {name, as?}`, listed before `hostile`: a server
//!   that quotes its credentials. The value of the environment variable `name` is in a
//!   `notifications/message` warning, a progress report (with a progress token), a stderr
//!   line and the answer: a text result (`as`
//!   absent or `"text"`), a result with `isError` (`"error"`), or JSON-RPC error -32000 whose
//!   message and `data` quote it (`"rpc_error"`).

#[path = "support/tool_server_catalog.rs"]
mod catalog;

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolwire::harness::{LocalTool, Overflow, ResultLimit, ToolContext, ToolOptions, ToolTimeout};
use toolwire::jsonrpc::{ErrorCode, ErrorObject};
use toolwire::mcp::ToolAnnotations;
use toolwire::server::{
    CallToolResult, HandlerError, LogLevel, Method, RequestContext, Responder, Server, ServerConfig,
};

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
/// How long a `hang` stays unanswered: the longest bound a request may have.
const HANG: Duration = Duration::from_secs(3600);

/// State the handlers share.
#[derive(Default)]
struct State {
    /// The `(requestId, reason)` pairs of every cancellation received.
    cancellations: Mutex<Vec<(Value, Value)>>,
    /// Numbers the stray responses written by `reply_unknown`.
    next_stray: AtomicU64,
    /// The requests `hang` never answers, kept until the process ends.
    hanging: Mutex<Vec<Responder>>,
}

/// Locks a mutex, carrying on if another thread panicked while holding it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes to stdout directly, past the server's writer, one whole piece under the lock (the
/// server's own frames are written the same way, so no line is ever split).
fn write_stdout(write: impl FnOnce(&mut io::StdoutLock<'_>) -> io::Result<()>) {
    let mut out = io::stdout().lock();
    if let Err(error) = write(&mut out).and_then(|()| out.flush()) {
        eprintln!("tool_server: cannot write to stdout ({error}); exiting");
        std::process::exit(0);
    }
}

fn main() {
    let mut ignore_eof = false;
    let mut banner = false;
    let mut hostile = false;
    let mut catalog = false;
    let mut skills = None;
    let mut pooled = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--ignore-eof" => ignore_eof = true,
            "--banner" => banner = true,
            "--hostile" => hostile = true,
            "--catalog" => catalog = true,
            "--pooled" => pooled = true,
            "--skills" if skills.is_none() => skills = args.next(),
            _ => {
                eprintln!("tool_server: unknown argument {arg:?}");
                eprintln!(
                    "usage: tool_server [--ignore-eof] [--banner] [--hostile] [--catalog] \
                     [--pooled] [--skills DIR]"
                );
                std::process::exit(2);
            }
        }
    }
    if banner {
        write_stdout(|out| out.write_all(b"tool_server ready\n"));
    }
    let state = Arc::new(State::default());
    let server = build(&state, hostile, pooled).unwrap_or_else(|error| {
        eprintln!("tool_server: {error}");
        std::process::exit(1);
    });
    if catalog {
        if let Err(error) = catalog::add(&server) {
            eprintln!("tool_server: {error}");
            std::process::exit(1);
        }
    }
    if let Some(dir) = skills {
        let mut set = toolwire::server::SkillSet::new();
        if let Err(error) = set.add_tree(&dir).and_then(|_| set.serve(&server)) {
            eprintln!("tool_server: {error}");
            std::process::exit(1);
        }
    }
    if let Err(error) = server.serve_stdio() {
        eprintln!("tool_server: {error}");
    }
    if ignore_eof {
        eprintln!("tool_server: stdin closed; --ignore-eof given, staying up");
        loop {
            thread::sleep(Duration::from_secs(3600));
        }
    }
    // Take stdout's lock so that no line is cut in half by the exit.
    let _out = io::stdout().lock();
    std::process::exit(0);
}

/// The server with every method and tool.
fn build(state: &Arc<State>, hostile: bool, pooled: bool) -> toolwire::Result<Server> {
    let config = ServerConfig::new("toolwire-tool-server", "0.1.0")
        .instructions("A small server for toolwire's demo and tests.")
        .stateless(false)
        .answer_cancelled(true)
        // At end of stdin the server does not wait for a `sleep` still running.
        .close_grace(Duration::ZERO)
        .workers(64);
    let server = Server::new(config)?;
    let seen = Arc::clone(state);
    server.on_notification(move |notification| {
        if notification.method == "notifications/cancelled" {
            let params = notification.params.clone().unwrap_or(Value::Null);
            let id = params.get("requestId").cloned().unwrap_or(Value::Null);
            let reason = params.get("reason").cloned().unwrap_or(Value::Null);
            eprintln!("tool_server: client cancelled request {id} (reason: {reason})");
            lock(&seen.cancellations).push((id, reason));
        }
    });
    add_methods(&server, state)?;
    add_tools(&server, state, hostile, pooled)?;
    Ok(server)
}

/// A params problem: -32602 with the reason.
fn bad(why: impl Into<String>) -> HandlerError {
    HandlerError::invalid_params(why)
}

/// Registers a method that runs inline on the reading thread.
fn quick(
    server: &Server,
    name: &str,
    handler: impl Fn(&RequestContext, &Value) -> Result<Value, HandlerError> + Send + Sync + 'static,
) -> toolwire::Result<()> {
    server.add_method(Method::new(name, handler).inline(true))
}

fn add_methods(server: &Server, state: &Arc<State>) -> toolwire::Result<()> {
    let ok = || json!({"ok": true});
    quick(server, "echo", |_, params| Ok(params.clone()))?;
    quick(server, "add", |_, params| add(params).map_err(bad))?;
    server.add_method(Method::new("sleep", |context, params| {
        Ok(json!({"slept_ms": sleep(context, params).map_err(bad)?}))
    }))?;
    server.add_method(
        Method::new("hang", hang_method(state))
            .inline(true)
            .timeout(HANG),
    )?;
    quick(server, "crash", |_, params| {
        crash(opt_i32(params, "code").map_err(bad)?.unwrap_or(3))
    })?;
    quick(server, "stderr_flood", |_, params| {
        let bytes = req_u64(params, "bytes").map_err(bad)?;
        Ok(json!({"written": stderr_flood(bytes)}))
    })?;
    quick(server, "garbage", move |_, _| {
        write_stdout(|out| out.write_all(format!("{JUNK_LINE}\n").as_bytes()));
        Ok(ok())
    })?;
    quick(server, "huge_line", move |_, params| {
        huge_line(req_u64(params, "bytes").map_err(bad)?);
        Ok(ok())
    })?;
    let strays = Arc::clone(state);
    quick(server, "reply_unknown", move |_, _| {
        let n = strays.next_stray.fetch_add(1, Ordering::SeqCst) + 1;
        let stray = json!({"jsonrpc": "2.0", "id": format!("no-such-id-{n}"), "result": {}});
        write_stdout(|out| out.write_all(format!("{stray}\n").as_bytes()));
        Ok(ok())
    })?;
    let seen = Arc::clone(state);
    quick(server, "cancellations", move |_, _| {
        let seen = lock(&seen.cancellations);
        let ids: Vec<Value> = seen.iter().map(|(id, _)| id.clone()).collect();
        let reasons: Vec<Value> = seen.iter().map(|(_, reason)| reason.clone()).collect();
        Ok(json!({"cancelled": ids, "reasons": reasons}))
    })?;
    quick(server, "env", |_, params| {
        let value = std::env::var_os(req_str(params, "name").map_err(bad)?);
        Ok(json!(value.map(|v| v.to_string_lossy().into_owned())))
    })?;
    quick(server, "cwd", |_, _| match std::env::current_dir() {
        Ok(dir) => Ok(json!(dir.to_string_lossy())),
        Err(e) => Err(HandlerError::internal(format!("no current directory: {e}"))),
    })?;
    quick(server, "pid", |_, _| Ok(json!(std::process::id())))?;
    quick(server, "notify_client", move |context, params| {
        let method = req_str(params, "method").map_err(bad)?;
        let note = arg(params, "params")
            .map_err(bad)?
            .cloned()
            .unwrap_or(Value::Null);
        context
            .notify(method, note)
            .map_err(|e| HandlerError::internal(e.to_string()))?;
        Ok(ok())
    })?;
    server.add_method(Method::new("ask_client", |context, params| {
        ask_client(context, params)
    }))?;
    Ok(())
}

/// `hang`: the answer is deferred and never given.
fn hang_method(
    state: &Arc<State>,
) -> impl Fn(&RequestContext, &Value) -> Result<Value, HandlerError> + Send + Sync + 'static {
    let hanging = Arc::clone(state);
    move |context, _| {
        lock(&hanging.hanging).push(context.defer());
        Ok(Value::Null)
    }
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

/// Sleeps `params.ms` milliseconds, reporting progress when the client asked for it, and
/// returns the number of milliseconds slept. A cancellation does not stop it.
fn sleep(context: &RequestContext, params: &Value) -> Result<u64, String> {
    let ms = req_u64(params, "ms")?;
    let steps = opt_u64(params, "progress")?.unwrap_or(5);
    let start = Instant::now();
    match context.progress() {
        Some(progress) if steps > 0 => {
            for i in 1..=steps {
                // Each step ends at its share of the total, so rounding never adds up to drift.
                let due_ms = u128::from(ms) * u128::from(i) / u128::from(steps);
                let due = start + Duration::from_millis(due_ms as u64);
                thread::sleep(due.saturating_duration_since(Instant::now()));
                let message = format!("step {i} of {steps}");
                progress.report(i as f64, Some(steps as f64), Some(&message));
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
fn huge_line(bytes: u64) {
    let chunk = vec![b'x'; CHUNK];
    write_stdout(|out| {
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
fn ask_client(context: &RequestContext, params: &Value) -> Result<Value, HandlerError> {
    let method = req_str(params, "method").map_err(bad)?;
    let request = arg(params, "params")
        .map_err(bad)?
        .cloned()
        .unwrap_or(Value::Null);
    match context.request_with(method, request, ASK_TIMEOUT) {
        Ok(result) => Ok(json!({"result": result})),
        Err(toolwire::Error::Rpc(error)) => Ok(json!({"error": *error})),
        Err(_) => Err(HandlerError::Rpc(ErrorObject::new(
            ErrorCode(-32000),
            "client did not answer",
        ))),
    }
}

/// Annotations: pure tools can be retried freely.
fn pure() -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(true),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    }
}

fn quiet() -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(true),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    }
}

/// The request's context behind a tool's (every tool here is served).
fn served(context: &dyn ToolContext) -> &RequestContext {
    RequestContext::of(context).expect("served by toolwire::server")
}

/// This server's tools' options: results up to the largest limit (16 MiB: `big_text` is for
/// testing a client's limits, not the server's), integers as sent, and `timeout` when given.
fn options(timeout: Option<Duration>) -> ToolOptions {
    let options = ToolOptions::new()
        .allow_large_integers(true)
        .result_limit(ResultLimit::new(16 * 1024 * 1024, Overflow::Truncate));
    match timeout {
        Some(timeout) => options.timeout(ToolTimeout::Custom(timeout)),
        None => options,
    }
}

fn add_tools(
    server: &Server,
    state: &Arc<State>,
    hostile: bool,
    pooled: bool,
) -> toolwire::Result<()> {
    let none = json!({"type": "object", "properties": {}});
    let tool =
        |name: &str,
         description: &str,
         schema: Value,
         handler: fn(&RequestContext, &Value) -> Result<CallToolResult, HandlerError>| {
            LocalTool::with_context(name, description, schema, move |context, args| {
                handler(served(context), args).map_err(HandlerError::into_failure)
            })
            .options(options(None))
            .inline(!pooled)
        };
    server.add_tool(
        tool(
            "echo",
            "Returns the message it is given.",
            json!({"type": "object", "required": ["message"],
                    "properties": {"message": {"type": "string"}}}),
            |_, args| {
                Ok(CallToolResult::from_text(
                    args["message"].as_str().unwrap_or_default(),
                ))
            },
        )
        .annotations(pure()),
    )?;
    server.add_tool(
        tool(
            "add",
            "Adds two numbers.",
            json!({"type": "object", "required": ["a", "b"],
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
            |_, args| {
                let sum = json!({"sum": add(args).map_err(bad)?});
                Ok(CallToolResult::structured(sum))
            },
        )
        .annotations(pure())
        .output_schema(json!({"type": "object", "required": ["sum"],
                              "properties": {"sum": {"type": "number"}}})),
    )?;
    server.add_tool(
        LocalTool::with_context(
            "sleep",
            "Waits ms milliseconds, reporting progress if asked.",
            json!({"type": "object", "required": ["ms"],
                   "properties": {"ms": {"type": "integer", "minimum": 0},
                                  "progress": {"type": "integer", "minimum": 0}}}),
            |context, args| {
                let ms = sleep(served(context), args)
                    .map_err(bad)
                    .map_err(HandlerError::into_failure)?;
                Ok(CallToolResult::from_text(format!("slept {ms} ms")))
            },
        )
        .annotations(quiet())
        .options(options(Some(HANG))),
    )?;
    let hanging = Arc::clone(state);
    server.add_tool(
        LocalTool::with_context("hang", "Never answers.", none.clone(), move |context, _| {
            lock(&hanging.hanging).push(served(context).defer());
            Ok(CallToolResult::from_text(""))
        })
        .annotations(quiet())
        .inline(true)
        .options(options(Some(HANG))),
    )?;
    server.add_tool(
        tool(
            "crash",
            "Makes the server exit at once (default code 3).",
            json!({"type": "object", "properties": {"code": {"type": "integer"}}}),
            |_, args| crash(opt_i32(args, "code").map_err(bad)?.unwrap_or(3)),
        )
        .annotations(ToolAnnotations {
            read_only_hint: Some(false),
            destructive_hint: Some(true),
            open_world_hint: Some(false),
            ..ToolAnnotations::default()
        }),
    )?;
    server.add_tool(
        tool(
            "stderr_flood",
            "Writes many bytes to the server's stderr.",
            json!({"type": "object", "required": ["bytes"],
                    "properties": {"bytes": {"type": "integer", "minimum": 0}}}),
            |_, args| {
                let written = stderr_flood(req_u64(args, "bytes").map_err(bad)?);
                Ok(CallToolResult::from_text(format!("wrote {written} bytes")))
            },
        )
        .annotations(quiet()),
    )?;
    server.add_tool(
        tool(
            "garbage",
            "Writes a non-JSON line to stdout, then answers.",
            none,
            |_, _| {
                write_stdout(|out| out.write_all(format!("{JUNK_LINE}\n").as_bytes()));
                Ok(CallToolResult::from_text("ok"))
            },
        )
        .annotations(quiet()),
    )?;
    server.add_tool(
        tool(
            "fail",
            "Always fails, with the given message.",
            json!({"type": "object", "properties": {"message": {"type": "string"}}}),
            |_, args| {
                let message = opt_str(args, "message").map_err(bad)?;
                Ok(CallToolResult::error(message.unwrap_or("the tool failed")))
            },
        )
        .annotations(pure()),
    )?;
    server.add_tool(
        tool(
            "big_text",
            "Returns a text of the given number of characters.",
            json!({"type": "object", "required": ["bytes"],
                    "properties": {"bytes": {"type": "integer", "minimum": 0}}}),
            |_, args| {
                let bytes = usize::try_from(req_u64(args, "bytes").map_err(bad)?)
                    .map_err(|_| bad("'bytes' is too large"))?;
                Ok(CallToolResult::from_text("a".repeat(bytes)))
            },
        )
        .annotations(pure()),
    )?;
    if hostile {
        server.add_tool(tool(
            "leak",
            "Quotes the value of an environment variable everywhere.",
            json!({"type": "object", "required": ["name"],
                   "properties": {"name": {"type": "string"},
                                  "as": {"type": "string",
                                         "enum": ["text", "error", "rpc_error"]}}}),
            leak_tool,
        ))?;
        server.add_tool(tool(
            "hostile",
            &format!("Prints {HOSTILE}."),
            json!({"type": "object",
                   "properties": {"as": {"type": "string",
                                         "enum": ["text", "error", "rpc_error"]}}}),
            hostile_tool,
        ))?;
    }
    Ok(())
}

/// Runs the `leak` tool: the variable's value in a log message, on stderr and in the answer
/// `as` asks for.
fn leak_tool(context: &RequestContext, args: &Value) -> Result<CallToolResult, HandlerError> {
    let name = req_str(args, "name").map_err(bad)?;
    let value = std::env::var(name).unwrap_or_default();
    context.log(
        LogLevel::Warning,
        Some("leak"),
        json!(format!("using {name}={value}")),
    );
    if let Some(progress) = context.progress() {
        progress.report(1.0, Some(1.0), Some(&format!("checking {value}")));
    }
    eprintln!("tool_server: {name} is {value}");
    match opt_str(args, "as").map_err(bad)?.unwrap_or("text") {
        "error" => Ok(CallToolResult::error(format!(
            "rejected credential {value}"
        ))),
        "rpc_error" => Err(HandlerError::Rpc(
            ErrorObject::new(ErrorCode(-32000), format!("Bearer {value} is not valid"))
                .with_data(json!({"sent": value, "env": {name: value}})),
        )),
        _ => Ok(CallToolResult::from_text(format!(
            "the credential is {value}"
        ))),
    }
}

/// Runs the `hostile` tool: a log message, a progress report and a stderr line carrying
/// [`HOSTILE`], then the answer `as` asks for.
fn hostile_tool(context: &RequestContext, args: &Value) -> Result<CallToolResult, HandlerError> {
    context.log(
        LogLevel::Warning,
        Some("hostile"),
        json!(format!("log {HOSTILE}")),
    );
    if let Some(progress) = context.progress() {
        progress.report(1.0, Some(1.0), Some(&format!("progress {HOSTILE}")));
    }
    eprintln!("tool_server: stderr {HOSTILE}");
    match opt_str(args, "as").map_err(bad)?.unwrap_or("text") {
        "error" => Ok(CallToolResult::error(format!("failed {HOSTILE}"))),
        "rpc_error" => Err(HandlerError::Rpc(ErrorObject::new(
            ErrorCode(-32000),
            format!("refused {HOSTILE}"),
        ))),
        _ => Ok(CallToolResult::from_text(format!("result {HOSTILE}"))),
    }
}
