//! Fuzzes a stdio MCP server's whole dispatch: the input is the server's stdin, split into
//! lines and fed through the JSON-RPC client's inbound path into the server (both protocol
//! eras, inline and pooled handlers). See `checks::server_frames` for the properties.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::server_frames(data));
