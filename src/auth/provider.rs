//! [`OAuth`]: the provider the HTTP transport asks for credentials and hands its refusals to.
//! Its state (the token in use, what discovery found, the nonces) sits behind one lock that
//! is never held across a request; one flow runs at a time behind another, so requests
//! refused together share one authorization.

use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use super::challenge::{oauth_challenge, parse_challenges, Challenge};
use super::http::FlowHttp;
use super::jwt::{dpop_proof, SigningKey};
use super::metadata::{resource_matches, ServerMetadata};
use super::store::{ClientRegistration, TokenKey, TokenSet};
use super::util::{now_secs, split_url};
use super::OAuthConfig;
use crate::error::{AuthErrorKind, Error, Result};
use crate::mask::mask_url;
use crate::transport::{AuthDecision, AuthRefusal, AuthTarget, Credentials, HttpAuth};

/// What discovery found for the server.
#[derive(Debug, Clone)]
pub(crate) struct Discovery {
    pub(crate) resource: String,
    pub(crate) metadata: ServerMetadata,
    pub(crate) prm_scopes: Option<Vec<String>>,
}

/// The token in use, with what a refresh needs.
#[derive(Clone)]
pub(crate) struct Active {
    pub(crate) key: TokenKey,
    pub(crate) tokens: TokenSet,
    pub(crate) client: Option<ClientRegistration>,
    pub(crate) discovery: Option<Discovery>,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) active: Option<Active>,
    pub(crate) generation: u64,
    /// The generation a flow produced last (a refusal of it is final).
    pub(crate) fresh: u64,
    pub(crate) preloaded: bool,
    /// The scopes of the last authorization request.
    pub(crate) requested: Vec<String>,
    pub(crate) step_ups: HashMap<String, u32>,
    /// The resource server's DPoP nonce.
    pub(crate) rs_nonce: Option<String>,
    pub(crate) dpop_key: Option<SigningKey>,
    /// Authorization requests made (users asked), over the provider's life.
    pub(crate) authorizations: u32,
}

/// MCP authorization for one server (see the [module documentation](super)).
pub struct OAuth {
    pub(crate) server_url: String,
    pub(crate) config: OAuthConfig,
    pub(crate) http: FlowHttp,
    pub(crate) flow: Mutex<()>,
    pub(crate) state: Mutex<State>,
    /// The authorization server's DPoP nonce.
    pub(crate) as_nonce: Mutex<Option<String>>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("server", &mask_url(&self.server_url))
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

/// Whether and how a session is authorized: never the token.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct AuthStatus {
    /// A token is held and not known to be expired.
    pub authorized: bool,
    /// Who the server says the user is, when it says.
    pub subject: Option<String>,
    /// When the token expires, when the server said.
    pub expires_at: Option<SystemTime>,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// `Bearer` or `DPoP`.
    pub token_type: Option<String>,
    /// The authorization server.
    pub issuer: Option<String>,
    /// The client the token was issued to.
    pub client_id: Option<String>,
    /// A refresh token is held.
    pub refreshable: bool,
    /// Authorization requests made by this provider (users asked).
    pub authorizations: u32,
}

impl OAuth {
    /// A provider for the MCP endpoint `server_url`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when `server_url` is not an absolute http(s) URL, or a grant lacks
    /// what it needs (client credentials without a client id).
    pub fn new(server_url: impl Into<String>, config: OAuthConfig) -> Result<OAuth> {
        let server_url = server_url.into();
        if split_url(&server_url).is_none() {
            return Err(Error::Config(format!(
                "`{}` is not an http(s) URL",
                mask_url(&server_url)
            )));
        }
        if !config.needs_code()
            && config.client_id.is_none()
            && !matches!(config.grant, super::Grant::JwtBearer { .. })
        {
            return Err(Error::Config(
                "this grant needs a client id (OAuthConfig::client_id)".into(),
            ));
        }
        Ok(OAuth {
            http: FlowHttp::new(config.http_timeout, config.max_document_bytes),
            server_url,
            config,
            flow: Mutex::new(()),
            state: Mutex::new(State::default()),
            as_nonce: Mutex::new(None),
        })
    }

    /// The MCP endpoint this provider authorizes for.
    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// Whether and how the session is authorized (loads stored tokens first).
    pub fn status(&self) -> AuthStatus {
        let mut state = self.state.lock();
        self.preload(&mut state);
        let now = now_secs();
        let Some(active) = &state.active else {
            return AuthStatus {
                authorizations: state.authorizations,
                ..AuthStatus::default()
            };
        };
        let tokens = &active.tokens;
        AuthStatus {
            authorized: !tokens.expired(now, 0),
            subject: tokens.subject.clone(),
            expires_at: tokens
                .expires_at
                .map(|at| UNIX_EPOCH + Duration::from_secs(at)),
            scopes: tokens.scopes.clone(),
            token_type: Some(tokens.token_type.clone()),
            issuer: Some(active.key.issuer.clone()),
            client_id: Some(active.key.client_id.clone()),
            refreshable: tokens.refresh_token.is_some(),
            authorizations: state.authorizations,
        }
    }

    /// Authorizes now, without waiting for a 401: a probe POST learns the server's challenge
    /// (if it sends one), then the whole flow runs and a new token is stored.
    ///
    /// # Errors
    ///
    /// [`Error::Auth`] naming the step that failed.
    pub fn login(&self) -> Result<AuthStatus> {
        let probe = self
            .http
            .post_json(&self.server_url, "{}", &[], AuthErrorKind::Discovery)?;
        let challenges = parse_challenges(&probe.www_authenticate);
        let challenge = oauth_challenge(&challenges).cloned().unwrap_or_default();
        let never = || false;
        {
            let _flow = self.flow.lock();
            self.authorize(&challenge, None, &never, true)?;
        }
        Ok(self.status())
    }

    /// Forgets every stored token for this server (its resource), here and in the store.
    /// Returns how many were removed.
    ///
    /// # Errors
    ///
    /// [`Error::Auth`] ([`AuthErrorKind::Store`]) when the store cannot be written.
    pub fn logout(&self) -> Result<usize> {
        let _flow = self.flow.lock();
        let mut state = self.state.lock();
        state.active = None;
        state.generation += 1;
        let store = &self.config.store;
        let mut removed = 0;
        for key in store.keys()? {
            if resource_matches(&key.resource, &self.server_url) {
                store.remove(&key)?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Takes the first usable stored token for this server, once.
    pub(crate) fn preload(&self, state: &mut State) {
        if state.preloaded || state.active.is_some() {
            return;
        }
        state.preloaded = true;
        let store = &self.config.store;
        let keys = match store.keys() {
            Ok(keys) => keys,
            Err(error) => {
                log::warn!("toolwire: stored tokens cannot be read: {error}");
                return;
            }
        };
        for key in keys
            .into_iter()
            .filter(|key| resource_matches(&key.resource, &self.server_url))
        {
            if let Ok(Some(tokens)) = store.load(&key) {
                if let Some(secret) = &tokens.dpop_key {
                    state.dpop_key = SigningKey::from_secret(secret);
                }
                state.active = Some(Active {
                    key,
                    tokens,
                    client: None,
                    discovery: None,
                });
                state.generation += 1;
                return;
            }
        }
    }

    /// Installs a new token: in use, stored, a new generation.
    pub(crate) fn install(&self, active: Active, fresh: bool) -> Result<()> {
        self.config.store.save(&active.key, &active.tokens)?;
        let mut state = self.state.lock();
        state.active = Some(active);
        state.generation += 1;
        if fresh {
            state.fresh = state.generation;
        }
        Ok(())
    }

    /// The DPoP key, made on first use.
    pub(crate) fn dpop_key(&self) -> SigningKey {
        let mut state = self.state.lock();
        state
            .dpop_key
            .get_or_insert_with(SigningKey::generate)
            .clone()
    }

    fn headers_for(&self, state: &State, target: &AuthTarget<'_>) -> Result<Credentials> {
        let Some(active) = &state.active else {
            return Ok(Credentials {
                headers: Vec::new(),
                generation: state.generation,
            });
        };
        let token = &active.tokens.access_token;
        let mut headers = Vec::new();
        if active.tokens.token_type.eq_ignore_ascii_case("dpop") {
            let Some(key) = &state.dpop_key else {
                return Err(Error::auth_error(
                    AuthErrorKind::Store,
                    "a DPoP token without its key",
                ));
            };
            headers.push(("Authorization", format!("DPoP {token}")));
            headers.push((
                "DPoP",
                dpop_proof(
                    key,
                    target.method,
                    target.url,
                    state.rs_nonce.as_deref(),
                    Some(token),
                )?,
            ));
        } else {
            headers.push(("Authorization", format!("Bearer {token}")));
        }
        Ok(Credentials {
            headers,
            generation: state.generation,
        })
    }

    /// Waits for the flow lock within the request's deadline (or the authorization bound).
    fn flow_lock(&self, deadline: Option<Instant>) -> Result<parking_lot::MutexGuard<'_, ()>> {
        let until = deadline.unwrap_or_else(|| {
            Instant::now() + self.config.authorization_timeout + self.config.http_timeout
        });
        self.flow.try_lock_until(until).ok_or_else(|| {
            Error::auth_error(
                AuthErrorKind::Authorization,
                "another request's authorization did not finish before this request's deadline",
            )
        })
    }

    fn step_up(&self, refusal: &AuthRefusal<'_>, challenge: &Challenge) -> Result<AuthDecision> {
        let _flow = self.flow_lock(refusal.deadline)?;
        let (granted, requested) = {
            let state = self.state.lock();
            if state.generation != refusal.sent {
                return Ok(AuthDecision::Retry);
            }
            let granted = state
                .active
                .as_ref()
                .map(|active| active.tokens.scopes.clone())
                .unwrap_or_default();
            (granted, state.requested.clone())
        };
        let challenged = challenge.scopes();
        let held = super::flow::union(&requested, &granted);
        if challenged.iter().all(|scope| held.contains(scope)) {
            return Err(Error::auth_error(
                AuthErrorKind::InsufficientScope,
                format!(
                    "`{}` was refused for insufficient scope, but the token already holds every scope asked for ({}): another authorization would not change that",
                    refusal.what,
                    if challenged.is_empty() { "none named".to_owned() } else { challenged.join(" ") }
                ),
            ));
        }
        let operation = format!("{}\u{0}{}", refusal.what, refusal.target.unwrap_or(""));
        {
            let mut state = self.state.lock();
            let count = state.step_ups.entry(operation).or_insert(0);
            if *count >= self.config.max_step_ups {
                return Err(Error::auth_error(
                    AuthErrorKind::InsufficientScope,
                    format!(
                        "`{}` still needs more scope after {} step-up authorizations (OAuthConfig::max_step_ups)",
                        refusal.what, self.config.max_step_ups
                    ),
                ));
            }
            *count += 1;
        }
        let scopes = super::flow::union(&held, &challenged);
        self.authorize(challenge, Some(scopes), refusal.cancelled, true)?;
        Ok(AuthDecision::Retry)
    }

    fn unauthorized(
        &self,
        refusal: &AuthRefusal<'_>,
        challenge: &Challenge,
    ) -> Result<AuthDecision> {
        let _flow = self.flow_lock(refusal.deadline)?;
        let dropped = {
            let mut state = self.state.lock();
            if state.generation != refusal.sent {
                return Ok(AuthDecision::Retry);
            }
            if refusal.attempt > 0 && state.fresh != 0 && state.fresh == refusal.sent {
                return Err(Error::auth_error(
                    AuthErrorKind::Refused,
                    format!(
                        "{} refused the token it was just issued (HTTP {})",
                        mask_url(refusal.url),
                        refusal.status
                    ),
                ));
            }
            state.generation += 1;
            state.active.take()
        };
        // A later 401: the token is dropped; a refresh comes before a new authorization.
        if let Some(active) = &dropped {
            if self.try_refresh(active)? {
                return Ok(AuthDecision::Retry);
            }
        }
        let refused_token = dropped.map(|active| active.tokens.access_token);
        self.authorize_after(challenge, refused_token.as_deref(), refusal.cancelled)?;
        Ok(AuthDecision::Retry)
    }
}

impl HttpAuth for OAuth {
    fn credentials(&self, target: &AuthTarget<'_>) -> Result<Credentials> {
        let expired = {
            let mut state = self.state.lock();
            self.preload(&mut state);
            match &state.active {
                Some(active)
                    if active
                        .tokens
                        .expired(now_secs(), self.config.refresh_skew.as_secs()) =>
                {
                    Some((active.clone(), state.generation))
                }
                _ => return self.headers_for(&state, target),
            }
        };
        if let Some((active, generation)) = expired {
            // An expired token is refreshed once; without a refresh token (or when the
            // refresh fails for good) it is dropped and the server's 401 starts a new flow.
            let _flow = self.flow.lock();
            let current = self.state.lock().generation;
            if current == generation {
                let refreshed = self.try_refresh(&active).unwrap_or_else(|error| {
                    log::warn!(
                        "toolwire: refreshing the token for {} failed: {error}",
                        mask_url(&self.server_url)
                    );
                    false
                });
                if !refreshed {
                    let mut state = self.state.lock();
                    if state.generation == generation {
                        state.active = None;
                        state.generation += 1;
                    }
                }
            }
        }
        let state = self.state.lock();
        self.headers_for(&state, target)
    }

    fn refused(&self, refusal: &AuthRefusal<'_>) -> Result<AuthDecision> {
        let challenges = parse_challenges(&refusal.www_authenticate);
        let challenge = oauth_challenge(&challenges).cloned().unwrap_or_default();
        let error = challenge.param("error").unwrap_or("");
        if error == "use_dpop_nonce" {
            // Not a reason to authorize again: the same token, a fresh proof with the nonce.
            let Some(nonce) = refusal.dpop_nonce.clone() else {
                return Ok(AuthDecision::Refuse);
            };
            let mut state = self.state.lock();
            let changed = state.rs_nonce.as_deref() != Some(nonce.as_str());
            state.rs_nonce = Some(nonce);
            return Ok(if changed || refusal.attempt == 0 {
                AuthDecision::Retry
            } else {
                AuthDecision::Refuse
            });
        }
        if refusal.status == 403 {
            if error != "insufficient_scope" {
                return Ok(AuthDecision::Refuse);
            }
            return self.step_up(refusal, &challenge);
        }
        self.unauthorized(refusal, &challenge)
    }

    fn nonce(&self, nonce: &str) {
        let mut state = self.state.lock();
        if state.dpop_key.is_some() {
            state.rs_nonce = Some(nonce.to_owned());
        }
    }
}
