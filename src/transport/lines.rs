//! Newline framing with a length cap enforced while reading.

use std::io::{self, BufRead, BufReader, Read};

use crate::wire::RequestId;

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
    on_event: impl FnMut(LineEvent<'_>),
) -> io::Result<()> {
    read_lines_and_replies(reader, max_line_bytes, on_event, |_, _| {})
}

/// [`read_lines`], and for an oversized line that is a response with an id [`IdScanner`] could
/// read, `on_reply(id, bytes)` right after its [`LineEvent::Oversized`]: the caller waiting for
/// that response can be failed at once instead of at its deadline. The scan takes O(1) memory.
///
/// # Errors
///
/// The first read error other than `Interrupted`.
pub(crate) fn read_lines_and_replies<R: Read>(
    reader: R,
    max_line_bytes: usize,
    mut on_event: impl FnMut(LineEvent<'_>),
    mut on_reply: impl FnMut(RequestId, u64),
) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut line: Vec<u8> = Vec::new();
    // Some((count, scan)) while we are dropping the rest of an oversized line.
    let mut discarding: Option<(u64, IdScanner)> = None;
    let mut skipped = |count: u64, scan: IdScanner, on_event: &mut dyn FnMut(LineEvent<'_>)| {
        on_event(LineEvent::Oversized(count));
        if let Some(id) = scan.reply_id() {
            on_reply(id, count);
        }
    };
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
            if let Some((count, scan)) = discarding {
                skipped(count, scan, &mut on_event);
            } else if !line.is_empty() {
                emit(&line, &mut on_event);
            }
            return Ok(());
        }
        let consumed = match buffer.iter().position(|&byte| byte == b'\n') {
            Some(position) => {
                if let Some((count, mut scan)) = discarding.take() {
                    scan.feed(&buffer[..position]);
                    skipped(count + position as u64, scan, &mut on_event);
                } else if line.len() + position > max_line_bytes {
                    let mut scan = IdScanner::default();
                    scan.feed(&line);
                    scan.feed(&buffer[..position]);
                    skipped((line.len() + position) as u64, scan, &mut on_event);
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
                if let Some((count, scan)) = discarding.as_mut() {
                    *count += length as u64;
                    scan.feed(buffer);
                } else if line.len() + length > max_line_bytes {
                    let mut scan = IdScanner::default();
                    scan.feed(&line);
                    scan.feed(buffer);
                    discarding = Some(((line.len() + length) as u64, scan));
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

/// The longest depth-1 key kept while scanning: enough for `id`, `result`, `error`, `method`.
const KEY_BYTES: usize = 8;
/// The longest id token (with a string's quotes and escapes) an oversized line may carry and
/// still be matched to its request. Longer ids are not read.
const ID_BYTES: usize = 128;

/// Where the scanner is in the top-level object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Not at depth 1, or between tokens.
    Other,
    /// Inside a depth-1 key, `len` bytes so far (`KEY_BYTES + 1` once too long).
    Key { len: usize },
    /// After the `:` of an `id` key, before its value.
    IdValue,
    /// Inside the value of `id`, `len` bytes so far (`ID_BYTES + 1` once too long).
    Id { len: usize },
}

/// Reads, in O(1) memory and across any chunk boundaries, what a newline-framed JSON message
/// being discarded for its size says about itself: the `id` of its top-level object (a number
/// or a string of at most [`ID_BYTES`] bytes), and whether it has a `result` or `error` key
/// (a response) or a `method` key (a request or notification). Keys may come in any order;
/// keys of nested values and text inside strings are never taken for the top level's.
#[derive(Debug, Clone)]
pub(crate) struct IdScanner {
    /// Nesting depth: 1 inside the top-level object.
    depth: u64,
    in_string: bool,
    escaped: bool,
    /// The top-level object has begun.
    started: bool,
    /// The top level is not one object (or the text is not JSON): nothing more is read.
    dead: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    slot: Slot,
    key: [u8; KEY_BYTES],
    /// The length of the last depth-1 key (`KEY_BYTES + 1` when too long to be one we want).
    key_len: usize,
    token: [u8; ID_BYTES],
    /// The id's token once read whole; `None` in `id_len` while none.
    id_len: Option<usize>,
    /// More than one `id` key, or one whose value could not be read.
    id_spoiled: bool,
    response: bool,
    request: bool,
}

impl Default for IdScanner {
    fn default() -> Self {
        IdScanner {
            depth: 0,
            in_string: false,
            escaped: false,
            started: false,
            dead: false,
            expect_key: false,
            slot: Slot::Other,
            key: [0; KEY_BYTES],
            key_len: KEY_BYTES + 1,
            token: [0; ID_BYTES],
            id_len: None,
            id_spoiled: false,
            response: false,
            request: false,
        }
    }
}

impl IdScanner {
    /// Reads the next bytes of the message.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if self.dead {
                return;
            }
            self.step(byte);
        }
    }

    /// The id of the request this message answers, when it is a response (`result` or `error`
    /// at the top level, no `method`) whose id was read.
    pub(crate) fn reply_id(&self) -> Option<RequestId> {
        if self.dead || !self.response || self.request || self.id_spoiled {
            return None;
        }
        let token = &self.token[..self.id_len?];
        let value: serde_json::Value = serde_json::from_slice(token).ok()?;
        RequestId::from_value(&value).ok()
    }

    fn step(&mut self, byte: u8) {
        if self.in_string {
            self.string_byte(byte);
            return;
        }
        if let Slot::Id { len } = self.slot {
            if matches!(byte, b',' | b'}' | b']') || byte.is_ascii_whitespace() {
                self.end_id(len);
            } else {
                self.push_id(len, byte);
                return;
            }
        }
        match byte {
            b'"' if self.depth == 0 => self.dead = true,
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.slot = Slot::Key { len: 0 };
                } else if self.slot == Slot::IdValue {
                    self.slot = Slot::Id { len: 0 };
                    self.push_id(0, byte);
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 {
                    if byte == b'[' || self.started {
                        // A batch, or text after the message: not one message to match.
                        self.dead = true;
                        return;
                    }
                    self.started = true;
                }
                if self.slot == Slot::IdValue {
                    self.id_spoiled = true;
                    self.slot = Slot::Other;
                }
                self.depth = self.depth.saturating_add(1);
                self.expect_key = self.depth == 1;
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' if self.depth == 1 => {
                self.expect_key = false;
                let key = &self.key[..self.key_len.min(KEY_BYTES)];
                if self.key_len <= KEY_BYTES {
                    match key {
                        b"id" => self.slot = Slot::IdValue,
                        b"result" | b"error" => self.response = true,
                        b"method" => self.request = true,
                        _ => {}
                    }
                }
            }
            b',' if self.depth == 1 => self.expect_key = true,
            _ if byte.is_ascii_whitespace() => {}
            // A byte-order mark before the message.
            0xEF | 0xBB | 0xBF if self.depth == 0 => {}
            _ if self.depth == 0 => self.dead = true,
            _ if self.slot == Slot::IdValue => {
                self.slot = Slot::Id { len: 0 };
                self.push_id(0, byte);
            }
            _ => {}
        }
    }

    fn string_byte(&mut self, byte: u8) {
        let ends = !self.escaped && byte == b'"';
        self.escaped = !self.escaped && byte == b'\\';
        match self.slot {
            Slot::Key { len } if ends => {
                self.key_len = len;
                self.slot = Slot::Other;
            }
            Slot::Key { len } => {
                if len < KEY_BYTES {
                    self.key[len] = byte;
                }
                self.slot = Slot::Key {
                    len: (len + 1).min(KEY_BYTES + 1),
                };
            }
            Slot::Id { len } => {
                self.push_id(len, byte);
                if ends {
                    if let Slot::Id { len } = self.slot {
                        self.end_id(len);
                    }
                }
            }
            Slot::Other | Slot::IdValue => {}
        }
        if ends {
            self.in_string = false;
        }
    }

    fn push_id(&mut self, len: usize, byte: u8) {
        if len < ID_BYTES {
            self.token[len] = byte;
        }
        self.slot = Slot::Id {
            len: (len + 1).min(ID_BYTES + 1),
        };
    }

    fn end_id(&mut self, len: usize) {
        self.slot = Slot::Other;
        if len > ID_BYTES || self.id_len.is_some() {
            self.id_spoiled = true;
        } else {
            self.id_len = Some(len);
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

    /// The scan of `text` fed in pieces of every size from 1 to 9 bytes, all agreeing.
    fn scan(text: &str) -> Option<RequestId> {
        let whole = {
            let mut scanner = IdScanner::default();
            scanner.feed(text.as_bytes());
            scanner.reply_id()
        };
        for piece in 1..10 {
            let mut scanner = IdScanner::default();
            for chunk in text.as_bytes().chunks(piece) {
                scanner.feed(chunk);
            }
            assert_eq!(scanner.reply_id(), whole, "pieces of {piece} in {text}");
        }
        whole
    }

    #[test]
    fn the_scanner_finds_the_id_first_or_last() {
        let first = r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"text":"xx"}]}}"#;
        assert_eq!(scan(first), Some(RequestId::Number(5)));
        let last = r#"{"result":{"content":[{"text":"xx"}]},"jsonrpc":"2.0","id":-17}"#;
        assert_eq!(scan(last), Some(RequestId::Number(-17)));
        let error = "\u{feff}{ \"error\" : {\"code\":1,\"message\":\"m\"} ,\r\n \"id\" : 9 }";
        assert_eq!(scan(error), Some(RequestId::Number(9)));
    }

    #[test]
    fn the_scanner_reads_string_ids_with_escapes() {
        let text = r#"{"jsonrpc":"2.0","id":"a\"b\\","result":1}"#;
        assert_eq!(scan(text), Some(RequestId::from(r#"a"b\"#)));
        let text = r#"{"result":"}{\"id\":7,","id":"q-1"}"#;
        assert_eq!(scan(text), Some(RequestId::from("q-1")));
    }

    #[test]
    fn the_scanner_never_takes_a_nested_or_quoted_id() {
        // Only nested ids and ids inside strings: none is the message's.
        let nested = r#"{"jsonrpc":"2.0","result":{"id":3,"items":[{"id":4}]},"x":"\"id\":5"}"#;
        assert_eq!(scan(nested), None);
        // A nested id before the real one, which still counts.
        let both = r#"{"result":{"id":3,"a":[{"id":4},"id"]},"id":8}"#;
        assert_eq!(scan(both), Some(RequestId::Number(8)));
        // A value that looks like a key.
        assert_eq!(
            scan(r#"{"result":"id","x":"id","id":2}"#),
            Some(RequestId::Number(2))
        );
    }

    #[test]
    fn the_scanner_reads_no_id_where_none_is_sure() {
        let none = [
            // A request or notification from the peer: nothing of ours to fail.
            r#"{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}"#,
            r#"{"method":"m","result":1,"id":1}"#,
            // No result or error.
            r#"{"jsonrpc":"2.0","id":1,"params":{}}"#,
            // Ids that are not ids, or are unreadable.
            r#"{"id":null,"result":1}"#,
            r#"{"id":1.5,"result":1}"#,
            r#"{"id":{"a":1},"result":1}"#,
            r#"{"id":[1],"result":1}"#,
            r#"{"id":1,"id":2,"result":1}"#,
            r#"{"id":99999999999999999999999,"result":1}"#,
            // Not one object.
            r#"[{"id":1,"result":1}]"#,
            r#""id":1,"result":1"#,
            r#"{"id":1,"result":1}{"id":2,"result":1}"#,
            "not json",
        ];
        for text in none {
            assert_eq!(scan(text), None, "{text}");
        }
        let long = format!(r#"{{"result":1,"id":"{}"}}"#, "i".repeat(ID_BYTES));
        assert_eq!(scan(&long), None);
        let fits = "i".repeat(ID_BYTES - 2);
        let text = format!(r#"{{"result":1,"id":"{fits}"}}"#);
        assert_eq!(scan(&text), Some(RequestId::from(fits)));
        // A long key is not taken for `id`, whatever its first bytes.
        assert_eq!(scan(r#"{"result":1,"identifier":3}"#), None);
    }

    #[test]
    fn an_oversized_response_reports_its_id_after_the_oversized_event() {
        let payload = "x".repeat(100_000);
        let mut input = format!(r#"{{"jsonrpc":"2.0","id":5,"result":"{payload}"}}"#);
        input.push('\n');
        input.push_str(&format!(
            r#"{{"result":"{payload}","jsonrpc":"2.0","id":"s"}}"#
        ));
        input.push_str("\n{\"id\":7,\"result\":1}\n");
        input.push_str(&format!(r#"{{"method":"m","id":6,"params":"{payload}"}}"#));
        // One log of both callbacks, to show their order.
        let out = std::cell::RefCell::new(Vec::new());
        read_lines_and_replies(
            input.as_bytes(),
            1000,
            |event| match event {
                LineEvent::Line(line) => out
                    .borrow_mut()
                    .push(String::from_utf8_lossy(line).into_owned()),
                LineEvent::Oversized(count) => {
                    out.borrow_mut().push(format!("<oversized {count}>"))
                }
            },
            |id, bytes| out.borrow_mut().push(format!("<reply {id} {bytes}>")),
        )
        .unwrap();
        let first = payload.len() + 36;
        let second = payload.len() + 38;
        assert_eq!(
            out.into_inner(),
            vec![
                format!("<oversized {first}>"),
                format!("<reply 5 {first}>"),
                format!("<oversized {second}>"),
                format!("<reply \"s\" {second}>"),
                "{\"id\":7,\"result\":1}".to_owned(),
                format!("<oversized {}>", payload.len() + 33),
            ]
        );
    }
}
