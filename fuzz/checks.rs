//! The properties the fuzz targets check, in one place: each target in `fuzz_targets/` calls
//! one function here, and `tests/roundtrip_fuzz_inputs.rs` runs the same functions over the
//! committed seeds and every kept crash input in the normal test suite (it includes this file
//! with `#[path]`). A function panics when a property does not hold.
#![allow(dead_code)]

use serde_json::Value;
use toolwire::fuzzing::{read_lines, LineOut};
use toolwire::{
    batch_to_line, classify_frame, parse_frame, ErrorCode, Frame, Invalid, Message, ParseError,
    RequestId,
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
/// * text that is not JSON is `NotJson` with no id; every other rejection is -32600 and carries
///   exactly the id and `method_present` that the object shows;
/// * an accepted single message serializes on one line and parses back to itself;
/// * the accepted elements of a batch, serialized as a batch, parse back to themselves.
pub fn jsonrpc_frame(data: &[u8]) {
    let parsed = parse_frame(data);
    let value = match serde_json::from_slice::<Value>(data) {
        Ok(value) => value,
        Err(_) => {
            assert!(
                matches!(
                    &parsed,
                    Err(Invalid {
                        id: None,
                        error: ParseError::NotJson(_),
                        method_present: false
                    })
                ),
                "{parsed:?} for text that is not JSON"
            );
            assert_eq!(parsed.unwrap_err().error.code(), ErrorCode::PARSE_ERROR);
            return;
        }
    };
    assert_eq!(classify_frame(value.clone()), parsed);
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
