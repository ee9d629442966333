//! Fuzzes the Streamable HTTP transport's SSE reader (the HTML event-stream interpretation
//! with a per-event size cap).
//!
//! Input layout: byte 0 is the event cap (0..=255 bytes), byte 1 how many bytes each `read`
//! hands out (1..=16); the rest is the stream. Checked for every input:
//! * the reader never panics, and reading in those chunks gives the same events, last event
//!   id and retry as one `feed` of the whole stream;
//! * with a cap of the input's length nothing is oversized and the result equals a
//!   whole-input model of the spec (BOM; CRLF, LF and CR; comments; one space stripped;
//!   `data` joined with LF; type `message`; `id` without NUL; `retry` all digits; a blank line
//!   dispatches unless the data buffer is empty; an unfinished event is discarded);
//! * with the small cap, the result equals the model with its cap rule, no delivered event
//!   can come from more bytes of lines than the cap, and every oversized report is over it;
//! * the stream goes on after an oversized event: the spec model's events that fit the cap
//!   are delivered with the same type and data, in order, the others reported oversized.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::sse_reader(data));
