//! Thin entry points into crate-private code, for the fuzz targets in `fuzz/` and the
//! property tests in `tests/`. Hidden from the docs and not part of the API: names and shapes
//! may change with any release.
//!
//! Each wrapper runs the real code path on an in-memory input and returns what it produced as
//! plain owned data, so a fuzz target can check invariants against a simple model.

use std::io::{self, Read};

use crate::transport::lines::{self, LineEvent};

/// One event of the stdio line reader, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineOut {
    /// A line, without its `\n`, trailing `\r` and leading byte-order mark. Never blank.
    Line(Vec<u8>),
    /// A line longer than the cap was discarded; the count of its bytes (without the `\n`).
    Oversized(u64),
}

/// Runs the stdio transport's line reader over `bytes` with a line cap of `cap`, the reader
/// handing out at most `chunk` bytes per `read` call (`0`: no limit), so lines split across
/// reads are exercised too.
pub fn read_lines(bytes: &[u8], cap: usize, chunk: usize) -> Vec<LineOut> {
    struct Chunked<'a> {
        rest: &'a [u8],
        chunk: usize,
    }
    impl Read for Chunked<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let limit = if self.chunk == 0 {
                usize::MAX
            } else {
                self.chunk
            };
            let n = self.rest.len().min(buf.len()).min(limit);
            buf[..n].copy_from_slice(&self.rest[..n]);
            self.rest = &self.rest[n..];
            Ok(n)
        }
    }
    let mut out = Vec::new();
    let reader = Chunked { rest: bytes, chunk };
    // Reading from memory cannot fail.
    let _ = lines::read_lines(reader, cap, |event| match event {
        LineEvent::Line(line) => out.push(LineOut::Line(line.to_vec())),
        LineEvent::Oversized(count) => out.push(LineOut::Oversized(count)),
    });
    out
}
