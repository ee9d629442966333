//! URI references as JSON Schema uses them: `$id` changes the base URI, `$ref` is resolved
//! against it (RFC 3986 section 5), and a fragment is either a JSON pointer or an anchor name.
//!
//! Only resolution and comparison are needed, never a network: every URI is a key into the
//! schema document's own resources, so this is string work, kept small and total (it never
//! fails; a malformed reference resolves to some string that simply names no resource).

/// The base URI of a document that declares none. It is hierarchical so that relative
/// references resolve against it, and of a scheme no server answers, so that a relative
/// reference to another file is plainly "outside the document".
pub(crate) const DEFAULT_BASE: &str = "toolwire:///schema.json";

/// The five parts of a URI reference (RFC 3986 appendix B).
struct Parts<'a> {
    scheme: Option<&'a str>,
    authority: Option<&'a str>,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

fn split(reference: &str) -> Parts<'_> {
    let (rest, fragment) = match reference.find('#') {
        Some(at) => (&reference[..at], Some(&reference[at + 1..])),
        None => (reference, None),
    };
    let (rest, query) = match rest.find('?') {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    // A scheme is letters, digits, `+`, `-`, `.`, starting with a letter, before the first `:`
    // that comes before any `/`.
    let scheme_end = rest.find(':').filter(|&at| {
        at > 0
            && !rest[..at].contains('/')
            && rest[..at].starts_with(|c: char| c.is_ascii_alphabetic())
            && rest[..at]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    let (scheme, rest) = match scheme_end {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let (authority, path) = match rest.strip_prefix("//") {
        Some(after) => {
            let end = after.find('/').unwrap_or(after.len());
            (Some(&after[..end]), &after[end..])
        }
        None => (None, rest),
    };
    Parts {
        scheme,
        authority,
        path,
        query,
        fragment,
    }
}

/// RFC 3986 section 5.2.4.
fn remove_dot_segments(path: &str) -> String {
    let mut output: Vec<&str> = Vec::new();
    let absolute = path.starts_with('/');
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len().saturating_sub(1);
    let mut trailing_slash = false;
    for (index, segment) in segments.iter().enumerate() {
        if index == 0 && absolute {
            continue;
        }
        match *segment {
            "." => trailing_slash = index == last,
            ".." => {
                output.pop();
                trailing_slash = index == last;
            }
            other => {
                output.push(other);
                trailing_slash = false;
            }
        }
    }
    let mut text = String::with_capacity(path.len());
    if absolute {
        text.push('/');
    }
    text.push_str(&output.join("/"));
    if trailing_slash && !text.ends_with('/') {
        text.push('/');
    }
    text
}

/// RFC 3986 section 5.2.3: the reference's path merged with the base's.
fn merge(base: &Parts<'_>, path: &str) -> String {
    if base.authority.is_some() && base.path.is_empty() {
        return format!("/{path}");
    }
    match base.path.rfind('/') {
        Some(at) => format!("{}{path}", &base.path[..=at]),
        None => path.to_owned(),
    }
}

/// Resolves `reference` against the absolute URI `base` (RFC 3986 section 5.2.2).
pub(crate) fn resolve(base: &str, reference: &str) -> String {
    let reference_parts = split(reference);
    let base_parts = split(base);
    let (scheme, authority, path, query);
    if let Some(reference_scheme) = reference_parts.scheme {
        scheme = Some(reference_scheme);
        authority = reference_parts.authority;
        path = remove_dot_segments(reference_parts.path);
        query = reference_parts.query;
    } else {
        scheme = base_parts.scheme;
        if reference_parts.authority.is_some() {
            authority = reference_parts.authority;
            path = remove_dot_segments(reference_parts.path);
            query = reference_parts.query;
        } else {
            authority = base_parts.authority;
            if reference_parts.path.is_empty() {
                path = base_parts.path.to_owned();
                query = reference_parts.query.or(base_parts.query);
            } else {
                path = if reference_parts.path.starts_with('/') {
                    remove_dot_segments(reference_parts.path)
                } else {
                    remove_dot_segments(&merge(&base_parts, reference_parts.path))
                };
                query = reference_parts.query;
            }
        }
    }
    let mut text = String::with_capacity(base.len() + reference.len());
    if let Some(scheme) = scheme {
        text.push_str(&scheme.to_ascii_lowercase());
        text.push(':');
    }
    if let Some(authority) = authority {
        text.push_str("//");
        text.push_str(authority);
    }
    text.push_str(&path);
    if let Some(query) = query {
        text.push('?');
        text.push_str(query);
    }
    if let Some(fragment) = reference_parts.fragment {
        text.push('#');
        text.push_str(fragment);
    }
    text
}

/// Splits an absolute URI into the resource part and the fragment ("" when there is none).
pub(crate) fn split_fragment(uri: &str) -> (&str, &str) {
    match uri.find('#') {
        Some(at) => (&uri[..at], &uri[at + 1..]),
        None => (uri, ""),
    }
}

/// Decodes `%XX` escapes (a fragment's JSON pointer may carry them). An invalid escape is
/// kept as written.
pub(crate) fn percent_decode(text: &str) -> String {
    if !text.contains('%') {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' && index + 2 < bytes.len() {
            let high = (bytes[index + 1] as char).to_digit(16);
            let low = (bytes[index + 2] as char).to_digit(16);
            if let (Some(high), Some(low)) = (high, low) {
                decoded.push((high * 16 + low) as u8);
                index += 3;
                continue;
            }
        }
        decoded.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// The tokens of a JSON pointer (`/a~1b/0` is `["a/b", "0"]`), or `None` if it does not
/// start with `/` (the empty pointer has no tokens).
pub(crate) fn pointer_tokens(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    Some(
        rest.split('/')
            .map(|token| token.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

/// Appends one token to a JSON pointer, escaping `~` and `/`.
pub(crate) fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for character in token.chars() {
        match character {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            other => pointer.push(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_as_rfc_3986_says() {
        let base = "http://a/b/c/d;p?q";
        for (reference, expected) in [
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"),
            ("//g", "http://g"),
            ("?y", "http://a/b/c/d;p?y"),
            ("#s", "http://a/b/c/d;p?q#s"),
            ("", "http://a/b/c/d;p?q"),
            (".", "http://a/b/c/"),
            ("..", "http://a/b/"),
            ("../g", "http://a/b/g"),
            ("../../g", "http://a/g"),
            ("../../../g", "http://a/g"),
            ("g;x=1/../y", "http://a/b/c/y"),
            ("urn:x:y", "urn:x:y"),
        ] {
            assert_eq!(resolve(base, reference), expected, "{reference}");
        }
        assert_eq!(resolve("urn:uuid:1234", "#/a"), "urn:uuid:1234#/a");
        assert_eq!(resolve(DEFAULT_BASE, "#foo"), "toolwire:///schema.json#foo");
        assert_eq!(
            resolve(DEFAULT_BASE, "other.json"),
            "toolwire:///other.json"
        );
    }

    #[test]
    fn pointers_and_escapes_decode() {
        assert_eq!(percent_decode("a%25b%22"), "a%b\"");
        assert_eq!(percent_decode("50%"), "50%");
        assert_eq!(pointer_tokens("/a~1b/~0/0").unwrap(), ["a/b", "~", "0"]);
        assert_eq!(pointer_tokens("").unwrap(), Vec::<String>::new());
        assert!(pointer_tokens("a").is_none());
        let mut pointer = String::new();
        push_token(&mut pointer, "a/b~");
        assert_eq!(pointer, "/a~1b~0");
    }
}
