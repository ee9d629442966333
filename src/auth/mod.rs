//! MCP authorization (OAuth 2.1) for the HTTP transport (feature `oauth`).
//!
//! [`OAuth`] is an [`HttpAuth`](crate::transport::HttpAuth): given to
//! [`HttpConfig::auth`](crate::HttpConfig::auth), it answers the server's 401 (and 403
//! `insufficient_scope`) during any request, in either protocol era, and the transport sends
//! the request again once it has a token.
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolwire::auth::{OAuth, OAuthConfig};
//! use toolwire::{HttpConfig, McpClient, McpConfig};
//!
//! let url = "https://mcp.example.com/mcp";
//! let oauth = Arc::new(OAuth::new(url, OAuthConfig::default())?); // browser + loopback listener
//! let client = McpClient::connect_http(HttpConfig::new(url).auth(oauth.clone()), McpConfig::default())?;
//! println!("{:?}", oauth.status()); // authorized, as whom, until when: never the token
//! # Ok::<(), toolwire::Error>(())
//! ```
//!
//! # The flow
//!
//! 1. The 401's `WWW-Authenticate` is parsed ([`parse_challenges`]; `Bearer` and `DPoP`).
//! 2. The protected resource metadata (RFC 9728) is fetched from the challenge's
//!    `resource_metadata` when it is on the server's own origin, else the path-based then the
//!    root well-known URL; its `resource` must be this server's ([`resource_matches`]), or
//!    nothing more happens. When there is none, the 2025-03-26 rules apply: the server's
//!    origin is the authorization server.
//! 3. The authorization server's metadata (RFC 8414 with path insertion, then the OpenID
//!    forms; never the root for an issuer with a path) must name the issuer exactly, and
//!    offer PKCE with S256. Neither it nor its endpoints may be on a loopback or private
//!    address unless the MCP server is on one too.
//! 4. The client: pre-registered ([`OAuthConfig::client_id`]), else a Client ID Metadata
//!    Document where the server supports them ([`OAuthConfig::client_metadata_url`]), else one
//!    registered before with this issuer, else Dynamic Client Registration as a public native
//!    client (`token_endpoint_auth_method: none` unless the server lists only secret methods).
//! 5. The scopes: the challenge's, else the resource's `scopes_supported`, else none;
//!    `offline_access` added when the authorization server lists it.
//! 6. Authorization code with PKCE S256, `state` and the `resource` indicator (RFC 8707, the
//!    metadata's string exactly), through the [`Authorizer`]; the redirect's `state` and
//!    `iss` (RFC 9207) are checked before the token request.
//! 7. The token request, with the client authentication the server supports (`none`,
//!    `client_secret_basic` with RFC 6749's encoding, `client_secret_post`,
//!    `private_key_jwt`), and a DPoP proof when the MCP server challenges `DPoP` and the
//!    authorization server binds tokens (RFC 9449; a `Bearer`-only challenge gets an unbound
//!    token, which such a server takes, where a bound one would be refused). Only a
//!    `Bearer` token, or a `DPoP` one when a proof was sent, is used (RFC 6749 §7.1).
//!
//! A later 401 drops the token, refreshes when it can, else discovers again (a server that
//! moved to another authorization server gets a new registration there, never the old
//! client). A 403 `insufficient_scope` authorizes again for the union of the scopes held and
//! challenged, unless that adds nothing, at most [`OAuthConfig::max_step_ups`] times per
//! operation. An expired token is refreshed once before a request. Requests refused together
//! share one authorization.
//!
//! Other grants ([`Grant`]): client credentials (a secret or a signed JWT assertion),
//! workload identity (a JWT forwarded as RFC 7523's assertion), and enterprise-managed
//! authorization (an ID token exchanged at the identity provider for an ID-JAG, then the JWT
//! bearer grant).
//!
//! # Secrets
//!
//! Tokens, refresh tokens, codes, verifiers, client secrets, assertions and keys never appear
//! in an error, a log record or a `Debug` (each prints `[REDACTED]`); errors carry the step,
//! the HTTP status and the server's OAuth `error` code. The transport takes the credentials
//! it sends out of any server text it quotes.
//!
//! # Bounds
//!
//! Every request of the flow: [`OAuthConfig::http_timeout`] (30 s) and
//! [`OAuthConfig::max_document_bytes`] (1 MiB). The user's step:
//! [`OAuthConfig::authorization_timeout`] (5 minutes). Step-ups:
//! [`OAuthConfig::max_step_ups`] (2 per operation). A request is sent again at most twice
//! after a refusal ([`crate::transport::MAX_AUTH_RETRIES`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

mod authorizer;
mod challenge;
mod flow;
mod grant;
pub(crate) mod http;
mod jwt;
pub(crate) mod metadata;
pub(crate) mod origin;
mod provider;
mod store;
mod token;
pub(crate) mod util;

pub use authorizer::{
    AuthorizationRequest, Authorizer, FetchRedirect, HeadlessAuthorizer, LoopbackAuthorizer,
    NonInteractive,
};
pub use challenge::{
    oauth_challenge, parse_challenges, Challenge, MAX_CHALLENGES, MAX_CHALLENGE_BYTES, MAX_PARAMS,
};
pub use flow::{parse_redirect, Redirect, MAX_REDIRECT_BYTES};
pub use jwt::SigningKey;
pub use metadata::{
    parse_resource_metadata, parse_server_metadata, resource_matches, ResourceMetadata,
    ServerMetadata,
};
pub use provider::{AuthStatus, OAuth};
pub use store::{
    ClientRegistration, FileTokenStore, MemoryTokenStore, TokenKey, TokenSet, TokenStore,
};
pub use token::{parse_registration, parse_token_response, TokenResponse};

/// How tokens are obtained.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Grant {
    /// Authorization code with PKCE, through the [`Authorizer`]: a user consents. The
    /// default.
    #[default]
    AuthorizationCode,
    /// Client credentials (RFC 6749 §4.4): no user. Needs [`OAuthConfig::client_id`] and a
    /// secret or a signing key.
    ClientCredentials,
    /// Workload identity federation (RFC 7523 §2.1): a JWT the platform issued to this
    /// workload, forwarded as the assertion. Nothing is retried after a refusal.
    JwtBearer {
        /// The workload's JWT.
        assertion: String,
    },
    /// Enterprise-managed authorization (SEP-990): the user's ID token is exchanged at the
    /// identity provider (RFC 8693) for an ID-JAG, which the authorization server takes as
    /// a JWT bearer grant with the client's credentials.
    IdentityAssertion {
        /// The identity provider's token endpoint.
        idp_token_endpoint: String,
        /// This client's id at the identity provider.
        idp_client_id: String,
        /// This client's secret at the identity provider, when it has one.
        idp_client_secret: Option<String>,
        /// The user's ID token from the identity provider.
        id_token: String,
    },
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Grant::AuthorizationCode => f.write_str("AuthorizationCode"),
            Grant::ClientCredentials => f.write_str("ClientCredentials"),
            Grant::JwtBearer { .. } => f.write_str("JwtBearer { assertion: [REDACTED] }"),
            Grant::IdentityAssertion {
                idp_token_endpoint,
                idp_client_id,
                ..
            } => f
                .debug_struct("IdentityAssertion")
                .field(
                    "idp_token_endpoint",
                    &crate::mask::mask_url(idp_token_endpoint),
                )
                .field("idp_client_id", idp_client_id)
                .finish_non_exhaustive(),
        }
    }
}

/// How [`OAuth`] gets and keeps tokens. [`OAuthConfig::default`] sets every bound; each knob
/// has a setter that says its default.
#[derive(Clone)]
pub struct OAuthConfig {
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) client_key: Option<SigningKey>,
    pub(crate) client_issuer: Option<String>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) client_name: String,
    pub(crate) scopes: Option<Vec<String>>,
    pub(crate) offline_access: bool,
    pub(crate) grant: Grant,
    pub(crate) authorizer: Arc<dyn Authorizer>,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) dpop: bool,
    pub(crate) max_step_ups: u32,
    pub(crate) authorization_timeout: Duration,
    pub(crate) http_timeout: Duration,
    pub(crate) max_document_bytes: usize,
    pub(crate) refresh_skew: Duration,
    pub(crate) legacy_discovery: bool,
    pub(crate) server_metadata_url: Option<String>,
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field(
                "client_key",
                &self.client_key.as_ref().map(|_| "[REDACTED]"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("grant", &self.grant)
            .field("dpop", &self.dpop)
            .field("max_step_ups", &self.max_step_ups)
            .field("authorization_timeout", &self.authorization_timeout)
            .finish_non_exhaustive()
    }
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            client_id: None,
            client_secret: None,
            client_key: None,
            client_issuer: None,
            client_metadata_url: None,
            client_name: "toolwire".into(),
            scopes: None,
            offline_access: true,
            grant: Grant::AuthorizationCode,
            authorizer: Arc::new(LoopbackAuthorizer::new()),
            store: Arc::new(MemoryTokenStore::new()),
            dpop: true,
            max_step_ups: 2,
            authorization_timeout: Duration::from_secs(300),
            http_timeout: Duration::from_secs(30),
            max_document_bytes: 1024 * 1024,
            refresh_skew: Duration::from_secs(30),
            legacy_discovery: true,
            server_metadata_url: None,
        }
    }
}

impl OAuthConfig {
    /// A pre-registered client id, used instead of registering. Defaults to none.
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = Some(id.into());
        self
    }

    /// The pre-registered client's secret (a confidential client). Defaults to none.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The pre-registered client's signing key, for `private_key_jwt` (RFC 7523 §2.2).
    /// Defaults to none.
    pub fn client_key(mut self, key: SigningKey) -> Self {
        self.client_key = Some(key);
        self
    }

    /// The issuer the pre-registered client belongs to: when the server names another
    /// authorization server, the credentials are not sent there and authorization fails.
    /// Defaults to none (any issuer).
    pub fn client_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.client_issuer = Some(issuer.into());
        self
    }

    /// The HTTPS URL of this client's Client ID Metadata Document, used as its client id
    /// where the authorization server supports them. Defaults to none.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The `client_name` a registration sends. Defaults to `toolwire`.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The scopes to ask for, instead of MCP's selection (the challenge's, else the
    /// resource's `scopes_supported`). Defaults to none: the selection.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Ask for `offline_access` (a refresh token) when the authorization server lists it.
    /// Defaults to true.
    pub fn offline_access(mut self, ask: bool) -> Self {
        self.offline_access = ask;
        self
    }

    /// How tokens are obtained. Defaults to [`Grant::AuthorizationCode`].
    pub fn grant(mut self, grant: Grant) -> Self {
        self.grant = grant;
        self
    }

    /// Who takes the user through authorization. Defaults to a [`LoopbackAuthorizer`].
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = authorizer;
        self
    }

    /// Where tokens and registrations are kept. Defaults to a [`MemoryTokenStore`].
    pub fn store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = store;
        self
    }

    /// Ask for DPoP-bound tokens (RFC 9449, ES256) when the MCP server challenges `DPoP`
    /// and the authorization server offers them. Defaults to true.
    pub fn dpop(mut self, dpop: bool) -> Self {
        self.dpop = dpop;
        self
    }

    /// How many times one operation (a method and its target) may authorize again for a
    /// wider scope after 403 `insufficient_scope`. Defaults to 2.
    pub fn max_step_ups(mut self, step_ups: u32) -> Self {
        self.max_step_ups = step_ups;
        self
    }

    /// How long the user's step may take. Defaults to 5 minutes.
    pub fn authorization_timeout(mut self, timeout: Duration) -> Self {
        self.authorization_timeout = timeout;
        self
    }

    /// The bound on each request of the flow (metadata, registration, token). Defaults to
    /// 30 s.
    pub fn http_timeout(mut self, timeout: Duration) -> Self {
        self.http_timeout = timeout;
        self
    }

    /// The largest answer read from an authorization server or a metadata URL. Defaults to
    /// 1 MiB.
    pub fn max_document_bytes(mut self, bytes: usize) -> Self {
        self.max_document_bytes = bytes;
        self
    }

    /// How long before its expiry a token is refreshed. Defaults to 30 s.
    pub fn refresh_skew(mut self, skew: Duration) -> Self {
        self.refresh_skew = skew;
        self
    }

    /// When the server publishes no resource metadata, take its origin for the
    /// authorization server (the 2025-03-26 rules, default endpoints included). Defaults to
    /// true.
    pub fn legacy_discovery(mut self, legacy: bool) -> Self {
        self.legacy_discovery = legacy;
        self
    }

    /// Takes the authorization server's metadata from this URL (https) instead of
    /// discovering it from the resource (Claude Code's `authServerMetadataUrl`). Defaults to
    /// none: discovery.
    pub fn server_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.server_metadata_url = Some(url.into());
        self
    }

    pub(crate) fn needs_code(&self) -> bool {
        matches!(self.grant, Grant::AuthorizationCode)
    }
}
