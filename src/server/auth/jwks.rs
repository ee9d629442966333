//! The trusted issuers' signing keys: found through each issuer's metadata (RFC 8414, then
//! OpenID discovery) and its `jwks_uri`, fetched within a deadline and a size bound, kept for
//! their maximum age, fetched again on an unknown `kid` at most once per refetch interval,
//! the last good set kept when a fetch fails. One fetch per issuer at a time.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use serde_json::Value;

use super::{Bounds, Caller, Invalid};
use crate::auth::http::FlowHttp;
use crate::auth::metadata::server_metadata_urls;
use crate::auth::util::{b64url_decode, check_endpoint};
use crate::error::AuthErrorKind;

/// A public key of a key set, for the one algorithm it serves.
pub(crate) enum PublicKey {
    Es256(p256::ecdsa::VerifyingKey),
    Rs256(Box<rsa::pkcs1v15::VerifyingKey<sha2::Sha256>>),
}

/// One key of a set.
pub(crate) struct Key {
    pub(crate) kid: Option<String>,
    pub(crate) key: PublicKey,
}

/// One issuer's keys and where they come from.
#[derive(Default)]
struct IssuerKeys {
    jwks_uri: Option<String>,
    keys: Arc<Vec<Key>>,
    fetched: Option<Instant>,
    tried: Option<Instant>,
}

/// The keys of every trusted issuer, by issuer, and the tokens verified lately.
#[derive(Default)]
pub(crate) struct Issuers {
    by_issuer: Mutex<HashMap<String, Arc<Mutex<IssuerKeys>>>>,
    /// Tokens that passed every check, by their SHA-256 (never the token), with their caller
    /// and `exp`: a token seen again is not verified again until it expires.
    pub(crate) verified: Mutex<HashMap<[u8; 32], (Caller, f64)>>,
}

impl Issuers {
    /// The keys of `issuer` given rather than fetched (for the fuzz target): taken as fetched
    /// and tried now.
    pub(crate) fn preloaded(issuer: &str, keys: Vec<Key>) -> Issuers {
        let now = Instant::now();
        let state = IssuerKeys {
            jwks_uri: None,
            keys: Arc::new(keys),
            fetched: Some(now),
            tried: Some(now),
        };
        let issuers = Issuers::default();
        issuers
            .by_issuer
            .lock()
            .insert(issuer.to_owned(), Arc::new(Mutex::new(state)));
        issuers
    }

    /// The keys of `issuer` that may have signed a token with `kid` (every key when the token
    /// names none): from the cache while it is young and knows the `kid`; else fetched, when
    /// the last try is older than the refetch interval.
    pub(crate) fn keys(
        &self,
        issuer: &str,
        kid: Option<&str>,
        bounds: &Bounds,
    ) -> Result<Arc<Vec<Key>>, Invalid> {
        let slot = Arc::clone(self.by_issuer.lock().entry(issuer.to_owned()).or_default());
        // One fetch per issuer at a time: later requests wait for it and use its keys.
        let mut state = slot.lock();
        let young = state
            .fetched
            .is_some_and(|at| at.elapsed() < bounds.keys_max_age);
        let known =
            |keys: &[Key]| kid.is_none_or(|kid| keys.iter().any(|k| k.kid.as_deref() == Some(kid)));
        if young && known(&state.keys) {
            return Ok(Arc::clone(&state.keys));
        }
        let may_try = state
            .tried
            .is_none_or(|at| at.elapsed() >= bounds.refetch_interval);
        if may_try {
            state.tried = Some(Instant::now());
            match fetch(issuer, state.jwks_uri.clone(), bounds) {
                Ok((uri, keys)) => {
                    state.jwks_uri = Some(uri);
                    state.keys = Arc::new(keys);
                    state.fetched = Some(Instant::now());
                }
                Err(Invalid(reason)) => {
                    log::warn!(target: super::LOG_TARGET, "the keys of issuer {issuer} could not be fetched: {reason}");
                }
            }
        }
        if known(&state.keys) && !state.keys.is_empty() {
            Ok(Arc::clone(&state.keys))
        } else {
            Err(Invalid(format!(
                "issuer {issuer} has no key {kid:?} (keys fetched again at most every {:?})",
                bounds.refetch_interval
            )))
        }
    }
}

/// Finds the issuer's `jwks_uri` (unless known) and fetches its keys.
fn fetch(
    issuer: &str,
    jwks_uri: Option<String>,
    bounds: &Bounds,
) -> Result<(String, Vec<Key>), Invalid> {
    let http = FlowHttp::new(bounds.fetch_timeout, bounds.max_document_bytes);
    let uri = match jwks_uri {
        Some(uri) => uri,
        None => discover(&http, issuer)?,
    };
    let answer = http
        .get(&uri, &[], AuthErrorKind::Discovery)
        .map_err(|error| Invalid(error.to_string()))?;
    if !answer.success() {
        return Err(Invalid(format!(
            "its key set answered HTTP {}",
            answer.status
        )));
    }
    let keys = parse_jwks(&answer.body, bounds.max_keys)?;
    Ok((uri, keys))
}

/// The `jwks_uri` of the issuer's metadata.
fn discover(http: &FlowHttp, issuer: &str) -> Result<String, Invalid> {
    let document = metadata_document(http, issuer)?;
    let Some(uri) = document.get("jwks_uri").and_then(Value::as_str) else {
        return Err(Invalid("its metadata has no jwks_uri".into()));
    };
    check_endpoint(uri, "jwks_uri").map_err(|error| Invalid(error.to_string()))?;
    Ok(uri.to_owned())
}

/// The first metadata document (RFC 8414, then OpenID discovery) whose `issuer` is exactly
/// `issuer`.
pub(crate) fn metadata_document(http: &FlowHttp, issuer: &str) -> Result<Value, Invalid> {
    let mut last = "no metadata URL could be formed".to_owned();
    for url in server_metadata_urls(issuer) {
        let answer = match http.get(&url, &[], AuthErrorKind::Discovery) {
            Ok(answer) => answer,
            Err(error) => {
                last = error.to_string();
                continue;
            }
        };
        match parse_metadata(&answer.body, issuer) {
            Ok(document) if answer.success() => return Ok(document),
            Ok(_) => last = format!("its metadata answered HTTP {}", answer.status),
            Err(Invalid(reason)) => last = reason,
        }
    }
    Err(Invalid(last))
}

/// An authorization server's metadata document, when it is a JSON object naming exactly
/// `issuer` (RFC 8414 §3.3).
pub(crate) fn parse_metadata(bytes: &[u8], issuer: &str) -> Result<Value, Invalid> {
    let Some(document) = serde_json::from_slice::<Value>(bytes)
        .ok()
        .filter(Value::is_object)
    else {
        return Err(Invalid("its metadata is not a JSON object".into()));
    };
    if document.get("issuer").and_then(Value::as_str) != Some(issuer) {
        return Err(Invalid("its metadata names another issuer".into()));
    }
    Ok(document)
}

/// The signing keys of a JWKS document that this server can use: EC P-256 and RSA keys of at
/// least 2048 bits, not marked for another use or algorithm. Others are skipped.
pub(crate) fn parse_jwks(bytes: &[u8], max_keys: usize) -> Result<Vec<Key>, Invalid> {
    let document: Value =
        serde_json::from_slice(bytes).map_err(|_| Invalid("the key set is not JSON".into()))?;
    let Some(keys) = document.get("keys").and_then(Value::as_array) else {
        return Err(Invalid("the key set has no `keys` array".into()));
    };
    if keys.len() > max_keys {
        return Err(Invalid(format!(
            "the key set has {} keys, more than max_keys ({max_keys})",
            keys.len()
        )));
    }
    Ok(keys.iter().filter_map(parse_jwk).collect())
}

fn parse_jwk(jwk: &Value) -> Option<Key> {
    let field = |name: &str| jwk.get(name).and_then(Value::as_str);
    if field("use").is_some_and(|usage| usage != "sig") {
        return None;
    }
    let bytes = |name: &str| field(name).and_then(b64url_decode);
    let key = match field("kty")? {
        "EC" => {
            if field("crv")? != "P-256" || field("alg").is_some_and(|alg| alg != "ES256") {
                return None;
            }
            let (x, y) = (bytes("x")?, bytes("y")?);
            if x.len() != 32 || y.len() != 32 {
                return None;
            }
            let mut point = Vec::with_capacity(65);
            point.push(4);
            point.extend_from_slice(&x);
            point.extend_from_slice(&y);
            PublicKey::Es256(p256::ecdsa::VerifyingKey::from_sec1_bytes(&point).ok()?)
        }
        "RSA" => {
            if field("alg").is_some_and(|alg| alg != "RS256") {
                return None;
            }
            let (n, e) = (bytes("n")?, bytes("e")?);
            if n.len() < 256 || n.len() > 1024 || e.is_empty() || e.len() > 8 {
                return None;
            }
            let n = rsa::BoxedUint::from_be_slice_vartime(&n);
            let e = rsa::BoxedUint::from_be_slice_vartime(&e);
            let public = rsa::PublicKey::new_with_size_limits(n, e, 2048..=8192).ok()?;
            PublicKey::Rs256(Box::new(rsa::pkcs1v15::VerifyingKey::new(public)))
        }
        _ => return None,
    };
    Some(Key {
        kid: field("kid").map(str::to_owned),
        key,
    })
}
