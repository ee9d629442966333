//! The HTTP server as an OAuth 2.1 resource server (MCP authorization, server side): every
//! request at the endpoint carries a bearer token that is checked before any handler runs,
//! the protected resource metadata (RFC 9728) is served where the resource URI says, and a
//! missing or bad token is answered 401, a token without the scopes needed 403 (RFC 6750).
//!
//! Tokens are checked one of three ways: JWT access tokens (RFC 9068) signed by a trusted
//! issuer's keys (feature `oauth`: `jwt`, `jwks`), opaque tokens asked about at the issuer's
//! introspection endpoint (RFC 7662, feature `oauth`: `introspect`), or a static file of
//! hashed tokens (`tokens`). Whoever a token names is the request's [`Caller`]
//! ([`crate::server::RequestContext::caller`]). No token is ever logged or put in an error:
//! the operator's log says what was wrong, the client gets only the challenge the spec gives.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::error::{Error, Result};

#[cfg(feature = "oauth")]
mod introspect;
#[cfg(feature = "oauth")]
mod jwks;
#[cfg(feature = "oauth")]
mod jwt;
mod tokens;

pub use tokens::StaticTokens;

/// Where this module logs (`RUST_LOG=toolwire::server::auth=debug`).
const LOG_TARGET: &str = "toolwire::server::auth";

/// Who made a request: the subject, client and scopes of the access token it carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub(crate) subject: String,
    pub(crate) client_id: Option<String>,
    pub(crate) scopes: Vec<String>,
    pub(crate) issuer: Option<String>,
}

impl Caller {
    /// The token's subject (`sub`; for a static token, the file's `subject`).
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The OAuth client the token was issued to (`client_id`), when the token says.
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    /// The scopes the token grants (`scope`, split on spaces).
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// Whether the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|held| held == scope)
    }

    /// The issuer that signed the token (`iss`); `None` for a static token.
    pub fn issuer(&self) -> Option<&str> {
        self.issuer.as_deref()
    }
}

/// How tokens are checked.
#[derive(Clone)]
enum Check {
    Static(Arc<StaticTokens>),
    #[cfg(feature = "oauth")]
    Jwt(Arc<jwks::Issuers>),
    #[cfg(feature = "oauth")]
    Introspect(Arc<introspect::Introspector>),
}

/// The authorization an [`crate::server::HttpServerConfig`] puts in front of its endpoint:
/// the resource it is, the authorization servers it trusts, the scopes every request needs,
/// and how tokens are checked. See [`crate::server::HttpServerConfig::authorization`].
#[derive(Clone)]
pub struct Authorization {
    resource: String,
    issuers: Vec<String>,
    scopes: Vec<String>,
    resource_name: Option<String>,
    check: Check,
    #[cfg(feature = "oauth")]
    introspection: introspect::Settings,
    pub(crate) bounds: Bounds,
}

/// The bounds of token checking, each a setter of [`Authorization`].
#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    pub(crate) max_token_bytes: usize,
    pub(crate) leeway: Duration,
    pub(crate) fetch_timeout: Duration,
    pub(crate) max_document_bytes: usize,
    pub(crate) max_keys: usize,
    pub(crate) refetch_interval: Duration,
    pub(crate) keys_max_age: Duration,
    pub(crate) verified_cache: usize,
    pub(crate) introspection_max_age: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_token_bytes: 8 * 1024,
            leeway: Duration::from_secs(60),
            fetch_timeout: Duration::from_secs(5),
            max_document_bytes: 256 * 1024,
            max_keys: 32,
            refetch_interval: Duration::from_secs(30),
            keys_max_age: Duration::from_secs(10 * 60),
            verified_cache: 1024,
            introspection_max_age: Duration::from_secs(60),
        }
    }
}

impl std::fmt::Debug for Authorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let check = match &self.check {
            Check::Static(tokens) => format!("{} static tokens", tokens.len()),
            #[cfg(feature = "oauth")]
            Check::Jwt(_) => "JWT access tokens".to_owned(),
            #[cfg(feature = "oauth")]
            Check::Introspect(_) => "token introspection".to_owned(),
        };
        f.debug_struct("Authorization")
            .field("resource", &self.resource)
            .field("issuers", &self.issuers)
            .field("scopes", &self.scopes)
            .field("check", &check)
            .finish_non_exhaustive()
    }
}

/// Why a request was refused: its status, `WWW-Authenticate` and OAuth error body.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) status: u16,
    pub(crate) challenge: String,
    pub(crate) body: Vec<u8>,
}

/// What was wrong with a token, for the operator's log (never the token itself).
#[derive(Debug)]
pub(crate) struct Invalid(pub(crate) String);

impl Authorization {
    /// JWT access tokens (RFC 9068) issued by `issuer` for `resource`: the issuer's keys are
    /// found through its metadata (`/.well-known/oauth-authorization-server`, then
    /// `/.well-known/openid-configuration`) and its `jwks_uri`; the signature (ES256 or
    /// RS256, never `none` or HMAC), `typ` (`at+jwt`), `iss` (exactly `issuer`), `aud` (must
    /// contain `resource`), `exp` and `nbf` are checked. [`Authorization::issuer`] trusts one
    /// more issuer.
    #[cfg(feature = "oauth")]
    pub fn jwt(resource: impl Into<String>, issuer: impl Into<String>) -> Authorization {
        let check = Check::Jwt(Arc::new(jwks::Issuers::default()));
        Authorization::with(resource.into(), vec![issuer.into()], check)
    }

    /// Opaque access tokens checked by token introspection (RFC 7662) at `issuer`: each token
    /// not seen lately is posted to the issuer's `introspection_endpoint` (found through its
    /// metadata, as for [`Authorization::jwt`], or given by
    /// [`Authorization::introspection_endpoint`]), this server authenticating with
    /// [`Authorization::introspection_client`]. The answer must be `active`, have `aud`
    /// containing `resource`, `iss` (when given) exactly `issuer`, `exp` and `nbf` (when given)
    /// within the leeway, a subject (`sub`, else `client_id`), and no `cnf` (bearer tokens
    /// only). When the endpoint cannot be asked, the request is answered 503 (the token was
    /// not found bad). One issuer only: an opaque token does not say whose it is.
    #[cfg(feature = "oauth")]
    pub fn introspection(resource: impl Into<String>, issuer: impl Into<String>) -> Authorization {
        let check = Check::Introspect(Arc::default());
        Authorization::with(resource.into(), vec![issuer.into()], check)
    }

    /// The introspection endpoint, instead of the issuer metadata's `introspection_endpoint`
    /// (https, or http on loopback). Only with [`Authorization::introspection`]. Defaults to
    /// the metadata's.
    #[cfg(feature = "oauth")]
    pub fn introspection_endpoint(mut self, url: impl Into<String>) -> Self {
        self.introspection.endpoint = Some(url.into());
        self
    }

    /// This server's client id and secret at the introspection endpoint, sent as HTTP Basic
    /// credentials (`client_secret_basic`, each part form-encoded as RFC 6749 §2.3.1 says).
    /// The secret is never logged or shown. Only with [`Authorization::introspection`].
    /// Defaults to none (most authorization servers refuse that).
    #[cfg(feature = "oauth")]
    pub fn introspection_client(
        mut self,
        client_id: impl Into<String>,
        secret: impl Into<String>,
    ) -> Self {
        self.introspection.client = Some((client_id.into(), secret.into()));
        self
    }

    /// How long a good introspection answer is believed before the endpoint is asked again
    /// (never past the token's `exp`): a token revoked at the authorization server is
    /// refused at most this late. Zero asks every time. At most 24 hours. Defaults to 60 s.
    pub fn introspection_max_age(mut self, age: Duration) -> Self {
        self.bounds.introspection_max_age = age;
        self
    }

    /// Static tokens, for small deployments: a request's bearer token must hash (SHA-256) to
    /// one of `tokens`, whose subject and scopes become its [`Caller`].
    pub fn static_tokens(resource: impl Into<String>, tokens: StaticTokens) -> Authorization {
        let check = Check::Static(Arc::new(tokens));
        Authorization::with(resource.into(), Vec::new(), check)
    }

    /// [`Authorization::static_tokens`] from a file:
    /// `{"tokens": [{"sha256": "<hex of the token>", "subject": "…", "scopes": ["…"]}]}`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the file cannot be read or does not read as that.
    pub fn tokens_file(resource: impl Into<String>, path: &Path) -> Result<Authorization> {
        Ok(Authorization::static_tokens(
            resource,
            StaticTokens::from_file(path)?,
        ))
    }

    fn with(resource: String, issuers: Vec<String>, check: Check) -> Authorization {
        Authorization {
            resource,
            issuers,
            scopes: Vec::new(),
            resource_name: None,
            check,
            #[cfg(feature = "oauth")]
            introspection: introspect::Settings::default(),
            bounds: Bounds::default(),
        }
    }

    /// Trusts one more authorization server: with JWT checks its tokens are accepted too
    /// (each issuer's tokens checked against its own keys only); with static tokens it is
    /// only named in the metadata, for clients. Defaults to the issuer given to
    /// [`Authorization::jwt`], or none.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        let issuer = issuer.into();
        if !self.issuers.contains(&issuer) {
            self.issuers.push(issuer);
        }
        self
    }

    /// Scopes every request needs: a token without one of them is answered 403
    /// `insufficient_scope` naming them all; the 401 challenge and the metadata's
    /// `scopes_supported` name them too. Defaults to none.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// A name for people, published as the metadata's `resource_name`. Defaults to none.
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// The longest bearer token taken, in bytes: a longer one is 401 unread. Defaults to 8 KiB.
    pub fn max_token_bytes(mut self, bytes: usize) -> Self {
        self.bounds.max_token_bytes = bytes;
        self
    }

    /// How far `exp` and `nbf` may be off the server's clock (at most 5 minutes). Defaults to
    /// 60 s.
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.bounds.leeway = leeway;
        self
    }

    /// How long fetching an issuer's metadata or keys may take, each. Defaults to 5 s.
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.bounds.fetch_timeout = timeout;
        self
    }

    /// The largest issuer metadata or key set (JWKS) document read, in bytes. Defaults to
    /// 256 KiB.
    pub fn max_document_bytes(mut self, bytes: usize) -> Self {
        self.bounds.max_document_bytes = bytes;
        self
    }

    /// The most keys taken from one key set; a set with more is refused. Defaults to 32.
    pub fn max_keys(mut self, keys: usize) -> Self {
        self.bounds.max_keys = keys;
        self
    }

    /// How soon after fetching an issuer's keys a token with an unknown `kid` may make them
    /// fetched again (key rotation): sooner, the token is refused without a fetch. Defaults to
    /// 30 s.
    pub fn refetch_interval(mut self, interval: Duration) -> Self {
        self.bounds.refetch_interval = interval;
        self
    }

    /// How long fetched keys are used before they are fetched again (the last good set is
    /// kept when that fails). Defaults to 10 minutes.
    pub fn keys_max_age(mut self, age: Duration) -> Self {
        self.bounds.keys_max_age = age;
        self
    }

    /// How many verified JWTs (or good introspection answers) are remembered, by the token's
    /// SHA-256 (never the token), each until its `exp` (and an introspection answer at most
    /// [`Authorization::introspection_max_age`]), so a token used again is not verified again;
    /// 0 remembers none. When full, the expired ones are dropped, and if none has expired,
    /// all. Defaults to 1,024.
    pub fn verified_cache(mut self, entries: usize) -> Self {
        self.bounds.verified_cache = entries;
        self
    }

    /// The resource URI.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The path of the protected resource metadata on this server (RFC 9728 §3.1):
    /// `/.well-known/oauth-protected-resource` followed by the resource URI's path.
    pub fn metadata_path(&self) -> String {
        let path = resource_path(&self.resource);
        format!("/.well-known/oauth-protected-resource{path}")
    }

    /// The URL of the protected resource metadata, as the 401 challenge names it.
    pub fn metadata_url(&self) -> String {
        format!(
            "{}{}",
            resource_origin(&self.resource),
            self.metadata_path()
        )
    }

    /// Checks the settings, as [`crate::server::HttpServer::bind`] does: the resource URI is
    /// an absolute http(s) URL with a host and no query or fragment, JWT checks trust at least
    /// one issuer (each https, or http on loopback), every bound is within its limits.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] saying which setting is wrong.
    pub fn check(&self) -> Result<()> {
        let bad = |text: String| Err(Error::Config(text));
        let Some(rest) = self
            .resource
            .strip_prefix("https://")
            .or_else(|| self.resource.strip_prefix("http://"))
        else {
            return bad(format!(
                "the resource URI must be an absolute http(s) URL, not {:?}",
                self.resource
            ));
        };
        if rest.is_empty() || rest.starts_with('/') || self.resource.contains(['#', '?']) {
            return bad(format!(
                "the resource URI needs a host and no query or fragment: {:?}",
                self.resource
            ));
        }
        #[cfg(feature = "oauth")]
        self.check_introspection()?;
        #[cfg(feature = "oauth")]
        if matches!(self.check, Check::Jwt(_) | Check::Introspect(_)) {
            if self.issuers.is_empty() {
                return bad("JWT access tokens need at least one trusted issuer".into());
            }
            for issuer in &self.issuers {
                crate::auth::util::check_endpoint(issuer, "issuer")
                    .map_err(|error| Error::Config(error.to_string()))?;
            }
        }
        let b = &self.bounds;
        if b.max_token_bytes == 0 || b.max_document_bytes == 0 || b.max_keys == 0 {
            return bad("max_token_bytes, max_document_bytes and max_keys must be positive".into());
        }
        if b.leeway > Duration::from_secs(300) {
            return bad(format!(
                "leeway must be at most 5 minutes, not {:?}",
                b.leeway
            ));
        }
        let hour = Duration::from_secs(3600);
        if b.introspection_max_age > 24 * hour {
            return bad(format!(
                "introspection_max_age must be at most 24 hours, not {:?}",
                b.introspection_max_age
            ));
        }
        for (name, value) in [
            ("fetch_timeout", b.fetch_timeout),
            ("refetch_interval", b.refetch_interval),
            ("keys_max_age", b.keys_max_age),
        ] {
            if value < Duration::from_millis(1) || value > 24 * hour {
                return bad(format!("{name} must be 1 ms to 24 hours, not {value:?}"));
            }
        }
        Ok(())
    }

    /// The introspection settings belong to introspection, with one issuer and a good
    /// endpoint.
    #[cfg(feature = "oauth")]
    fn check_introspection(&self) -> Result<()> {
        let settings = &self.introspection;
        if !matches!(self.check, Check::Introspect(_)) {
            if settings.endpoint.is_some() || settings.client.is_some() {
                return Err(Error::Config(
                    "an introspection endpoint or client is set, but tokens are not checked by introspection".into(),
                ));
            }
            return Ok(());
        }
        if self.issuers.len() != 1 {
            return Err(Error::Config(format!(
                "token introspection asks one authorization server, not {}",
                self.issuers.len()
            )));
        }
        if let Some(endpoint) = &settings.endpoint {
            crate::auth::util::check_endpoint(endpoint, "introspection endpoint")
                .map_err(|error| Error::Config(error.to_string()))?;
        }
        if settings
            .client
            .as_ref()
            .is_some_and(|(id, _)| id.is_empty())
        {
            return Err(Error::Config(
                "the introspection client id must not be empty".into(),
            ));
        }
        Ok(())
    }

    /// The protected resource metadata document (RFC 9728 §2).
    pub(crate) fn metadata_document(&self) -> Vec<u8> {
        let mut document = json!({
            "resource": self.resource,
            "bearer_methods_supported": ["header"],
        });
        if !self.issuers.is_empty() {
            document["authorization_servers"] = json!(self.issuers);
        }
        if !self.scopes.is_empty() {
            document["scopes_supported"] = json!(self.scopes);
        }
        if let Some(name) = &self.resource_name {
            document["resource_name"] = Value::String(name.clone());
        }
        serde_json::to_vec(&document).unwrap_or_default()
    }

    /// Checks a request's `Authorization` header: its caller, or the refusal to send.
    pub(crate) fn authorize(&self, header: Option<&str>) -> std::result::Result<Caller, Refusal> {
        let Some(header) = header else {
            return Err(self.refusal(401, None, None));
        };
        let token = match bearer_token(header) {
            Some(token) => token,
            None => {
                log::debug!(target: LOG_TARGET, "refused: the Authorization header is not `Bearer <token>`");
                return Err(self.refusal(401, Some("invalid_request"), None));
            }
        };
        if token.len() > self.bounds.max_token_bytes {
            log::info!(target: LOG_TARGET, "refused a token of {} bytes (max_token_bytes {})", token.len(), self.bounds.max_token_bytes);
            return Err(self.invalid_token());
        }
        let checked = match &self.check {
            Check::Static(tokens) => tokens.check(token),
            #[cfg(feature = "oauth")]
            Check::Jwt(issuers) => jwt::check(token, self, issuers),
            #[cfg(feature = "oauth")]
            Check::Introspect(introspector) => match introspect::check(token, self, introspector) {
                Ok(caller) => Ok(caller),
                Err(introspect::Failed::Invalid(invalid)) => Err(invalid),
                Err(introspect::Failed::Unavailable(reason)) => {
                    log::warn!(target: LOG_TARGET, "could not check a token: {reason}");
                    return Err(self.unavailable());
                }
            },
        };
        let caller = match checked {
            Ok(caller) => caller,
            Err(Invalid(reason)) => {
                log::info!(target: LOG_TARGET, "refused a token: {reason}");
                return Err(self.invalid_token());
            }
        };
        let missing: Vec<&String> = self
            .scopes
            .iter()
            .filter(|scope| !caller.has_scope(scope))
            .collect();
        if !missing.is_empty() {
            log::info!(target: LOG_TARGET, "refused {:?}: the token lacks scope(s) {missing:?}", caller.subject);
            return Err(self.refusal(
                403,
                Some("insufficient_scope"),
                Some("the access token lacks a scope this server needs"),
            ));
        }
        Ok(caller)
    }

    /// The trusted authorization servers (issuer URLs), as the metadata names them.
    pub fn issuers(&self) -> &[String] {
        &self.issuers
    }

    /// The refusal of a token that came over plain HTTP from a peer that may not send one
    /// in clear (see [`crate::server::HttpServerConfig::loopback_plain_tokens`]).
    pub(crate) fn refused_in_clear(&self) -> Refusal {
        self.refusal(
            401,
            Some("invalid_request"),
            Some("bearer tokens are not accepted over plain HTTP from this address: use https"),
        )
    }

    /// 503: the token could not be checked now (the introspection endpoint could not be
    /// asked). No challenge: nothing is wrong with the token as far as anyone knows.
    #[cfg(feature = "oauth")]
    fn unavailable(&self) -> Refusal {
        let body = json!({
            "error": "temporarily_unavailable",
            "error_description": "the access token could not be checked now; try again later",
        });
        Refusal {
            status: 503,
            challenge: String::new(),
            body: serde_json::to_vec(&body).unwrap_or_default(),
        }
    }

    fn invalid_token(&self) -> Refusal {
        self.refusal(
            401,
            Some("invalid_token"),
            Some("the access token is not valid for this server"),
        )
    }

    /// The 403 step-up refusal of a call that needs `scopes` (besides this server's own)
    /// the caller's token lacks: the challenge's `scope` names them all.
    pub(crate) fn insufficient_scope(&self, scopes: &[String]) -> Refusal {
        let mut needed = self.scopes.clone();
        needed.extend(scopes.iter().filter(|s| !self.scopes.contains(s)).cloned());
        self.refusal_naming(
            403,
            Some("insufficient_scope"),
            Some("the access token lacks a scope this tool needs"),
            &needed,
        )
    }

    /// A refusal with its challenge (RFC 6750 §3, RFC 9728 §5.1): no error code when no
    /// token came.
    fn refusal(&self, status: u16, error: Option<&str>, description: Option<&str>) -> Refusal {
        self.refusal_naming(status, error, description, &self.scopes)
    }

    /// [`Authorization::refusal`] naming `scopes` in the challenge.
    fn refusal_naming(
        &self,
        status: u16,
        error: Option<&str>,
        description: Option<&str>,
        scopes: &[String],
    ) -> Refusal {
        let mut params: Vec<String> = Vec::new();
        if let Some(error) = error {
            params.push(format!("error={}", quoted(error)));
        }
        if let Some(description) = description {
            params.push(format!("error_description={}", quoted(description)));
        }
        if !scopes.is_empty() {
            params.push(format!("scope={}", quoted(&scopes.join(" "))));
        }
        params.push(format!(
            "resource_metadata={}",
            quoted(&self.metadata_url())
        ));
        let mut body = json!({});
        if let Some(error) = error {
            body["error"] = Value::String(error.to_owned());
        }
        if let Some(description) = description {
            body["error_description"] = Value::String(description.to_owned());
        }
        Refusal {
            status,
            challenge: format!("Bearer {}", params.join(", ")),
            body: serde_json::to_vec(&body).unwrap_or_default(),
        }
    }
}

/// What the fuzz target sees of one check: the keys a JWKS document gave, and the status,
/// challenge and caller of a request with `header` against a JWT authorization trusting
/// `issuer` with those keys (never fetched: the bounds keep them for a day).
#[cfg(feature = "oauth")]
pub(crate) fn fuzz_check(
    header: &str,
    jwks_document: &[u8],
    resource: &str,
    issuer: &str,
    scopes: &[&str],
) -> (Option<usize>, std::result::Result<Caller, Refusal>) {
    let day = Duration::from_secs(24 * 3600);
    let mut auth = Authorization::jwt(resource, issuer)
        .scopes(scopes.iter().copied())
        .refetch_interval(day)
        .keys_max_age(day);
    let keys = jwks::parse_jwks(jwks_document, auth.bounds.max_keys).ok();
    let count = keys.as_ref().map(Vec::len);
    auth.check = Check::Jwt(Arc::new(jwks::Issuers::preloaded(
        issuer,
        keys.unwrap_or_default(),
    )));
    (
        count,
        auth.authorize(Some(header).filter(|h| !h.is_empty())),
    )
}

/// [`jwks::parse_metadata`], for the fuzz target.
#[cfg(feature = "oauth")]
pub(crate) fn fuzz_metadata(bytes: &[u8], issuer: &str) -> std::result::Result<Value, String> {
    jwks::parse_metadata(bytes, issuer).map_err(|Invalid(reason)| reason)
}

/// [`jwks::parse_jwks`], for the fuzz target: the number of usable keys.
#[cfg(feature = "oauth")]
pub(crate) fn fuzz_jwks(bytes: &[u8], max_keys: usize) -> std::result::Result<usize, String> {
    jwks::parse_jwks(bytes, max_keys)
        .map(|keys| keys.len())
        .map_err(|Invalid(reason)| reason)
}

/// [`introspect::parse_introspection`] with no leeway, for the fuzz target.
#[cfg(feature = "oauth")]
pub(crate) fn fuzz_introspection(
    bytes: &[u8],
    resource: &str,
    issuer: &str,
    now: u64,
) -> std::result::Result<(Caller, Option<u64>), String> {
    introspect::parse_introspection(bytes, resource, issuer, Duration::ZERO, now)
        .map_err(|Invalid(reason)| reason)
}

/// The token of `Bearer <token>` (the scheme in any case, RFC 6750 §2.1's token68 syntax).
fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim_start();
    let token68 = |c: char| c.is_ascii_alphanumeric() || "-._~+/=".contains(c);
    (!token.is_empty() && token.chars().all(token68)).then_some(token)
}

/// An RFC 9110 quoted string of printable ASCII (anything else becomes a space).
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push(' '),
        }
    }
    out.push('"');
    out
}

/// `scheme://authority` of a URL.
fn resource_origin(url: &str) -> &str {
    let start = url.find("://").map_or(0, |at| at + 3);
    match url[start..].find('/') {
        Some(at) => &url[..start + at],
        None => url,
    }
}

/// The path of a URL without a lone trailing `/` (none for a bare origin).
fn resource_path(url: &str) -> &str {
    let path = &url[resource_origin(url).len()..];
    if path == "/" {
        ""
    } else {
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_path_is_derived_as_rfc_9728_says() {
        let tokens = StaticTokens::default();
        let at = |resource: &str| {
            let auth = Authorization::static_tokens(resource, tokens.clone());
            (auth.metadata_path(), auth.metadata_url())
        };
        assert_eq!(
            at("https://h.example/mcp"),
            (
                "/.well-known/oauth-protected-resource/mcp".to_owned(),
                "https://h.example/.well-known/oauth-protected-resource/mcp".to_owned()
            )
        );
        assert_eq!(
            at("https://h.example/a/b/mcp").0,
            "/.well-known/oauth-protected-resource/a/b/mcp"
        );
        assert_eq!(
            at("https://h.example").1,
            "https://h.example/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            at("https://h.example/").0,
            "/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn bearer_tokens_are_read_strictly_and_challenges_quoted() {
        assert_eq!(bearer_token("Bearer abc.def-_~+/="), Some("abc.def-_~+/="));
        assert_eq!(bearer_token("bearer  x"), Some("x"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer a b"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(quoted("a\"b\\c\u{e9}"), "\"a\\\"b\\\\c \"");
    }
}
