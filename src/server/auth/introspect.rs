//! Opaque access tokens checked by token introspection (RFC 7662): the token is posted to the
//! authorization server's introspection endpoint (its metadata's `introspection_endpoint`,
//! or one configured), this server authenticating itself with its client id and secret
//! (`client_secret_basic`), within the fetch deadline and the document size bound. The answer
//! must say `active`, name the resource in `aud`, the issuer in `iss` (when it says one), an
//! `exp` not passed (when it says one), a subject (`sub`, else `client_id`), and no sender
//! constraint (`cnf`: this server takes bearer tokens only). A good answer is believed until
//! the token's `exp` and at most the configured maximum age, then asked again. When the
//! endpoint cannot be asked (down, slow, refusing this server's credentials, answering
//! nonsense) the request is answered 503: the token was not found bad, so telling the client
//! to drop it (401) would be false.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::jwks::metadata_document;
use super::{Authorization, Caller, Invalid};
use crate::auth::http::FlowHttp;
use crate::auth::util::{b64std, check_endpoint, form_body, form_encode, now_secs};
use crate::error::AuthErrorKind;

/// Where and as whom tokens are introspected: settings of [`Authorization`].
#[derive(Clone, Default)]
pub(crate) struct Settings {
    /// The endpoint, when configured rather than found in the issuer's metadata.
    pub(crate) endpoint: Option<String>,
    /// This server's client id and secret at the endpoint.
    pub(crate) client: Option<(String, String)>,
}

/// Why a token was not admitted.
pub(crate) enum Failed {
    /// The authorization server says it is not good here (401).
    Invalid(Invalid),
    /// The authorization server could not be asked (503).
    Unavailable(String),
}

/// The endpoint found, and the results believed lately.
#[derive(Default)]
pub(crate) struct Introspector {
    /// The discovered endpoint, and when discovery was last tried.
    endpoint: Mutex<(Option<String>, Option<Instant>)>,
    /// Good answers by the token's SHA-256 (never the token), each with its caller and the
    /// instant it stops being believed.
    cache: Mutex<HashMap<[u8; 32], (Caller, Instant)>>,
}

impl Introspector {
    /// The endpoint: configured, found before, or found now in the issuer's metadata (tried
    /// at most once per refetch interval).
    fn endpoint(&self, auth: &Authorization, http: &FlowHttp) -> Result<String, Failed> {
        if let Some(endpoint) = &auth.introspection.endpoint {
            return Ok(endpoint.clone());
        }
        let mut state = self.endpoint.lock();
        if let Some(endpoint) = &state.0 {
            return Ok(endpoint.clone());
        }
        let interval = auth.bounds.refetch_interval;
        if state.1.is_some_and(|at| at.elapsed() < interval) {
            return Err(Failed::Unavailable(format!(
                "the introspection endpoint is not known (discovery is tried again at most every {interval:?})"
            )));
        }
        state.1 = Some(Instant::now());
        let issuer = auth.issuers().first().cloned().unwrap_or_default();
        let document = metadata_document(http, &issuer)
            .map_err(|Invalid(reason)| Failed::Unavailable(format!("issuer {issuer}: {reason}")))?;
        let Some(endpoint) = document
            .get("introspection_endpoint")
            .and_then(Value::as_str)
        else {
            return Err(Failed::Unavailable(format!(
                "the metadata of issuer {issuer} has no introspection_endpoint"
            )));
        };
        check_endpoint(endpoint, "introspection_endpoint")
            .map_err(|error| Failed::Unavailable(error.to_string()))?;
        state.0 = Some(endpoint.to_owned());
        Ok(endpoint.to_owned())
    }
}

/// Checks `token` by introspection (or the answer believed lately); its caller when good.
pub(crate) fn check(
    token: &str,
    auth: &Authorization,
    introspector: &Introspector,
) -> Result<Caller, Failed> {
    let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    if let Some((caller, until)) = introspector.cache.lock().get(&hash) {
        if Instant::now() < *until {
            return Ok(caller.clone());
        }
    }
    let http = FlowHttp::new(auth.bounds.fetch_timeout, auth.bounds.max_document_bytes);
    let endpoint = introspector.endpoint(auth, &http)?;
    let mut headers = Vec::new();
    if let Some((id, secret)) = &auth.introspection.client {
        let pair = format!("{}:{}", form_encode(id), form_encode(secret));
        headers.push((
            "Authorization",
            format!("Basic {}", b64std(pair.as_bytes())),
        ));
    }
    let form = form_body(&[("token", token), ("token_type_hint", "access_token")]);
    let answer = http
        .post_form(&endpoint, &form, &headers, AuthErrorKind::Discovery)
        .map_err(|error| Failed::Unavailable(error.to_string()))?;
    if matches!(answer.status, 401 | 403) {
        return Err(Failed::Unavailable(format!(
            "the introspection endpoint refused this server's credentials ({})",
            answer.oauth_error()
        )));
    }
    // RFC 7009's `unsupported_token_type`: the server will not introspect this kind of token
    // (oidc-provider says so of its JWTs): nothing it vouches for.
    if answer.status == 400 && answer.oauth_error().contains("`unsupported_token_type`") {
        return Err(Failed::Invalid(Invalid(
            "the introspection endpoint does not take this kind of token".into(),
        )));
    }
    if !answer.success() {
        return Err(Failed::Unavailable(format!(
            "the introspection endpoint answered {}",
            answer.oauth_error()
        )));
    }
    if !answer.json().is_some_and(|json| json.is_object()) {
        return Err(Failed::Unavailable(
            "the introspection endpoint answered no JSON object".into(),
        ));
    }
    let issuer = auth.issuers().first().map(String::as_str).unwrap_or("");
    let (caller, exp) = parse_introspection(
        &answer.body,
        auth.resource(),
        issuer,
        auth.bounds.leeway,
        now_secs(),
    )
    .map_err(Failed::Invalid)?;
    remember(introspector, hash, &caller, exp, auth);
    Ok(caller)
}

/// Believes a good answer until the token's `exp` and at most the maximum age, within the
/// cache's bound: when full, the stale entries go, and if none is, every entry.
fn remember(
    introspector: &Introspector,
    hash: [u8; 32],
    caller: &Caller,
    exp: Option<u64>,
    auth: &Authorization,
) {
    let mut age = auth.bounds.introspection_max_age;
    if let Some(exp) = exp {
        age = age.min(Duration::from_secs(exp.saturating_sub(now_secs())));
    }
    let bound = auth.bounds.verified_cache;
    if bound == 0 || age.is_zero() {
        return;
    }
    let now = Instant::now();
    let mut cache = introspector.cache.lock();
    if cache.len() >= bound {
        cache.retain(|_, (_, until)| *until > now);
        if cache.len() >= bound {
            cache.clear();
        }
    }
    cache.insert(hash, (caller.clone(), now + age));
}

/// Reads an introspection answer (RFC 7662 §2.2) for `resource` from `issuer` at `now` (Unix
/// seconds): the caller it names and the token's `exp`, or why the token is not good here.
pub(crate) fn parse_introspection(
    bytes: &[u8],
    resource: &str,
    issuer: &str,
    leeway: Duration,
    now: u64,
) -> Result<(Caller, Option<u64>), Invalid> {
    let bad = |reason: &str| Invalid(reason.to_owned());
    let answer: Value =
        serde_json::from_slice(bytes).map_err(|_| bad("the introspection is not JSON"))?;
    if answer.get("active") != Some(&Value::Bool(true)) {
        return Err(bad("the authorization server says the token is not active"));
    }
    let text = |name: &str| answer.get(name).and_then(Value::as_str).map(str::to_owned);
    match answer.get("token_type") {
        None => {}
        Some(Value::String(kind)) if kind.eq_ignore_ascii_case("bearer") => {}
        Some(kind) => {
            return Err(Invalid(format!(
                "the token is of type {kind}, not a bearer token"
            )))
        }
    }
    if answer.get("cnf").is_some() {
        return Err(bad(
            "the token is sender-constrained (`cnf`), and this server takes bearer tokens only",
        ));
    }
    if answer.get("iss").is_some() && text("iss").as_deref() != Some(issuer) {
        return Err(bad("the introspection names another issuer"));
    }
    let audience_ok = match answer.get("aud") {
        Some(Value::String(audience)) => audience == resource,
        Some(Value::Array(audiences)) => audiences.iter().any(|a| a.as_str() == Some(resource)),
        _ => false,
    };
    if !audience_ok {
        return Err(Invalid(format!("the audience is not {resource}")));
    }
    let leeway = leeway.as_secs();
    let time = |name: &str| -> Result<Option<u64>, Invalid> {
        match answer.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_f64()
                .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
                .map(|seconds| Some(seconds as u64))
                .ok_or_else(|| Invalid(format!("`{name}` is not a time"))),
        }
    };
    let exp = time("exp")?;
    if exp.is_some_and(|exp| exp.saturating_add(leeway) <= now) {
        return Err(bad("the token has expired"));
    }
    if time("nbf")?.is_some_and(|nbf| nbf > now.saturating_add(leeway)) {
        return Err(bad("the token is not valid yet (`nbf`)"));
    }
    let subject = text("sub")
        .or_else(|| text("client_id"))
        .filter(|subject| !subject.is_empty())
        .ok_or_else(|| bad("the introspection names no subject"))?;
    let scopes = text("scope")
        .map(|scope| {
            scope
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let caller = Caller {
        subject,
        client_id: text("client_id"),
        scopes,
        issuer: Some(issuer.to_owned()),
    };
    Ok((caller, exp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const R: &str = "https://mcp.example/mcp";
    const I: &str = "https://login.example";

    fn read(answer: Value) -> Result<(Caller, Option<u64>), Invalid> {
        let bytes = answer.to_string();
        parse_introspection(bytes.as_bytes(), R, I, Duration::ZERO, 1000)
    }

    #[test]
    fn an_introspection_answer_is_read_strictly() {
        let good = json!({"active": true, "aud": [R, "x"], "iss": I, "exp": 2000,
            "client_id": "svc", "scope": "a b", "token_type": "Bearer"});
        let (caller, exp) = read(good.clone()).unwrap();
        assert_eq!(
            (caller.subject(), caller.client_id(), exp),
            ("svc", Some("svc"), Some(2000))
        );
        assert_eq!(caller.scopes(), ["a", "b"]);
        assert_eq!(caller.issuer(), Some(I));
        let with = |key: &str, value: Value| {
            let mut answer = good.clone();
            answer[key] = value;
            read(answer)
        };
        assert_eq!(with("sub", json!("ann")).unwrap().0.subject(), "ann");
        for (key, value) in [
            ("active", json!(false)),
            ("active", json!("true")),
            ("aud", json!("https://other.example/mcp")),
            ("aud", json!(null)),
            ("iss", json!("https://evil.example")),
            ("iss", json!(7)),
            ("exp", json!(999)),
            ("exp", json!("soon")),
            ("nbf", json!(1001)),
            ("token_type", json!("DPoP")),
            ("cnf", json!({"jkt": "x"})),
            ("client_id", json!("")),
        ] {
            assert!(with(key, value.clone()).is_err(), "{key}: {value}");
        }
        assert!(
            read(json!({"active": true, "aud": R})).is_err(),
            "no subject"
        );
        assert!(read(json!([1])).is_err());
        assert!(parse_introspection(b"{", R, I, Duration::ZERO, 0).is_err());
        // Without exp or iss the answer still names the caller (RFC 7662 makes them optional).
        let (_, exp) = read(json!({"active": true, "aud": R, "sub": "ann"})).unwrap();
        assert_eq!(exp, None);
    }
}
