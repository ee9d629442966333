//! The child's stderr: its drain and its tail buffer.

use std::io::{self, Read};
use std::process::ChildStderr;

use parking_lot::Mutex;

use crate::mask::Scrubber;

pub(super) fn drain_stderr(mut stderr: ChildStderr, tail: &Mutex<Tail>, label: &str) {
    let mut buffer = vec![0u8; 8192];
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let count = match stderr.read(&mut buffer) {
            Ok(0) => break,
            Ok(count) => count,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buffer[..count];
        tail.lock().push(chunk);
        if log::log_enabled!(log::Level::Debug) {
            partial.extend_from_slice(chunk);
            while let Some(position) = partial.iter().position(|&byte| byte == b'\n') {
                let line: Vec<u8> = partial.drain(..=position).collect();
                let line = tail.lock().scrub(String::from_utf8_lossy(&line).trim_end());
                log::debug!("[{label} stderr] {line}");
            }
            // Bound the partial line kept for logging.
            if partial.len() > 4096 {
                partial.clear();
            }
        }
    }
}

/// The last `capacity` bytes written to it, shown with the values of the variables we set
/// for the child taken out: a server that fails often prints what it was given ("invalid
/// token ghp_…"), and its stderr ends up in errors, logs and the command's output.
pub(crate) struct Tail {
    capacity: usize,
    bytes: Vec<u8>,
    secrets: Scrubber,
}

impl Tail {
    pub(crate) fn new(capacity: usize, secrets: Scrubber) -> Tail {
        Tail {
            capacity,
            bytes: Vec::new(),
            secrets,
        }
    }

    /// `text` (the child's stderr) with the secrets taken out.
    pub(crate) fn scrub(&self, text: &str) -> String {
        self.secrets.scrub(text)
    }

    /// The secrets it takes out: the connection's.
    pub(crate) fn scrubber(&self) -> Scrubber {
        self.secrets.clone()
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= self.capacity {
            self.bytes.clear();
            self.bytes
                .extend_from_slice(&chunk[chunk.len() - self.capacity..]);
            return;
        }
        self.bytes.extend_from_slice(chunk);
        // Trim only when twice the capacity: amortised O(1) per byte.
        if self.bytes.len() > 2 * self.capacity {
            let excess = self.bytes.len() - self.capacity;
            self.bytes.drain(..excess);
        }
    }

    pub(crate) fn text(&self) -> String {
        let start = self.bytes.len().saturating_sub(self.capacity);
        self.scrub(&String::from_utf8_lossy(&self.bytes[start..]))
    }
}

#[cfg(test)]
mod tests {
    use super::Tail;
    use crate::mask::{Scrubber, Secrets};

    #[test]
    fn tail_keeps_the_last_bytes() {
        let mut tail = Tail::new(4, Scrubber::default());
        tail.push(b"ab");
        tail.push(b"cdef");
        assert_eq!(tail.text(), "cdef");
        for _ in 0..10 {
            tail.push(b"xy");
        }
        tail.push(b"z");
        assert_eq!(tail.text(), "yxyz");
        tail.push(b"0123456789");
        assert_eq!(tail.text(), "6789");
    }

    #[test]
    fn the_values_we_set_are_taken_out() {
        let mut tail = Tail::new(
            1024,
            Scrubber::new(Secrets::new("", ["ghp_planted_secret"])),
        );
        tail.push(b"error: bad token ghp_planted_secret\n");
        assert_eq!(tail.text(), "error: bad token ***\n");
    }
}
