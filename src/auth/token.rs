//! Token endpoint requests (RFC 6749 §3.2, §4.1.3, §6; RFC 7523; RFC 8693) and client
//! authentication (`none`, `client_secret_basic`, `client_secret_post`, `private_key_jwt`),
//! plus Dynamic Client Registration (RFC 7591).

use std::fmt;

use serde_json::{json, Value};

use super::http::{Answer, FlowHttp};
use super::jwt::{client_assertion, dpop_proof, SigningKey};
use super::store::ClientRegistration;
use super::util::{b64std, form_body, form_encode, shown};
use crate::error::{AuthErrorKind, Error, Result};
use crate::mask::{mask_url, Secrets};

/// How the client proves itself at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientAuth {
    /// `client_id` in the body (a public client).
    None,
    /// `Authorization: Basic` of the form-encoded id and secret (RFC 6749 §2.3.1).
    Basic,
    /// `client_id` and `client_secret` in the body.
    Post,
    /// A signed assertion (RFC 7523 §2.2).
    PrivateKeyJwt,
}

/// The method to use, in the order the TypeScript SDK and RFC 8414 agree on: the one the
/// registration returned when the server lists it (or lists none); else, with a secret,
/// Basic then Post; `none` when listed; with no list, Basic for a secret (RFC 8414's
/// default) and `none` without.
pub(crate) fn select_method(
    registered: Option<&str>,
    supported: Option<&[String]>,
    has_secret: bool,
    has_key: bool,
) -> ClientAuth {
    let listed = |name: &str| supported.is_none_or(|list| list.iter().any(|item| item == name));
    let parse = |name: &str| match name {
        "none" => Some(ClientAuth::None),
        "client_secret_basic" if has_secret => Some(ClientAuth::Basic),
        "client_secret_post" if has_secret => Some(ClientAuth::Post),
        "private_key_jwt" if has_key => Some(ClientAuth::PrivateKeyJwt),
        _ => None,
    };
    if let Some(method) = registered.filter(|name| listed(name)).and_then(parse) {
        return method;
    }
    if has_key && (supported.is_none() || listed("private_key_jwt")) {
        return ClientAuth::PrivateKeyJwt;
    }
    if has_secret {
        if let Some(list) = supported {
            for (name, method) in [
                ("client_secret_basic", ClientAuth::Basic),
                ("client_secret_post", ClientAuth::Post),
            ] {
                if list.iter().any(|item| item == name) {
                    return method;
                }
            }
        } else {
            return ClientAuth::Basic;
        }
    }
    ClientAuth::None
}

/// The client as a token request presents it.
pub(crate) struct ClientCredentials<'a> {
    pub(crate) id: &'a str,
    pub(crate) secret: Option<&'a str>,
    pub(crate) key: Option<&'a SigningKey>,
    pub(crate) method: ClientAuth,
    /// The `aud` of a signed assertion: the issuer.
    pub(crate) audience: &'a str,
}

/// A successful token response (RFC 6749 §5.1).
#[derive(Clone, Default)]
pub struct TokenResponse {
    /// `access_token`.
    pub access_token: String,
    /// `token_type` (`Bearer`, `DPoP`, `N_A` for an ID-JAG), as sent.
    pub token_type: String,
    /// `expires_in`, seconds.
    pub expires_in: Option<u64>,
    /// `refresh_token`.
    pub refresh_token: Option<String>,
    /// `scope`, when the server said.
    pub scope: Option<String>,
    /// `id_token` (OpenID Connect).
    pub id_token: Option<String>,
}

impl fmt::Debug for TokenResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenResponse")
            .field("access_token", &"[REDACTED]")
            .field("token_type", &self.token_type)
            .field("expires_in", &self.expires_in)
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "[REDACTED]"),
            )
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// Reads a token response.
///
/// # Errors
///
/// A message (that quotes nothing of the body) when it is not a JSON object with a string
/// `access_token` and `token_type`.
pub fn parse_token_response(bytes: &[u8]) -> std::result::Result<TokenResponse, String> {
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(bytes) else {
        return Err("the token response is not a JSON object".into());
    };
    let text = |name: &str| object.get(name).and_then(Value::as_str).map(str::to_owned);
    let access_token = text("access_token")
        .filter(|token| !token.is_empty())
        .ok_or("the token response has no `access_token`")?;
    let token_type = text("token_type").ok_or("the token response has no `token_type`")?;
    let expires_in = match object.get("expires_in") {
        Some(Value::Number(number)) => number
            .as_u64()
            .or_else(|| number.as_f64().filter(|n| *n >= 0.0).map(|n| n as u64)),
        Some(Value::String(text)) => text.parse().ok(),
        _ => None,
    };
    Ok(TokenResponse {
        access_token,
        token_type,
        expires_in,
        refresh_token: text("refresh_token"),
        scope: text("scope"),
        id_token: text("id_token"),
    })
}

/// Whether an access token of this `token_type` is one the client can use (RFC 6749 §7.1: a
/// client must not use a token whose type it does not understand): `Bearer`, or `DPoP` when a
/// DPoP proof went with the request (RFC 9449 §5), either without case. `Ok(true)` for a
/// DPoP-bound token.
///
/// # Errors
///
/// A message naming the type (bounded, control characters dropped) for any other type, and
/// for `DPoP` without a proof (the client holds no key the token is bound to).
pub(crate) fn token_kind(token_type: &str, proof_sent: bool) -> std::result::Result<bool, String> {
    if token_type.eq_ignore_ascii_case("bearer") {
        return Ok(false);
    }
    if token_type.eq_ignore_ascii_case("dpop") {
        return if proof_sent {
            Ok(true)
        } else {
            Err("the token is of type `DPoP`, but no DPoP proof was sent: \
                 it is bound to no key this client holds, so it is not used"
                .into())
        };
    }
    Err(format!(
        "the token is of type `{}`, which this client does not understand (it uses `Bearer` \
         and `DPoP`), so it is not used (RFC 6749 §7.1)",
        super::util::shown(token_type, 40)
    ))
}

/// A token request that failed: the error, and the server's OAuth `error` code.
pub(crate) struct TokenFailure {
    pub(crate) error: Error,
    pub(crate) code: Option<String>,
    /// A network failure or a 5xx: the grant may still be good.
    pub(crate) transient: bool,
}

impl From<Error> for TokenFailure {
    fn from(error: Error) -> Self {
        TokenFailure {
            error,
            code: None,
            transient: true,
        }
    }
}

/// DPoP at the token endpoint: the key, and the nonce the server last asked for.
pub(crate) struct Dpop<'a> {
    pub(crate) key: &'a SigningKey,
    pub(crate) nonce: &'a parking_lot::Mutex<Option<String>>,
}

/// The form fields of a token request whose values are secrets: taken out of the server's
/// error text.
const SECRET_FIELDS: &[&str] = &[
    "client_secret",
    "refresh_token",
    "code",
    "code_verifier",
    "client_assertion",
    "assertion",
    "subject_token",
    "actor_token",
    "password",
];

/// POSTs a token request with the client's authentication (and a DPoP proof), retrying once
/// with the server's nonce when it answers `use_dpop_nonce` (RFC 9449 §8).
pub(crate) fn request_token(
    http: &FlowHttp,
    endpoint: &str,
    what: &str,
    mut form: Vec<(&str, String)>,
    client: Option<&ClientCredentials<'_>>,
    dpop: Option<&Dpop<'_>>,
) -> std::result::Result<TokenResponse, TokenFailure> {
    let mut headers: Vec<(&str, String)> = Vec::new();
    if let Some(client) = client {
        match client.method {
            ClientAuth::None => form.push(("client_id", client.id.to_owned())),
            ClientAuth::Post => {
                form.push(("client_id", client.id.to_owned()));
                form.push(("client_secret", client.secret.unwrap_or("").to_owned()));
            }
            ClientAuth::Basic => {
                let pair = format!(
                    "{}:{}",
                    form_encode(client.id),
                    form_encode(client.secret.unwrap_or(""))
                );
                headers.push((
                    "Authorization",
                    format!("Basic {}", b64std(pair.as_bytes())),
                ));
            }
            ClientAuth::PrivateKeyJwt => {
                let Some(key) = client.key else {
                    return Err(Error::auth_error(
                        AuthErrorKind::Token,
                        "private_key_jwt without a key",
                    )
                    .into());
                };
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
                ));
                form.push((
                    "client_assertion",
                    client_assertion(key, client.id, client.audience)?,
                ));
            }
        }
    }
    let pairs: Vec<(&str, &str)> = form
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect();
    let body = form_body(&pairs);
    // What the server says back may quote what it was sent: the secrets of the request are
    // taken out of its error text.
    let secrets = Secrets::new(
        "",
        pairs
            .iter()
            .filter(|(name, _)| SECRET_FIELDS.contains(name))
            .map(|(_, value)| *value)
            .chain(headers.iter().map(|(_, value)| value.as_str()))
            .chain(client.and_then(|client| client.secret)),
    );
    let mut nonce_retried = false;
    loop {
        let mut all = headers.clone();
        if let Some(dpop) = dpop {
            let nonce = dpop.nonce.lock().clone();
            all.push((
                "DPoP",
                dpop_proof(dpop.key, "POST", endpoint, nonce.as_deref(), None)?,
            ));
        }
        let answer = http.post_form(endpoint, &body, &all, AuthErrorKind::Token)?;
        if answer.success() {
            return parse_token_response(&answer.body).map_err(|reason| TokenFailure {
                error: Error::auth_error(
                    AuthErrorKind::Token,
                    format!("{what} at {}: {reason}", mask_url(endpoint)),
                ),
                code: None,
                transient: false,
            });
        }
        let code = oauth_code(&answer);
        if let (Some(dpop), false, Some("use_dpop_nonce"), Some(nonce)) = (
            dpop,
            nonce_retried,
            code.as_deref(),
            answer.dpop_nonce.clone(),
        ) {
            *dpop.nonce.lock() = Some(nonce);
            nonce_retried = true;
            continue;
        }
        return Err(TokenFailure {
            error: Error::auth_error(
                AuthErrorKind::Token,
                format!(
                    "{what} was refused by {}: {}",
                    mask_url(endpoint),
                    secrets.scrub(&answer.oauth_error())
                ),
            ),
            transient: answer.status >= 500,
            code,
        });
    }
}

fn oauth_code(answer: &Answer) -> Option<String> {
    answer.json().and_then(|value| {
        value
            .get("error")
            .and_then(Value::as_str)
            .map(|code| shown(code, 100))
    })
}

/// Reads a registration response (RFC 7591 §3.2.1).
///
/// # Errors
///
/// A message when it is not a JSON object with a string `client_id`.
pub fn parse_registration(bytes: &[u8]) -> std::result::Result<ClientRegistration, String> {
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(bytes) else {
        return Err("the registration response is not a JSON object".into());
    };
    let text = |name: &str| object.get(name).and_then(Value::as_str).map(str::to_owned);
    let client_id = text("client_id")
        .filter(|id| !id.is_empty())
        .ok_or("the registration response has no `client_id`")?;
    Ok(ClientRegistration {
        issuer: String::new(),
        client_id,
        client_secret: text("client_secret").filter(|secret| !secret.is_empty()),
        client_secret_expires_at: object
            .get("client_secret_expires_at")
            .and_then(Value::as_u64),
        token_endpoint_auth_method: text("token_endpoint_auth_method"),
        redirect_uri: None,
    })
}

/// What a registration asks for.
pub(crate) struct RegistrationRequest<'a> {
    pub(crate) client_name: &'a str,
    pub(crate) redirect_uri: Option<&'a str>,
    pub(crate) grant_types: &'a [&'a str],
    pub(crate) auth_method: &'a str,
}

/// Registers a client (RFC 7591) as a native application. `resource` is never sent: some
/// servers refuse members they do not know.
///
/// # Errors
///
/// [`Error::Auth`] ([`AuthErrorKind::Registration`]) with the server's OAuth error.
pub(crate) fn register(
    http: &FlowHttp,
    endpoint: &str,
    issuer: &str,
    request: &RegistrationRequest<'_>,
) -> Result<ClientRegistration> {
    let mut body = json!({
        "client_name": request.client_name,
        "grant_types": request.grant_types,
        "token_endpoint_auth_method": request.auth_method,
        "application_type": "native",
    });
    if let Some(uri) = request.redirect_uri {
        body["redirect_uris"] = json!([uri]);
        body["response_types"] = json!(["code"]);
    }
    let answer = http.post_json(
        endpoint,
        &body.to_string(),
        &[],
        AuthErrorKind::Registration,
    )?;
    if !answer.success() {
        return Err(Error::auth_error(
            AuthErrorKind::Registration,
            format!(
                "client registration at {} was refused: {}",
                mask_url(endpoint),
                answer.oauth_error()
            ),
        ));
    }
    let mut client = parse_registration(&answer.body).map_err(|reason| {
        Error::auth_error(
            AuthErrorKind::Registration,
            format!("client registration at {}: {reason}", mask_url(endpoint)),
        )
    })?;
    client.issuer = issuer.to_owned();
    client.redirect_uri = request.redirect_uri.map(str::to_owned);
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn method_selection() {
        assert_eq!(
            select_method(
                Some("client_secret_post"),
                Some(&list(&["client_secret_post"])),
                true,
                false
            ),
            ClientAuth::Post
        );
        // The default mock: DCR hands out a secret, the server lists only `none`.
        assert_eq!(
            select_method(None, Some(&list(&["none"])), true, false),
            ClientAuth::None
        );
        assert_eq!(
            select_method(None, Some(&list(&["client_secret_basic"])), true, false),
            ClientAuth::Basic
        );
        assert_eq!(select_method(None, None, true, false), ClientAuth::Basic);
        assert_eq!(select_method(None, None, false, false), ClientAuth::None);
        assert_eq!(
            select_method(None, Some(&list(&["private_key_jwt"])), false, true),
            ClientAuth::PrivateKeyJwt
        );
        assert_eq!(
            select_method(Some("client_secret_basic"), None, false, false),
            ClientAuth::None
        );
    }

    #[test]
    fn responses_read() {
        let token = parse_token_response(
            br#"{"access_token":"t","token_type":"Bearer","expires_in":3600}"#,
        )
        .unwrap();
        assert_eq!(token.expires_in, Some(3600));
        assert!(parse_token_response(br#"{"token_type":"Bearer"}"#).is_err());
        assert!(!format!("{token:?}").contains("\"t\""));
        let client = parse_registration(
            br#"{"client_id":"c","client_secret":"","token_endpoint_auth_method":"none"}"#,
        )
        .unwrap();
        assert_eq!(client.client_secret, None);
        assert!(parse_registration(b"[]").is_err());
    }

    #[test]
    fn only_bearer_and_dpop_tokens_are_used() {
        assert_eq!(token_kind("Bearer", false), Ok(false));
        assert_eq!(token_kind("bearer", true), Ok(false));
        assert_eq!(token_kind("BEARER", false), Ok(false));
        assert_eq!(token_kind("DPoP", true), Ok(true));
        assert_eq!(token_kind("dpop", true), Ok(true));
        assert!(token_kind("DPoP", false)
            .unwrap_err()
            .contains("no DPoP proof"));
        for other in ["mac", "N_A", "", "Bearer ", "bearer\n"] {
            let refused = token_kind(other, true).unwrap_err();
            assert!(
                refused.contains("does not understand"),
                "{other:?}: {refused}"
            );
            assert!(!refused.contains('\n'), "{refused}");
        }
        assert!(token_kind("mac", false).unwrap_err().contains("`mac`"));
    }
}
