//! The YAML frontmatter of a `SKILL.md` (Agent Skills; SEP-2640), read by a strict parser of
//! the small subset skills use, not a general YAML library.
//!
//! Accepted between a leading `---` line and the next `---` line: a block mapping of
//! `key: value` lines whose values are plain, single- or double-quoted scalars on one line,
//! literal (`|`) or folded (`>`) block scalars, or one nested level: a mapping of such scalars
//! (`metadata:`) or a sequence of them (`- item`). Plain scalars resolve as YAML 1.2's core
//! schema does (`null`, `~`, booleans, integers and floats become JSON null, booleans and
//! numbers), so the JSON made here is the JSON any YAML library makes of the same text.
//! Everything else (flow collections, anchors, aliases, tags, multi-line plain scalars,
//! duplicate keys, tabs in indentation) is refused with the line it is on, never guessed at.

use serde_json::{Map, Number, Value};

use crate::error::{Error, Result};

/// The longest frontmatter read, in bytes. Agent Skills caps its fields far below this.
const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// Splits `text` into its frontmatter (as a JSON object) and the body after it.
///
/// # Errors
///
/// [`Error::Protocol`] when the text does not begin with a `---` line (a byte-order mark
/// aside), has no closing `---` line, or holds YAML outside the subset (module docs).
pub fn parse_frontmatter(text: &str) -> Result<(Map<String, Value>, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(|| refused(0, "SKILL.md does not begin with a `---` line"))?;
    let mut offset = 0;
    let mut lines = Vec::new();
    let mut body = None;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        offset += line.len();
        if bare.trim_end() == "---" {
            body = Some(&rest[offset..]);
            break;
        }
        lines.push(bare);
        if offset > MAX_FRONTMATTER_BYTES {
            return Err(refused(
                lines.len(),
                &format!("the frontmatter is over {MAX_FRONTMATTER_BYTES} bytes"),
            ));
        }
    }
    let body = body.ok_or_else(|| refused(0, "the frontmatter has no closing `---` line"))?;
    Ok((Parser { lines, at: 0 }.mapping()?, body))
}

fn refused(line: usize, why: &str) -> Error {
    if line == 0 {
        Error::Protocol(format!("SKILL.md frontmatter: {why}"))
    } else {
        Error::Protocol(format!("SKILL.md frontmatter, line {line}: {why}"))
    }
}

struct Parser<'a> {
    lines: Vec<&'a str>,
    at: usize,
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_blank(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.is_empty() || trimmed.starts_with('#')
}

impl<'a> Parser<'a> {
    /// Line numbers as an editor shows them (the opening `---` is line 1).
    fn number(&self) -> usize {
        self.at + 2
    }

    fn mapping(mut self) -> Result<Map<String, Value>> {
        let mut object = Map::new();
        while self.at < self.lines.len() {
            let line = self.lines[self.at];
            if is_blank(line) {
                self.at += 1;
                continue;
            }
            if line.starts_with([' ', '\t']) {
                return Err(refused(
                    self.number(),
                    "an indented line where a key was expected",
                ));
            }
            let (key, rest) = self.key(line)?;
            self.at += 1;
            let value = self.value(rest)?;
            if object.insert(key.to_owned(), value).is_some() {
                return Err(refused(
                    self.number() - 1,
                    &format!("the key `{key}` is repeated"),
                ));
            }
        }
        Ok(object)
    }

    fn key(&self, line: &'a str) -> Result<(&'a str, &'a str)> {
        let (key, rest) = line
            .split_once(':')
            .ok_or_else(|| refused(self.number(), "expected `key: value`"))?;
        let valid = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
        if !valid {
            return Err(refused(
                self.number(),
                &format!("`{key}` is not a plain key"),
            ));
        }
        if !(rest.is_empty() || rest.starts_with(' ')) {
            return Err(refused(self.number(), "expected a space after `:`"));
        }
        Ok((key, rest.trim_start_matches(' ')))
    }

    /// The value after `key:`; nested lines, when the value is a block, follow it.
    fn value(&mut self, rest: &str) -> Result<Value> {
        let head = strip_comment(rest);
        if head.is_empty() {
            return self.nested();
        }
        if let Some(style) = head.strip_prefix(['|', '>']) {
            let folded = head.starts_with('>');
            return self.block_scalar(folded, style);
        }
        scalar(head).map_err(|why| refused(self.number() - 1, &why))
    }

    /// The indented lines under a key with no value: a mapping or a sequence of scalars, or
    /// null when there are none.
    fn nested(&mut self) -> Result<Value> {
        let start = self.at;
        let mut end = start;
        while end < self.lines.len() {
            let line = self.lines[end];
            if !is_blank(line) && indent(line) == 0 && !line.starts_with("- ") && line != "-" {
                break;
            }
            end += 1;
        }
        let lines: Vec<(usize, &str)> = (start..end)
            .map(|at| (at, self.lines[at]))
            .filter(|(_, line)| !is_blank(line))
            .collect();
        self.at = end;
        let Some(&(_, first)) = lines.first() else {
            return Ok(Value::Null);
        };
        let column = indent(first);
        let sequence = first.trim_start().starts_with('-');
        let mut items = Vec::new();
        let mut object = Map::new();
        for (at, line) in lines {
            let number = at + 2;
            if line[indent(line)..].starts_with('\t') {
                return Err(refused(number, "a tab in the indentation"));
            }
            if indent(line) != column {
                return Err(refused(number, "nesting deeper than one level"));
            }
            let item = &line[column..];
            if sequence {
                let value = item
                    .strip_prefix('-')
                    .filter(|value| value.is_empty() || value.starts_with(' '))
                    .ok_or_else(|| refused(number, "expected `- item`"))?;
                let value = strip_comment(value.trim_start_matches(' '));
                items.push(scalar(value).map_err(|why| refused(number, &why))?);
            } else {
                let save = self.at;
                self.at = at;
                let (key, rest) = self.key(item)?;
                self.at = save;
                let value = strip_comment(rest);
                if value.is_empty() || value.starts_with(['|', '>']) {
                    return Err(refused(number, "nesting deeper than one level"));
                }
                let value = scalar(value).map_err(|why| refused(number, &why))?;
                if object.insert(key.to_owned(), value).is_some() {
                    return Err(refused(number, &format!("the key `{key}` is repeated")));
                }
            }
        }
        Ok(if sequence {
            Value::Array(items)
        } else {
            Value::Object(object)
        })
    }

    /// A `|` or `>` block scalar: its indicators (`-`, `+`) in `style`, its lines below.
    fn block_scalar(&mut self, folded: bool, style: &str) -> Result<Value> {
        let chomp = match style.trim() {
            "" => ' ',
            "-" => '-',
            "+" => '+',
            other => {
                return Err(refused(
                    self.number() - 1,
                    &format!("the block scalar indicator `{other}` is not supported"),
                ))
            }
        };
        let start = self.at;
        while self.at < self.lines.len() {
            let line = self.lines[self.at];
            if !line.trim().is_empty() && indent(line) == 0 {
                break;
            }
            self.at += 1;
        }
        let lines = &self.lines[start..self.at];
        let column = lines
            .iter()
            .find(|line| !line.trim().is_empty())
            .map(|line| indent(line))
            .unwrap_or(0);
        let mut text = String::new();
        // Folding joins two lines of text with a space; blank lines between them stand for
        // the line breaks (the first break is dropped); more-indented lines keep theirs.
        let mut last_was_text = false;
        let mut blanks = 0usize;
        for (index, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                text.push('\n');
                blanks += 1;
                continue;
            }
            if indent(line) < column {
                return Err(refused(
                    start + index + 2,
                    "a block scalar line less indented",
                ));
            }
            let content = &line[column..];
            let is_text = !content.starts_with(' ');
            if folded && is_text && last_was_text {
                text.pop();
                if blanks == 0 {
                    text.push(' ');
                }
            }
            text.push_str(content);
            text.push('\n');
            last_was_text = is_text;
            blanks = 0;
        }
        let trimmed = text.trim_end_matches('\n').len();
        match chomp {
            '-' => text.truncate(trimmed),
            '+' => {}
            _ => {
                text.truncate(trimmed);
                if trimmed > 0 {
                    text.push('\n');
                }
            }
        }
        Ok(Value::String(text))
    }
}

/// The text before a ` #` comment, trimmed (a quoted scalar keeps its `#`).
fn strip_comment(text: &str) -> &str {
    let text = text.trim();
    if text.starts_with(['"', '\'']) {
        return text;
    }
    if text.starts_with('#') {
        return "";
    }
    match text.find(" #") {
        Some(at) => text[..at].trim_end(),
        None => text,
    }
}

/// One scalar on one line: quoted, or plain and resolved by YAML 1.2's core schema.
fn scalar(text: &str) -> std::result::Result<Value, String> {
    if let Some(inner) = text.strip_prefix('"') {
        return double_quoted(inner).map(Value::String);
    }
    if let Some(inner) = text.strip_prefix('\'') {
        return single_quoted(inner).map(Value::String);
    }
    if text.starts_with(['[', '{', '&', '*', '!', '%', '@', '`', '|', '>']) {
        return Err(format!("`{text}` is YAML outside the SKILL.md subset"));
    }
    if text.starts_with("- ")
        || text.starts_with("? ")
        || text.contains(": ")
        || text.ends_with(':')
    {
        return Err(format!("`{text}` needs quotes"));
    }
    // Infinity and NaN have no JSON form.
    let bare = text.strip_prefix(['-', '+']).unwrap_or(text);
    if [".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN"].contains(&bare) {
        return Err(format!("`{text}` has no JSON form; quote it"));
    }
    Ok(resolve_plain(text))
}

fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    for (prefix, radix) in [("0x", 16), ("0o", 8)] {
        if let Some(digits) = text.strip_prefix(prefix).filter(|d| !d.is_empty()) {
            if let Ok(number) = i64::from_str_radix(digits, radix) {
                return Value::Number(number.into());
            }
        }
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(number) = text.parse::<i64>() {
            return Value::Number(number.into());
        }
    }
    if is_core_float(digits) {
        if let Ok(number) = text.parse::<f64>() {
            // A whole float is the integer JSON writes for it (`1e3`, `2.0`).
            if number.fract() == 0.0 && number.abs() < 9_007_199_254_740_992.0 {
                return Value::Number((number as i64).into());
            }
            if let Some(number) = Number::from_f64(number) {
                return Value::Number(number);
            }
        }
    }
    Value::String(text.to_owned())
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` (sign removed).
fn is_core_float(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (mantissa, None),
    };
    let all_digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match fraction {
        Some(fraction) => {
            all_digits(whole) && all_digits(fraction) && !(whole.is_empty() && fraction.is_empty())
        }
        None => !whole.is_empty() && all_digits(whole),
    };
    let exponent_ok = exponent.is_none_or(|exponent| {
        let digits = exponent.strip_prefix(['-', '+']).unwrap_or(exponent);
        !digits.is_empty() && all_digits(digits)
    });
    mantissa_ok && exponent_ok && (fraction.is_some() || exponent.is_some())
}

fn after_quote(rest: &str) -> std::result::Result<(), String> {
    let rest = rest.trim();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(())
    } else {
        Err(format!("`{rest}` after a quoted scalar"))
    }
}

fn single_quoted(text: &str) -> std::result::Result<String, String> {
    let mut out = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().map(|(_, next)| *next) == Some('\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            after_quote(&text[at + 1..])?;
            return Ok(out);
        }
        out.push(c);
    }
    Err("a single-quoted scalar does not end on its line".into())
}

fn double_quoted(text: &str) -> std::result::Result<String, String> {
    let mut out = String::new();
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => {
                after_quote(&text[at + 1..])?;
                return Ok(out);
            }
            '\\' => {
                let (_, escape) = chars.next().ok_or("a `\\` ends the line")?;
                match escape {
                    '"' | '\\' | '/' => out.push(escape),
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    ' ' => out.push(' '),
                    'u' => {
                        let hex: String = chars.by_ref().take(4).map(|(_, c)| c).collect();
                        let code = u32::from_str_radix(&hex, 16)
                            .ok()
                            .filter(|_| hex.len() == 4)
                            .and_then(char::from_u32)
                            .ok_or_else(|| format!("`\\u{hex}` is not a character"))?;
                        out.push(code);
                    }
                    other => return Err(format!("the escape `\\{other}` is not supported")),
                }
            }
            c => out.push(c),
        }
    }
    Err("a double-quoted scalar does not end on its line".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn front(yaml: &str) -> Result<Value> {
        parse_frontmatter(&format!("---\n{yaml}---\nbody\n")).map(|(map, body)| {
            assert_eq!(body, "body\n");
            Value::Object(map)
        })
    }

    #[test]
    fn reads_the_fields_skills_use() {
        let value = front(
            "name: pdf-processing\n\
             description: \"Extract: fill, and \\\"assemble\\\"\"\n\
             license: 'Apache-2.0 ''or'' MIT'  # a comment\n\
             version: 1.5\n\
             count: 3\n\
             draft: false\n\
             metadata:\n  author: acme\n  tier: \"2\"\n\
             allowed-tools:\n  - Bash\n  - Read\n",
        )
        .unwrap();
        assert_eq!(
            value,
            json!({"name": "pdf-processing", "description": "Extract: fill, and \"assemble\"",
                   "license": "Apache-2.0 'or' MIT", "version": 1.5, "count": 3,
                   "draft": false, "metadata": {"author": "acme", "tier": "2"},
                   "allowed-tools": ["Bash", "Read"]})
        );
    }

    #[test]
    fn block_scalars_follow_yaml() {
        let value = front("a: |\n  one\n  two\nb: >-\n  one\n  two\n\n  three\nc: x\n").unwrap();
        assert_eq!(
            value,
            json!({"a": "one\ntwo\n", "b": "one two\nthree", "c": "x"})
        );
    }

    /// Each expected value is what the `yaml` package (the conformance suite's) makes of it.
    #[test]
    fn resolves_as_a_yaml_library_does() {
        let value = front(
            "a: >\n  one\n   indented\n  two\n\n\n  three\nk: |+\n  keep\n\n\
             v: 1.5\nw: 0x1F\nx: 1e3\ny: .5\nz: +12\nn: ~\nt: True\no: 0o17\n\
             d: 2024-01-01\ns: yes\nq: \"a\\tb\\u00e9\"\nh: a#b\n",
        )
        .unwrap();
        assert_eq!(
            value,
            json!({"a": "one\n indented\ntwo\n\nthree\n", "k": "keep\n\n", "v": 1.5, "w": 31,
                   "x": 1000, "y": 0.5, "z": 12, "n": null, "t": true, "o": 15,
                   "d": "2024-01-01", "s": "yes", "q": "a\tb\u{e9}", "h": "a#b"})
        );
        assert!(front("i: .inf\n").is_err());
    }

    #[test]
    fn refuses_what_is_outside_the_subset() {
        for yaml in [
            "name: [a, b]\n",
            "name: &x a\n",
            "name: a: b\n",
            "name: a\nname: b\n",
            "meta:\n  a:\n    b: c\n",
            "  name: a\n",
            "name: \"open\n",
            "name: a\n  continued\n",
        ] {
            assert!(front(yaml).is_err(), "{yaml:?} was accepted");
        }
        assert!(parse_frontmatter("name: a\n").is_err());
        assert!(parse_frontmatter("---\nname: a\n").is_err());
    }
}
