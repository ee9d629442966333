//! Memory proportional to the data: listing a multi-megabyte `tools/list` costs a small
//! multiple of its size (each tool is kept as its JSON text, never as a tree of `Value`s), and
//! the whole listing is bounded in bytes and in items with a clear error.
//!
//! The memory is measured in a child process (this test binary run again), so nothing else in
//! the process moves the figures: the child reports its peak resident set before and after
//! listing.
use crate::support::mcp as support;

use std::process::Command;

use serde_json::{json, Value};
use support::*;
use toolwire::jsonrpc::Message;
use toolwire::transport::MemoryPeer;
use toolwire::{Error, ProtocolMode};

const CHILD_ENV: &str = "TOOLWIRE_LIST_MEMORY_CHILD";

/// A realistic tool, about 600 bytes of JSON.
fn tool(index: usize) -> Value {
    json!({
        "name": format!("search_{index}"),
        "description": "Searches the repository for files matching a pattern and returns their paths.",
        "inputSchema": {"type": "object", "additionalProperties": false, "required": ["query"],
            "properties": {
                "query": {"type": "string", "description": "What to look for"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "flags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
                "options": {"type": "object", "properties": {
                    "case": {"type": "boolean"}, "regex": {"type": "boolean"}}}
            }},
        "annotations": {"readOnlyHint": true}
    })
}

/// The page's text, built once before the measurement starts.
fn page_line(id: &Value, tools: usize) -> String {
    let mut line = String::with_capacity(tools * 700);
    line.push_str(r#"{"jsonrpc":"2.0","id":"#);
    line.push_str(&id.to_string());
    line.push_str(r#","result":{"tools":["#);
    for index in 0..tools {
        if index > 0 {
            line.push(',');
        }
        line.push_str(&tool(index).to_string());
    }
    line.push_str("]}}");
    line
}

fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// Serves one `tools/list` request with `page`.
fn serve_page(peer: &MemoryPeer, page: impl FnOnce(&Value) -> String) {
    let Some(Message::Request(request)) = peer.recv_message(SOON) else {
        panic!("expected tools/list");
    };
    assert_eq!(request.method, "tools/list");
    peer.send_line(page(&request.id.to_value()));
}

/// Run as a child of `listing_costs_a_small_multiple_of_its_size`.
#[test]
fn list_memory_child() {
    if std::env::var(CHILD_ENV).is_err() {
        return;
    }
    const TOOLS: usize = 14_000;
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy).max_list_items(TOOLS));
    // The text the server sends is the data: it exists before the clock starts.
    let mut line = None;
    let server = std::thread::scope(|scope| {
        let text = page_line(&json!(0), TOOLS);
        let bytes = text.len();
        line = Some(text);
        let before = peak_kib();
        let serving = scope.spawn(|| {
            serve_page(&peer, |id| {
                let text = line.take().expect("the page");
                // The id the client used, in place of the placeholder.
                text.replacen(r#""id":0"#, &format!(r#""id":{id}"#), 1)
            })
        });
        let tools = client.list_tools().expect("the list");
        serving.join().expect("the server");
        assert_eq!(tools.len(), TOOLS);
        assert!(tools[0].input_schema().unwrap()["properties"]["query"].is_object());
        let after = peak_kib();
        (bytes, before, after, tools)
    });
    let (bytes, before, after, tools) = server;
    println!("LIST_BYTES={bytes} PEAK_BEFORE_KIB={before} PEAK_AFTER_KIB={after}");
    drop(tools);
    finish(&client, &peer);
}

#[test]
fn listing_costs_a_small_multiple_of_its_size() {
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            crate::support::test_name(module_path!(), "list_memory_child").as_str(),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the child failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let field = |name: &str| -> u64 {
        stdout
            .split_whitespace()
            .find_map(|word| word.strip_prefix(name))
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("{name} in {stdout}"))
    };
    let bytes = field("LIST_BYTES=");
    let growth_kib = field("PEAK_AFTER_KIB=").saturating_sub(field("PEAK_BEFORE_KIB="));
    let ratio = (growth_kib * 1024) as f64 / bytes as f64;
    println!("listing {bytes} bytes raised the peak resident set by {growth_kib} KiB: {ratio:.2}x");
    // The page in the transport, the result's text, the items' text: about three copies.
    assert!(ratio <= 5.0, "listing cost {ratio:.2}x its size");
}

#[test]
fn a_listing_over_its_byte_bound_is_a_clear_error() {
    let small = config(ProtocolMode::Legacy).max_list_bytes(10_000);
    let (client, peer) = connect_legacy(small);
    let (outcome, ()) = exchange(
        &peer,
        || client.list_tools(),
        |peer| serve_page(peer, |id| page_line(id, 40)),
    );
    match outcome {
        Err(Error::Protocol(message)) => {
            assert!(message.contains("max_list_bytes"), "{message}")
        }
        other => panic!("expected the bound's error, got {other:?}"),
    }
    finish(&client, &peer);
}

#[test]
fn a_listing_over_its_item_bound_is_a_clear_error() {
    let few = config(ProtocolMode::Legacy).max_list_items(5);
    let (client, peer) = connect_legacy(few);
    let (outcome, ()) = exchange(
        &peer,
        || client.list_tools(),
        |peer| serve_page(peer, |id| page_line(id, 6)),
    );
    match outcome {
        Err(Error::Protocol(message)) => {
            assert!(message.contains("max_list_items"), "{message}")
        }
        other => panic!("expected the bound's error, got {other:?}"),
    }
    finish(&client, &peer);
}
