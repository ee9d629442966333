//! `pattern` and `patternProperties`: ECMA-262 regular expressions (as JSON Schema specifies
//! them) run on the `regex` crate, whose matching is linear in the input, so no untrusted
//! pattern can backtrack catastrophically, and whose compiled size is capped
//! ([`SchemaLimits::max_regex_bytes`](super::SchemaLimits::max_regex_bytes)).
//!
//! The ECMA syntax is translated where the two differ in meaning: `\d`, `\w` and `\s` are
//! ECMA's ASCII (and, for `\s`, ECMA's whitespace) classes, not Unicode's; `.` does not
//! match any ECMA line terminator; `\b` is an ASCII word boundary; `\cX`, `\uXXXX` (with
//! surrogate pairs), `\u{…}`, `\0` and `[\b]` are spelled the `regex` way; `[^]` matches any
//! character; a `{` that does not start a quantifier is a literal, as ECMA's Annex B reads it.
//! What the `regex` crate cannot do at all (look-ahead, look-behind, backreferences) makes
//! the schema fail to compile, with a message naming the pattern.

use regex::{Regex, RegexBuilder};

/// ECMA-262 `WhiteSpace` and `LineTerminator`, as the body of a character class.
const ECMA_SPACE: &str = "\\t\\n\\x0B\\x0C\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";
const ASCII_WORD: &str = "0-9A-Za-z_";

/// Compiles an ECMA-262 pattern with at most `size_limit` bytes of compiled program.
///
/// # Errors
///
/// The reason, naming the pattern, when it uses syntax the `regex` crate lacks or is too big.
pub(crate) fn compile(pattern: &str, size_limit: usize) -> Result<Regex, String> {
    let translated = translate(pattern)?;
    RegexBuilder::new(&translated)
        .size_limit(size_limit)
        .dfa_size_limit(size_limit)
        .build()
        .map_err(|error| match error {
            regex::Error::CompiledTooBig(limit) => format!(
                "the pattern {pattern:?} compiles to more than {limit} bytes \
                 (SchemaLimits::max_regex_bytes)"
            ),
            other => format!(
                "the pattern {pattern:?} is not supported (look-around and backreferences \
                 are not): {}",
                first_line(&other.to_string())
            ),
        })
}

fn first_line(text: &str) -> String {
    // The regex crate's syntax errors draw the pattern over several lines; the last one
    // says what is wrong.
    text.lines()
        .rev()
        .find(|line| line.starts_with("error:"))
        .unwrap_or(text)
        .trim_start_matches("error: ")
        .to_owned()
}

fn hex_value(digits: &str) -> Option<u32> {
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

/// Reads `\uXXXX` at `chars[at..]` (at is the `u`), joining a surrogate pair; returns the code
/// point and how many chars were used after the backslash.
fn read_unicode_escape(chars: &[char], at: usize) -> Option<(u32, usize)> {
    if chars.get(at + 1) == Some(&'{') {
        let close = chars[at..].iter().position(|&c| c == '}')? + at;
        let digits: String = chars[at + 2..close].iter().collect();
        return hex_value(&digits).map(|code| (code, close - at + 1));
    }
    let digits: String = chars.get(at + 1..at + 5)?.iter().collect();
    let high = hex_value(&digits)?;
    if (0xD800..0xDC00).contains(&high)
        && chars.get(at + 5) == Some(&'\\')
        && chars.get(at + 6) == Some(&'u')
    {
        let digits: String = chars.get(at + 7..at + 11)?.iter().collect();
        if let Some(low) = hex_value(&digits).filter(|low| (0xDC00..0xE000).contains(low)) {
            return Some((0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), 11));
        }
    }
    Some((high, 5))
}

/// Pushes a literal code point in `regex` syntax.
fn push_code_point(out: &mut String, code: u32, pattern: &str) -> Result<(), String> {
    if char::from_u32(code).is_none() {
        return Err(format!(
            "the pattern {pattern:?} has a lone surrogate \\u{code:X}, which no string can hold"
        ));
    }
    out.push_str(&format!("\\x{{{code:X}}}"));
    Ok(())
}

/// True when `chars[at..]` (at is a `{`) is a quantifier `{n}`, `{n,}` or `{n,m}`; returns the
/// index of its `}`.
fn quantifier_end(chars: &[char], at: usize) -> Option<usize> {
    let mut index = at + 1;
    let start = index;
    while chars.get(index).is_some_and(char::is_ascii_digit) {
        index += 1;
    }
    if index == start {
        return None;
    }
    if chars.get(index) == Some(&',') {
        index += 1;
        while chars.get(index).is_some_and(char::is_ascii_digit) {
            index += 1;
        }
    }
    (chars.get(index) == Some(&'}')).then_some(index)
}

/// Rewrites ECMA-262 syntax as `regex` syntax of the same meaning.
pub(crate) fn translate(pattern: &str) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut in_class = false;
    let mut index = 0;
    while index < chars.len() {
        let character = chars[index];
        match character {
            '\\' => {
                let Some(&escaped) = chars.get(index + 1) else {
                    return Err(format!(
                        "the pattern {pattern:?} ends with a lone backslash"
                    ));
                };
                index += 2;
                match escaped {
                    'd' if in_class => out.push_str("0-9"),
                    'd' => out.push_str("[0-9]"),
                    'D' => out.push_str("[^0-9]"),
                    'w' if in_class => out.push_str(ASCII_WORD),
                    'w' => out.push_str(&format!("[{ASCII_WORD}]")),
                    'W' => out.push_str(&format!("[^{ASCII_WORD}]")),
                    's' if in_class => out.push_str(ECMA_SPACE),
                    's' => out.push_str(&format!("[{ECMA_SPACE}]")),
                    'S' => out.push_str(&format!("[^{ECMA_SPACE}]")),
                    'b' if in_class => out.push_str("\\x08"),
                    'b' => out.push_str("(?-u:\\b)"),
                    'B' => out.push_str("\\B"),
                    'n' => out.push_str("\\n"),
                    'r' => out.push_str("\\r"),
                    't' => out.push_str("\\t"),
                    'f' => out.push_str("\\x0C"),
                    'v' => out.push_str("\\x0B"),
                    '0' if !chars.get(index).is_some_and(char::is_ascii_digit) => {
                        out.push_str("\\x00");
                    }
                    'c' => match chars.get(index) {
                        Some(&letter) if letter.is_ascii_alphabetic() => {
                            index += 1;
                            push_code_point(&mut out, u32::from(letter) % 32, pattern)?;
                        }
                        _ => out.push_str("\\\\c"),
                    },
                    'x' => {
                        let digits: String =
                            chars.get(index..index + 2).unwrap_or(&[]).iter().collect();
                        match hex_value(&digits).filter(|_| digits.len() == 2) {
                            Some(code) => {
                                index += 2;
                                push_code_point(&mut out, code, pattern)?;
                            }
                            None => out.push('x'),
                        }
                    }
                    'u' => match read_unicode_escape(&chars, index - 1) {
                        Some((code, used)) => {
                            index += used - 1;
                            push_code_point(&mut out, code, pattern)?;
                        }
                        None => out.push('u'),
                    },
                    'p' | 'P' => {
                        out.push('\\');
                        out.push(escaped);
                        // The property name in braces is copied as written.
                        if chars.get(index) == Some(&'{') {
                            if let Some(close) = chars[index..].iter().position(|&c| c == '}') {
                                out.extend(&chars[index..=index + close]);
                                index += close + 1;
                            }
                        }
                    }
                    '1'..='9' | 'k' => {
                        return Err(format!(
                            "the pattern {pattern:?} uses a backreference, which linear-time \
                             matching cannot support"
                        ));
                    }
                    other if other.is_ascii_alphanumeric() => {
                        // ECMA reads an unknown letter escape as the letter itself.
                        out.push(other);
                    }
                    other => {
                        if other.is_ascii_punctuation() {
                            out.push('\\');
                        }
                        out.push(other);
                    }
                }
                continue;
            }
            '[' if in_class => out.push_str("\\["),
            '[' => {
                if chars.get(index + 1) == Some(&']') {
                    // `[]` matches nothing.
                    out.push_str("[^\\x{0}-\\x{10FFFF}]");
                    index += 2;
                    continue;
                }
                if chars.get(index + 1) == Some(&'^') && chars.get(index + 2) == Some(&']') {
                    out.push_str("(?s:.)");
                    index += 3;
                    continue;
                }
                in_class = true;
                out.push('[');
                if chars.get(index + 1) == Some(&'^') {
                    out.push('^');
                    index += 1;
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '&' | '~' if in_class => {
                // Set operators (`&&`, `~~`) in `regex`, plain characters in ECMA.
                out.push('\\');
                out.push(character);
            }
            '-' if in_class && chars.get(index + 1) == Some(&'-') => out.push_str("\\-"),
            '.' if !in_class => out.push_str("[^\\n\\r\\x{2028}\\x{2029}]"),
            '{' if !in_class => match quantifier_end(&chars, index) {
                Some(end) => {
                    out.extend(&chars[index..=end]);
                    index = end + 1;
                    continue;
                }
                None => out.push_str("\\{"),
            },
            '}' if !in_class => out.push_str("\\}"),
            '#' | ' ' if !in_class => {
                // Literal in both; escaped so no verbose-mode flag can change that.
                out.push('\\');
                out.push(character);
            }
            other => out.push(other),
        }
        index += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        compile(pattern, 1 << 20).unwrap().is_match(text)
    }

    #[test]
    fn ecma_classes_keep_their_ecma_meaning() {
        assert!(matches("^\\d+$", "0123"));
        assert!(
            !matches("^\\d$", "\u{0660}"),
            "Arabic-Indic digits are not ECMA \\d"
        );
        assert!(!matches("^\\w$", "é"));
        assert!(matches("^\\s$", "\u{FEFF}"));
        assert!(matches("^[\\d\\s]+$", "1 2"));
        assert!(!matches("^.$", "\n"));
        assert!(!matches("^.$", "\u{2028}"));
        assert!(matches("^.$", "é"));
        assert!(matches("^\\u0041\\x42\\cJ$", "AB\n"));
        assert!(matches("^\\uD83D\\uDE00$", "😀"));
        assert!(matches("^a{$", "a{"));
        assert!(matches("^a{2}$", "aa"));
        assert!(matches("^[^]$", "\n"));
        assert!(matches("\\bfoo\\b", "a foo b"));
        assert!(matches("^[a&b]$", "&"));
        assert!(matches("^\\/$", "/"));
        assert!(matches("^\\p{L}+$", "héllo"));
    }

    #[test]
    fn what_regex_cannot_do_is_an_error_naming_the_pattern() {
        let error = compile("(?=a)a", 1 << 20).unwrap_err();
        assert!(error.contains("\"(?=a)a\""), "{error}");
        assert!(compile("(a)\\1", 1 << 20)
            .unwrap_err()
            .contains("backreference"));
        let error = compile("\\w{1000}\\w{1000}", 4096).unwrap_err();
        assert!(error.contains("max_regex_bytes"), "{error}");
    }

    #[test]
    fn typical_patterns_compile_to_a_few_kib() {
        for pattern in [
            "^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$",
            "^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2}))?$",
            "^[a-z][a-z0-9_-]{0,63}$",
            "^https?://[^\\s/$.?#].[^\\s]*$",
        ] {
            assert!(compile(pattern, 16 * 1024).is_ok(), "{pattern}");
        }
    }

    #[test]
    fn catastrophic_patterns_stay_linear() {
        let text = format!("{}b", "a".repeat(100_000));
        assert!(!matches("^(a+)+$", &text));
    }
}
