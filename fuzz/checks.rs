//! The properties the fuzz targets check, in one place: each target in `fuzz_targets/` calls
//! one function here, and `tests/jsonrpc/roundtrip_fuzz_inputs.rs` runs the same functions over the
//! committed seeds and every kept crash input in the normal test suite (it includes this file
//! with `#[path]`). A function panics when a property does not hold.
#![allow(dead_code)]

use std::cell::Cell;
use std::collections::HashSet;
use std::path::Path;
use std::sync::OnceLock;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{json, Value};
use toolwire::config::{ConfigFormat, LoadOptions, ServerEntry};
use toolwire::fuzzing::{read_call, read_lines, LineOut, RawCall};
#[cfg(feature = "http")]
use toolwire::fuzzing::{read_sse, SseOut, SseRead};
use toolwire::jsonrpc::{
    batch_to_line, classify_frame, parse_frame, ErrorCode, Frame, Invalid, Message, ParseError,
    RequestId,
};
use toolwire::{
    CallShape, Error, Harness, HarnessConfig, ServerConfigs, Status, StdioConfig, ToolRegistry,
};

// ---- jsonrpc_frame ----

/// What a rejection of `value` (one message, not a whole frame) must say.
fn check_invalid(value: &Value, invalid: &Invalid) {
    assert!(
        !matches!(
            invalid.error,
            ParseError::NotJson(_) | ParseError::EmptyBatch
        ),
        "{invalid:?} for a parsed message"
    );
    assert_eq!(invalid.error.code(), ErrorCode::INVALID_REQUEST);
    // Formatting the reason never panics.
    let _ = invalid.error.to_string();
    match value.as_object() {
        None => {
            assert!(
                matches!(invalid.error, ParseError::NotAnObject(_)),
                "{invalid:?}"
            );
            assert_eq!(invalid.id, None);
            assert!(!invalid.method_present);
        }
        Some(object) => {
            let id = object
                .get("id")
                .and_then(|id| RequestId::from_value(id).ok());
            assert_eq!(invalid.id, id, "id of {value}");
            assert_eq!(invalid.method_present, object.contains_key("method"));
        }
    }
}

fn round_trip_single(message: &Message) {
    let line = message.to_line();
    assert!(!line.contains('\n'), "newline in {line:?}");
    let reparsed = parse_frame(line.as_bytes());
    assert_eq!(
        reparsed,
        Ok(Frame::Single(message.clone())),
        "{line:?} did not round-trip"
    );
}

/// The `jsonrpc_frame` properties, for the strict parser: `parse_frame` and the classification
/// behind it.
///
/// For any input:
/// * `parse_frame` never panics, and agrees with `serde_json` + `classify_frame`;
/// * text that is not JSON is `NotJson`; the id and `method_present` the lenient scan recovers
///   are there in the text (an id's digits or characters after an `"id"` key, a `"method"` key);
///   every other rejection is -32600 and carries exactly the id and `method_present` that the
///   object shows;
/// * a frame parses as `classify_frame` says, except that a message holding an integer literal
///   outside the 64-bit range (so the text has a run of 19 or more digits) is refused with
///   `IntegerOutOfRange` instead;
/// * an accepted single message serializes on one line and parses back to itself;
/// * the accepted elements of a batch, serialized as a batch, parse back to themselves.
pub fn jsonrpc_frame(data: &[u8]) {
    let parsed = parse_frame(data);
    let value = match serde_json::from_slice::<Value>(data) {
        Ok(value) => value,
        Err(_) => {
            let Err(invalid) = &parsed else {
                panic!("{parsed:?} for text that is not JSON");
            };
            let text = String::from_utf8_lossy(data);
            // A `result` is kept as text in the parser's pass and built only for a message that
            // is otherwise valid, so a number out of range in it (which `serde_json` refuses
            // outright) may meet a -32600 for the rest of the message first.
            if !matches!(invalid.error, ParseError::NotJson(_)) {
                assert!(
                    text.contains("\"result\"")
                        && invalid.error.code() == ErrorCode::INVALID_REQUEST,
                    "{parsed:?} for text that is not JSON"
                );
                return;
            }
            assert_eq!(invalid.error.code(), ErrorCode::PARSE_ERROR);
            if let Some(id) = &invalid.id {
                // The scan decodes escapes, so an id holding an escaped character is in the
                // text only in its escaped form (and `\/` has two); check the plain ones.
                let shown = match id {
                    RequestId::Number(number) => Some(number.to_string()),
                    RequestId::String(text) => (!text
                        .chars()
                        .any(|c| matches!(c, '"' | '\\' | '/') || c.is_control()))
                    .then(|| text.clone()),
                };
                assert!(
                    text.contains("\"id\""),
                    "recovered id {id:?} without an id key"
                );
                if let Some(shown) = shown {
                    assert!(
                        text.contains(&shown),
                        "recovered id {id:?} is not in {text:?}"
                    );
                }
            }
            if invalid.method_present {
                assert!(text.contains("\"method\""), "no method key in {text:?}");
            }
            return;
        }
    };
    let classified = classify_frame(value.clone());
    if classified != parsed {
        let digits = data
            .split(|byte| !byte.is_ascii_digit())
            .any(|run| run.len() >= 19);
        assert!(
            digits,
            "{parsed:?} differs from {classified:?} without a wide integer"
        );
        let wide = |element: &Result<Message, Invalid>| {
            matches!(
                element,
                Err(Invalid {
                    error: ParseError::IntegerOutOfRange(_),
                    ..
                })
            )
        };
        match (&classified, &parsed) {
            (Ok(Frame::Single(_)), Err(invalid)) => {
                assert!(
                    matches!(invalid.error, ParseError::IntegerOutOfRange(_)),
                    "{invalid:?}"
                );
                assert_eq!(invalid.error.code(), ErrorCode::INVALID_REQUEST);
            }
            (Ok(Frame::Batch(expected)), Ok(Frame::Batch(got))) => {
                assert_eq!(expected.len(), got.len());
                for (expected, got) in expected.iter().zip(got) {
                    assert!(expected == got || wide(got), "{expected:?} became {got:?}");
                }
            }
            other => panic!("a wide integer changed {other:?}"),
        }
        return;
    }
    match parsed {
        Ok(Frame::Single(message)) => round_trip_single(&message),
        Ok(Frame::Batch(elements)) => {
            let values = value.as_array().expect("a batch comes from an array");
            assert_eq!(values.len(), elements.len());
            let mut accepted = Vec::new();
            for (value, element) in values.iter().zip(&elements) {
                match element {
                    Ok(message) => {
                        round_trip_single(message);
                        accepted.push(message.clone());
                    }
                    Err(invalid) => check_invalid(value, invalid),
                }
            }
            if !accepted.is_empty() {
                let line = batch_to_line(&accepted);
                assert!(!line.contains('\n'), "newline in {line:?}");
                let expected = Frame::Batch(accepted.into_iter().map(Ok).collect());
                assert_eq!(parse_frame(line.as_bytes()), Ok(expected), "{line:?}");
            }
        }
        Err(invalid) => match &value {
            Value::Array(elements) => {
                assert!(elements.is_empty());
                assert_eq!(invalid.error, ParseError::EmptyBatch);
                assert_eq!(invalid.id, None);
            }
            other => check_invalid(other, &invalid),
        },
    }
}

// ---- line_framing ----

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The newline-separated pieces of the stream; a final piece counts only when not empty.
fn pieces(input: &[u8]) -> Vec<&[u8]> {
    let mut pieces: Vec<&[u8]> = input.split(|&byte| byte == b'\n').collect();
    if pieces.last().is_some_and(|last| last.is_empty()) {
        pieces.pop();
    }
    pieces
}

fn clean(piece: &[u8]) -> &[u8] {
    let piece = piece.strip_suffix(b"\r").unwrap_or(piece);
    piece.strip_prefix(BOM).unwrap_or(piece)
}

fn blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

fn line_model(input: &[u8], cap: usize) -> Vec<LineOut> {
    pieces(input)
        .into_iter()
        .filter_map(|piece| {
            if piece.len() > cap {
                Some(LineOut::Oversized(piece.len() as u64))
            } else {
                let line = clean(piece);
                (!blank(line)).then(|| LineOut::Line(line.to_vec()))
            }
        })
        .collect()
}

/// The `line_framing` properties, for the stdio line reader (newline framing with a length cap
/// enforced while reading).
///
/// Input layout: byte 0 picks the cap (0..=63 bytes), byte 1 how many bytes each `read` hands
/// out (0 = as many as asked, else 1..=16, so lines arrive split across reads); the rest is the
/// stream. Checked for every input:
/// * no emitted line contains `\n`, is longer than the cap, or is blank;
/// * every oversized report is over the cap;
/// * counts add up: each newline-separated piece of the stream gives exactly one event (a line
///   or an oversized report) unless it is blank, and the bytes of the events, the blank pieces
///   and the newlines add up to the input;
/// * the events equal a plain model: split on `\n`, a piece over the cap is oversized, else
///   strip one trailing `\r` then one leading byte-order mark, and drop it when blank.
pub fn line_framing(data: &[u8]) {
    let [cap, chunk, input @ ..] = data else {
        return;
    };
    let cap = usize::from(cap % 64);
    let chunk = usize::from(chunk % 17);
    let events = read_lines(input, cap, chunk);

    for event in &events {
        match event {
            LineOut::Line(line) => {
                assert!(!line.contains(&b'\n'), "newline inside {line:?}");
                assert!(line.len() <= cap, "{} bytes past the cap {cap}", line.len());
                assert!(!blank(line), "blank line {line:?} reported");
            }
            LineOut::Oversized(count) => {
                assert!(
                    *count > cap as u64,
                    "oversized {count} within the cap {cap}"
                )
            }
        }
    }

    // Counts add up.
    let pieces = pieces(input);
    let blank_pieces: Vec<&[u8]> = pieces
        .iter()
        .copied()
        .filter(|piece| piece.len() <= cap && blank(clean(piece)))
        .collect();
    assert_eq!(events.len() + blank_pieces.len(), pieces.len());
    let newlines = input.iter().filter(|&&byte| byte == b'\n').count() as u64;
    let mut accounted = newlines + blank_pieces.iter().map(|p| p.len() as u64).sum::<u64>();
    let mut kept = pieces
        .iter()
        .filter(|piece| !(piece.len() <= cap && blank(clean(piece))));
    for event in &events {
        let raw = kept.next().expect("one piece per event");
        match event {
            LineOut::Oversized(count) => {
                assert_eq!(*count, raw.len() as u64);
                accounted += count;
            }
            LineOut::Line(line) => {
                // Only a `\r` and a byte-order mark are ever stripped.
                let stripped = raw.len() - line.len();
                assert!(stripped <= 1 + BOM.len(), "{stripped} bytes stripped");
                accounted += raw.len() as u64;
            }
        }
    }
    assert_eq!(accounted, input.len() as u64);

    assert_eq!(events, line_model(input, cap));
}

// ---- sse_reader ----

/// One dispatched block of the SSE model (everything up to a blank line), whatever the cap.
#[cfg(feature = "http")]
#[derive(Debug, Clone, PartialEq, Eq)]
struct SseBlock {
    /// Its lines' bytes, without line ends.
    bytes: u64,
    /// The type and data it dispatches without a cap (`None`: its data buffer was empty).
    event: Option<(String, String)>,
}

#[cfg(feature = "http")]
struct SseModel {
    read: SseRead,
    blocks: Vec<SseBlock>,
}

/// Splits a stream (after its byte-order mark) into the lines that have a line end (CRLF,
/// LF or CR); whatever follows the last line end is not a line yet.
#[cfg(feature = "http")]
fn sse_lines<T: PartialEq + Copy>(stream: &[T], cr: T, lf: T) -> Vec<&[T]> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while at < stream.len() {
        if stream[at] == lf {
            lines.push(&stream[start..at]);
            at += 1;
            start = at;
        } else if stream[at] == cr {
            lines.push(&stream[start..at]);
            at += if stream.get(at + 1) == Some(&lf) {
                2
            } else {
                1
            };
            start = at;
        } else {
            at += 1;
        }
    }
    lines
}

/// The HTML event-stream interpretation over the whole input at once, plus the cap rule
/// when `cap` is given: an event (the lines up to a blank line) whose lines add up to more
/// than `cap` bytes is reported as oversized with its size; its lines are processed only
/// while the running total stays within the cap.
#[cfg(feature = "http")]
fn sse_model(input: &[u8], cap: Option<usize>) -> SseModel {
    let stream = input.strip_prefix(BOM).unwrap_or(input);
    // The spec decodes the whole stream first; the byte lines only count bytes.
    let text: Vec<char> = String::from_utf8_lossy(stream).chars().collect();
    let text_lines = sse_lines(&text, '\r', '\n');
    let byte_lines = sse_lines(stream, b'\r', b'\n');
    assert_eq!(
        text_lines.len(),
        byte_lines.len(),
        "decoding moved a line end"
    );

    let mut read = SseRead {
        items: Vec::new(),
        last_event_id: None,
        retry: None,
    };
    let mut blocks = Vec::new();
    let mut data = String::new();
    let mut event_type = String::new();
    let mut id_buffer: Option<String> = None;
    let mut last_id: Option<String> = None;
    let mut bytes = 0u64;
    let mut over = false;
    for (chars, raw) in text_lines.into_iter().zip(byte_lines) {
        if raw.is_empty() {
            // Dispatch.
            last_id = id_buffer.clone();
            let event = (!data.is_empty()).then(|| {
                data.pop(); // the last LF
                let kind = if event_type.is_empty() {
                    "message".to_owned()
                } else {
                    event_type.clone()
                };
                (kind, data.clone())
            });
            if over {
                read.items.push(SseOut::Oversized(bytes));
            } else if let Some((kind, data)) = &event {
                read.items.push(SseOut::Event {
                    event: kind.clone(),
                    data: data.clone(),
                    id: last_id.clone(),
                });
            }
            blocks.push(SseBlock { bytes, event });
            data.clear();
            event_type.clear();
            bytes = 0;
            over = false;
            continue;
        }
        bytes += raw.len() as u64;
        if cap.is_some_and(|cap| bytes > cap as u64) {
            over = true;
        }
        if over {
            continue;
        }
        let line: String = chars.iter().collect();
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.find(':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (line.as_str(), ""),
        };
        match field {
            "event" => event_type = value.to_owned(),
            "data" => {
                data.push_str(value);
                data.push('\n');
            }
            "id" if !value.contains('\0') => id_buffer = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                let millis = value.bytes().try_fold(0u64, |n, digit| {
                    n.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
                });
                if let Some(millis) = millis {
                    read.retry = Some(std::time::Duration::from_millis(millis));
                }
            }
            _ => {}
        }
    }
    read.last_event_id = last_id.filter(|id| !id.is_empty());
    SseModel { read, blocks }
}

/// The fewest bytes of lines that can have produced `event` and `data`: four per `data`
/// line, one per character of their values, and an `event` line unless the type is the
/// default.
#[cfg(feature = "http")]
fn sse_least_bytes(event: &str, data: &str) -> usize {
    let lines = data.split('\n').count();
    let value_chars = data.chars().count() - (lines - 1);
    let type_line = if event == "message" {
        0
    } else {
        "event".len() + event.chars().count()
    };
    4 * lines + value_chars + type_line
}

/// The `sse_reader` properties, for the Streamable HTTP transport's SSE reader (the HTML
/// event-stream interpretation with a per-event size cap).
///
/// Input layout: byte 0 is the event cap (0..=255 bytes), byte 1 how many bytes each `read`
/// hands out (1..=16); the rest is the stream. Checked for every input:
/// * the reader never panics, and reading in those chunks gives the same events, last event
///   id and retry as one `feed` of the whole stream;
/// * with a cap of the input's length (large enough for any event) nothing is oversized and
///   the events, last event id and retry equal a whole-input model of the spec (BOM; CRLF, LF
///   and CR line ends; comments; one space stripped after the colon; `data` joined with LF;
///   type `message` by default; `id` without NUL; `retry` all digits; a blank line dispatches
///   unless the data buffer is empty; an unfinished event at the end is discarded);
/// * with the small cap, the result equals the model with its cap rule, no delivered event
///   can come from more bytes of lines than the cap, and every oversized report is over it;
/// * the stream goes on after an oversized event: every event of the spec model whose lines
///   fit the cap is delivered with the same type and data, in order, the others are reported
///   oversized with their sizes.
#[cfg(feature = "http")]
pub fn sse_reader(data: &[u8]) {
    let [cap, chunk, input @ ..] = data else {
        return;
    };
    let cap = usize::from(*cap);
    let chunk = usize::from(chunk % 16) + 1;

    let whole = read_sse(input, cap, 0);
    let chunked = read_sse(input, cap, chunk);
    assert_eq!(
        chunked, whole,
        "reads of {chunk} bytes differ from one feed"
    );

    // A cap large enough for anything: the spec.
    let spec = sse_model(input, None);
    let large = read_sse(input, input.len(), chunk);
    assert!(
        !large
            .items
            .iter()
            .any(|item| matches!(item, SseOut::Oversized(_))),
        "oversized with a cap of the whole input: {large:?}"
    );
    assert_eq!(large, spec.read, "the reader differs from the spec model");

    // The small cap.
    for item in &whole.items {
        match item {
            SseOut::Event { event, data, .. } => {
                let least = sse_least_bytes(event, data);
                assert!(
                    least <= cap,
                    "{item:?} needs {least} bytes, over the cap {cap}"
                );
            }
            SseOut::Oversized(bytes) => {
                assert!(
                    *bytes > cap as u64,
                    "oversized {bytes} within the cap {cap}"
                )
            }
        }
    }
    assert_eq!(
        whole,
        sse_model(input, Some(cap)).read,
        "the reader differs from the model with the cap {cap}"
    );
    // The stream goes on: the same events, in order, wherever an oversized one was.
    let shown: Vec<SseBlock> = whole
        .items
        .iter()
        .map(|item| match item {
            SseOut::Event { event, data, .. } => SseBlock {
                bytes: 0,
                event: Some((event.clone(), data.clone())),
            },
            SseOut::Oversized(bytes) => SseBlock {
                bytes: *bytes,
                event: None,
            },
        })
        .collect();
    let expected: Vec<SseBlock> = spec
        .blocks
        .into_iter()
        .filter_map(|block| {
            if block.bytes > cap as u64 {
                Some(SseBlock {
                    bytes: block.bytes,
                    event: None,
                })
            } else {
                block.event.map(|event| SseBlock {
                    bytes: 0,
                    event: Some(event),
                })
            }
        })
        .collect();
    assert_eq!(
        shown, expected,
        "events lost or changed around an oversized one"
    );
}

// ---- raw_call ----

/// Whether JSON text repeats a key in some object (comparing keys after unescaping), or
/// `None` when it is not one JSON value: a plain scan with serde_json that, unlike
/// `serde_json::Value`, sees every key.
fn repeats_a_key(text: &str) -> Option<bool> {
    struct Scan<'a>(&'a Cell<bool>);

    impl<'de> DeserializeSeed<'de> for Scan<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Scan<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while seq.next_element_seed(Scan(self.0))?.is_some() {}
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut keys = HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                if !keys.insert(key) {
                    self.0.set(true);
                }
                map.next_value_seed(Scan(self.0))?;
            }
            Ok(())
        }
    }

    let repeated = Cell::new(false);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    Scan(&repeated).deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(repeated.get())
}

/// The names a call may carry before the registry is asked, spelled out: 1 to 128 ASCII
/// letters, digits, `_`, `-`, `.` and `:` (any name some model API or MCP accepts; the rest
/// is `INVALID`).
fn name_model(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
}

/// What the harness should accept, given the call's text as a JSON value when it is strict
/// JSON (one value, no repeated key; else `None`): exactly the shape's fields with their
/// types, and a name of the rule.
fn raw_call_model(shape: CallShape, strict: Option<&Value>) -> Option<RawCall> {
    fn exactly(object: &serde_json::Map<String, Value>, fields: &[&str]) -> bool {
        object.len() == fields.len() && fields.iter().all(|field| object.contains_key(*field))
    }
    /// Every field of `required`, and no field outside `required` and `optional`.
    fn within(
        object: &serde_json::Map<String, Value>,
        required: &[&str],
        optional: &[&str],
    ) -> bool {
        required.iter().all(|field| object.contains_key(*field))
            && object
                .keys()
                .all(|key| required.contains(&key.as_str()) || optional.contains(&key.as_str()))
    }
    /// Absent, null, or an object with a string `type`.
    fn caller_ok(object: &serde_json::Map<String, Value>) -> bool {
        match object.get("caller") {
            None | Some(Value::Null) => true,
            Some(Value::Object(caller)) => caller.get("type").is_some_and(Value::is_string),
            Some(_) => false,
        }
    }
    /// A string holding a JSON object with no repeated key.
    fn arguments_of(value: &Value) -> Option<Value> {
        let text = value.as_str()?;
        if repeats_a_key(text)? {
            return None;
        }
        serde_json::from_str(text).ok()
    }
    fn id(object: &serde_json::Map<String, Value>) -> Option<String> {
        object["id"]
            .as_str()
            .filter(|id| !id.is_empty())
            .map(str::to_owned)
    }
    let object = strict?.as_object()?;
    let call = match shape {
        CallShape::OpenAi => {
            if !within(object, &["id", "type", "function"], &["index"])
                || object["type"] != "function"
            {
                return None;
            }
            // A streamed call keeps its index: a non-negative integer.
            if object
                .get("index")
                .is_some_and(|index| index.as_u64().is_none())
            {
                return None;
            }
            let function = object["function"].as_object()?;
            if !exactly(function, &["name", "arguments"]) {
                return None;
            }
            RawCall {
                call_id: Some(id(object)?),
                name: function["name"].as_str()?.to_owned(),
                arguments: arguments_of(&function["arguments"])?,
            }
        }
        CallShape::OpenAiResponses => {
            let optional = ["id", "status", "caller", "namespace"];
            if !within(object, &["type", "call_id", "name", "arguments"], &optional)
                || object["type"] != "function_call"
                || !caller_ok(object)
            {
                return None;
            }
            let item_id_ok = matches!(
                object.get("id"),
                None | Some(Value::Null | Value::String(_))
            );
            // Only a completed call runs, and only outside a namespace.
            let status_ok = match object.get("status") {
                None | Some(Value::Null) => true,
                Some(status) => status == "completed",
            };
            let namespace_ok = matches!(object.get("namespace"), None | Some(Value::Null));
            if !(item_id_ok && status_ok && namespace_ok) {
                return None;
            }
            let call_id = object["call_id"]
                .as_str()
                .filter(|id| !id.is_empty())?
                .to_owned();
            RawCall {
                call_id: Some(call_id),
                name: object["name"].as_str()?.to_owned(),
                arguments: arguments_of(&object["arguments"])?,
            }
        }
        CallShape::Anthropic => {
            if !within(object, &["type", "id", "name", "input"], &["caller"])
                || object["type"] != "tool_use"
                || !caller_ok(object)
            {
                return None;
            }
            RawCall {
                call_id: Some(id(object)?),
                name: object["name"].as_str()?.to_owned(),
                arguments: object["input"].clone(),
            }
        }
        CallShape::Gemini => {
            if !within(object, &["functionCall"], &["thoughtSignature"])
                || object
                    .get("thoughtSignature")
                    .is_some_and(|s| !s.is_string())
            {
                return None;
            }
            let call = object["functionCall"].as_object()?;
            if !within(call, &["name"], &["id", "args"]) {
                return None;
            }
            // The id is optional, but never empty; the arguments default to {}.
            let call_id = match call.get("id") {
                None => None,
                Some(id) => Some(id.as_str().filter(|id| !id.is_empty())?.to_owned()),
            };
            RawCall {
                call_id,
                name: call["name"].as_str()?.to_owned(),
                arguments: call.get("args").cloned().unwrap_or_else(|| json!({})),
            }
        }
        _ => {
            if !exactly(object, &["tool", "arguments"]) {
                return None;
            }
            RawCall {
                call_id: None,
                name: object["tool"].as_str()?.to_owned(),
                arguments: object["arguments"].clone(),
            }
        }
    };
    (call.arguments.is_object() && name_model(&call.name)).then_some(call)
}

/// The call written back in `shape`, as a model would send it.
fn raw_call_text(shape: CallShape, call: &RawCall) -> String {
    let id = call.call_id.clone().unwrap_or_default();
    match shape {
        CallShape::OpenAi => json!({
            "id": id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments.to_string()},
        }),
        CallShape::OpenAiResponses => json!({
            "type": "function_call",
            "call_id": id,
            "name": call.name,
            "arguments": call.arguments.to_string(),
        }),
        CallShape::Anthropic => {
            json!({"type": "tool_use", "id": id, "name": call.name, "input": call.arguments})
        }
        CallShape::Gemini => match &call.call_id {
            Some(id) => {
                json!({"functionCall": {"id": id, "name": call.name, "args": call.arguments}})
            }
            None => json!({"functionCall": {"name": call.name, "args": call.arguments}}),
        },
        _ => json!({"tool": call.name, "arguments": call.arguments}),
    }
    .to_string()
}

/// In the order of the input layout (see [`raw_call`]).
const SHAPES: [CallShape; 5] = [
    CallShape::OpenAi,
    CallShape::Anthropic,
    CallShape::Plain,
    CallShape::OpenAiResponses,
    CallShape::Gemini,
];
/// A harness with no tools: `handle` then runs every check and ends in `UNKNOWN_TOOL` for a
/// call that passed them, and never runs anything.
fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        Harness::new(ToolRegistry::new(), HarnessConfig::default().workers(1)).expect("a harness")
    })
}

/// The `raw_call` properties, for the harness's reading of a raw tool call: the size check,
/// the strict JSON parse, the exact fields of the OpenAI Chat Completions, OpenAI Responses,
/// Anthropic, Gemini and plain shapes, and the tool-name rule.
///
/// Input layout: byte 0 picks the shape (`(byte % 3 + 3 * (byte / 6 % 2)) % 5` indexes
/// OpenAI, Anthropic, plain, Responses, Gemini), so the digits `0` to `5` spell the first
/// three shapes (twice each: the byte once also picked one of two name profiles, which the one
/// tool-name rule replaced), and `6`, `7`, `9` and `:` spell Responses and Gemini; the rest,
/// read as UTF-8 (lossily), is the raw call, read in that shape.
/// Checked for every input:
/// * nothing panics, and `Harness::handle` (with no tools) agrees: `UNKNOWN_TOOL` with the
///   call's id and name for an accepted call, `INVALID` with the same reason and id for a
///   rejected one;
/// * exactly what a model accepts is accepted: one JSON value with no repeated key at any
///   depth (nor in an OpenAI `arguments` string) and nothing after it, the shape's required
///   fields and no others but its optional ones, with their types (a streamed OpenAI call's
///   `index` a non-negative integer; a Responses item `completed` or without status, and in no
///   namespace), a non-empty id (optional for Gemini), object arguments (`args` may be left
///   out for Gemini), a name some model API or MCP accepts (written out here independently);
/// * text with a repeated key is refused, saying "duplicate key";
/// * a rejection has a non-empty reason, and a call id only when it is not empty;
/// * an integer outside the 64-bit range is refused by name (only text with a run of 19 or
///   more digits holds one; such text is not compared with the model);
/// * the size limit counts characters: at exactly the input's length nothing changes, one
///   below it the call is refused for its size, with no id;
/// * an accepted call written back in its shape reads back as the same call.
pub fn raw_call(data: &[u8]) {
    let [pick, raw @ ..] = data else {
        return;
    };
    let shape = SHAPES[usize::from(pick % 3 + 3 * (pick / 6 % 2)) % SHAPES.len()];
    let raw = String::from_utf8_lossy(raw);
    let raw = raw.as_ref();
    let limit = HarnessConfig::default().get_max_input_chars();
    let chars = raw.chars().count();
    let repeated = repeats_a_key(raw);
    let strict: Option<Value> =
        (repeated == Some(false)).then(|| serde_json::from_str(raw).expect("scanned JSON parses"));
    let read = read_call(shape, raw, limit);
    match &read {
        Ok(call) => {
            assert!(name_model(&call.name), "{call:?}");
            assert!(call.arguments.is_object(), "{call:?}");
            assert!(call.call_id.as_ref().is_none_or(|id| !id.is_empty()));
            // Written back, it reads the same.
            let text = raw_call_text(shape, call);
            assert_eq!(
                read_call(shape, &text, usize::MAX).as_ref(),
                Ok(call),
                "{text} does not read back"
            );
        }
        Err(error) => {
            assert!(!error.reason.trim().is_empty(), "an empty reason");
            assert!(error.call_id.as_ref().is_none_or(|id| !id.is_empty()));
        }
    }
    if repeated == Some(true) {
        let error = read.as_ref().expect_err("a repeated key was accepted");
        assert!(error.reason.contains("duplicate key"), "{error:?}");
    }
    if chars > 0 {
        let error =
            read_call(shape, raw, chars - 1).expect_err("a call over the size limit was accepted");
        assert!(error.reason.contains("characters long"), "{error:?}");
        assert_eq!(error.call_id, None);
    }
    if chars > limit {
        return;
    }
    // Integers outside the 64-bit range are refused by name; the model does not tokenize
    // numbers, so such inputs (which need a run of 19 or more digits) are only checked for
    // that.
    let long_digits = raw
        .as_bytes()
        .split(|byte| !byte.is_ascii_digit())
        .any(|run| run.len() >= 19);
    if let Err(error) = &read {
        if error.reason.contains("outside the 64-bit range") {
            assert!(long_digits, "{error:?} without a wide integer");
        }
    }
    if long_digits {
        return;
    }
    assert_eq!(
        read.as_ref().ok(),
        raw_call_model(shape, strict.as_ref()).as_ref(),
        "{shape:?}"
    );
    // The size limit, at the boundary.
    assert_eq!(read_call(shape, raw, chars), read);
    // The public path says the same.
    let reply = harness().handle(shape, raw);
    match &read {
        Ok(call) => {
            assert_eq!(reply.outcome.status, Status::UnknownTool, "{reply:?}");
            assert_eq!(reply.call_id, call.call_id);
            assert_eq!(reply.tool.as_deref(), Some(call.name.as_str()));
        }
        Err(error) => {
            assert_eq!(reply.outcome.status, Status::Invalid, "{reply:?}");
            assert_eq!(reply.outcome.detail, error.reason);
            assert_eq!(reply.call_id, error.call_id);
        }
    }
}

// ---- config ----

const FORMATS: [ConfigFormat; 4] = [
    ConfigFormat::ClaudeDesktop,
    ConfigFormat::Cursor,
    ConfigFormat::ClaudeCode,
    ConfigFormat::VsCode,
];

/// Whether an object anywhere in `value` has the key `key`.
fn has_key_anywhere(value: &Value, key: &str) -> bool {
    match value {
        Value::Object(object) => object
            .iter()
            .any(|(name, value)| name == key || has_key_anywhere(value, key)),
        Value::Array(items) => items.iter().any(|item| has_key_anywhere(item, key)),
        _ => false,
    }
}

fn string_keys(object: &serde_json::Map<String, Value>, field: &str) -> Vec<String> {
    object
        .get(field)
        .and_then(Value::as_object)
        .map(|map| map.keys().cloned().collect())
        .unwrap_or_default()
}

/// Checks what `ServerConfigs::parse` made of `text` in `format` against the document.
/// `literal`: no variable is expanded (Claude Desktop), so values are the document's own;
/// `workspace`: the folder relative `cwd`s resolve against.
fn check_configs(
    text: &str,
    format: ConfigFormat,
    parsed: &Result<ServerConfigs, Error>,
    workspace: Option<&Path>,
) {
    let error = match parsed {
        Err(Error::Config(message)) => Some(message.as_str()),
        Err(other) => panic!("not a config error: {other:?}"),
        Ok(_) => None,
    };
    if let Some(message) = error {
        assert!(
            message.starts_with("config text: ") && message.len() > "config text: ".len(),
            "{message:?} names nothing"
        );
    }
    let Ok(document) = serde_json::from_str::<Value>(text) else {
        let message = error.expect("text that is not JSON was accepted");
        // The strict reader stops at the first fault: a key repeated before the text goes
        // bad is the one it names.
        assert!(
            message.starts_with("config text: not valid JSON")
                || message.starts_with("config text: duplicate key "),
            "{message}"
        );
        return;
    };
    // The document is read strictly: a key repeated in any object is refused by name, never
    // read as the last one.
    if repeats_a_key(text) == Some(true) {
        let message = error.expect("a repeated key was accepted");
        assert!(
            message.starts_with("config text: duplicate key "),
            "{message}"
        );
        return;
    }
    // An integer outside 64 bits is refused by name; the model does not tokenize numbers, so
    // only text with a run of 19 or more digits (which such an integer needs) may be refused
    // so, and such text is not compared with the model further.
    let long_digits = text
        .as_bytes()
        .split(|byte| !byte.is_ascii_digit())
        .any(|run| run.len() >= 19);
    if let Some(message) = error.filter(|message| message.contains("outside the 64-bit range")) {
        assert!(long_digits, "{message} without a wide integer");
        assert!(
            message.starts_with("config text: the integer "),
            "{message}"
        );
        return;
    }
    let Some(top) = document.as_object() else {
        assert_eq!(error, Some("config text: the top level is not an object"));
        return;
    };
    let key = if format == ConfigFormat::VsCode {
        "servers"
    } else {
        "mcpServers"
    };
    let servers = match top.get(key) {
        None => serde_json::Map::new(),
        Some(Value::Object(servers)) => servers.clone(),
        Some(_) => {
            let expected = format!("config text: `{key}` must be an object of servers");
            assert_eq!(error, Some(expected.as_str()));
            return;
        }
    };
    // One entry with both `command` and `url` fails the whole file.
    let doomed = servers.values().any(|entry| {
        entry
            .as_object()
            .is_some_and(|object| object.contains_key("command") && object.contains_key("url"))
    });
    let configs =
        match parsed {
            Err(_) => {
                // It names a server of the file and a field.
                let message = error.unwrap();
                assert!(
                    servers.keys().any(|name| message
                        .starts_with(&format!("config text: server `{name}`, field `"))),
                    "{message:?} names no server of the file"
                );
                return;
            }
            Ok(configs) => configs,
        };
    assert!(
        !doomed,
        "an entry with both `command` and `url` was accepted"
    );
    assert_eq!(configs.format(), format);
    let names: Vec<&str> = configs.names().collect();
    let keys: Vec<&str> = servers.keys().map(String::as_str).collect();
    assert_eq!(names, keys, "the servers are not the file's");
    let literal = format == ConfigFormat::ClaudeDesktop;
    let defaults = StdioConfig::new("x");
    for (name, entry) in &servers {
        let object = entry
            .as_object()
            .expect("an entry that is not an object was accepted");
        let kind = object
            .get("type")
            .map(|kind| kind.as_str().expect("a type not a string"));
        match configs.get(name).expect("a listed server") {
            ServerEntry::Stdio(stdio) => {
                assert!(object.contains_key("command") && !object.contains_key("url"));
                assert!(!object.contains_key("headers"));
                assert!(
                    matches!(kind, None | Some("stdio")),
                    "{kind:?} read as stdio"
                );
                let program = stdio.get_program().to_string_lossy();
                assert!(!program.trim().is_empty(), "an empty command in {name:?}");
                let args = object.get("args").and_then(Value::as_array);
                assert_eq!(stdio.get_args().len(), args.map_or(0, Vec::len));
                let env: Vec<String> = stdio
                    .get_envs()
                    .keys()
                    .map(|key| key.to_string_lossy().into_owned())
                    .collect();
                assert_eq!(env, string_keys(object, "env"));
                // Every name and value can be passed on by the OS as written.
                for (key, value) in stdio.get_envs() {
                    let (key, value) = (key.to_string_lossy(), value.to_string_lossy());
                    assert!(
                        !key.is_empty() && !key.contains(['=', '\0']),
                        "the variable name {key:?} was accepted"
                    );
                    assert!(!value.contains('\0'), "a NUL in the value of {key:?}");
                }
                let cwd = object.get("cwd").and_then(Value::as_str);
                assert_eq!(stdio.get_current_dir().is_some(), cwd.is_some());
                // The bounds are the defaults, whatever the file says.
                assert!(!stdio.get_inherit_env());
                assert_eq!(stdio.get_max_line_bytes(), defaults.get_max_line_bytes());
                assert_eq!(
                    stdio.get_stderr_tail_bytes(),
                    defaults.get_stderr_tail_bytes()
                );
                assert_eq!(stdio.get_writer_queue(), defaults.get_writer_queue());
                if literal {
                    assert_eq!(program, object["command"].as_str().unwrap());
                    let args: Vec<&str> = args
                        .into_iter()
                        .flatten()
                        .map(|arg| arg.as_str().unwrap())
                        .collect();
                    let read: Vec<String> = stdio
                        .get_args()
                        .iter()
                        .map(|arg| arg.to_string_lossy().into_owned())
                        .collect();
                    assert_eq!(read, args);
                    for (key, value) in object
                        .get("env")
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                    {
                        let read = &stdio.get_envs()[&std::ffi::OsString::from(key)];
                        assert_eq!(read.to_string_lossy(), value.as_str().unwrap());
                    }
                    if let (Some(cwd), Some(workspace)) = (cwd, workspace) {
                        assert_eq!(stdio.get_current_dir(), Some(workspace.join(cwd).as_path()));
                    }
                }
            }
            ServerEntry::Http { url, headers } => {
                assert!(object.contains_key("url") && !object.contains_key("command"));
                assert!(
                    matches!(
                        kind,
                        None | Some("http" | "streamable-http" | "streamableHttp")
                    ),
                    "{kind:?} read as HTTP"
                );
                let lower = url.to_ascii_lowercase();
                assert!(
                    lower.starts_with("http://") || lower.starts_with("https://"),
                    "{url:?} accepted"
                );
                let names: Vec<String> = headers.iter().map(|(name, _)| name.clone()).collect();
                assert_eq!(names, string_keys(object, "headers"));
                if literal {
                    assert_eq!(url, object["url"].as_str().unwrap());
                    for ((_, value), (_, given)) in headers.iter().zip(
                        object
                            .get("headers")
                            .and_then(Value::as_object)
                            .into_iter()
                            .flatten(),
                    ) {
                        assert_eq!(value, given.as_str().unwrap());
                    }
                }
            }
            ServerEntry::Sse { url, .. } => {
                assert!(object.contains_key("url") && !object.contains_key("command"));
                assert_eq!(
                    kind,
                    Some("sse"),
                    "{kind:?} read as the legacy SSE transport"
                );
                let lower = url.to_ascii_lowercase();
                assert!(
                    lower.starts_with("http://") || lower.starts_with("https://"),
                    "{url:?} accepted for sse"
                );
            }
            ServerEntry::WebSocket { url, .. } => {
                assert!(object.contains_key("url") && !object.contains_key("command"));
                assert_ne!(kind, Some("sse"), "a WebSocket URL read as sse");
                let lower = url.to_ascii_lowercase();
                assert!(
                    lower.starts_with("ws://") || lower.starts_with("wss://"),
                    "{url:?} read as WebSocket"
                );
            }
            ServerEntry::Socket(_) => {
                assert!(object.contains_key("url") && !object.contains_key("command"));
                let url = object["url"]
                    .as_str()
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                if literal {
                    assert!(
                        url.starts_with("tcp://") || url.starts_with("unix:"),
                        "{url:?} read as a socket"
                    );
                }
            }
            other => panic!("an entry of an unknown kind: {other:?}"),
        }
    }
}

/// The `config` properties, for the config-file readers (`ServerConfigs::parse`).
///
/// The input, read as UTF-8 (lossily), is the file's text. It is read with the default
/// options (the format detected from the content, the process environment), twice, and in
/// each of the four formats with fixed variables, a workspace folder and no process
/// environment. A text with an `envFile` key anywhere is skipped: VS Code would read that
/// file from disk. Checked for every input:
/// * nothing panics, and reading the same text twice gives the same result;
/// * every error is a config error that names something: not JSON, a repeated key, an
///   integer outside 64 bits, the top level, the servers key, or a server of the file and
///   its field;
/// * the document is read strictly: text with a key repeated in any object (found by the
///   model's own scan) is refused with "duplicate key", and only text with a run of 19 or
///   more digits is refused for an integer outside the 64-bit range;
/// * an accepted file lists exactly the servers of its servers key (`servers` for VS Code,
///   else `mcpServers`); each entry is stdio or a URL's, never both: a stdio entry comes from
///   an object with `command` and neither `url` nor `headers`, an HTTP, SSE (`type: "sse"`),
///   WebSocket (`ws://`, `wss://`) or socket (`tcp://`, `unix:`) one from an object with a
///   `url` and no `command`; a file with an entry that has both fails;
/// * a stdio entry has a non-empty command, one argument per `args` element, the file's
///   `env` keys (each a name the OS can take: not empty, no `=` or NUL; no NUL in a value),
///   a `cwd` exactly when the file has one, and the default bounds; an HTTP entry
///   has an `http://` or `https://` URL and the file's header names, in order;
/// * Claude Desktop values are literal: the command, arguments, env values, URL and headers
///   are the file's own, and a `cwd` is resolved against the workspace folder.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();
    if serde_json::from_str::<Value>(text)
        .is_ok_and(|document| has_key_anywhere(&document, "envFile"))
    {
        return;
    }
    let detected = ServerConfigs::parse(text, &LoadOptions::new());
    let again = ServerConfigs::parse(text, &LoadOptions::new());
    assert_eq!(
        format!("{detected:?}"),
        format!("{again:?}"),
        "two reads differ"
    );
    let format = match serde_json::from_str::<Value>(text) {
        Ok(document)
            if document.get("servers").is_some() && document.get("mcpServers").is_none() =>
        {
            ConfigFormat::VsCode
        }
        _ => ConfigFormat::ClaudeCode,
    };
    check_configs(text, format, &detected, None);

    let workspace = Path::new("/work/space");
    for format in FORMATS {
        let options = LoadOptions::new()
            .format(format)
            .process_env(false)
            .var("HOME", "/home/fuzz")
            .var("TOKEN", "t0k3n")
            .var("EMPTY", "")
            .input("key", "input-value")
            .workspace_folder(workspace);
        let parsed = ServerConfigs::parse(text, &options);
        check_configs(text, format, &parsed, Some(workspace));
    }
}

// ---- http_request ----

/// The limits the HTTP reader runs with under the fuzzer: small, so they are reached.
#[cfg(feature = "server")]
const HTTP_HEAD: usize = 512;
#[cfg(feature = "server")]
const HTTP_HEADERS: usize = 16;
#[cfg(feature = "server")]
const HTTP_BODY: usize = 256;

/// The Streamable HTTP server's request reader (`src/server/http/request.rs`): the head
/// through httparse within 512 bytes and 16 headers, then the body by `Content-Length` or
/// chunked framing within 256 bytes. Byte 0 picks how many bytes each read hands out
/// (`% 17`, 0: as many as asked); the rest is what the client sent.
///
/// Never panics; reads of any size give the same outcome as one read of everything; what is
/// accepted has a token method, a target, lower-case header names and visible-ASCII values
/// without surrounding spaces, at most 16 headers, a body within its cap (exactly the
/// declared length, found in the input, for `Content-Length`); a refusal is one of the
/// statuses the server answers with, with a reason; anything sent after a whole request
/// changes nothing about it; a body over the cap is refused (413) whatever follows.
#[cfg(feature = "server")]
pub fn http_request(data: &[u8]) {
    use toolwire::fuzzing::read_http_request;
    let [chunk, input @ ..] = data else {
        return;
    };
    let chunk = usize::from(chunk % 17);
    let read = |bytes: &[u8], chunk: usize| {
        read_http_request(bytes, chunk, HTTP_HEAD, HTTP_HEADERS, HTTP_BODY)
    };
    let whole = read(input, 0);
    assert_eq!(
        read(input, chunk),
        whole,
        "the outcome depends on the read size {chunk}"
    );
    match &whole {
        Ok(request) => {
            let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            assert!(
                !request.method.is_empty() && request.method.bytes().all(token),
                "{request:?}"
            );
            assert!(!request.target.is_empty(), "{request:?}");
            assert!(request.minor <= 1);
            assert!(request.headers.len() <= HTTP_HEADERS);
            for (name, value) in &request.headers {
                assert!(
                    !name.is_empty() && name.bytes().all(|b| token(b) && !b.is_ascii_uppercase()),
                    "{name:?}"
                );
                assert!(
                    value
                        .bytes()
                        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b)),
                    "{value:?}"
                );
                assert_eq!(value.trim(), value, "{value:?}");
            }
            assert!(request.body.len() <= HTTP_BODY);
            let length = request
                .headers
                .iter()
                .find(|(name, _)| name == "content-length")
                .map(|(_, value)| {
                    value
                        .split(',')
                        .next()
                        .unwrap()
                        .trim()
                        .parse::<usize>()
                        .unwrap()
                });
            if let Some(length) = length {
                assert_eq!(request.body.len(), length);
                if length > 0 {
                    assert!(input
                        .windows(length)
                        .any(|window| window == request.body.as_slice()));
                }
            }
            // What follows a whole request belongs to the next one.
            let mut more = input.to_vec();
            more.extend_from_slice(b"GET /next HTTP/1.1\r\n\r\n");
            assert_eq!(
                read(&more, chunk),
                whole,
                "bytes after the request changed it"
            );
        }
        Err((status, reason)) => {
            assert!(
                [0, 400, 413, 431, 501, 505].contains(status),
                "status {status}: {reason}"
            );
            assert!(*status == 0 || !reason.is_empty());
        }
    }
    // Past the cap, whatever the body: refused before it is read.
    if let Ok(request) = &whole {
        if request
            .headers
            .iter()
            .all(|(name, _)| name != "transfer-encoding")
        {
            let mut big = format!(
                "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
                HTTP_BODY + 1
            )
            .into_bytes();
            big.extend_from_slice(input);
            assert_eq!(read(&big, chunk).map(|_| ()).unwrap_err().0, 413);
        }
    }
}

// ---- server_frames ----

/// The ids a frame's requests may be answered under: its well-formed requests' (single or in
/// a batch), and those of requests gone wrong whose id could be read (answered -32600).
#[cfg(feature = "server")]
fn request_ids(line: &[u8]) -> Vec<RequestId> {
    // A request gone wrong is answered with its id when one can be made out, whatever the
    // fault (text that is not JSON, or nested too deep, included).
    let invalid_id = |invalid: Invalid| invalid.id.filter(|_| invalid.method_present);
    match parse_frame(line) {
        Ok(Frame::Single(Message::Request(request))) => vec![request.id],
        Ok(Frame::Batch(elements)) => elements
            .into_iter()
            .filter_map(|element| match element {
                Ok(Message::Request(request)) => Some(request.id),
                Err(invalid) => invalid_id(invalid),
                _ => None,
            })
            .collect(),
        Err(invalid) => invalid_id(invalid).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// The input's lines as the stdio line reader hands them on: split on `\n`, each without a
/// trailing `\r` and a leading byte-order mark (the reader strips both, see
/// `transport::lines`).
#[cfg(feature = "server")]
fn stdin_lines(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    data.split(|&b| b == b'\n').map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
    })
}

/// Frames through a stdio MCP server's whole dispatch (`toolwire::fuzzing::serve_frames`:
/// the JSON-RPC client's inbound path, the request sink, both protocol eras, inline and
/// pooled handlers, a tool that asks for input). The input is the server's stdin, split on
/// newlines.
///
/// Never panics; every frame the server writes is one line of valid JSON-RPC (responses,
/// notifications, and no request but the pooled tool's elicitation); every response
/// answers a request of the input or has a null id (a request whose id could not be read),
/// and no id is answered more often than it was sent; when nothing is cancelled and every
/// request id is used once, every request gets exactly one answer; a 2026-07-28 result
/// (its request's `_meta` holds a protocol version and capabilities) carries `resultType`,
/// and a handshake-era one carries none.
#[cfg(feature = "server")]
pub fn server_frames(data: &[u8]) {
    use std::collections::HashMap;
    use toolwire::fuzzing::serve_frames;
    let out = serve_frames(data);
    let mut sent: HashMap<RequestId, usize> = HashMap::new();
    let mut stateless: HashSet<RequestId> = HashSet::new();
    for line in stdin_lines(data) {
        for id in request_ids(line) {
            *sent.entry(id).or_default() += 1;
        }
        if let Ok(Frame::Single(Message::Request(request))) = parse_frame(line) {
            let meta = request.params.as_ref().and_then(|p| p.get("_meta"));
            let modern = meta.is_some_and(|m| {
                m.get("io.modelcontextprotocol/protocolVersion").is_some()
                    && m.get("io.modelcontextprotocol/clientCapabilities")
                        .is_some_and(Value::is_object)
            });
            if modern {
                stateless.insert(request.id);
            }
        }
    }
    // A subscription is answered only when it ends, which this input never makes it do.
    let mut long_lived: HashSet<RequestId> = HashSet::new();
    for line in stdin_lines(data) {
        if let Ok(Frame::Single(Message::Request(request))) = parse_frame(line) {
            if request.method == "subscriptions/listen" {
                long_lived.insert(request.id);
            }
        }
    }
    let mut answered: HashMap<RequestId, usize> = HashMap::new();
    for frame in &out {
        assert!(!frame.contains('\n'), "a frame with a newline: {frame:?}");
        let parsed = parse_frame(frame.as_bytes())
            .unwrap_or_else(|invalid| panic!("the server wrote {frame:?}: {invalid:?}"));
        let messages = match parsed {
            Frame::Single(message) => vec![message],
            Frame::Batch(elements) => elements
                .into_iter()
                .map(|element| element.unwrap_or_else(|invalid| panic!("{frame}: {invalid:?}")))
                .collect(),
        };
        for message in messages {
            match message {
                // The one thing this server asks a handshake-era client: its pooled tool's
                // elicitation (given up at once: the fuzzer never answers).
                Message::Request(request) => {
                    assert_eq!(request.method, "elicitation/create", "{request:?}")
                }
                Message::Notification(_) => {}
                Message::Response(response) => {
                    let Some(id) = response.id else { continue };
                    let count = answered.entry(id.clone()).or_default();
                    *count += 1;
                    let times = sent.get(&id).copied().unwrap_or(0);
                    assert!(
                        *count <= times,
                        "id {id} answered {count} times, sent {times}: {frame}"
                    );
                    if let Ok(result) = &response.payload {
                        if stateless.contains(&id) && sent[&id] == 1 {
                            assert!(result.get("resultType").is_some(), "no resultType: {frame}");
                        }
                    }
                }
            }
        }
    }
    let text = String::from_utf8_lossy(data);
    let unique = sent.values().all(|&count| count == 1);
    if unique && !text.contains("cancelled") {
        for id in sent.keys().filter(|id| !long_lived.contains(*id)) {
            assert_eq!(
                answered.get(id).copied().unwrap_or(0),
                1,
                "request {id} got no answer"
            );
        }
    }
}

// ---- tool_definition ----

/// A tool definition as `tools/list` lists it (`toolwire::Tool::from_raw`), for any text.
///
/// Never panics, however deep the text; a tool it reads keeps its text; its schemas are usable
/// exactly when it names no problem (`input_schema` and `output_schema` then never fail, so a
/// schema is never taken for "none"), and a problem names the tool and is what the failing
/// schema's accessor returns.
pub fn tool_definition(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(raw) = serde_json::value::RawValue::from_string(text.to_owned()) else {
        return;
    };
    let kept = raw.get().to_owned();
    let Ok(tool) = toolwire::Tool::from_raw(raw) else {
        return;
    };
    assert_eq!(tool.raw_json(), kept);
    let input = tool.input_schema();
    let output = tool.output_schema();
    match tool.schema_problem() {
        None => {
            let input = input.unwrap_or_else(|error| panic!("{error} for {kept}"));
            assert!(input.is_object(), "{input}");
            let output = output.unwrap_or_else(|error| panic!("{error} for {kept}"));
            assert_eq!(output.is_some(), tool.has_output_schema());
        }
        Some(problem) => {
            assert!(
                problem.contains(&format!("tool `{}`", tool.name)),
                "{problem}"
            );
            let failed: Vec<String> = [input.err(), output.err()]
                .into_iter()
                .flatten()
                .map(|error| error.to_string())
                .collect();
            assert!(
                failed.iter().any(|error| error.contains(problem)),
                "{problem} vs {failed:?}"
            );
        }
    }
}

// ---- resp_reply ----

/// The deepest nesting of `reply`'s arrays, and whether each bulk string and array keeps to
/// `limits`.
#[cfg(feature = "redis")]
fn resp_within(
    reply: &toolwire::fuzzing::RespReply,
    limits: &toolwire::fuzzing::RespLimits,
) -> usize {
    use toolwire::fuzzing::RespReply;
    match reply {
        RespReply::Bulk(Some(bytes)) => {
            assert!(
                bytes.len() <= limits.max_bulk,
                "a bulk string past the limit: {reply:?}"
            );
            0
        }
        RespReply::Array(Some(items)) => {
            assert!(
                items.len() <= limits.max_items,
                "an array past the limit: {reply:?}"
            );
            1 + items
                .iter()
                .map(|item| resp_within(item, limits))
                .max()
                .unwrap_or(0)
        }
        _ => 0,
    }
}

/// Fuzzes the Redis store's RESP2 reply reader (untrusted bytes from the network).
///
/// Input layout: byte 0 is the longest bulk string (0..=63); byte 1 the most items of an
/// array (bits 0-2: 0..=7), the deepest nesting (bits 3-4: 1..=4) and the most bytes of a
/// reply (bits 5-7: 16 + 64 × n); the rest is the stream. Checked for every input: no panic;
/// a reply read keeps to every limit and took at most the total; written back it is read as
/// the same reply, from no more bytes than it took; the bytes it took alone read the same.
#[cfg(feature = "redis")]
pub fn resp_reply(data: &[u8]) {
    use toolwire::fuzzing::{read_resp, write_resp, RespLimits};
    if data.len() < 2 {
        return;
    }
    let limits = RespLimits {
        max_bulk: usize::from(data[0] & 63),
        max_items: usize::from(data[1] & 7),
        max_depth: usize::from((data[1] >> 3) & 3) + 1,
        max_total: 16 + 64 * usize::from(data[1] >> 5),
    };
    let stream = &data[2..];
    let Ok((reply, used)) = read_resp(stream, limits) else {
        return;
    };
    assert!(
        used <= stream.len() && used <= limits.max_total,
        "took {used} bytes"
    );
    assert!(
        resp_within(&reply, &limits) <= limits.max_depth,
        "nested too deep: {reply:?}"
    );
    let written = write_resp(&reply);
    assert!(
        written.len() <= used,
        "{reply:?} written back is longer than read"
    );
    assert_eq!(
        read_resp(&written, limits),
        Ok((reply.clone(), written.len()))
    );
    assert_eq!(read_resp(&stream[..used], limits), Ok((reply, used)));
}
