//! Newline framing with a length cap enforced while reading.

use std::io::{self, BufRead, BufReader, Read};

/// What the line reader found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LineEvent<'a> {
    /// One line without its `\n`, its trailing `\r` and a leading byte-order mark. Blank lines
    /// are not reported.
    Line(&'a [u8]),
    /// A line longer than the cap, discarded while it was read; the count of its bytes.
    Oversized(u64),
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

fn clean(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(BOM).unwrap_or(line)
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Reads newline-delimited frames from `reader` until end of input, calling `on_event` for each.
///
/// A line is never held whole in memory past `max_line_bytes`: once it grows past the cap the
/// rest is counted and dropped, and reading goes on after its newline. Memory used is the
/// 64 KiB read buffer plus at most `max_line_bytes`.
///
/// # Errors
///
/// The first read error other than `Interrupted`.
pub(crate) fn read_lines<R: Read>(
    reader: R,
    max_line_bytes: usize,
    mut on_event: impl FnMut(LineEvent<'_>),
) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut line: Vec<u8> = Vec::new();
    // Some(count) while we are dropping the rest of an oversized line.
    let mut discarding: Option<u64> = None;
    let emit = |bytes: &[u8], on_event: &mut dyn FnMut(LineEvent<'_>)| {
        let bytes = clean(bytes);
        if !is_blank(bytes) {
            on_event(LineEvent::Line(bytes));
        }
    };
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if buffer.is_empty() {
            // End of input: a last line without a newline still counts.
            if let Some(count) = discarding {
                on_event(LineEvent::Oversized(count));
            } else if !line.is_empty() {
                emit(&line, &mut on_event);
            }
            return Ok(());
        }
        let consumed = match buffer.iter().position(|&byte| byte == b'\n') {
            Some(position) => {
                if let Some(count) = discarding.take() {
                    on_event(LineEvent::Oversized(count + position as u64));
                } else if line.len() + position > max_line_bytes {
                    on_event(LineEvent::Oversized((line.len() + position) as u64));
                    line.clear();
                } else if line.is_empty() {
                    // The common case: the whole line is in the buffer, no copy.
                    emit(&buffer[..position], &mut on_event);
                } else {
                    line.extend_from_slice(&buffer[..position]);
                    emit(&line, &mut on_event);
                    line.clear();
                }
                position + 1
            }
            None => {
                let length = buffer.len();
                if let Some(count) = discarding.as_mut() {
                    *count += length as u64;
                } else if line.len() + length > max_line_bytes {
                    discarding = Some((line.len() + length) as u64);
                    line.clear();
                } else {
                    line.extend_from_slice(buffer);
                }
                length
            }
        };
        reader.consume(consumed);
        // Give back memory a long line took, so one large message does not pin it for good.
        if line.is_empty() && line.capacity() > 1024 * 1024 {
            line = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(input: &[u8], cap: usize) -> Vec<String> {
        let mut out = Vec::new();
        read_lines(input, cap, |event| match event {
            LineEvent::Line(line) => out.push(String::from_utf8_lossy(line).into_owned()),
            LineEvent::Oversized(count) => out.push(format!("<oversized {count}>")),
        })
        .unwrap();
        out
    }

    #[test]
    fn splits_on_newlines_and_strips_cr_and_bom() {
        let input = b"\xEF\xBB\xBF{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\":3}";
        assert_eq!(
            collect(input, 100),
            vec!["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]
        );
    }

    #[test]
    fn an_oversized_line_is_reported_and_the_stream_goes_on() {
        let mut input = vec![b'x'; 200_000];
        input.extend_from_slice(b"\nok\n");
        input.extend(vec![b'y'; 11]);
        input.extend_from_slice(b"\nlast");
        assert_eq!(
            collect(&input, 10),
            vec!["<oversized 200000>", "ok", "<oversized 11>", "last"]
        );
    }

    #[test]
    fn a_line_exactly_at_the_cap_is_kept() {
        assert_eq!(collect(b"abcd\nabcde\n", 4), vec!["abcd", "<oversized 5>"]);
    }

    #[test]
    fn a_line_split_across_reads_is_joined() {
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(3).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut out = Vec::new();
        read_lines(Trickle(b"hello world\nsecond\n"), 100, |event| {
            if let LineEvent::Line(line) = event {
                out.push(line.to_vec());
            }
        })
        .unwrap();
        assert_eq!(out, vec![b"hello world".to_vec(), b"second".to_vec()]);
    }
}
