//! Fuzzes the Redis store's RESP2 reply reader: bytes from the network, read within bounds
//! on bulk sizes, array items, nesting and a reply's total.
//!
//! Input layout: byte 0 the longest bulk string, byte 1 the items, nesting and total
//! limits; the rest is the stream. Checked for every input (see `checks::resp_reply`): no
//! panic; a reply read keeps to every limit; written back it reads as the same reply.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::resp_reply(data));
