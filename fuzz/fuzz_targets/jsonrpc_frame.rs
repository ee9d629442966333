//! Fuzzes the strict JSON-RPC parser: `parse_frame` and the classification behind it.
//!
//! For any input:
//! * `parse_frame` never panics, and agrees with `serde_json` + `classify_frame`;
//! * text that is not JSON is `NotJson` with no id; every other rejection is -32600 and carries
//!   exactly the id and `method_present` that the object shows;
//! * an accepted single message serializes on one line and parses back to itself;
//! * the accepted elements of a batch, serialized as a batch, parse back to themselves.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::jsonrpc_frame(data));
