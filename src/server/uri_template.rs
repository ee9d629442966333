//! Matching a URI against an RFC 6570 URI template, for resource templates: which template a
//! `resources/read` URI belongs to, and its variables.
//!
//! Expansion is a function; matching inverts it as far as it is unambiguous. Every operator
//! is known: `{x}` (one or more characters, never a `/`), `{+x}` and `{#x}` (reserved
//! characters allowed, `/` too), `{.x}`, `{/x}`, `{;x}`, `{?x}` and `{&x}`, each with its
//! prefix and separator; several variables in one expression (`{x,y}`, `{?q,lang}`); the
//! explode (`*`) and prefix (`:N`) modifiers are accepted, the last variable of an exploded
//! expression taking what is left. An expression ends at the next literal text of the
//! template, or where the next expression's prefix begins. Values are percent-decoded; a
//! value that is not UTF-8 once decoded, a name a `;`, `?` or `&` expression does not declare,
//! and a simple expression left empty do not match. Undefined variables of the prefixed
//! operators expand to nothing, so `{?q}` matches a URI with no query at all.

use std::collections::BTreeMap;

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TemplatePart {
    Literal(String),
    Expression {
        /// `+ # . / ; ? &`, or none for a simple expression.
        operator: Option<char>,
        /// The variable names, without their modifiers.
        names: Vec<String>,
        /// The last variable is exploded (`*`).
        explode: bool,
    },
}

/// What an operator's expansion looks like.
struct Style {
    /// Written before the first value.
    first: &'static str,
    /// Between values.
    separator: char,
    /// Values carry their names (`name=value`).
    named: bool,
    /// A value may hold reserved characters (`/` among them).
    reserved: bool,
}

fn style(operator: Option<char>) -> Style {
    let (first, separator, named, reserved) = match operator {
        Some('+') => ("", ',', false, true),
        Some('#') => ("#", ',', false, true),
        Some('.') => (".", '.', false, false),
        Some('/') => ("/", '/', false, false),
        Some(';') => (";", ';', true, false),
        Some('?') => ("?", '&', true, true),
        Some('&') => ("&", '&', true, true),
        _ => ("", ',', false, false),
    };
    Style {
        first,
        separator,
        named,
        reserved,
    }
}

/// Parses `template`. An unclosed `{` is literal text.
pub(crate) fn parse_template(template: &str) -> Vec<TemplatePart> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        if open > 0 {
            parts.push(TemplatePart::Literal(rest[..open].to_owned()));
        }
        parts.push(expression(&rest[open + 1..open + close]));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(TemplatePart::Literal(rest.to_owned()));
    }
    parts
}

fn expression(body: &str) -> TemplatePart {
    let operator = body
        .chars()
        .next()
        .filter(|c| matches!(c, '+' | '#' | '.' | '/' | ';' | '?' | '&'));
    let list = operator.map_or(body, |op| &body[op.len_utf8()..]);
    let mut explode = false;
    let names = list
        .split(',')
        .map(|spec| {
            let spec = spec.trim();
            explode = spec.ends_with('*');
            let spec = spec.trim_end_matches('*');
            spec.split(':').next().unwrap_or(spec).to_owned()
        })
        .collect();
    TemplatePart::Expression {
        operator,
        names,
        explode,
    }
}

/// The variables of `uri` when it is an expansion of `parts`.
pub(crate) fn match_parts(parts: &[TemplatePart], uri: &str) -> Option<BTreeMap<String, String>> {
    let mut vars = BTreeMap::new();
    let mut rest = uri;
    for (index, part) in parts.iter().enumerate() {
        match part {
            TemplatePart::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
            TemplatePart::Expression {
                operator,
                names,
                explode,
            } => {
                let end = extent(rest, parts.get(index + 1))?;
                bind(&rest[..end], *operator, names, *explode, &mut vars)?;
                rest = &rest[end..];
            }
        }
    }
    rest.is_empty().then_some(vars)
}

/// Where an expression's text ends in `rest`: at the next literal, where the next
/// expression's prefix starts, or at the end.
fn extent(rest: &str, next: Option<&TemplatePart>) -> Option<usize> {
    match next {
        Some(TemplatePart::Literal(literal)) => rest.find(literal.as_str()),
        Some(TemplatePart::Expression { operator, .. }) => {
            let first = style(*operator).first;
            Some(match first.chars().next() {
                Some(prefix) => rest.find(prefix).unwrap_or(rest.len()),
                // Two expressions side by side with nothing between: this one takes all.
                None => rest.len(),
            })
        }
        None => Some(rest.len()),
    }
}

/// Binds one expression's `text` to its names.
fn bind(
    text: &str,
    operator: Option<char>,
    names: &[String],
    explode: bool,
    vars: &mut BTreeMap<String, String>,
) -> Option<()> {
    let style = style(operator);
    if text.is_empty() {
        // Undefined variables expand to nothing; a simple or `+` expression must say something.
        return (!style.first.is_empty()).then_some(());
    }
    let body = text.strip_prefix(style.first)?;
    let items: Vec<&str> = body.split(style.separator).collect();
    if style.named {
        for item in items {
            let (name, value) = item.split_once('=').unwrap_or((item, ""));
            let name = decode(name)?;
            if !names.contains(&name) || vars.contains_key(&name) {
                return None;
            }
            vars.insert(name, checked(value, &style)?);
        }
        return Some(());
    }
    if items.len() > names.len() && !explode {
        return None;
    }
    for (position, name) in names.iter().enumerate() {
        // An exploded last variable takes every value left, each checked on its own.
        let taken = match items.get(position..) {
            Some(rest) if position + 1 == names.len() && explode => rest,
            _ => match items.get(position..=position) {
                Some(one) => one,
                None => break,
            },
        };
        if taken.is_empty() {
            break;
        }
        let mut values = Vec::with_capacity(taken.len());
        for value in taken {
            if value.is_empty() && style.first.is_empty() {
                return None;
            }
            values.push(checked(value, &style)?);
        }
        vars.insert(name.clone(), values.join(&style.separator.to_string()));
    }
    Some(())
}

/// `value` decoded, when the operator allows what it holds.
fn checked(value: &str, style: &Style) -> Option<String> {
    if !style.reserved && value.contains('/') {
        return None;
    }
    decode(value)
}

/// Percent-decoding; `None` for a bad escape or bytes that are not UTF-8.
fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        match_parts(&parse_template(template), uri).map(|vars| vars.into_iter().collect())
    }

    fn pairs(list: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(
            list.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn simple_expressions_take_one_segment() {
        assert_eq!(vars("t://x/{id}/d", "t://x/12/d"), pairs(&[("id", "12")]));
        assert_eq!(vars("t://x/{id}/d", "t://x//d"), None);
        assert_eq!(vars("t://x/{id}/d", "t://x/1/2/d"), None);
        assert_eq!(vars("t://x/{id}", "t://x/a%20b"), pairs(&[("id", "a b")]));
        assert_eq!(vars("t://x/{id}", "t://x/%zz"), None);
        assert_eq!(
            vars("t://{x,y}", "t://1,2"),
            pairs(&[("x", "1"), ("y", "2")])
        );
        assert_eq!(vars("t://{x}", "t://1,2"), None);
    }

    #[test]
    fn reserved_expressions_cross_slashes() {
        assert_eq!(
            vars("file:///{+path}", "file:///srv/logs/a.txt"),
            pairs(&[("path", "srv/logs/a.txt")])
        );
        assert_eq!(
            vars("t://doc{#section}", "t://doc#a/b"),
            pairs(&[("section", "a/b")])
        );
        assert_eq!(vars("t://doc{#section}", "t://doc"), pairs(&[]));
    }

    #[test]
    fn path_and_label_expressions() {
        assert_eq!(
            vars("t://r{/a,b}", "t://r/x/y"),
            pairs(&[("a", "x"), ("b", "y")])
        );
        assert_eq!(vars("t://r{/a,b}", "t://r/x"), pairs(&[("a", "x")]));
        assert_eq!(vars("t://r{/a}", "t://r/x/y"), None);
        assert_eq!(
            vars("t://r{/parts*}", "t://r/x/y/z"),
            pairs(&[("parts", "x/y/z")])
        );
        assert_eq!(vars("t://f{.ext}", "t://f.json"), pairs(&[("ext", "json")]));
    }

    #[test]
    fn query_expressions_are_named_and_optional() {
        assert_eq!(
            vars("t://s{?q,lang}", "t://s?q=rust%20mcp&lang=en"),
            pairs(&[("lang", "en"), ("q", "rust mcp")])
        );
        assert_eq!(
            vars("t://s{?q,lang}", "t://s?lang=en"),
            pairs(&[("lang", "en")])
        );
        assert_eq!(vars("t://s{?q,lang}", "t://s"), pairs(&[]));
        assert_eq!(vars("t://s{?q}", "t://s?other=1"), None);
        assert_eq!(vars("t://s{?q}", "t://s?q=1&q=2"), None);
        assert_eq!(
            vars("t://s{?q}{&page}", "t://s?q=a&page=2"),
            pairs(&[("page", "2"), ("q", "a")])
        );
        assert_eq!(
            vars("t://users/{id}{?fields}", "t://users/7?fields=name"),
            pairs(&[("fields", "name"), ("id", "7")])
        );
        assert_eq!(vars("t://m{;v}", "t://m;v=1"), pairs(&[("v", "1")]));
    }

    #[test]
    fn modifiers_are_accepted() {
        assert_eq!(vars("t://{id:3}", "t://abc"), pairs(&[("id", "abc")]));
        assert_eq!(vars("t://{list*}", "t://a,b"), pairs(&[("list", "a,b")]));
    }
}
