//! Fuzzes the harness's reading of a raw tool call: the size check, the strict JSON parse,
//! the exact fields of the OpenAI, Anthropic and plain shapes, and the tool-name rule.
//!
//! Input layout: byte 0 picks the shape (see `checks::raw_call`); the rest (UTF-8, lossily)
//! is the raw call, read in that shape. Checked for every input:
//! * nothing panics, and `Harness::handle` (with no tools) agrees: `UNKNOWN_TOOL` with the
//!   call's id and name for an accepted call, `INVALID` with the same reason and id otherwise;
//! * exactly what a model accepts is accepted: one JSON value with no repeated key at any
//!   depth (nor in OpenAI's `arguments` string) and nothing after it, exactly the shape's
//!   fields and types, a non-empty id, object arguments, a name some model API or MCP accepts;
//! * text with a repeated key is refused, saying "duplicate key";
//! * a rejection has a non-empty reason, and a call id only when it is not empty;
//! * the size limit counts characters: at the input's length nothing changes, one below it
//!   the call is refused for its size;
//! * an accepted call written back in its shape reads back as the same call.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::raw_call(data));
