//! What of a URL, a header or a token may be shown: the one place that decides.
//!
//! Every URL this crate prints (in an error, a log record, a `Debug`) goes through
//! [`mask_url`] first; every header value and token is shown as [`MASK`]. A password in a URL
//! (`http://user:pass@host/…`) becomes `http://user:***@host/…`; a userinfo without a colon,
//! which is how many services take a token (`https://TOKEN@host/…`), becomes `***` whole; the
//! value of a query parameter whose name looks like a credential (`api_key`, `token`,
//! `secret`, `password`, `auth`, `sig`, …) becomes `***`. The host, port, path and the other
//! parameters stay, so a message still says where it went.
//!
//! Text that comes from outside (a server's error body, a dependency's error message, a
//! peer's JSON-RPC error, a tool's `isError` text, a child's stderr) may quote a secret back.
//! Each connection's transport knows that connection's secrets and shares them as one
//! [`Scrubber`] ([`crate::transport::Transport::scrubber`]); whatever shows or records the
//! peer's text takes it through that scrubber first.
// Without the `http` feature only `mask_url` and the `Debug` helpers have users.
#![cfg_attr(not(feature = "http"), allow(dead_code))]

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

/// What a secret is shown as.
pub(crate) const MASK: &str = "***";

/// Query parameter names (lower case) whose values are taken for credentials when the name
/// contains one of these.
const SECRET_PARAMETERS: &[&str] = &[
    "key", "token", "secret", "pass", "pwd", "auth", "sig", "cred", "session",
];

/// Secrets shorter than this are not searched for in foreign text: a two-letter header value
/// would otherwise blank out words at random, and is no secret.
const SCRUB_MIN_CHARS: usize = 6;

/// How many credentials handed out over a connection's life (OAuth access tokens, DPoP
/// proofs, refreshed ones) a [`Scrubber`] keeps searching for; the oldest go first.
const MAX_LEARNED: usize = 32;

/// The form of `url` that may be shown: a password (or a userinfo without a colon) and the
/// values of credential-like query parameters replaced by `***`. Works on any text, parsed
/// or not, so it also masks a URL that failed to parse.
///
/// ```
/// use toolwire::transport::mask_url;
///
/// assert_eq!(
///     mask_url("http://me:hunter2@127.0.0.1:8000/mcp?api_key=abc&v=2"),
///     "http://me:***@127.0.0.1:8000/mcp?api_key=***&v=2"
/// );
/// assert_eq!(mask_url("https://ghp_token@example.com/mcp"), "https://***@example.com/mcp");
/// assert_eq!(mask_url("http://127.0.0.1/mcp"), "http://127.0.0.1/mcp");
/// ```
pub fn mask_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(at) => url.split_at(at + 3),
        None => ("", url),
    };
    let mut out = String::with_capacity(url.len());
    out.push_str(scheme);
    let rest = match userinfo_end(rest) {
        Some(at) => {
            let userinfo = &rest[..at];
            match userinfo.split_once(':') {
                Some((user, _password)) => {
                    out.push_str(user);
                    out.push(':');
                    out.push_str(MASK);
                }
                None => out.push_str(MASK),
            }
            &rest[at..]
        }
        None => rest,
    };
    let (before_fragment, fragment) = match rest.find('#') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    match before_fragment.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            out.push_str(&mask_query(query));
        }
        None => out.push_str(before_fragment),
    }
    out.push_str(fragment);
    out
}

/// Where the userinfo of `rest` (a URL after its `scheme://`) ends: the index of its `@`.
fn userinfo_end(rest: &str) -> Option<usize> {
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    if let Some(at) = authority.rfind('@') {
        return Some(at);
    }
    // A password holding an unescaped `/`, `?` or `#` ends the authority early, leaving
    // `user:pa` with a "port" that is no number; the userinfo then runs to the last `@`.
    let port_is_number = match authority.rfind(':') {
        Some(colon) => {
            authority.ends_with(']') || authority[colon + 1..].bytes().all(|b| b.is_ascii_digit())
        }
        None => true,
    };
    if port_is_number {
        None
    } else {
        rest.rfind('@')
    }
}

/// The userinfo of `url` (`user:pass` of `http://user:pass@host/`), when it has one.
pub(crate) fn userinfo(url: &str) -> Option<&str> {
    let (_, rest) = url.split_at(url.find("://").map_or(0, |at| at + 3));
    userinfo_end(rest).map(|at| &rest[..at])
}

/// A query string with the values of credential-like parameters masked.
fn mask_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if !value.is_empty() && is_secret_parameter(name) => {
                format!("{name}={MASK}")
            }
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

fn is_secret_parameter(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_PARAMETERS.iter().any(|word| name.contains(word))
}

/// `text` with every URL in it (a `scheme://` run up to whitespace or a quote) masked, for
/// messages written by others (a dependency's error) that may quote the URL.
pub(crate) fn mask_urls_in(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let ends = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |before| before + 1);
        let end = rest[at..].find(ends).map_or(rest.len(), |end| at + end);
        out.push_str(&rest[..start]);
        out.push_str(&mask_url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Headers for `Debug`: each name with `***` for its value.
pub(crate) struct MaskedHeaders<'a>(pub(crate) &'a [(String, String)]);

impl fmt::Debug for MaskedHeaders<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(name, _)| (name, MASK)))
            .finish()
    }
}

/// Names for `Debug`, each with `***` for its value (environment variables, inputs).
pub(crate) struct MaskedValues<I>(pub(crate) I);

impl<I, K> fmt::Debug for MaskedValues<I>
where
    I: Iterator<Item = K> + Clone,
    K: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.clone().map(|name| (name, MASK)))
            .finish()
    }
}

/// The secrets of one connection (a URL's userinfo, a token, header values), to take out of
/// text that came from outside before it goes into an error.
#[derive(Clone, Default)]
pub(crate) struct Secrets {
    /// Longest first, so a secret that holds another is replaced whole.
    values: Vec<String>,
}

impl Secrets {
    /// The secrets of a URL and its credentials.
    pub(crate) fn new<'a>(url: &str, credentials: impl IntoIterator<Item = &'a str>) -> Secrets {
        let mut values: Vec<String> = Vec::new();
        if let Some(userinfo) = userinfo(url) {
            let secret = userinfo
                .split_once(':')
                .map_or(userinfo, |(_, password)| password);
            values.push(secret.to_owned());
            values.push(percent_decoded(secret));
        }
        for credential in credentials {
            values.push(credential.to_owned());
            // `Bearer xyz`, `Basic xyz`: the part after the scheme alone is the secret too.
            if let Some((_, token)) = credential.split_once(' ') {
                values.push(token.trim().to_owned());
            }
        }
        values.retain(|value| value.chars().count() >= SCRUB_MIN_CHARS);
        values.sort_by_key(|value| std::cmp::Reverse(value.len()));
        values.dedup();
        Secrets { values }
    }

    /// Whether one of the secrets is in `text`.
    fn found_in(&self, text: &str) -> bool {
        self.values
            .iter()
            .any(|value| text.contains(value.as_str()))
    }

    /// `text` with every secret in it replaced by `***`, and every URL in it masked.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut text = mask_urls_in(text).into_owned();
        for value in &self.values {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), MASK);
            }
        }
        text
    }
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} masked)", self.values.len())
    }
}

/// The secrets of one connection, shared by its transport (which knows them) and everything
/// that shows or records what the peer sent: the JSON-RPC client (the peer's error objects),
/// the MCP client (a tool's `isError` result), the command's transcript (every frame).
///
/// What it takes out: the values of the headers the connection sends (configured ones and the
/// credentials of its [`crate::transport::HttpAuth`], such as OAuth access tokens, as they are
/// handed out), a URL's password (also percent-decoded, and as the `Basic` credentials sent
/// for it), and the values of the variables set for a child process (its `env`, `envFile` and
/// `--env`, not the inherited ones such as `HOME` or `PATH`). Values shorter than six
/// characters are left alone. Every URL in the text is also masked as [`mask_url`] does.
///
/// A scrubber with no secrets (the default, of a transport that has none) still masks URLs.
/// Cheap to clone: every clone shares what the transport learns later.
///
/// ```
/// use serde_json::json;
/// use toolwire::transport::{StdioConfig, StdioTransport, Transport};
///
/// let transport = StdioTransport::spawn(
///     StdioConfig::new("cat").env("API_TOKEN", "tok-planted-1234"),
/// ).unwrap();
/// let scrubber = transport.scrubber();
/// assert_eq!(scrubber.scrub("bad token tok-planted-1234"), "bad token ***");
/// let mut error = json!({"message": "denied", "data": {"sent": "tok-planted-1234"}});
/// scrubber.scrub_value(&mut error);
/// assert_eq!(error["data"]["sent"], "***");
/// transport.close().unwrap();
/// ```
#[derive(Clone, Default)]
pub struct Scrubber(Arc<ScrubberState>);

#[derive(Default)]
struct ScrubberState {
    /// Known when the connection is made.
    fixed: Secrets,
    /// Handed out later (credentials of each request), with the generation last seen.
    learned: Mutex<Learned>,
}

#[derive(Default)]
struct Learned {
    generation: u64,
    /// Oldest first; at most [`MAX_LEARNED`].
    values: Vec<String>,
    /// `values` as a [`Secrets`], longest first.
    secrets: Secrets,
}

impl Scrubber {
    /// A scrubber of these secrets.
    pub(crate) fn new(fixed: Secrets) -> Scrubber {
        Scrubber(Arc::new(ScrubberState {
            fixed,
            learned: Mutex::new(Learned::default()),
        }))
    }

    /// Adds credentials handed out for a request (header values), unless their `generation`
    /// (non-zero) was already learned. The last [`MAX_LEARNED`] values are kept.
    pub(crate) fn learn<'a>(&self, generation: u64, values: impl IntoIterator<Item = &'a str>) {
        let mut learned = self.0.learned.lock();
        if generation != 0 && learned.generation == generation {
            return;
        }
        learned.generation = generation;
        let mut changed = false;
        for value in values {
            if !learned.values.iter().any(|known| known == value) {
                learned.values.push(value.to_owned());
                changed = true;
            }
        }
        if changed {
            let excess = learned.values.len().saturating_sub(MAX_LEARNED);
            learned.values.drain(..excess);
            learned.secrets = Secrets::new("", learned.values.iter().map(String::as_str));
        }
    }

    /// `text` with every secret of the connection replaced by `***` and every URL masked.
    pub fn scrub(&self, text: &str) -> String {
        let text = self.0.fixed.scrub(text);
        let learned = self.0.learned.lock();
        if learned.secrets.values.is_empty() {
            text
        } else {
            learned.secrets.scrub(&text)
        }
    }

    /// Scrubs every string of `value` (and every object key) in place, as [`Scrubber::scrub`]:
    /// for JSON the peer sent, whose strings are searched decoded (a secret holding a `"` is
    /// escaped in the text, never in the value).
    pub fn scrub_value(&self, value: &mut Value) {
        match value {
            Value::String(text) if self.needs_scrub(text) => *text = self.scrub(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.scrub_value(item)),
            Value::Object(object) => {
                if object.keys().any(|key| self.needs_scrub(key)) {
                    let entries = std::mem::take(object);
                    for (key, item) in entries {
                        object.insert(self.scrub(&key), item);
                    }
                }
                object.values_mut().for_each(|item| self.scrub_value(item));
            }
            _ => {}
        }
    }

    /// Whether [`Scrubber::scrub`] may change `text` (a quick test that skips the copy).
    fn needs_scrub(&self, text: &str) -> bool {
        text.contains("://")
            || self.0.fixed.found_in(text)
            || self.0.learned.lock().secrets.found_in(text)
    }
}

impl fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let learned = self.0.learned.lock().secrets.values.len();
        write!(
            f,
            "Scrubber({} masked)",
            self.0.fixed.values.len() + learned
        )
    }
}

/// `%XX` sequences decoded (lossy UTF-8), for a password written percent-encoded.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|b| char::from(*b).to_digit(16));
        if bytes[index] == b'%' {
            if let (Some(high), Some(low)) = (hex(index + 1), hex(index + 2)) {
                out.push((high * 16 + low) as u8);
                index += 3;
                continue;
            }
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked_and_hosts_kept() {
        assert_eq!(
            mask_url("http://user:pass@host:8080/mcp"),
            "http://user:***@host:8080/mcp"
        );
        assert_eq!(mask_url("http://user:@host/"), "http://user:***@host/");
        assert_eq!(mask_url("https://token@host/"), "https://***@host/");
        assert_eq!(mask_url("http://u:p@ss@host/x"), "http://u:***@host/x");
        assert_eq!(mask_url("http://u:pa/ss@host/x"), "http://u:***@host/x");
        assert_eq!(mask_url("user:pass@host/mcp"), "user:***@host/mcp");
        assert_eq!(mask_url("http://[::1]:80/@scope"), "http://[::1]:80/@scope");
        assert_eq!(mask_url("http://host/@scope/pkg"), "http://host/@scope/pkg");
        assert_eq!(mask_url(""), "");
    }

    #[test]
    fn credential_parameters_are_masked() {
        assert_eq!(
            mask_url("http://h/mcp?apiKey=1&page=2&access_token=3#frag"),
            "http://h/mcp?apiKey=***&page=2&access_token=***#frag"
        );
        assert_eq!(mask_url("http://h/mcp?token="), "http://h/mcp?token=");
        assert_eq!(mask_url("http://h/?flag"), "http://h/?flag");
    }

    #[test]
    fn masking_is_idempotent() {
        let once = mask_url("http://user:pass@host/mcp?secret=x");
        assert_eq!(mask_url(&once), once);
    }

    #[test]
    fn urls_inside_text_are_masked() {
        assert_eq!(
            mask_urls_in("bad uri: http://u:pw@/mcp is missing host"),
            "bad uri: http://u:***@/mcp is missing host"
        );
        assert_eq!(
            mask_urls_in("`https://t@h/` and \"http://a:b@c/\""),
            "`https://***@h/` and \"http://a:***@c/\""
        );
        assert!(matches!(mask_urls_in("no url here"), Cow::Borrowed(_)));
    }

    #[test]
    fn secrets_are_scrubbed_from_foreign_text() {
        let secrets = Secrets::new(
            "http://me:p%40ssword@h/",
            ["Bearer tok-123456", "short", "header-secret"],
        );
        let text = secrets.scrub(
            "echo: Bearer tok-123456; token tok-123456; p@ssword p%40ssword header-secret short",
        );
        assert_eq!(text, "echo: ***; token ***; *** *** *** short");
        assert_eq!(format!("{secrets:?}"), "Secrets(5 masked)");
    }

    #[test]
    fn a_scrubber_learns_credentials_and_scrubs_json() {
        let scrubber = Scrubber::new(Secrets::new("", ["fixed-secret"]));
        scrubber.learn(1, ["Bearer token-one-111"]);
        // The same generation again is known already.
        scrubber.learn(1, ["Bearer token-two-222"]);
        assert_eq!(scrubber.scrub("token-two-222"), "token-two-222");
        let clone = scrubber.clone();
        scrubber.learn(2, ["Bearer token-two-222"]);
        // The earlier token is still taken out, and a clone sees what was learned later.
        assert_eq!(
            clone.scrub("a token-one-111 b token-two-222 c fixed-secret"),
            "a *** b *** c ***"
        );
        let mut value = serde_json::json!({
            "m": "say \"fixed-secret\"",
            "fixed-secret": [1, "x token-one-111", {"url": "http://u:pw@h/"}],
            "n": 5
        });
        scrubber.scrub_value(&mut value);
        assert_eq!(
            value,
            serde_json::json!({"m": "say \"***\"", "***": [1, "x ***", {"url": "http://u:***@h/"}],
                               "n": 5})
        );
        assert_eq!(format!("{scrubber:?}"), "Scrubber(5 masked)");
    }

    #[test]
    fn a_scrubber_keeps_the_last_learned_values() {
        let scrubber = Scrubber::default();
        for generation in 1..=40u64 {
            let value = format!("credential-{generation:03}");
            scrubber.learn(generation, [value.as_str()]);
        }
        assert_eq!(scrubber.scrub("credential-001"), "credential-001");
        assert_eq!(scrubber.scrub("credential-009"), "***");
        assert_eq!(scrubber.scrub("credential-040"), "***");
    }

    #[test]
    fn headers_show_names_only() {
        let headers = vec![("Authorization".to_owned(), "Bearer x".to_owned())];
        assert_eq!(
            format!("{:?}", MaskedHeaders(&headers)),
            r#"{"Authorization": "***"}"#
        );
    }
}
