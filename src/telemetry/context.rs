//! W3C Trace Context (`traceparent`, `tracestate`): parsed strictly and within bounds, since
//! both arrive from peers in `params._meta`, and written in the one form the recommendation
//! allows.

use std::fmt;

/// The longest `traceparent` read: version 00 is 55 characters; a later version may append
/// fields, and anything past this is refused.
const MAX_TRACEPARENT: usize = 256;
/// The longest `tracestate` kept (the recommendation's 512 characters); a longer one is
/// dropped whole.
pub const MAX_TRACESTATE: usize = 512;
/// The most `tracestate` list members kept (the recommendation's 32).
const MAX_TRACESTATE_MEMBERS: usize = 32;

/// A span's identity as it travels: its trace, its own id, the sampled flag, and the vendors'
/// `tracestate`, passed on unchanged.
#[derive(Clone, PartialEq, Eq)]
pub struct SpanContext {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    pub(crate) flags: u8,
    pub(crate) state: Option<Box<str>>,
}

impl fmt::Debug for SpanContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpanContext")
            .field("traceparent", &self.traceparent())
            .field("tracestate", &self.state)
            .finish()
    }
}

impl SpanContext {
    /// The context a `traceparent` value (and, when present, a `tracestate` value) gives.
    /// `None` for a value that breaks the format: wrong length or characters, uppercase hex,
    /// version `ff`, an all-zero trace or span id. An invalid or oversized `tracestate` is
    /// dropped (the parent is still used), as the recommendation says.
    pub fn from_headers(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
        let (trace_id, span_id, flags) = parse_traceparent(traceparent)?;
        Some(SpanContext {
            trace_id,
            span_id,
            flags,
            state: tracestate.and_then(parse_tracestate),
        })
    }

    /// The `traceparent` value: `00-{trace id}-{span id}-{flags}`, lowercase hex.
    pub fn traceparent(&self) -> String {
        let mut text = String::with_capacity(55);
        text.push_str("00-");
        push_hex(&mut text, &self.trace_id);
        text.push('-');
        push_hex(&mut text, &self.span_id);
        text.push('-');
        push_hex(&mut text, &[self.flags]);
        text
    }

    /// The `tracestate` value to pass on, when there is one.
    pub fn tracestate(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// The trace id, 32 lowercase hex digits.
    pub fn trace_id_hex(&self) -> String {
        hex(&self.trace_id)
    }

    /// The span id, 16 lowercase hex digits.
    pub fn span_id_hex(&self) -> String {
        hex(&self.span_id)
    }

    /// Whether the trace is sampled (flag `01`): spans under an unsampled parent are not
    /// recorded, only passed on (`parentbased_always_on`).
    pub fn is_sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len() * 2);
    push_hex(&mut text, bytes);
    text
}

fn push_hex(text: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
}

/// Lowercase hex only, as the recommendation requires.
fn unhex<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    if text.len() != N * 2 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (slot, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *slot = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(out)
}

fn parse_traceparent(text: &str) -> Option<([u8; 16], [u8; 8], u8)> {
    let bytes = text.as_bytes();
    if bytes.len() < 55 || bytes.len() > MAX_TRACEPARENT {
        return None;
    }
    let [version] = unhex::<1>(&bytes[0..2])?;
    if version == 0xff || bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
        return None;
    }
    // Version 00 is exactly 55 characters; a later version may go on after a `-`.
    if (version == 0 && bytes.len() != 55) || (bytes.len() > 55 && bytes[55] != b'-') {
        return None;
    }
    let trace_id = unhex::<16>(&bytes[3..35])?;
    let span_id = unhex::<8>(&bytes[36..52])?;
    let [flags] = unhex::<1>(&bytes[53..55])?;
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    // Flags other than `sampled` are not passed on by a version-00 writer.
    Some((trace_id, span_id, flags & 1))
}

/// A `tracestate` list, its empty members and surrounding spaces dropped; `None` when it has
/// a malformed member, too many members or too many characters.
fn parse_tracestate(text: &str) -> Option<Box<str>> {
    if text.len() > MAX_TRACESTATE {
        return None;
    }
    let mut kept = String::with_capacity(text.len());
    let mut members = 0;
    for member in text.split(',') {
        let member = member.trim_matches([' ', '\t']);
        if member.is_empty() {
            continue;
        }
        let (key, value) = member.split_once('=')?;
        if !valid_key(key) || !valid_value(value) {
            return None;
        }
        members += 1;
        if members > MAX_TRACESTATE_MEMBERS {
            return None;
        }
        if !kept.is_empty() {
            kept.push(',');
        }
        kept.push_str(member);
    }
    (!kept.is_empty()).then(|| kept.into_boxed_str())
}

/// `simple-key` or `tenant@system`: lowercase letters, digits, `_ - * /`, a letter (or a
/// digit, for a tenant) first, at most 256 characters.
fn valid_key(key: &str) -> bool {
    let part = |text: &str, limit: usize, digit_first: bool| {
        let mut chars = text.bytes();
        let Some(first) = chars.next() else {
            return false;
        };
        text.len() <= limit
            && (first.is_ascii_lowercase() || (digit_first && first.is_ascii_digit()))
            && chars.all(|c| {
                c.is_ascii_lowercase()
                    || c.is_ascii_digit()
                    || matches!(c, b'_' | b'-' | b'*' | b'/')
            })
    };
    match key.split_once('@') {
        None => part(key, 256, false),
        Some((tenant, system)) => part(tenant, 241, true) && part(system, 14, false),
    }
}

/// Printable ASCII but `,` and `=`, at most 256 characters, not ending in a space.
fn valid_value(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 256
        && !value.ends_with(' ')
        && value
            .bytes()
            .all(|c| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=')
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_round_trips() {
        let context = SpanContext::from_headers(GOOD, Some("rojo=00f067aa0ba902b7")).unwrap();
        assert_eq!(context.traceparent(), GOOD);
        assert_eq!(context.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.span_id_hex(), "00f067aa0ba902b7");
        assert!(context.is_sampled());
        assert_eq!(context.tracestate(), Some("rojo=00f067aa0ba902b7"));
        let unsampled = SpanContext::from_headers(&GOOD.replace("-01", "-00"), None).unwrap();
        assert!(!unsampled.is_sampled());
    }

    #[test]
    fn hostile_traceparents_are_refused() {
        let long = format!("{GOOD}{}", "-x".repeat(10_000));
        let bad = [
            "",
            "00",
            &GOOD[..54],
            &format!("{GOOD}0"),
            &format!("{GOOD}-more"), // version 00 has nothing after the flags
            &GOOD.to_uppercase(),
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n",
            "00-4bf92f3577b34da6a3ce929d0e0e47é6-00f067aa0ba902b7-01",
            &long,
        ];
        for text in bad {
            assert!(SpanContext::from_headers(text, None).is_none(), "{text:?}");
        }
        // A later version may carry more after a `-`; only the sampled flag is kept.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-extra";
        let context = SpanContext::from_headers(later, None).unwrap();
        assert_eq!(
            context.traceparent(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
    }

    #[test]
    fn a_bad_tracestate_is_dropped_and_the_parent_kept() {
        let cases = [
            "=novalue",
            "key",
            "Upper=1",
            "k=v=w",
            "k=tab\tin",
            "k=del\u{7f}",
            "k=é",
            &"a=b,".repeat(33),
            &format!("k={}", "v".repeat(600)),
        ];
        for state in cases {
            let context = SpanContext::from_headers(GOOD, Some(state)).unwrap();
            assert_eq!(context.tracestate(), None, "{state:?}");
        }
        let context =
            SpanContext::from_headers(GOOD, Some(" congo=t61rcWkgMzE , ,tenant@vendor=x "))
                .unwrap();
        assert_eq!(
            context.tracestate(),
            Some("congo=t61rcWkgMzE,tenant@vendor=x")
        );
    }
}
