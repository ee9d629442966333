//! Opaque tokens the client holds and gives back: the signed `requestState` of 2026-07-28
//! input rounds, and list cursors.
//!
//! A `requestState` is `base64url(envelope) "." base64url(HMAC-SHA-256(key, envelope))`. The
//! envelope binds the handler's state to the method and target it was made for, to the
//! caller it was made for (with authorization: a SHA-256 of the token's issuer and subject,
//! never the token) and to an expiry, so a client can neither change it, nor replay it
//! against another tool or as another caller, nor keep it forever. The key is the server's
//! [`StateKeys`]: by default 32 random bytes made once per process (a state outlives neither
//! a restart nor the process, which is what one instance's retry round needs), or a ring from
//! configuration ([`super::ServerConfig::state_keys`]) that several instances share, the
//! first key signing and every key verifying.
//!
//! List cursors are not sealed: a cursor is the offset of the next item, so any instance
//! serving the same catalog reads it, and a forged one only names another page.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::auth::Caller;

type HmacSha256 = Hmac<Sha256>;

/// The longest `requestState` accepted, in bytes: a state is the server's own small token,
/// so anything longer is refused before it is decoded.
pub(crate) const MAX_STATE_BYTES: usize = 64 * 1024;

use super::keys::StateKeys;

fn mac(key: &[u8]) -> HmacSha256 {
    // HMAC accepts a key of any length.
    HmacSha256::new_from_slice(key).expect("an HMAC key of any length")
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

/// Who a state is for: the hex SHA-256 of the caller's issuer and subject (nothing for an
/// unauthenticated request). The state is readable by its holder, so it names no one.
fn caller_key(caller: Option<&Caller>) -> Value {
    let Some(caller) = caller else {
        return Value::Null;
    };
    let mut hash = Sha256::new();
    hash.update(caller.issuer().unwrap_or_default().as_bytes());
    hash.update([0]);
    hash.update(caller.subject().as_bytes());
    let hex: String = hash
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    Value::String(hex)
}

/// Signs `state` with `keys` for a retry of `method` on `target` by `caller` within `ttl`.
pub(crate) fn sign(
    keys: &StateKeys,
    method: &str,
    target: &str,
    caller: Option<&Caller>,
    state: &Value,
    ttl: Duration,
) -> String {
    let envelope = json!({
        "v": 1,
        "m": method,
        "t": target,
        "c": caller_key(caller),
        "e": now_ms().saturating_add(ttl.as_millis() as u64),
        "s": state,
    })
    .to_string();
    let mut mac = mac(keys.signing());
    mac.update(envelope.as_bytes());
    let tag = mac.finalize().into_bytes();
    format!("{}.{}", encode(envelope.as_bytes()), encode(&tag))
}

/// Why a `requestState` was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StateRefusal {
    /// Not one of ours, or changed.
    Tampered,
    /// Ours, but made for another method or target.
    WrongTarget,
    /// Ours, but past its expiry.
    Expired,
    /// Ours, but made for another caller (or for an authenticated one, presented without a
    /// token, or the other way round). Answered as [`StateRefusal::Tampered`] is, so the
    /// holder learns nothing about whom it was made for.
    OtherCaller,
}

impl StateRefusal {
    pub(crate) fn message(&self) -> &'static str {
        match self {
            StateRefusal::Tampered | StateRefusal::OtherCaller => {
                "requestState failed its integrity check: it was not issued by this server or was changed"
            }
            StateRefusal::WrongTarget => "requestState was issued for another request",
            StateRefusal::Expired => "requestState has expired; start the request again",
        }
    }

    /// What the operator's log says (the caller sees [`StateRefusal::message`]).
    pub(crate) fn log_text(&self) -> &'static str {
        match self {
            StateRefusal::OtherCaller => "requestState was issued to another caller",
            other => other.message(),
        }
    }
}

/// Checks a `requestState` presented by `caller` against `keys` and returns the handler's
/// state in it.
pub(crate) fn verify(
    keys: &StateKeys,
    token: &str,
    method: &str,
    target: &str,
    caller: Option<&Caller>,
) -> Result<Value, StateRefusal> {
    if token.len() > MAX_STATE_BYTES {
        return Err(StateRefusal::Tampered);
    }
    let (body, tag) = token.split_once('.').ok_or(StateRefusal::Tampered)?;
    let envelope = decode(body).ok_or(StateRefusal::Tampered)?;
    let tag = decode(tag).ok_or(StateRefusal::Tampered)?;
    // Each key of the ring in turn (a rotation keeps the old one after the new); each
    // comparison in constant time, so a tag cannot be found byte by byte.
    let signed = keys.verifying().any(|key| {
        let mut mac = mac(key);
        mac.update(&envelope);
        mac.verify_slice(&tag).is_ok()
    });
    if !signed {
        return Err(StateRefusal::Tampered);
    }
    let envelope: Value = serde_json::from_slice(&envelope).map_err(|_| StateRefusal::Tampered)?;
    if envelope["m"] != method || envelope["t"] != target {
        return Err(StateRefusal::WrongTarget);
    }
    if envelope.get("c").unwrap_or(&Value::Null) != &caller_key(caller) {
        return Err(StateRefusal::OtherCaller);
    }
    if envelope["e"]
        .as_u64()
        .is_none_or(|expiry| expiry < now_ms())
    {
        return Err(StateRefusal::Expired);
    }
    Ok(envelope["s"].clone())
}

/// A list cursor for the item at `offset`: opaque to the client (base64url of a small text).
pub(crate) fn cursor(offset: usize) -> String {
    encode(format!("o:{offset}").as_bytes())
}

/// Reads a cursor back; `None` for anything [`cursor`] did not make.
pub(crate) fn read_cursor(cursor: &str) -> Option<usize> {
    if cursor.len() > 64 {
        return None;
    }
    let text = String::from_utf8(decode(cursor)?).ok()?;
    text.strip_prefix("o:")?.parse().ok()
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// base64url without padding (RFC 4648 §5).
pub(crate) fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        let symbols = chunk.len() + 1;
        for index in 0..symbols {
            out.push(ALPHABET[((n >> (18 - 6 * index)) & 63) as usize] as char);
        }
    }
    out
}

/// Reads base64url without padding; `None` for anything else (padding, other characters, a
/// length no encoding has, stray bits in the last symbol).
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    let symbols = text.as_bytes();
    if symbols.len() % 4 == 1 {
        return None;
    }
    let value = |symbol: u8| ALPHABET.iter().position(|&a| a == symbol).map(|v| v as u32);
    let mut out = Vec::with_capacity(symbols.len() * 3 / 4);
    for chunk in symbols.chunks(4) {
        let mut n = 0u32;
        for (index, &symbol) in chunk.iter().enumerate() {
            n |= value(symbol)? << (18 - 6 * index);
        }
        let bytes = chunk.len() - 1;
        // The bits below the last whole byte must be zero, so each text has one reading.
        if n & ((1 << (24 - 8 * bytes)) - 1) != 0 {
            return None;
        }
        for index in 0..bytes {
            out.push((n >> (16 - 8 * index)) as u8);
        }
    }
    Some(out)
}

/// Reads standard base64 with its padding (RFC 4648 §4), as header values carry it; `None`
/// for anything else.
pub(crate) fn decode_standard(text: &str) -> Option<Vec<u8>> {
    if text.len() % 4 != 0 {
        return None;
    }
    let body = text.trim_end_matches('=');
    if text.len() - body.len() > 2 {
        return None;
    }
    let url: String = body
        .chars()
        .map(|c| match c {
            '+' => Some('-'),
            '/' => Some('_'),
            '-' | '_' => None,
            other => Some(other),
        })
        .collect::<Option<String>>()?;
    let bytes = decode(&url)?;
    // The padding must be exactly what the length needs.
    (encode(&bytes).len() == body.len()).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_round_trips_and_matches_rfc_4648() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain.as_bytes()), coded);
            assert_eq!(decode(coded).unwrap(), plain.as_bytes());
        }
        assert_eq!(encode(&[0xfb, 0xff]), "-_8");
        for bad in ["Z", "Zm9v=", "Zh", "Zm!v", "Zm9vY"] {
            assert!(decode(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn hmac_sha256_matches_rfc_4231_case_2() {
        let mut mac = HmacSha256::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        let tag = mac.finalize().into_bytes();
        let hex: String = tag.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn a_state_verifies_only_unchanged_and_for_its_own_request() {
        let ttl = Duration::from_secs(60);
        let keys = StateKeys::process();
        let token = sign(keys, "tools/call", "book", None, &json!({"round": 2}), ttl);
        assert_eq!(
            verify(keys, &token, "tools/call", "book", None),
            Ok(json!({"round": 2}))
        );
        let tampered = format!("{token}-TAMPERED");
        assert_eq!(
            verify(keys, &tampered, "tools/call", "book", None),
            Err(StateRefusal::Tampered)
        );
        let mut flipped = token.clone().into_bytes();
        flipped[3] = if flipped[3] == b'A' { b'B' } else { b'A' };
        assert_eq!(
            verify(
                keys,
                &String::from_utf8(flipped).unwrap(),
                "tools/call",
                "book",
                None
            ),
            Err(StateRefusal::Tampered)
        );
        assert_eq!(
            verify(keys, &token, "tools/call", "other", None),
            Err(StateRefusal::WrongTarget)
        );
        assert_eq!(
            verify(keys, "not-a-state", "tools/call", "book", None),
            Err(StateRefusal::Tampered)
        );
        let expired = sign(keys, "tools/call", "book", None, &json!(1), Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(
            verify(keys, &expired, "tools/call", "book", None),
            Err(StateRefusal::Expired)
        );
    }

    #[test]
    fn a_state_verifies_only_for_the_caller_it_was_made_for() {
        let keys = StateKeys::process();
        let caller = |subject: &str, issuer: Option<&str>| Caller {
            subject: subject.to_owned(),
            client_id: None,
            scopes: Vec::new(),
            issuer: issuer.map(str::to_owned),
        };
        let ann = caller("ann", Some("https://a.example"));
        let ttl = Duration::from_secs(60);
        let token = sign(keys, "tools/call", "book", Some(&ann), &json!(1), ttl);
        let check = |who: Option<&Caller>| verify(keys, &token, "tools/call", "book", who);
        assert_eq!(check(Some(&ann)), Ok(json!(1)));
        let refused = Err(StateRefusal::OtherCaller);
        assert_eq!(check(None), refused);
        assert_eq!(
            check(Some(&caller("bob", Some("https://a.example")))),
            refused
        );
        assert_eq!(
            check(Some(&caller("ann", Some("https://b.example")))),
            refused
        );
        assert_eq!(check(Some(&caller("ann", None))), refused);
        // The state names no one: only a hash of the caller travels.
        let envelope = String::from_utf8(decode(token.split('.').next().unwrap()).unwrap());
        assert!(!envelope.unwrap().contains("ann"));
        let anonymous = sign(keys, "tools/call", "book", None, &json!(1), ttl);
        assert_eq!(
            verify(keys, &anonymous, "tools/call", "book", Some(&ann)),
            Err(StateRefusal::OtherCaller)
        );
        assert_eq!(
            StateRefusal::OtherCaller.message(),
            StateRefusal::Tampered.message()
        );
    }

    #[test]
    fn a_ring_signs_with_its_first_key_and_verifies_with_every_one() {
        let ttl = Duration::from_secs(60);
        let old = StateKeys::new([[1u8; 32]]).unwrap();
        let rotated = StateKeys::new([[2u8; 32], [1u8; 32]]).unwrap();
        let other = StateKeys::new([[3u8; 32]]).unwrap();
        let from_old = sign(&old, "tools/call", "t", None, &json!(7), ttl);
        assert_eq!(
            verify(&rotated, &from_old, "tools/call", "t", None),
            Ok(json!(7))
        );
        let from_new = sign(&rotated, "tools/call", "t", None, &json!(8), ttl);
        assert_eq!(
            verify(&rotated, &from_new, "tools/call", "t", None),
            Ok(json!(8))
        );
        assert_eq!(
            verify(&old, &from_new, "tools/call", "t", None),
            Err(StateRefusal::Tampered)
        );
        assert_eq!(
            verify(&other, &from_old, "tools/call", "t", None),
            Err(StateRefusal::Tampered)
        );
    }

    #[test]
    fn standard_base64_needs_its_padding() {
        assert_eq!(decode_standard("SGVsbG8=").unwrap(), b"Hello");
        assert_eq!(decode_standard("SGVsbG8").as_deref(), None);
        assert_eq!(decode_standard("SGVs!!!bG8=").as_deref(), None);
        assert_eq!(decode_standard("+/8=").unwrap(), [0xfb, 0xff]);
        assert_eq!(decode_standard("SGVsbG8?").as_deref(), None);
    }

    #[test]
    fn cursors_read_back_and_nothing_else_does() {
        assert_eq!(read_cursor(&cursor(250)), Some(250));
        assert_eq!(read_cursor("garbage!"), None);
        assert_eq!(read_cursor(&encode(b"x:1")), None);
    }
}
