//! The authorization code grant's front half: PKCE (RFC 7636, S256 only), the authorization
//! request, and the redirect's checks (`state`, then RFC 9207's `iss`, before any token
//! request).

use std::fmt;

use super::util::{form_body, random_b64url, sha256_b64url, split_url};
use crate::error::{AuthErrorKind, Error, Result};

/// The most bytes of a redirect address read.
pub const MAX_REDIRECT_BYTES: usize = 16 * 1024;

/// What an authorization redirect's query says.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Redirect {
    /// `code`.
    pub code: Option<String>,
    /// `state`.
    pub state: Option<String>,
    /// `iss` (RFC 9207).
    pub iss: Option<String>,
    /// `error`, for a refusal.
    pub error: Option<String>,
    /// `error_description`, for a refusal.
    pub error_description: Option<String>,
    /// A parameter that counts appeared more than once (RFC 6749 §3.1 forbids it).
    pub repeated: bool,
}

impl fmt::Debug for Redirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redirect")
            .field("code", &self.code.as_ref().map(|_| "[REDACTED]"))
            .field("state", &self.state.as_ref().map(|_| "[REDACTED]"))
            .field("iss", &self.iss)
            .field("error", &self.error)
            .field("repeated", &self.repeated)
            .finish()
    }
}

/// Reads the query of a redirect address (`…/callback?code=…&state=…&iss=…`), form-decoded.
/// Text past [`MAX_REDIRECT_BYTES`] is ignored; an address with no query gives an empty
/// [`Redirect`].
pub fn parse_redirect(address: &str) -> Redirect {
    let mut end = address.len().min(MAX_REDIRECT_BYTES);
    while !address.is_char_boundary(end) {
        end -= 1;
    }
    let address = &address[..end];
    let query = match address.split_once('?') {
        Some((_, rest)) => rest.split('#').next().unwrap_or(""),
        None => "",
    };
    let mut redirect = Redirect::default();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        let slot = match name.as_ref() {
            "code" => &mut redirect.code,
            "state" => &mut redirect.state,
            "iss" => &mut redirect.iss,
            "error" => &mut redirect.error,
            "error_description" => &mut redirect.error_description,
            _ => continue,
        };
        if slot.is_some() {
            redirect.repeated = true;
        } else {
            *slot = Some(value.into_owned());
        }
    }
    redirect
}

/// A PKCE verifier (32 random bytes, 43 characters) and its S256 challenge.
pub(crate) struct Pkce {
    pub(crate) verifier: String,
    pub(crate) challenge: String,
}

impl fmt::Debug for Pkce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Pkce([REDACTED])")
    }
}

impl Pkce {
    pub(crate) fn new() -> Result<Pkce> {
        let verifier = random_b64url(32)?;
        let challenge = sha256_b64url(verifier.as_bytes());
        Ok(Pkce {
            verifier,
            challenge,
        })
    }
}

/// The authorization endpoint with the request's parameters added to its query.
pub(crate) fn authorization_url(endpoint: &str, pairs: &[(&str, &str)]) -> String {
    let query = form_body(pairs);
    let (base, fragment) = match endpoint.split_once('#') {
        Some((base, _)) => (base, ""),
        None => (endpoint, ""),
    };
    let joiner = match split_url(base).and_then(|parts| parts.query) {
        Some(existing) if !existing.is_empty() => "&",
        Some(_) => "",
        None => "?",
    };
    format!("{base}{joiner}{query}{fragment}")
}

/// What a redirect must agree with.
pub(crate) struct Expected<'a> {
    pub(crate) state: &'a str,
    pub(crate) issuer: &'a str,
    pub(crate) iss_supported: bool,
}

/// Checks a redirect and returns its code: `state` first (a redirect for another request is
/// discarded), then `iss` by RFC 9207 §2.4 (compared byte for byte, required when the server
/// advertises it, checked even when it does not), then an error redirect, then the code.
pub(crate) fn check_redirect(redirect: &Redirect, expected: &Expected<'_>) -> Result<String> {
    let fail = |kind, message: String| Err(Error::auth_error(kind, message));
    if redirect.repeated {
        return fail(
            AuthErrorKind::Authorization,
            "the redirect repeats a parameter".into(),
        );
    }
    if redirect.state.as_deref() != Some(expected.state) {
        return fail(
            AuthErrorKind::Authorization,
            "the redirect's `state` is not the one this client sent: it is not the answer to this request".into(),
        );
    }
    match (&redirect.iss, expected.iss_supported) {
        (Some(iss), _) if iss != expected.issuer => {
            return fail(
                AuthErrorKind::IssuerMismatch,
                format!(
                    "the redirect's `iss` is `{}`, not the issuer `{}` (RFC 9207): refusing it, and its code",
                    super::util::shown(iss, 200),
                    crate::mask::mask_url(expected.issuer)
                ),
            );
        }
        (None, true) => {
            return fail(
                AuthErrorKind::IssuerMismatch,
                format!(
                    "the issuer `{}` advertises the `iss` parameter but the redirect has none (RFC 9207 §2.4)",
                    crate::mask::mask_url(expected.issuer)
                ),
            );
        }
        _ => {}
    }
    if let Some(error) = &redirect.error {
        let description = redirect
            .error_description
            .as_deref()
            .map(|text| format!(": {}", super::util::shown(text, 200)))
            .unwrap_or_default();
        return fail(
            AuthErrorKind::Authorization,
            format!(
                "the authorization was refused (`{}`){description}",
                super::util::shown(error, 100)
            ),
        );
    }
    match &redirect.code {
        Some(code) if !code.is_empty() => Ok(code.clone()),
        _ => fail(
            AuthErrorKind::Authorization,
            "the redirect carries no code".into(),
        ),
    }
}

/// The scopes to ask for first (MCP's scope selection): the challenge's, else all the
/// resource's `scopes_supported`, else none (the parameter is then left out).
pub(crate) fn select_scopes(challenge: &[String], supported: Option<&[String]>) -> Vec<String> {
    if !challenge.is_empty() {
        return challenge.to_vec();
    }
    supported.map(<[String]>::to_vec).unwrap_or_default()
}

/// `base` with every scope of `more` it lacks added, in order.
pub(crate) fn union(base: &[String], more: &[String]) -> Vec<String> {
    let mut out = base.to_vec();
    for scope in more {
        if !out.contains(scope) {
            out.push(scope.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected(iss_supported: bool) -> Expected<'static> {
        Expected {
            state: "s1",
            issuer: "http://as:1",
            iss_supported,
        }
    }

    #[test]
    fn the_rfc_9207_table() {
        let ok = parse_redirect("http://127.0.0.1/cb?code=c&state=s1&iss=http%3A%2F%2Fas%3A1");
        assert_eq!(check_redirect(&ok, &expected(true)).unwrap(), "c");
        assert_eq!(check_redirect(&ok, &expected(false)).unwrap(), "c");
        let missing = parse_redirect("http://127.0.0.1/cb?code=c&state=s1");
        assert!(check_redirect(&missing, &expected(true)).is_err());
        assert_eq!(check_redirect(&missing, &expected(false)).unwrap(), "c");
        for wrong in ["https://evil.example.com", "http://as:1/", "HTTP://as:1"] {
            let redirect = parse_redirect(&format!(
                "http://x/?code=c&state=s1&iss={}",
                super::super::util::form_encode(wrong)
            ));
            let error = check_redirect(&redirect, &expected(false)).unwrap_err();
            assert_eq!(
                error.auth().unwrap().kind,
                AuthErrorKind::IssuerMismatch,
                "{wrong}"
            );
        }
    }

    #[test]
    fn state_first_and_errors_after_iss() {
        let other = parse_redirect("http://x/?code=c&state=other");
        assert!(check_redirect(&other, &expected(false)).is_err());
        let refused =
            parse_redirect("http://x/?error=access_denied&error_description=no&state=s1&iss=bad");
        let error = check_redirect(&refused, &expected(false)).unwrap_err();
        assert!(!error.to_string().contains(": no"), "{error}");
        let twice = parse_redirect("http://x/?code=a&code=b&state=s1");
        assert!(twice.repeated && check_redirect(&twice, &expected(false)).is_err());
        let code = parse_redirect("http://x/?code=planted-code&state=s1");
        assert!(!format!("{code:?}").contains("planted"));
    }

    #[test]
    fn urls_and_scopes() {
        assert_eq!(
            authorization_url("http://a/authorize", &[("a", "b c")]),
            "http://a/authorize?a=b+c"
        );
        assert_eq!(
            authorization_url("http://a/authorize?x=1", &[("a", "b")]),
            "http://a/authorize?x=1&a=b"
        );
        let s = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(select_scopes(&s(&["a"]), Some(&s(&["b"]))), s(&["a"]));
        assert_eq!(select_scopes(&[], Some(&s(&["b", "c"]))), s(&["b", "c"]));
        assert!(select_scopes(&[], None).is_empty());
        assert_eq!(union(&s(&["a", "b"]), &s(&["b", "c"])), s(&["a", "b", "c"]));
        let pkce = Pkce::new().unwrap();
        assert_eq!(pkce.verifier.len(), 43);
        assert_eq!(pkce.challenge, sha256_b64url(pkce.verifier.as_bytes()));
    }
}
