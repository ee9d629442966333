//! Fuzzes the stdio line reader (newline framing with a length cap enforced while reading).
//!
//! Input layout: byte 0 picks the cap (0..=63 bytes), byte 1 how many bytes each `read` hands
//! out (0 = as many as asked, else 1..=16, so lines arrive split across reads); the rest is the
//! stream. Checked for every input:
//! * no emitted line contains `\n`, is longer than the cap, or is blank;
//! * every oversized report is over the cap;
//! * counts add up: each newline-separated piece of the stream gives exactly one event (a line
//!   or an oversized report) unless it is blank, and the bytes of the events, the blank pieces
//!   and the newlines add up to the input;
//! * the events equal a plain model: split on `\n`, a piece over the cap is oversized, else
//!   strip one trailing `\r` then one leading byte-order mark, and drop it when blank.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::line_framing(data));
