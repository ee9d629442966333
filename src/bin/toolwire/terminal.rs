//! What reaches a terminal. A server's text (tool descriptions and results, error messages,
//! progress and log lines) is shown, never obeyed: a server must not be able to clear the
//! screen, retitle the window or recolour what follows.
//!
//! Human output shows every control character other than newline and tab (C0 U+0000–U+001F,
//! DEL U+007F, C1 U+0080–U+009F) the way Rust writes it in a string: `\u{1b}` for ESC, `\u{7}`
//! for BEL, `\u{9b}` for the one-byte CSI, `\u{d}` for a carriage return. Nothing else
//! changes (a backslash stays a backslash), so text without control characters prints as it
//! came. Table cells and the progress bar's message also escape newline and tab, since a cell
//! or a bar is one line.
//!
//! JSON output (`--json`, the transcript) stays exact JSON: serde already escapes C0; DEL and
//! C1, which JSON allows raw, are written as `\u007f` … `\u009f`, which parse back to the same
//! strings.
//!
//! Everything the command writes goes through [`crate::output::emit`],
//! [`crate::output::emit_err`] or [`crate::output::emit_json`], which use these; the logger
//! and the progress bar use them too.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;

/// `text` with every control character except newline and tab escaped.
pub fn shown(text: &str) -> Cow<'_, str> {
    escape(text, |c| c != '\n' && c != '\t')
}

/// `text` with every control character escaped, newline and tab included: for one line.
pub fn shown_line(text: &str) -> Cow<'_, str> {
    escape(text, |_| true)
}

fn escape(text: &str, escaped: impl Fn(char) -> bool) -> Cow<'_, str> {
    let hides = |c: char| c.is_control() && escaped(c);
    if !text.chars().any(hides) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hides(c) {
            let _ = write!(out, "{}", c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Pretty JSON that holds no raw control character.
pub fn json_pretty(value: &Value) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    escape_raw_controls(text)
}

/// One line of compact JSON that holds no raw control character.
pub fn json_line(value: &Value) -> String {
    escape_raw_controls(value.to_string())
}

/// Writes the DEL and C1 characters serde leaves raw as `\u00XX`. In serialized JSON they can
/// only stand inside strings (everything else is ASCII), where the escape means the same
/// character.
fn escape_raw_controls(text: String) -> String {
    if !text.chars().any(char::is_control) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_control() && c != '\n' {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn controls_are_shown_escaped() {
        assert_eq!(
            shown("a\u{1b}[2J\u{1b}]0;pwned\u{7}b\u{9b}31m\u{7f}\r\n\tc"),
            "a\\u{1b}[2J\\u{1b}]0;pwned\\u{7}b\\u{9b}31m\\u{7f}\\u{d}\n\tc"
        );
        assert_eq!(shown_line("a\nb\tc"), "a\\u{a}b\\u{9}c");
        assert!(matches!(shown("plain \\ text, é"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_stays_exact() {
        let value = json!({"text": "\u{1b}[2J\u{9b}31m\u{7f}\u{85}", "n": 1});
        for text in [json_pretty(&value), json_line(&value)] {
            assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text}");
            assert!(text.contains("\\u009b"), "{text}");
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
        }
    }
}
