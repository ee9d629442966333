//! The work per `McpClient::call_tool`: heap allocations and bytes per call, counted by a
//! global allocator, and the time of a call whose arguments are a 64 KiB object, each beside
//! its floor in the same run. Prints markdown tables.
//!
//! ```text
//! cargo bench --bench alloc            # TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! ```
//!
//! The server is a memory-transport peer on its own thread that finds the id and the method
//! by scanning the line and answers from fixed text; its thread is not counted, so the counts
//! are the client's own (the calling thread and the client's reader and timer threads). The
//! floors, measured the same way in the same run:
//! * one deep copy of the arguments (`serde_json::to_value(&Value)`): the unit a copy of the
//!   params costs, so that (allocations of a 64 KiB call − of a small call) ÷ (allocations of
//!   one copy) says how many times a call builds the arguments' tree;
//! * the raw serialization of the same `tools/call` request, written once from borrowed parts
//!   (`serde_json::to_vec`): the least a client must do with the arguments.
//!
//! Allocation counts do not depend on the machine's load; times do (medians of 3).

#[path = "support/mod.rs"]
mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};
use support::{median3, scaled};
use toolwire::transport::{MemoryPeer, MemoryTransport};
use toolwire::{McpClient, McpConfig, ProtocolMode};

// ---------------------------------------------------------------------------------------------
// The counting allocator
// ---------------------------------------------------------------------------------------------

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set on the peer's thread: its allocations are the server's, not the client's.
    static UNCOUNTED: Cell<bool> = const { Cell::new(false) };
}

fn counted() -> bool {
    !UNCOUNTED.try_with(Cell::get).unwrap_or(true)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counted() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counted() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn snapshot() -> (u64, u64) {
    (ALLOCS.load(Ordering::SeqCst), BYTES.load(Ordering::SeqCst))
}

/// Allocations and bytes per run of `work`, over `runs` runs.
fn per_run(runs: usize, mut work: impl FnMut()) -> (f64, f64) {
    let before = snapshot();
    for _ in 0..runs {
        work();
    }
    let after = snapshot();
    (
        (after.0 - before.0) as f64 / runs as f64,
        (after.1 - before.1) as f64 / runs as f64,
    )
}

// ---------------------------------------------------------------------------------------------
// The peer
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Listing {
    /// `tools/list` names `echo` without an output schema.
    NoSchema,
    /// `tools/list` fails (-32601).
    Fails,
}

/// The number in `"id":N` of a request line, if any.
fn scan_id(line: &str) -> Option<&str> {
    let start = line.find("\"id\":")? + 5;
    let rest = &line[start..];
    let end = rest.find(|c: char| !c.is_ascii_digit())?;
    Some(&rest[..end])
}

fn scan_method(line: &str) -> Option<&str> {
    let start = line.find("\"method\":\"")? + 10;
    let rest = &line[start..];
    Some(&rest[..rest.find('"')?])
}

struct Peer {
    lists: Arc<AtomicUsize>,
    thread: thread::JoinHandle<()>,
}

fn serve(peer: MemoryPeer, listing: Listing, lists: Arc<AtomicUsize>) {
    UNCOUNTED.with(|flag| flag.set(true));
    let discover = r#"{"resultType":"complete","supportedVersions":["2025-11-25","2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"peer","version":"1"}}}"#;
    let initialize = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"peer","version":"1"}}"#;
    let listed = r#"{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}"#;
    let called = r#"{"content":[{"type":"text","text":"ok"}]}"#;
    while let Some(line) = peer.recv_line(Duration::from_secs(60)) {
        let Some(id) = scan_id(&line) else { continue };
        let body = match scan_method(&line) {
            Some("server/discover") => format!(r#""result":{discover}"#),
            Some("initialize") => format!(r#""result":{initialize}"#),
            Some("tools/list") => {
                lists.fetch_add(1, Ordering::SeqCst);
                match listing {
                    Listing::NoSchema => format!(r#""result":{listed}"#),
                    Listing::Fails => {
                        r#""error":{"code":-32601,"message":"no tools/list"}"#.to_owned()
                    }
                }
            }
            Some("tools/call") => format!(r#""result":{called}"#),
            _ => r#""result":{}"#.to_owned(),
        };
        peer.send_line(format!(r#"{{"jsonrpc":"2.0","id":{id},{body}}}"#));
    }
}

fn connect(mode: ProtocolMode, listing: Listing) -> (McpClient, Peer) {
    let (transport, memory_peer) = MemoryTransport::pair_with_capacity(4096);
    let lists = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&lists);
    let thread = thread::spawn(move || serve(memory_peer, listing, counter));
    let config = McpConfig::default()
        .mode(mode)
        .request_timeout(Duration::from_secs(30));
    let client = McpClient::connect(transport, config).expect("connect");
    (client, Peer { lists, thread })
}

fn finish(client: McpClient, peer: Peer) {
    client.close().expect("close");
    peer.thread.join().expect("peer");
}

// ---------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------

/// A JSON object of about `bytes` bytes: string fields, nested one level in groups of 16.
fn big_arguments(bytes: usize) -> Value {
    let mut groups = serde_json::Map::new();
    let mut size = 0;
    let mut group = 0;
    while size < bytes {
        let mut fields = serde_json::Map::new();
        for field in 0..16 {
            let value = format!("value {group}.{field}: {}", "x".repeat(40));
            size += value.len() + 12;
            fields.insert(format!("f{field}"), Value::String(value));
        }
        groups.insert(format!("g{group}"), Value::Object(fields));
        group += 1;
    }
    Value::Object(groups)
}

/// The `tools/call` request written once from borrowed parts.
#[derive(Serialize)]
struct RawRequest<'a> {
    jsonrpc: &'static str,
    id: u64,
    method: &'static str,
    params: RawParams<'a>,
}

#[derive(Serialize)]
struct RawParams<'a> {
    name: &'a str,
    arguments: &'a Value,
}

fn raw_serialize(arguments: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(&RawRequest {
        jsonrpc: "2.0",
        id: 7,
        method: "tools/call",
        params: RawParams {
            name: "echo",
            arguments,
        },
    })
    .expect("serialize");
    line.push(b'\n');
    line
}

// ---------------------------------------------------------------------------------------------
// Measures
// ---------------------------------------------------------------------------------------------

fn micros_per(runs: usize, mut work: impl FnMut()) -> f64 {
    let started = Instant::now();
    for _ in 0..runs {
        work();
    }
    started.elapsed().as_secs_f64() * 1e6 / runs as f64
}

fn era_name(mode: ProtocolMode) -> &'static str {
    match mode {
        ProtocolMode::Legacy => "2025-11-25 (initialize)",
        _ => "2026-07-28 (stateless)",
    }
}

fn main() {
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    let calls = scaled(2_000, 200);
    let big_calls = scaled(300, 30);
    let small = json!({"a": 1, "b": 2});
    let big = big_arguments(64 * 1024);
    let big_text = serde_json::to_vec(&big).expect("serialize").len();

    // The units, counted like the calls.
    let (copy_allocs, copy_bytes) = per_run(big_calls, || {
        std::hint::black_box(serde_json::to_value(&big).expect("copy"));
    });
    let (raw_allocs, raw_bytes) = per_run(big_calls, || {
        std::hint::black_box(raw_serialize(&big));
    });

    println!(
        "**Allocations per `call_tool` over the memory transport** ({calls} calls of `echo` with \
         `{{\"a\":1,\"b\":2}}`, {big_calls} with a {big_text}-byte object; client threads only)"
    );
    println!();
    println!("| session | small call: allocs / bytes | 64 KiB call: allocs / bytes | extra for 64 KiB ÷ one deep copy | one deep copy: allocs / bytes | raw serialization: allocs / bytes |");
    println!("|---|---|---|---|---|---|");
    let mut times = Vec::new();
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let (client, peer) = connect(mode, Listing::NoSchema);
        // Warm: the tool list and the "no schema" verdict are learned on the first call.
        for _ in 0..20 {
            client.call_tool("echo", &small).expect("call");
            client.call_tool("echo", &big).expect("call");
        }
        let (small_allocs, small_bytes) = per_run(calls, || {
            client.call_tool("echo", &small).expect("call");
        });
        let (big_allocs, big_bytes) = per_run(big_calls, || {
            client.call_tool("echo", &big).expect("call");
        });
        println!(
            "| {} | {small_allocs:.1} / {small_bytes:.0} | {big_allocs:.0} / {big_bytes:.0} | {:.2} | {copy_allocs:.0} / {copy_bytes:.0} | {raw_allocs:.0} / {raw_bytes:.0} |",
            era_name(mode),
            (big_allocs - small_allocs) / copy_allocs,
        );
        let small_us = median3(|| {
            micros_per(calls, || {
                client.call_tool("echo", &small).expect("call");
            })
        });
        let big_us = median3(|| {
            micros_per(big_calls, || {
                client.call_tool("echo", &big).expect("call");
            })
        });
        let lists_before = peer.lists.load(Ordering::SeqCst);
        finish(client, peer);
        assert!(lists_before >= 1);
        times.push((mode, small_us, big_us));
    }
    let copy_us = median3(|| {
        micros_per(big_calls, || {
            std::hint::black_box(serde_json::to_value(&big).expect("copy"));
        })
    });
    let raw_us = median3(|| {
        micros_per(big_calls, || {
            std::hint::black_box(raw_serialize(&big));
        })
    });
    println!();
    println!("**Time per `call_tool` with a {big_text}-byte argument object** (median of 3, {cpus} CPUs)");
    println!();
    println!("| session | small call | 64 KiB call | 64 KiB − small | one deep copy | raw serialization (floor) | (64 KiB − small) ÷ floor |");
    println!("|---|---|---|---|---|---|---|");
    for (mode, small_us, big_us) in times {
        println!(
            "| {} | {small_us:.1} µs | {big_us:.1} µs | {:.1} µs | {copy_us:.1} µs | {raw_us:.1} µs | {:.2}× |",
            era_name(mode),
            big_us - small_us,
            (big_us - small_us) / raw_us
        );
    }

    // The output-schema check's memory: a failed tools/list is not asked again per call.
    println!();
    println!("**`tools/list` requests during {calls} calls of a tool whose list has no output schema / whose listing fails**");
    println!();
    println!("| session | list has no outputSchema | tools/list fails |");
    println!("|---|---|---|");
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let mut row = Vec::new();
        for listing in [Listing::NoSchema, Listing::Fails] {
            let (client, peer) = connect(mode, listing);
            let before = peer.lists.load(Ordering::SeqCst);
            for _ in 0..calls {
                client.call_tool("echo", &small).expect("call");
            }
            row.push(peer.lists.load(Ordering::SeqCst) - before);
            finish(client, peer);
        }
        println!("| {} | {} | {} |", era_name(mode), row[0], row[1]);
    }
}
