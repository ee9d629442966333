//! Walks over whole JSON values that never recurse: the size and depth checks of a schema run
//! before anything else touches it, so a `Value` built in Rust 10,000 levels deep is refused
//! without a deep call stack; and instances are shown in messages cut to a few dozen
//! characters, whatever their size or depth.

use std::fmt::Write as _;

use serde_json::Value;

/// Why a document is over a bound.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Oversize {
    /// Nested deeper than the bound (the depth reached, which is bound + 1).
    Depth(usize),
    /// More compact JSON bytes than the bound (the count so far, which is over it).
    Bytes(usize),
}

/// The length of `text` as a JSON string literal, quotes included.
fn string_len(text: &str) -> usize {
    let mut length = 2;
    for character in text.chars() {
        length += match character {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        };
    }
    length
}

struct Counter(usize);

impl std::fmt::Write for Counter {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.0 += text.len();
        Ok(())
    }
}

fn scalar_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(number) => {
            let mut counter = Counter(0);
            let _ = write!(counter, "{number}");
            counter.0
        }
        Value::String(text) => string_len(text),
        Value::Array(_) | Value::Object(_) => 0,
    }
}

/// Checks that `value` nests at most `max_depth` containers deep (`{}` is depth 1, a scalar
/// 0) and serializes to at most `max_bytes` bytes of compact JSON. Stops at the first bound
/// crossed, so the cost is at most the part of the value it had to read.
pub(crate) fn check_size(
    value: &Value,
    max_depth: usize,
    max_bytes: usize,
) -> Result<(), Oversize> {
    let mut bytes = 0usize;
    // Each entry is a value to visit and the number of containers around it.
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((value, around)) = stack.pop() {
        match value {
            Value::Array(items) => {
                let depth = around + 1;
                if depth > max_depth {
                    return Err(Oversize::Depth(depth));
                }
                bytes += 2 + items.len().saturating_sub(1);
                stack.extend(items.iter().rev().map(|item| (item, depth)));
            }
            Value::Object(map) => {
                let depth = around + 1;
                if depth > max_depth {
                    return Err(Oversize::Depth(depth));
                }
                bytes += 2 + map.len().saturating_sub(1);
                for (key, item) in map {
                    bytes += string_len(key) + 1;
                    stack.push((item, depth));
                }
            }
            scalar => bytes += scalar_len(scalar),
        }
        if bytes > max_bytes {
            return Err(Oversize::Bytes(bytes));
        }
    }
    Ok(())
}

/// Compact JSON of `value` for a message, cut after about `limit` characters with `…`.
/// Containers nested deeper than a few levels are shown as `[…]` / `{…}`.
pub(crate) fn render(value: &Value, limit: usize) -> String {
    let mut text = String::new();
    render_into(value, limit, 0, &mut text);
    if text.len() > limit {
        let mut cut = limit;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// Deep enough to show the shape of a small object; the recursion stops here.
const RENDER_DEPTH: usize = 8;

fn render_into(value: &Value, limit: usize, depth: usize, text: &mut String) {
    if text.len() > limit {
        return;
    }
    match value {
        Value::Array(items) => {
            if depth >= RENDER_DEPTH && !items.is_empty() {
                text.push_str("[…]");
                return;
            }
            text.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    text.push(',');
                }
                render_into(item, limit, depth + 1, text);
                if text.len() > limit {
                    return;
                }
            }
            text.push(']');
        }
        Value::Object(map) => {
            if depth >= RENDER_DEPTH && !map.is_empty() {
                text.push_str("{…}");
                return;
            }
            text.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    text.push(',');
                }
                render_string(key, limit, text);
                text.push(':');
                render_into(item, limit, depth + 1, text);
                if text.len() > limit {
                    return;
                }
            }
            text.push('}');
        }
        Value::String(string) => render_string(string, limit, text),
        scalar => {
            let _ = write!(text, "{scalar}");
        }
    }
}

fn render_string(string: &str, limit: usize, text: &mut String) {
    // Only the part that can be shown is escaped: a 10 MB string costs no more than a short one.
    let mut end = string.len().min(limit + 1);
    while !string.is_char_boundary(end) {
        end -= 1;
    }
    let shown = serde_json::to_string(&string[..end]).unwrap_or_default();
    if end < string.len() {
        // Drop the closing quote: the string goes on past the cut.
        text.push_str(&shown[..shown.len() - 1]);
    } else {
        text.push_str(&shown);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_size_is_the_compact_json_length() {
        for value in [
            json!({"a": [1, 2.5, "x\ny\u{1}é"], "b": {"c": null, "d": true, "e": false}}),
            json!([]),
            json!({}),
            json!("\"\\"),
            json!(-12345678901234i64),
        ] {
            let compact = serde_json::to_string(&value).unwrap().len();
            assert_eq!(check_size(&value, 10, compact), Ok(()));
            assert_eq!(
                check_size(&value, 10, compact - 1),
                Err(Oversize::Bytes(compact)),
                "{value}"
            );
        }
    }

    #[test]
    fn depth_counts_containers() {
        let value = json!({"a": [[1]]});
        assert_eq!(check_size(&value, 3, 1000), Ok(()));
        assert_eq!(check_size(&value, 2, 1000), Err(Oversize::Depth(3)));
        assert_eq!(check_size(&json!(1), 0, 1000), Ok(()));
    }

    #[test]
    fn rendering_is_cut() {
        assert_eq!(render(&json!("abc"), 80), "\"abc\"");
        assert_eq!(render(&json!({"a": [1, null]}), 80), "{\"a\":[1,null]}");
        let long = render(&json!("y".repeat(500)), 20);
        assert!(long.starts_with("\"yyyy") && long.ends_with('…'), "{long}");
        assert!(long.chars().count() <= 22, "{long}");
        let mut deep = json!(1);
        for _ in 0..50 {
            deep = json!([deep]);
        }
        assert!(render(&deep, 200).contains("[…]"));
    }
}
