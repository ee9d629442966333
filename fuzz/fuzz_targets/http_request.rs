//! Fuzzes the Streamable HTTP server's request reader: the head through httparse within its
//! byte and header caps, then the body by `Content-Length` or chunked framing within its cap.
//!
//! Input layout: byte 0 picks how many bytes each `read` hands out (`% 17`, 0 = as many as
//! asked); the rest is what a client sent. See `checks::http_request` for the properties.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::http_request(data));
