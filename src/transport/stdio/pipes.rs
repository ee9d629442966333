//! The child's stderr: its drain and its tail buffer.

use std::io::{self, Read};
use std::process::ChildStderr;

use parking_lot::Mutex;

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
                log::debug!(
                    "[{label} stderr] {}",
                    String::from_utf8_lossy(&line).trim_end()
                );
            }
            // Bound the partial line kept for logging.
            if partial.len() > 4096 {
                partial.clear();
            }
        }
    }
}

/// The last `capacity` bytes written to it.
pub(crate) struct Tail {
    capacity: usize,
    bytes: Vec<u8>,
}

impl Tail {
    pub(crate) fn new(capacity: usize) -> Tail {
        Tail {
            capacity,
            bytes: Vec::new(),
        }
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
        String::from_utf8_lossy(&self.bytes[start..]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::Tail;

    #[test]
    fn tail_keeps_the_last_bytes() {
        let mut tail = Tail::new(4);
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
}
