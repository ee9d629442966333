//! Obtaining tokens: discovery, the client, then the configured grant, and refreshes. Runs
//! under the provider's flow lock, never under its state lock.

use std::time::Instant;

use super::authorizer::AuthorizationRequest;
use super::challenge::Challenge;
use super::flow::{
    authorization_url, check_redirect, parse_redirect, select_scopes, Expected, Pkce,
};
use super::jwt::subject_of;
use super::metadata::{
    discover_resource, discover_server, fetch_server_metadata, legacy_server, ServerMetadata,
};
use super::provider::{Active, Discovery, OAuth};
use super::store::{ClientRegistration, TokenKey, TokenSet};
use super::token::{
    register, request_token, select_method, token_kind, ClientCredentials, Dpop,
    RegistrationRequest, TokenFailure, TokenResponse,
};
use super::util::{now_secs, random_b64url, without_fragment};
use super::Grant;
use crate::error::{AuthErrorKind, Error, Result};
use crate::mask::mask_url;

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

impl OAuth {
    /// Discovers the resource and its authorization server afresh (no cached metadata: a
    /// server may have moved).
    fn discover(&self, challenge: &Challenge) -> Result<Discovery> {
        let needs_code = self.config.needs_code();
        let from_challenge = challenge.param("resource_metadata");
        let resource = discover_resource(&self.http, &self.server_url, from_challenge)?;
        if let Some(url) = &self.config.server_metadata_url {
            // Configured instead of discovered (Claude Code's `authServerMetadataUrl`).
            let prm_scopes = resource
                .as_ref()
                .and_then(|(_, found)| found.scopes_supported.clone());
            return Ok(Discovery {
                metadata: fetch_server_metadata(&self.http, url, needs_code)?,
                prm_scopes,
                resource: match resource {
                    Some((_, found)) => found.resource,
                    None => without_fragment(&self.server_url).to_owned(),
                },
            });
        }
        match resource {
            Some((_, resource)) => {
                // RFC 9728 §7.6 leaves the choice to the client; every peer takes the first.
                let issuer = &resource.authorization_servers[0];
                let metadata = discover_server(&self.http, issuer, &self.server_url, needs_code)?;
                Ok(Discovery {
                    resource: resource.resource,
                    metadata,
                    prm_scopes: resource.scopes_supported,
                })
            }
            None if self.config.legacy_discovery => {
                log::info!(
                    "toolwire: {} publishes no resource metadata; using its origin as the authorization server (2025-03-26)",
                    mask_url(&self.server_url)
                );
                Ok(Discovery {
                    resource: without_fragment(&self.server_url).to_owned(),
                    metadata: legacy_server(&self.http, &self.server_url, needs_code)?,
                    prm_scopes: None,
                })
            }
            None => Err(Error::auth_error(
                AuthErrorKind::Discovery,
                format!(
                    "{} publishes no protected resource metadata",
                    mask_url(&self.server_url)
                ),
            )),
        }
    }

    /// The client for this issuer: pre-registered, a metadata document, one registered
    /// before, or a new registration.
    fn client_for(
        &self,
        metadata: &ServerMetadata,
        redirect_uri: Option<&str>,
        may_register: bool,
    ) -> Result<Option<ClientRegistration>> {
        let issuer = &metadata.issuer;
        if let Some(id) = &self.config.client_id {
            if let Some(bound) = &self.config.client_issuer {
                if bound != issuer {
                    return Err(Error::auth_error(
                        AuthErrorKind::Registration,
                        format!(
                            "the configured client belongs to `{}`, but the server now names `{}`: its credentials are not sent there",
                            mask_url(bound),
                            mask_url(issuer)
                        ),
                    ));
                }
            }
            return Ok(Some(ClientRegistration {
                issuer: issuer.clone(),
                client_id: id.clone(),
                client_secret: self.config.client_secret.clone(),
                ..ClientRegistration::default()
            }));
        }
        if self.config.needs_code() && metadata.client_id_metadata_document_supported {
            if let Some(url) = &self.config.client_metadata_url {
                return Ok(Some(ClientRegistration {
                    issuer: issuer.clone(),
                    client_id: url.clone(),
                    token_endpoint_auth_method: Some("none".into()),
                    ..ClientRegistration::default()
                }));
            }
        }
        if let Some(stored) = self.config.store.load_client(issuer)? {
            let expired = stored
                .client_secret_expires_at
                .is_some_and(|at| at != 0 && at <= now_secs());
            if !expired {
                return Ok(Some(stored));
            }
        }
        if !may_register {
            return Ok(None);
        }
        let Some(endpoint) = &metadata.registration_endpoint else {
            return Err(Error::auth_error(
                AuthErrorKind::Registration,
                format!(
                    "`{}` offers no client registration, and no client id is configured (--client-id)",
                    mask_url(issuer)
                ),
            ));
        };
        let supported = metadata.token_endpoint_auth_methods_supported.as_deref();
        let auth_method = match supported {
            Some(list) if !list.iter().any(|method| method == "none") => {
                if list.iter().any(|method| method == "client_secret_basic") {
                    "client_secret_basic"
                } else if list.iter().any(|method| method == "client_secret_post") {
                    "client_secret_post"
                } else {
                    "none"
                }
            }
            _ => "none",
        };
        let grant_types: &[&str] = if self.config.needs_code() {
            &["authorization_code", "refresh_token"]
        } else {
            &["client_credentials"]
        };
        let client = register(
            &self.http,
            endpoint,
            issuer,
            &RegistrationRequest {
                client_name: &self.config.client_name,
                redirect_uri,
                grant_types,
                auth_method,
            },
        )?;
        log::info!(
            "toolwire: registered client `{}` with {}",
            client.client_id,
            mask_url(issuer)
        );
        self.config.store.save_client(&client)?;
        Ok(Some(client))
    }

    /// Runs the whole flow and installs a token. `scopes` are a step-up's (a new
    /// authorization, never a stored token); `force` skips stored tokens too (a login);
    /// `refused` is the token the server just refused (never taken back from the store).
    pub(crate) fn authorize(
        &self,
        challenge: &Challenge,
        scopes: Option<Vec<String>>,
        cancelled: &(dyn Fn() -> bool + Sync),
        force: bool,
    ) -> Result<()> {
        self.authorize_with(challenge, scopes, cancelled, force, None)
    }

    /// [`OAuth::authorize`] after a 401: a stored token other than the refused one is tried
    /// first.
    pub(crate) fn authorize_after(
        &self,
        challenge: &Challenge,
        refused: Option<&str>,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<()> {
        self.authorize_with(challenge, None, cancelled, false, refused)
    }

    fn authorize_with(
        &self,
        challenge: &Challenge,
        step_up: Option<Vec<String>>,
        cancelled: &(dyn Fn() -> bool + Sync),
        force: bool,
        refused: Option<&str>,
    ) -> Result<()> {
        let needs_code = self.config.needs_code();
        // An authorizer that cannot ask a user may still find a stored token (or refresh
        // one): the client is then looked up, never registered.
        let interactive = !needs_code || self.config.authorizer.can_authorize();
        let discovery = self.discover(challenge)?;
        let metadata = &discovery.metadata;
        let scopes = match (&self.config.scopes, step_up) {
            (_, Some(union)) => union,
            (Some(explicit), None) => explicit.clone(),
            (None, None) => select_scopes(&challenge.scopes(), discovery.prm_scopes.as_deref()),
        };
        let redirect_uri = if needs_code && interactive {
            Some(self.config.authorizer.redirect_uri()?)
        } else {
            None
        };
        let Some(client) = self.client_for(metadata, redirect_uri.as_deref(), interactive)? else {
            return Err(self.login_required());
        };
        let key = TokenKey {
            resource: discovery.resource.clone(),
            issuer: metadata.issuer.clone(),
            client_id: client.client_id.clone(),
        };
        // A DPoP-bound token only for a resource server that asks for one with a `DPoP`
        // challenge (RFC 9449 §7.1): one that challenges `Bearer` alone would refuse it.
        let use_dpop = self.config.dpop
            && challenge.is("DPoP")
            && (ServerMetadata::lists(&metadata.dpop_signing_alg_values_supported, "ES256")
                || metadata.dpop_signing_alg_values_supported.is_none());
        if !force {
            if let Some(stored) = self.config.store.load(&key)? {
                let usable = refused != Some(stored.access_token.as_str());
                let active = Active {
                    key: key.clone(),
                    tokens: stored,
                    client: Some(client.clone()),
                    discovery: Some(discovery.clone()),
                };
                let fresh = !active
                    .tokens
                    .expired(now_secs(), self.config.refresh_skew.as_secs());
                if usable && fresh {
                    if let Some(secret) = &active.tokens.dpop_key {
                        self.state.lock().dpop_key = super::jwt::SigningKey::from_secret(secret);
                    }
                    return self.install(active, false);
                }
                if self.try_refresh(&active)? {
                    return Ok(());
                }
            }
        }
        if !interactive {
            return Err(self.login_required());
        }
        let response = match &self.config.grant {
            Grant::AuthorizationCode => {
                let redirect_uri = redirect_uri.unwrap_or_default();
                self.code_grant(
                    &discovery,
                    &client,
                    &redirect_uri,
                    &scopes,
                    use_dpop,
                    cancelled,
                )?
            }
            Grant::ClientCredentials => {
                let mut form = vec![
                    ("grant_type", "client_credentials".to_owned()),
                    ("resource", discovery.resource.clone()),
                ];
                if !scopes.is_empty() {
                    form.push(("scope", scopes.join(" ")));
                }
                self.token(
                    &discovery,
                    &client,
                    "the client credentials grant",
                    form,
                    use_dpop,
                )?
            }
            Grant::JwtBearer { assertion } => {
                self.require_grant(metadata, JWT_BEARER)?;
                let mut form = vec![
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", assertion.clone()),
                    ("resource", discovery.resource.clone()),
                ];
                if !scopes.is_empty() {
                    form.push(("scope", scopes.join(" ")));
                }
                self.token(&discovery, &client, "the JWT bearer grant", form, use_dpop)?
            }
            Grant::IdentityAssertion { .. } => {
                self.require_grant(metadata, JWT_BEARER)?;
                let jag = self.identity_assertion(&discovery, &scopes)?;
                let mut form = vec![("grant_type", JWT_BEARER.to_owned()), ("assertion", jag)];
                if !scopes.is_empty() {
                    form.push(("scope", scopes.join(" ")));
                }
                self.token(
                    &discovery,
                    &client,
                    "the JWT bearer grant (ID-JAG)",
                    form,
                    use_dpop,
                )?
            }
        };
        let requested = self.state.lock().requested.clone();
        let tokens = self.token_set(
            response,
            if scopes.is_empty() {
                &requested
            } else {
                &scopes
            },
            None,
            use_dpop,
        );
        self.install(
            Active {
                key,
                tokens,
                client: Some(client),
                discovery: Some(discovery),
            },
            true,
        )
    }

    fn login_required(&self) -> Error {
        self.config
            .authorizer
            .redirect_uri()
            .err()
            .unwrap_or_else(|| {
                Error::auth_error(
                    AuthErrorKind::LoginRequired,
                    "a user's authorization is needed",
                )
            })
    }

    fn require_grant(&self, metadata: &ServerMetadata, grant: &str) -> Result<()> {
        match &metadata.grant_types_supported {
            Some(list) if !list.iter().any(|item| item == grant) => Err(Error::auth_error(
                AuthErrorKind::Unsupported,
                format!(
                    "`{}` does not offer the grant `{grant}`",
                    mask_url(&metadata.issuer)
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The authorization code grant: the user's step, the redirect's checks, the code's
    /// exchange.
    fn code_grant(
        &self,
        discovery: &Discovery,
        client: &ClientRegistration,
        redirect_uri: &str,
        scopes: &[String],
        use_dpop: bool,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<TokenResponse> {
        let metadata = &discovery.metadata;
        let mut scopes = scopes.to_vec();
        let mut consent = false;
        if self.config.offline_access
            && ServerMetadata::lists(&metadata.scopes_supported, "offline_access")
            && !scopes.iter().any(|scope| scope == "offline_access")
        {
            scopes.push("offline_access".into());
            consent = true;
        }
        let pkce = Pkce::new()?;
        let state_value = random_b64url(32)?;
        let scope = scopes.join(" ");
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", client.client_id.as_str()),
            ("redirect_uri", redirect_uri),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", state_value.as_str()),
        ];
        if !scope.is_empty() {
            pairs.push(("scope", scope.as_str()));
        }
        pairs.push(("resource", discovery.resource.as_str()));
        if consent {
            pairs.push(("prompt", "consent"));
        }
        let endpoint = metadata
            .authorization_endpoint
            .as_deref()
            .unwrap_or_default();
        let url = authorization_url(endpoint, &pairs);
        {
            let mut state = self.state.lock();
            state.authorizations += 1;
            state.requested = scopes.clone();
        }
        log::info!(
            "toolwire: asking for authorization at {}",
            mask_url(endpoint)
        );
        let redirect = self.config.authorizer.authorize(&AuthorizationRequest {
            url: &url,
            redirect_uri,
            state: &state_value,
            deadline: Instant::now() + self.config.authorization_timeout,
            cancelled,
        })?;
        let code = check_redirect(
            &parse_redirect(&redirect),
            &Expected {
                state: &state_value,
                issuer: &metadata.issuer,
                iss_supported: metadata.iss_parameter_supported,
            },
        )?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect_uri.to_owned()),
            ("code_verifier", pkce.verifier.clone()),
            ("resource", discovery.resource.clone()),
        ];
        self.token(
            discovery,
            client,
            "the authorization code exchange",
            form,
            use_dpop,
        )
    }

    /// Enterprise-managed authorization, first half: the ID token exchanged at the identity
    /// provider for an ID-JAG (RFC 8693).
    fn identity_assertion(&self, discovery: &Discovery, scopes: &[String]) -> Result<String> {
        let Grant::IdentityAssertion {
            idp_token_endpoint,
            idp_client_id,
            idp_client_secret,
            id_token,
        } = &self.config.grant
        else {
            return Err(Error::Config("not an identity assertion grant".into()));
        };
        super::util::check_endpoint(idp_token_endpoint, "identity provider's token endpoint")?;
        let mut form = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange".to_owned(),
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag".to_owned(),
            ),
            ("audience", discovery.metadata.issuer.clone()),
            ("resource", discovery.resource.clone()),
            ("subject_token", id_token.clone()),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token".to_owned(),
            ),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        let method = if idp_client_secret.is_some() {
            super::token::ClientAuth::Post
        } else {
            super::token::ClientAuth::None
        };
        let idp_client = ClientCredentials {
            id: idp_client_id,
            secret: idp_client_secret.as_deref(),
            key: None,
            method,
            audience: idp_token_endpoint,
        };
        let response = request_token(
            &self.http,
            idp_token_endpoint,
            "the token exchange at the identity provider",
            form,
            Some(&idp_client),
            None,
        )
        .map_err(|failure| failure.error)?;
        Ok(response.access_token)
    }

    /// One token request with the client's authentication and, when the server binds
    /// tokens, a DPoP proof.
    fn token(
        &self,
        discovery: &Discovery,
        client: &ClientRegistration,
        what: &str,
        form: Vec<(&str, String)>,
        use_dpop: bool,
    ) -> Result<TokenResponse> {
        self.token_request(discovery, client, what, form, use_dpop)
            .map_err(|failure| failure.error)
    }

    fn token_request(
        &self,
        discovery: &Discovery,
        client: &ClientRegistration,
        what: &str,
        form: Vec<(&str, String)>,
        use_dpop: bool,
    ) -> std::result::Result<TokenResponse, TokenFailure> {
        let metadata = &discovery.metadata;
        let key = self
            .config
            .client_key
            .as_ref()
            .filter(|_| self.config.client_id.is_some());
        let method = select_method(
            client.token_endpoint_auth_method.as_deref(),
            metadata.token_endpoint_auth_methods_supported.as_deref(),
            client.client_secret.is_some(),
            key.is_some(),
        );
        let credentials = ClientCredentials {
            id: &client.client_id,
            secret: client.client_secret.as_deref(),
            key,
            method,
            audience: &metadata.issuer,
        };
        let dpop_key = use_dpop.then(|| self.dpop_key());
        let dpop = dpop_key.as_ref().map(|key| Dpop {
            key,
            nonce: &self.as_nonce,
        });
        let response = request_token(
            &self.http,
            &metadata.token_endpoint,
            what,
            form,
            Some(&credentials),
            dpop.as_ref(),
        )?;
        // An access token of a type this client does not understand is never stored or sent.
        match token_kind(&response.token_type, use_dpop) {
            Ok(_) => Ok(response),
            Err(reason) => Err(TokenFailure {
                error: Error::auth_error(
                    AuthErrorKind::Token,
                    format!("{what} at {}: {reason}", mask_url(&metadata.token_endpoint)),
                ),
                code: None,
                transient: false,
            }),
        }
    }

    fn token_set(
        &self,
        response: TokenResponse,
        requested: &[String],
        old_refresh: Option<String>,
        use_dpop: bool,
    ) -> TokenSet {
        let scopes = match &response.scope {
            Some(scope) => scope.split_ascii_whitespace().map(str::to_owned).collect(),
            // RFC 6749 §5.1: no `scope` means the scopes requested.
            None => requested.to_vec(),
        };
        let subject = response
            .id_token
            .as_deref()
            .and_then(subject_of)
            .or_else(|| subject_of(&response.access_token));
        // `token_request` let only these through: Bearer, or DPoP when a proof was sent.
        let dpop = use_dpop && response.token_type.eq_ignore_ascii_case("dpop");
        TokenSet {
            expires_at: response
                .expires_in
                .map(|seconds| now_secs().saturating_add(seconds)),
            refresh_token: response.refresh_token.or(old_refresh),
            access_token: response.access_token,
            token_type: if dpop { "DPoP".into() } else { "Bearer".into() },
            scopes,
            subject,
            dpop_key: if dpop {
                self.state
                    .lock()
                    .dpop_key
                    .as_ref()
                    .map(|key| key.to_secret())
            } else {
                None
            },
        }
    }

    /// Refreshes `active` when it has a refresh token and what a refresh needs: `Ok(true)`
    /// with the new token installed; `Ok(false)` when there is nothing to refresh with or the
    /// server refused the refresh token for good (it is then forgotten).
    ///
    /// # Errors
    ///
    /// A transient failure (network, 5xx): the tokens are kept and the error reported.
    pub(crate) fn try_refresh(&self, active: &Active) -> Result<bool> {
        let (Some(refresh_token), Some(client), Some(discovery)) = (
            &active.tokens.refresh_token,
            &active.client,
            &active.discovery,
        ) else {
            return Ok(false);
        };
        let mut form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.clone()),
            ("resource", discovery.resource.clone()),
        ];
        if !active.tokens.scopes.is_empty() {
            form.push(("scope", active.tokens.scopes.join(" ")));
        }
        let use_dpop = active.tokens.token_type.eq_ignore_ascii_case("dpop");
        match self.token_request(discovery, client, "the refresh", form, use_dpop) {
            Ok(response) => {
                let tokens = self.token_set(
                    response,
                    &active.tokens.scopes,
                    Some(refresh_token.clone()),
                    use_dpop,
                );
                self.install(
                    Active {
                        tokens,
                        ..active.clone()
                    },
                    false,
                )?;
                Ok(true)
            }
            Err(failure) if failure.transient => Err(failure.error),
            Err(failure) => {
                log::info!(
                    "toolwire: the refresh token was refused ({}); authorizing again",
                    failure.code.as_deref().unwrap_or("no error code")
                );
                self.config.store.remove(&active.key)?;
                Ok(false)
            }
        }
    }
}
