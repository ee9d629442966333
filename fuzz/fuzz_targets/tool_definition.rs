//! Fuzzes the reading of a tool definition (`Tool::from_raw`): its schemas read once within
//! the depth and size bounds, the failure kept and named, never a schema taken for "none".
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::tool_definition(data));
