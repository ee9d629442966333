//! A small, spec-exact reader of `text/event-stream` bodies (the HTML "event stream
//! interpretation"), bounded per event.
//!
//! What it does, in the spec's terms: a leading BOM is skipped; lines end at CRLF, LF or CR
//! (a CR at the end of one chunk and an LF at the start of the next are one line end); a line
//! starting with `:` is a comment; `field: value` loses one space after the colon; a line
//! without a colon is a field with an empty value; `data` lines are joined with LF; `event`
//! sets the type; `id` sets the last event id unless it contains NUL; `retry` takes only ASCII
//! digits; a blank line dispatches the event, unless its data buffer is empty; an event not
//! ended by a blank line when the stream ends is discarded; unknown fields are ignored.
//!
//! The one addition is the size cap: an event whose lines add up to more than the cap is not
//! buffered past it; it is reported as [`SseItem::Oversized`] with its full size when it ends,
//! and the stream goes on with the next event.

use std::io::{self, Read};
use std::time::Duration;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event` field, or "message" when none was given.
    pub(crate) event: String,
    /// The `data` lines joined with LF.
    pub(crate) data: String,
    /// The last event id in force when the event was dispatched, if any.
    pub(crate) id: Option<String>,
}

/// What the parser hands out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SseItem {
    /// A complete event.
    Event(SseEvent),
    /// An event larger than the cap was skipped; `bytes` counts its lines (without line ends).
    Oversized {
        /// The size of the skipped event.
        bytes: u64,
    },
}

/// An incremental parser: feed it chunks as they arrive.
#[derive(Debug)]
pub(crate) struct SseParser {
    max_event_bytes: usize,
    /// The current line (never longer than the event budget left).
    line: Vec<u8>,
    /// Bytes the current line had, buffered or not: zero means a blank line.
    line_bytes: u64,
    /// The previous chunk ended with CR: an LF at the start of the next one is part of it.
    skip_lf: bool,
    /// Still at the very start of the stream (a BOM may follow).
    at_start: bool,
    /// Bytes of the BOM matched so far at the start.
    bom_matched: usize,
    data: String,
    /// At least one `data` field was seen in the current event.
    has_data: bool,
    event_type: String,
    /// The last event id buffer (kept across events, as the spec says).
    id_buffer: Option<String>,
    /// The event source's last event id: the buffer as of the last blank line.
    last_event_id: Option<String>,
    retry: Option<Duration>,
    /// Bytes of the current event so far.
    event_bytes: u64,
    /// The current event went over the cap: skip to its end.
    oversized: bool,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    /// A parser that skips events whose lines add up to more than `max_event_bytes`.
    pub(crate) fn new(max_event_bytes: usize) -> SseParser {
        SseParser {
            max_event_bytes,
            line: Vec::new(),
            line_bytes: 0,
            skip_lf: false,
            at_start: true,
            bom_matched: 0,
            data: String::new(),
            has_data: false,
            event_type: String::new(),
            id_buffer: None,
            last_event_id: None,
            retry: None,
            event_bytes: 0,
            oversized: false,
        }
    }

    /// A parser for a resumed stream: the last event id and retry carry over, as a
    /// reconnecting event source keeps them.
    pub(crate) fn resumed(&self) -> SseParser {
        let mut next = SseParser::new(self.max_event_bytes);
        next.id_buffer = self.last_event_id.clone();
        next.last_event_id = self.last_event_id.clone();
        next.retry = self.retry;
        next
    }

    /// The id to send as `Last-Event-ID` when reconnecting (none if the server never sent
    /// one, or reset it with an empty `id`).
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref().filter(|id| !id.is_empty())
    }

    /// The reconnection time the server asked for with `retry:`.
    pub(crate) fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Parses one chunk, handing every complete event (or skipped oversized event) to `out`.
    pub(crate) fn feed(&mut self, mut chunk: &[u8], out: &mut dyn FnMut(SseItem)) {
        if self.at_start {
            while self.bom_matched < BOM.len() {
                match chunk.first() {
                    None => return,
                    Some(&byte) if byte == BOM[self.bom_matched] => {
                        self.bom_matched += 1;
                        chunk = &chunk[1..];
                    }
                    Some(_) => {
                        // Not a BOM after all: the bytes matched so far are content.
                        let matched = self.bom_matched;
                        self.at_start = false;
                        self.feed(&BOM[..matched], out);
                        break;
                    }
                }
            }
            self.at_start = false;
        }
        if self.skip_lf {
            self.skip_lf = false;
            if chunk.first() == Some(&b'\n') {
                chunk = &chunk[1..];
            }
        }
        while !chunk.is_empty() {
            match chunk
                .iter()
                .position(|&byte| byte == b'\n' || byte == b'\r')
            {
                Some(end) => {
                    self.push_line_bytes(&chunk[..end]);
                    let terminator = chunk[end];
                    chunk = &chunk[end + 1..];
                    if terminator == b'\r' {
                        match chunk.first() {
                            Some(b'\n') => chunk = &chunk[1..],
                            None => self.skip_lf = true,
                            Some(_) => {}
                        }
                    }
                    self.end_line(out);
                }
                None => {
                    self.push_line_bytes(chunk);
                    chunk = &[];
                }
            }
        }
    }

    /// Adds bytes to the current line, counting them against the event's budget.
    fn push_line_bytes(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.event_bytes += bytes.len() as u64;
        self.line_bytes += bytes.len() as u64;
        if self.oversized {
            return;
        }
        if self.event_bytes > self.max_event_bytes as u64 {
            self.oversized = true;
            self.line = Vec::new();
            self.data = String::new();
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    fn end_line(&mut self, out: &mut dyn FnMut(SseItem)) {
        if std::mem::take(&mut self.line_bytes) == 0 {
            self.dispatch(out);
            return;
        }
        if self.oversized {
            // Skipping: only a blank line (handled above) ends the event.
            self.line.clear();
            return;
        }
        let line = std::mem::take(&mut self.line);
        self.process_line(&line);
        // Keep the allocation for the next line when it is small.
        if line.capacity() <= 64 * 1024 {
            self.line = line;
            self.line.clear();
        }
    }

    fn process_line(&mut self, line: &[u8]) {
        if line.first() == Some(&b':') {
            return;
        }
        let (field, value) = match line.iter().position(|&byte| byte == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                let value = value.strip_prefix(b" ").unwrap_or(value);
                (&line[..colon], value)
            }
            None => (line, &[][..]),
        };
        match field {
            b"event" => self.event_type = String::from_utf8_lossy(value).into_owned(),
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                self.data.push_str(&String::from_utf8_lossy(value));
            }
            b"id" if !value.contains(&0) => {
                self.id_buffer = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits only, so UTF-8; too many digits to fit is ignored.
                if let Ok(millis) = String::from_utf8_lossy(value).parse::<u64>() {
                    self.retry = Some(Duration::from_millis(millis));
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut dyn FnMut(SseItem)) {
        self.last_event_id = self.id_buffer.clone();
        let bytes = std::mem::take(&mut self.event_bytes);
        let event_type = std::mem::take(&mut self.event_type);
        let has_data = std::mem::take(&mut self.has_data);
        let data = std::mem::take(&mut self.data);
        if std::mem::take(&mut self.oversized) {
            out(SseItem::Oversized { bytes });
            return;
        }
        if !has_data {
            return;
        }
        out(SseItem::Event(SseEvent {
            event: if event_type.is_empty() {
                "message".to_owned()
            } else {
                event_type
            },
            data,
            id: self.last_event_id.clone(),
        }));
    }
}

/// How [`read_stream`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamEnd {
    /// The body ended (an unfinished event was discarded).
    Eof,
    /// `stop` said so after a chunk.
    Stopped,
}

/// Reads a stream through `parser`, handing out items as they complete, until the body ends,
/// fails, or `stop` returns true (checked after every chunk).
pub(crate) fn read_stream(
    mut reader: impl Read,
    parser: &mut SseParser,
    out: &mut dyn FnMut(SseItem),
    stop: &dyn Fn() -> bool,
) -> io::Result<StreamEnd> {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => return Ok(StreamEnd::Eof),
            Ok(count) => {
                parser.feed(&buffer[..count], out);
                if stop() {
                    return Ok(StreamEnd::Stopped);
                }
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_chunks(chunks: &[&[u8]], cap: usize) -> (Vec<SseItem>, SseParser) {
        let mut parser = SseParser::new(cap);
        let mut items = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, &mut |item| items.push(item));
        }
        (items, parser)
    }

    fn events(input: &str) -> Vec<SseItem> {
        parse_chunks(&[input.as_bytes()], 1 << 20).0
    }

    fn event(kind: &str, data: &str, id: Option<&str>) -> SseItem {
        SseItem::Event(SseEvent {
            event: kind.into(),
            data: data.into(),
            id: id.map(Into::into),
        })
    }

    #[test]
    fn fields_comments_and_defaults() {
        let items = events(
            ": keep-alive\nevent: message\nid: 7\ndata: {\"a\":1}\n\ndata:x\nunknown: y\n\n",
        );
        assert_eq!(
            items,
            vec![
                event("message", "{\"a\":1}", Some("7")),
                // The id buffer carries over to later events.
                event("message", "x", Some("7")),
            ]
        );
    }

    #[test]
    fn multi_line_data_is_joined_with_lf() {
        let items = events("data: one\ndata:  two\ndata\n\n");
        // One space is removed after the colon, not two; `data` alone adds an empty line.
        assert_eq!(items, vec![event("message", "one\n two\n", None)]);
    }

    #[test]
    fn crlf_lf_and_cr_line_ends_even_split_across_chunks() {
        let (items, _) = parse_chunks(
            &[
                b"data: a\r",
                b"\n\r",
                b"\ndata: b\r\rdata: c\n",
                b"\n",
                b"data: d\r\n\r\n",
            ],
            1024,
        );
        assert_eq!(
            items,
            vec![
                event("message", "a", None),
                event("message", "b", None),
                event("message", "c", None),
                event("message", "d", None),
            ]
        );
    }

    #[test]
    fn a_line_split_byte_by_byte_parses_the_same() {
        let input =
            b"\xEF\xBB\xBFevent: note\r\nid: e-1\r\nretry: 250\r\ndata: {\"x\": [1, 2]}\r\n\r\n";
        let chunks: Vec<&[u8]> = input.chunks(1).collect();
        let (items, parser) = parse_chunks(&chunks, 1024);
        assert_eq!(items, vec![event("note", "{\"x\": [1, 2]}", Some("e-1"))]);
        assert_eq!(parser.retry(), Some(Duration::from_millis(250)));
        assert_eq!(parser.last_event_id(), Some("e-1"));
    }

    #[test]
    fn empty_data_buffer_dispatches_nothing_but_sets_the_id() {
        // The priming event of the sse-retry scenario: an id, a retry and an empty `data:`.
        let (items, parser) = parse_chunks(&[b"id: event-1\nretry: 500\ndata: \n\n"], 1024);
        assert_eq!(items, vec![event("message", "", Some("event-1"))]);
        assert_eq!(parser.last_event_id(), Some("event-1"));
        assert_eq!(parser.retry(), Some(Duration::from_millis(500)));
        // No data field at all: nothing is dispatched, the id still takes effect.
        let (items, parser) = parse_chunks(&[b"id: 9\n\n"], 1024);
        assert!(items.is_empty());
        assert_eq!(parser.last_event_id(), Some("9"));
    }

    #[test]
    fn retry_needs_digits_and_id_must_not_contain_nul() {
        let (_, parser) = parse_chunks(&[b"retry: 1s\nid: a\0b\ndata: x\n\n"], 1024);
        assert_eq!(parser.retry(), None);
        assert_eq!(parser.last_event_id(), None);
        let (_, parser) = parse_chunks(&[b"id: 1\ndata: x\n\nid\ndata: y\n\n"], 1024);
        // An empty id resets it: nothing to resume from.
        assert_eq!(parser.last_event_id(), None);
    }

    #[test]
    fn an_unfinished_event_is_discarded_at_the_end() {
        let (items, parser) = parse_chunks(&[b"data: done\n\nid: 2\ndata: {\"trunc"], 1024);
        assert_eq!(items, vec![event("message", "done", None)]);
        // The id of the unfinished event never took effect.
        assert_eq!(parser.last_event_id(), None);
    }

    #[test]
    fn an_oversized_event_is_skipped_and_the_stream_goes_on() {
        let big = "x".repeat(100);
        let input = format!("data: small\n\ndata: {big}\ndata: {big}\n\ndata: after\n\n");
        let chunks: Vec<&[u8]> = input.as_bytes().chunks(7).collect();
        let (items, _) = parse_chunks(&chunks, 64);
        assert_eq!(
            items,
            vec![
                event("message", "small", None),
                SseItem::Oversized { bytes: 212 },
                event("message", "after", None),
            ]
        );
    }

    #[test]
    fn a_false_bom_start_is_content() {
        let (items, _) = parse_chunks(&[b"\xEF", b"data: z\n\n"], 1024);
        // The lone byte becomes part of the first line's field name: an unknown field.
        assert_eq!(items, Vec::<SseItem>::new());
        let (items, _) = parse_chunks(&[b"\xEF\xBB", b"\xBFdata: z\n\n"], 1024);
        assert_eq!(items, vec![event("message", "z", None)]);
    }

    #[test]
    fn resumed_parser_keeps_id_and_retry() {
        let (_, parser) = parse_chunks(&[b"id: e-3\nretry: 40\ndata: a\n\n"], 1024);
        let resumed = parser.resumed();
        assert_eq!(resumed.last_event_id(), Some("e-3"));
        assert_eq!(resumed.retry(), Some(Duration::from_millis(40)));
    }

    #[test]
    fn read_stream_reads_to_the_end() {
        let mut parser = SseParser::new(1024);
        let mut items = Vec::new();
        let end = read_stream(
            &b"data: 1\n\ndata: 2\n\n"[..],
            &mut parser,
            &mut |item| items.push(item),
            &|| false,
        )
        .unwrap();
        assert_eq!(end, StreamEnd::Eof);
        assert_eq!(items.len(), 2);
    }
}
