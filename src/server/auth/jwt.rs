//! JWT access tokens (RFC 9068): a compact JWS signed with ES256 or RS256 by a trusted
//! issuer's key, `typ` `at+jwt`, `iss` exactly the issuer, `aud` naming the resource, `exp`
//! and `nbf` within the leeway. The algorithm comes from an allow-list and must match the
//! key's type, so a header can never pick `none` or HMAC.

use p256::ecdsa::signature::Verifier;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::jwks::{Issuers, PublicKey};
use super::{Authorization, Caller, Invalid};
use crate::auth::util::{b64url_decode, now_secs};

/// The algorithms accepted, each with the key type it needs.
const ALGORITHMS: [&str; 2] = ["ES256", "RS256"];

/// Checks `token` against the trusted issuers' keys and claims; its caller when it holds.
pub(crate) fn check(
    token: &str,
    auth: &Authorization,
    issuers: &Issuers,
) -> Result<Caller, Invalid> {
    let bad = |reason: &str| Invalid(reason.to_owned());
    let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    let leeway = auth.bounds.leeway.as_secs_f64();
    if let Some((caller, exp)) = issuers.verified.lock().get(&hash) {
        if exp + leeway > now_secs() as f64 {
            return Ok(caller.clone());
        }
    }
    let mut parts = token.split('.');
    let (Some(header64), Some(claims64), Some(signature64), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("not a compact JWS of three parts"));
    };
    let json = |part: &str| -> Result<Value, Invalid> {
        let bytes = b64url_decode(part).ok_or_else(|| bad("a part is not base64url"))?;
        serde_json::from_slice::<Value>(&bytes)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| bad("a part is not a JSON object"))
    };
    let header = json(header64)?;
    let claims = json(claims64)?;
    let text =
        |value: &Value, name: &str| value.get(name).and_then(Value::as_str).map(str::to_owned);
    let alg = text(&header, "alg").unwrap_or_default();
    if !ALGORITHMS.contains(&alg.as_str()) {
        return Err(Invalid(format!("algorithm {alg:?} is not ES256 or RS256")));
    }
    if header.get("crit").is_some() {
        return Err(bad("the header has `crit` parameters"));
    }
    let typ = text(&header, "typ")
        .unwrap_or_default()
        .to_ascii_lowercase();
    if typ != "at+jwt" && typ != "application/at+jwt" {
        return Err(Invalid(format!("typ {typ:?} is not at+jwt")));
    }
    // The issuer picks the key set; nothing is believed before the signature verifies.
    let issuer = text(&claims, "iss").unwrap_or_default();
    if !auth.issuers().contains(&issuer) {
        return Err(Invalid(format!("issuer {issuer:?} is not trusted")));
    }
    let kid = text(&header, "kid");
    let keys = issuers.keys(&issuer, kid.as_deref(), &auth.bounds)?;
    let signature =
        b64url_decode(signature64).ok_or_else(|| bad("the signature is not base64url"))?;
    let signed = &token.as_bytes()[..header64.len() + 1 + claims64.len()];
    let verified = keys
        .iter()
        .filter(|key| kid.is_none() || key.kid == kid)
        .any(|key| match (&key.key, alg.as_str()) {
            (PublicKey::Es256(key), "ES256") => p256::ecdsa::Signature::from_slice(&signature)
                .is_ok_and(|signature| key.verify(signed, &signature).is_ok()),
            (PublicKey::Rs256(key), "RS256") => rsa::pkcs1v15::Signature::try_from(&signature[..])
                .is_ok_and(|signature| key.verify(signed, &signature).is_ok()),
            _ => false,
        });
    if !verified {
        return Err(Invalid(format!(
            "the signature does not verify with a key of {issuer}"
        )));
    }
    let exp = check_claims(&claims, auth)?;
    let subject = text(&claims, "sub")
        .or_else(|| text(&claims, "client_id"))
        .filter(|subject| !subject.is_empty())
        .ok_or_else(|| bad("the token names no subject"))?;
    let scopes = text(&claims, "scope")
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
        client_id: text(&claims, "client_id"),
        scopes,
        issuer: Some(issuer),
    };
    remember(issuers, hash, &caller, exp, auth);
    Ok(caller)
}

/// Keeps a verified token's caller until its `exp`, within the cache's bound: when full,
/// the expired entries go, and if none has, every entry (verified again on next use).
fn remember(issuers: &Issuers, hash: [u8; 32], caller: &Caller, exp: f64, auth: &Authorization) {
    let bound = auth.bounds.verified_cache;
    if bound == 0 {
        return;
    }
    let mut verified = issuers.verified.lock();
    if verified.len() >= bound {
        let now = now_secs() as f64;
        let leeway = auth.bounds.leeway.as_secs_f64();
        verified.retain(|_, (_, exp)| *exp + leeway > now);
        if verified.len() >= bound {
            verified.clear();
        }
    }
    verified.insert(hash, (caller.clone(), exp));
}

/// `aud` contains the resource; `exp` has not passed and `nbf` has, within the leeway.
/// Returns `exp`.
fn check_claims(claims: &Value, auth: &Authorization) -> Result<f64, Invalid> {
    let resource = auth.resource();
    let audience_ok = match claims.get("aud") {
        Some(Value::String(audience)) => audience == resource,
        Some(Value::Array(audiences)) => audiences.iter().any(|a| a.as_str() == Some(resource)),
        _ => false,
    };
    if !audience_ok {
        return Err(Invalid(format!("the audience is not {resource}")));
    }
    let now = now_secs();
    let leeway = auth.bounds.leeway.as_secs();
    let time = |name: &str| claims.get(name).and_then(Value::as_f64);
    let Some(exp) = time("exp") else {
        return Err(Invalid("the token has no `exp`".into()));
    };
    if exp + leeway as f64 <= now as f64 {
        return Err(Invalid(format!(
            "the token expired {} s ago",
            now.saturating_sub(exp as u64)
        )));
    }
    if let Some(nbf) = time("nbf") {
        if nbf > (now + leeway) as f64 {
            return Err(Invalid("the token is not valid yet (`nbf`)".into()));
        }
    }
    Ok(exp)
}
