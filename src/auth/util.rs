//! Small helpers of the authorization flow: encodings, randomness, and URLs split as strings.
//!
//! Issuer and resource identifiers are compared and stored exactly as the server wrote them:
//! nothing here re-serializes a URL (a parser that writes `http://h:1` back as `http://h:1/`
//! breaks the byte-for-byte checks RFC 8414 §3.3, RFC 9207 and RFC 8707 ask for).

use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::error::{AuthErrorKind, Error, Result};

/// base64url without padding (JWS, PKCE).
pub(crate) fn b64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// base64url without padding, decoded.
pub(crate) fn b64url_decode(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok()
}

/// Standard base64 with padding (Basic credentials).
pub(crate) fn b64std(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// SHA-256 of `bytes`, base64url.
pub(crate) fn sha256_b64url(bytes: &[u8]) -> String {
    b64url(&Sha256::digest(bytes))
}

/// `bytes` random bytes from the OS, base64url.
pub(crate) fn random_b64url(bytes: usize) -> Result<String> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).map_err(|error| {
        Error::auth_error(
            AuthErrorKind::Authorization,
            format!("the operating system gave no random numbers: {error}"),
        )
    })?;
    Ok(b64url(&buffer))
}

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// `application/x-www-form-urlencoded` of one value.
pub(crate) fn form_encode(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// A form body of the pairs.
pub(crate) fn form_body(pairs: &[(&str, &str)]) -> String {
    let mut serializer = form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs {
        serializer.append_pair(name, value);
    }
    serializer.finish()
}

/// An absolute http(s) URL cut into its parts, as the text has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UrlParts<'a> {
    /// `scheme://authority`.
    pub(crate) origin: &'a str,
    /// The path (`""` when there is none), without query or fragment.
    pub(crate) path: &'a str,
    /// The query without its `?`, when there is one.
    pub(crate) query: Option<&'a str>,
}

/// Splits an absolute `http://` or `https://` URL; `None` for anything else.
pub(crate) fn split_url(url: &str) -> Option<UrlParts<'_>> {
    let lower_scheme = url
        .get(..8)
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let scheme_len = if lower_scheme.starts_with("https://") {
        8
    } else if lower_scheme.starts_with("http://") {
        7
    } else {
        return None;
    };
    let rest = &url[scheme_len..];
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if authority_len == 0 {
        return None;
    }
    let origin = &url[..scheme_len + authority_len];
    let after = &url[scheme_len + authority_len..];
    let before_fragment = after.split('#').next().unwrap_or("");
    let (path, query) = match before_fragment.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (before_fragment, None),
    };
    Some(UrlParts {
        origin,
        path,
        query,
    })
}

/// The URL without its query and fragment (a DPoP proof's `htu`).
pub(crate) fn without_query(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    &url[..end]
}

/// The URL without its fragment (RFC 8707's canonical resource, no `/` added).
pub(crate) fn without_fragment(url: &str) -> &str {
    url.split('#').next().unwrap_or(url)
}

/// Whether the host of an origin is a loopback address.
pub(crate) fn is_loopback_origin(origin: &str) -> bool {
    let host_port = origin.split("://").nth(1).unwrap_or("");
    let host_port = host_port.rsplit('@').next().unwrap_or(host_port);
    let host = if let Some(stripped) = host_port.strip_prefix('[') {
        stripped.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    let host = host.to_ascii_lowercase();
    host == "localhost" || host == "::1" || host.starts_with("127.")
}

/// Refuses an authorization-server URL that is neither `https://` nor loopback `http://`
/// (2026-07-28 security considerations: tokens and codes never cross the network in clear).
pub(crate) fn check_endpoint(url: &str, what: &str) -> Result<()> {
    let shown = crate::mask::mask_url(url);
    let Some(parts) = split_url(url) else {
        return Err(Error::auth_error(
            AuthErrorKind::Discovery,
            format!("the {what} `{shown}` is not an absolute http(s) URL"),
        ));
    };
    if parts.origin.len() >= 8 && parts.origin[..8].eq_ignore_ascii_case("https://") {
        return Ok(());
    }
    if is_loopback_origin(parts.origin) {
        return Ok(());
    }
    Err(Error::auth_error(
        AuthErrorKind::Discovery,
        format!("the {what} `{shown}` is plain http on a host that is not loopback: only https is allowed"),
    ))
}

/// Text from a server for a message: bounded, control characters dropped.
pub(crate) fn shown(text: &str, limit: usize) -> String {
    let mut out: String = text
        .chars()
        .filter(|c| !c.is_control())
        .take(limit)
        .collect();
    if text.chars().count() > limit {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_as_written() {
        let parts = split_url("http://localhost:1234").unwrap();
        assert_eq!(
            (parts.origin, parts.path, parts.query),
            ("http://localhost:1234", "", None)
        );
        let parts = split_url("HTTPS://h/a/b?x=1#f").unwrap();
        assert_eq!(
            (parts.origin, parts.path, parts.query),
            ("HTTPS://h", "/a/b", Some("x=1"))
        );
        assert!(split_url("ftp://h/").is_none());
        assert!(split_url("http:///x").is_none());
        assert_eq!(without_query("http://h/p?q#f"), "http://h/p");
    }

    #[test]
    fn loopback_and_https_only() {
        assert!(check_endpoint("http://localhost:3/token", "t").is_ok());
        assert!(check_endpoint("http://127.0.0.1/token", "t").is_ok());
        assert!(check_endpoint("http://[::1]:8/token", "t").is_ok());
        assert!(check_endpoint("https://as.example/token", "t").is_ok());
        assert!(check_endpoint("http://as.example/token", "t").is_err());
        assert!(check_endpoint("http://localhost.evil/token", "t").is_err());
    }

    #[test]
    fn pkce_challenge_of_the_rfc_example() {
        // RFC 7636 appendix B.
        assert_eq!(
            sha256_b64url(b"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
