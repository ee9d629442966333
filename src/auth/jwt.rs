//! ES256 signatures (RFC 7515, RFC 7518 §3.4) for signed client assertions (RFC 7523) and
//! DPoP proofs (RFC 9449), on RustCrypto's `p256`.
//!
//! A JWS signature is the 64 bytes `r‖s`, base64url: not the DER form most ECDSA APIs give.
//! Keys are never shown: [`SigningKey`]'s `Debug` is `[REDACTED]`.

use std::fmt;

use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey as P256Key};
use serde_json::{json, Value};

use super::util::{b64url, b64url_decode, now_secs, random_b64url, sha256_b64url};
use crate::error::{AuthErrorKind, Error, Result};

/// A P-256 private key that signs ES256.
#[derive(Clone)]
pub struct SigningKey {
    key: P256Key,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey([REDACTED])")
    }
}

impl SigningKey {
    /// A key read from PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the text is not a PKCS#8 P-256 key (the key is not quoted).
    pub fn from_pkcs8_pem(pem: &str) -> Result<SigningKey> {
        use p256::pkcs8::DecodePrivateKey;
        P256Key::from_pkcs8_pem(pem)
            .map(|key| SigningKey { key })
            .map_err(|_| {
                Error::Config("the private key is not a PKCS#8 PEM P-256 (ES256) key".into())
            })
    }

    /// A fresh key from the operating system's random numbers.
    pub fn generate() -> SigningKey {
        use p256::elliptic_curve::Generate;
        SigningKey {
            key: P256Key::generate(),
        }
    }

    /// The secret scalar, base64url, to persist a DPoP key with its tokens.
    pub(crate) fn to_secret(&self) -> String {
        b64url(&self.key.to_bytes())
    }

    /// A key persisted with [`SigningKey::to_secret`].
    pub(crate) fn from_secret(secret: &str) -> Option<SigningKey> {
        let bytes = b64url_decode(secret)?;
        P256Key::from_slice(&bytes)
            .ok()
            .map(|key| SigningKey { key })
    }

    /// The public key as a JWK (RFC 7517), with no private part.
    pub fn public_jwk(&self) -> Value {
        let point = self.key.verifying_key().to_sec1_point(false);
        let x = point.x().map(|x| b64url(x)).unwrap_or_default();
        let y = point.y().map(|y| b64url(y)).unwrap_or_default();
        json!({"kty": "EC", "crv": "P-256", "x": x, "y": y})
    }

    /// The RFC 7638 SHA-256 thumbprint of the public key (DPoP's `jkt`).
    pub fn thumbprint(&self) -> String {
        let jwk = self.public_jwk();
        let member = |name: &str| jwk[name].as_str().unwrap_or("").to_owned();
        // The required members in lexicographic order, no whitespace (RFC 7638 §3.2).
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            member("x"),
            member("y")
        );
        sha256_b64url(canonical.as_bytes())
    }

    /// A compact JWS of `header` and `claims`, signed ES256.
    pub fn sign_jws(&self, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            b64url(header.to_string().as_bytes()),
            b64url(claims.to_string().as_bytes())
        );
        let signature: Signature = self.key.sign(input.as_bytes());
        format!("{input}.{}", b64url(&signature.to_bytes()))
    }
}

/// A client assertion for `private_key_jwt` (RFC 7523 §2.2): `iss` = `sub` = the client,
/// `aud` = the authorization server's issuer, five minutes of life, a fresh `jti`.
///
/// # Errors
///
/// When no random `jti` can be had.
pub(crate) fn client_assertion(
    key: &SigningKey,
    client_id: &str,
    audience: &str,
) -> Result<String> {
    let now = now_secs();
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": random_b64url(16)?,
    });
    Ok(key.sign_jws(&json!({"alg": "ES256", "typ": "JWT"}), &claims))
}

/// A DPoP proof (RFC 9449 §4.2) for one HTTP request: `htm`, `htu` without query and
/// fragment, a fresh `jti`, `iat`, and, when given, the server's `nonce` and the access
/// token's hash `ath`.
///
/// # Errors
///
/// When no random `jti` can be had.
pub(crate) fn dpop_proof(
    key: &SigningKey,
    method: &str,
    url: &str,
    nonce: Option<&str>,
    access_token: Option<&str>,
) -> Result<String> {
    let mut claims = json!({
        "jti": random_b64url(16)?,
        "htm": method,
        "htu": super::util::without_query(url),
        "iat": now_secs(),
    });
    if let Some(nonce) = nonce {
        claims["nonce"] = Value::String(nonce.to_owned());
    }
    if let Some(token) = access_token {
        claims["ath"] = Value::String(sha256_b64url(token.as_bytes()));
    }
    let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": key.public_jwk()});
    Ok(key.sign_jws(&header, &claims))
}

/// The claims of a JWT, read without checking its signature: only to show who a token says
/// its user is. `None` for anything that is not a JWT.
pub(crate) fn unverified_claims(token: &str) -> Option<Value> {
    let mut parts = token.split('.');
    let (_header, payload) = (parts.next()?, parts.next()?);
    parts.next()?;
    if payload.len() > 64 * 1024 {
        return None;
    }
    serde_json::from_slice(&b64url_decode(payload)?)
        .ok()
        .filter(Value::is_object)
}

/// Who a token's claims say the user is: an e-mail, a user name, a name, or the subject.
pub(crate) fn subject_of(token: &str) -> Option<String> {
    let claims = unverified_claims(token)?;
    ["email", "preferred_username", "name", "sub"]
        .iter()
        .find_map(|name| claims.get(*name).and_then(Value::as_str))
        .map(|text| super::util::shown(text, 200))
}

/// A token could not be signed: for messages.
#[allow(dead_code)]
pub(crate) fn signing_failed(what: &str) -> Error {
    Error::auth_error(AuthErrorKind::Token, format!("{what} could not be signed"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::VerifyingKey;

    #[test]
    fn a_proof_verifies_with_its_own_jwk_and_holds_the_claims() {
        let key = SigningKey::generate();
        let proof = dpop_proof(&key, "POST", "http://h/mcp?x#y", Some("n1"), Some("tok")).unwrap();
        let parts: Vec<&str> = proof.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value = serde_json::from_slice(&b64url_decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["typ"], "dpop+jwt");
        assert!(header["jwk"].get("d").is_none());
        let claims = unverified_claims(&proof).unwrap();
        assert_eq!(claims["htu"], "http://h/mcp");
        assert_eq!(claims["nonce"], "n1");
        assert_eq!(claims["ath"], sha256_b64url(b"tok"));
        let signature = Signature::from_slice(&b64url_decode(parts[2]).unwrap()).unwrap();
        let verifying = VerifyingKey::from(&key.key);
        verifying
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .unwrap();
        let again = dpop_proof(&key, "POST", "http://h/mcp", None, None).unwrap();
        assert_ne!(unverified_claims(&again).unwrap()["jti"], claims["jti"]);
    }

    #[test]
    fn keys_round_trip_and_never_show() {
        let key = SigningKey::generate();
        let back = SigningKey::from_secret(&key.to_secret()).unwrap();
        assert_eq!(back.thumbprint(), key.thumbprint());
        assert_eq!(format!("{key:?}"), "SigningKey([REDACTED])");
        assert!(SigningKey::from_pkcs8_pem(
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"
        )
        .is_err());
    }
}
