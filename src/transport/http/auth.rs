//! The seam between the HTTP transport and whoever holds its credentials.
//!
//! The transport knows no OAuth. Before every request (POST, GET, DELETE) it asks the
//! [`HttpAuth`] it was given for the credential headers to send (`Authorization`, and `DPoP`
//! for a proof-of-possession token); when the server refuses a request with 401 or 403 it
//! hands the refusal over ([`HttpAuth::refused`]) and, when told to, sends the same request
//! again. What happens in between (discovery, registration, a user's consent, a refresh) is
//! the provider's business: `toolwire::auth::OAuth` is the one this crate ships (feature
//! `oauth`), and a program may supply its own.
//!
//! # Bounds
//!
//! A request is sent again at most [`MAX_AUTH_RETRIES`] times for its credentials: once with
//! the credentials a refusal produced and once more for a fresh DPoP nonce. A provider is
//! asked on the worker thread of the request, within the request's deadline, and is told when
//! the exchange was given up (the call ended, the transport closed), so a wait for a user can
//! stop.

use std::fmt;
use std::time::Instant;

use crate::error::Result;

/// How many times one request is sent again after a 401 or 403 its provider answered with
/// [`AuthDecision::Retry`]: once for new credentials, once for a DPoP nonce.
pub const MAX_AUTH_RETRIES: u32 = 2;

/// A request about to be sent, as a credentials provider sees it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AuthTarget<'a> {
    /// The HTTP method: `POST`, `GET` or `DELETE`.
    pub method: &'a str,
    /// The URL the request goes to (the MCP endpoint), without changes.
    pub url: &'a str,
}

/// The credential headers for one request.
#[derive(Clone, Default)]
pub struct Credentials {
    /// Header names and values (e.g. `Authorization: Bearer …`, `DPoP: …`). Never shown: the
    /// values are secrets.
    pub headers: Vec<(&'static str, String)>,
    /// Which credentials these are: a number the provider bumps whenever they change, handed
    /// back in [`AuthRefusal::sent`] so that requests refused together share one new
    /// authorization.
    pub generation: u64,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(name, _)| (*name, crate::mask::MASK))
                    .collect::<Vec<_>>(),
            )
            .field("generation", &self.generation)
            .finish()
    }
}

impl Credentials {
    /// No credentials (generation 0).
    pub fn none() -> Credentials {
        Credentials::default()
    }
}

/// A request the server refused with 401 or 403: what it said, and what was sent.
#[non_exhaustive]
pub struct AuthRefusal<'a> {
    /// 401 or 403.
    pub status: u16,
    /// Every `WWW-Authenticate` field value of the answer, in order.
    pub www_authenticate: Vec<String>,
    /// The answer's `DPoP-Nonce`, when it had one.
    pub dpop_nonce: Option<String>,
    /// The URL that answered.
    pub url: &'a str,
    /// The HTTP method of the refused request.
    pub method: &'a str,
    /// What was sent: the JSON-RPC method, for counting step-ups per operation.
    pub what: &'a str,
    /// The name the request targeted (a tool's), when it had one.
    pub target: Option<&'a str>,
    /// [`Credentials::generation`] of the credentials the request carried.
    pub sent: u64,
    /// How many times this request was already sent again after a refusal (0 the first
    /// time).
    pub attempt: u32,
    /// The request's deadline, when it has one.
    pub deadline: Option<Instant>,
    /// True once the request was given up (its call ended, the transport closed): a
    /// provider waiting for something (a user) should stop.
    pub cancelled: &'a (dyn Fn() -> bool + Sync),
}

impl fmt::Debug for AuthRefusal<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthRefusal")
            .field("status", &self.status)
            .field("www_authenticate", &self.www_authenticate)
            .field("url", &crate::mask::mask_url(self.url))
            .field("what", &self.what)
            .field("sent", &self.sent)
            .finish_non_exhaustive()
    }
}

/// What the transport does with a refused request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthDecision {
    /// Send the request again, with the credentials [`HttpAuth::credentials`] gives now.
    Retry,
    /// Give up: the caller gets the refusal as [`crate::Error::Http`].
    Refuse,
}

/// Supplies the credentials of an HTTP connection and answers its refusals.
///
/// Called from the transport's worker threads, possibly at once from several: an
/// implementation serializes what must happen once (one authorization for requests refused
/// together).
pub trait HttpAuth: Send + Sync + 'static {
    /// The headers for one request. Called before every request, so a per-request proof
    /// (DPoP) can be fresh; may refresh an expired token first.
    ///
    /// # Errors
    ///
    /// When no credentials can be had; the request then fails with this error.
    fn credentials(&self, target: &AuthTarget<'_>) -> Result<Credentials>;

    /// The server refused a request with 401 or 403. Obtains new credentials when it can (a
    /// DPoP nonce, a refresh, a new authorization, a wider scope) and says whether to send the
    /// request again.
    ///
    /// # Errors
    ///
    /// Why authorization failed ([`crate::Error::Auth`]); the request fails with it.
    fn refused(&self, refusal: &AuthRefusal<'_>) -> Result<AuthDecision>;

    /// A successful answer carried a `DPoP-Nonce`: later proofs should use it. Defaults to
    /// ignoring it.
    fn nonce(&self, _nonce: &str) {}
}
