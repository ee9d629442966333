//! Static tokens: a file of SHA-256 hashes of bearer tokens, each with its subject and
//! scopes. The tokens themselves are never stored; a request's token is hashed and compared
//! with every entry in constant time.

use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::{Caller, Invalid};
use crate::error::{Error, Result};

/// The largest tokens file read. A file of hashes this size holds thousands of entries.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// One token of a [`StaticTokens`] set.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    sha256: String,
    subject: String,
    #[serde(default)]
    scopes: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    tokens: Vec<Entry>,
}

/// A set of accepted bearer tokens, known by their SHA-256 hashes, each with the subject and
/// scopes of its [`Caller`]. See [`super::Authorization::static_tokens`].
#[derive(Clone, Default)]
pub struct StaticTokens {
    entries: Vec<([u8; 32], Caller)>,
}

impl std::fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticTokens")
            .field("tokens", &self.entries.len())
            .finish()
    }
}

impl StaticTokens {
    /// An empty set.
    pub fn new() -> StaticTokens {
        StaticTokens::default()
    }

    /// Accepts one more token, given by the lowercase or uppercase hex of its SHA-256.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when `sha256_hex` is not 64 hex digits or the subject is empty.
    pub fn with(mut self, sha256_hex: &str, subject: &str, scopes: &[&str]) -> Result<Self> {
        self.add(Entry {
            sha256: sha256_hex.to_owned(),
            subject: subject.to_owned(),
            scopes: scopes.iter().map(|scope| (*scope).to_owned()).collect(),
        })?;
        Ok(self)
    }

    /// The set of a file `{"tokens": [{"sha256": "<hex>", "subject": "…", "scopes": ["…"]}]}`
    /// (at most 4 MiB).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when it cannot be read or does not read as that.
    pub fn from_file(path: &Path) -> Result<StaticTokens> {
        let shown = path.display();
        let size = std::fs::metadata(path)
            .map_err(|error| Error::Config(format!("the tokens file {shown}: {error}")))?
            .len();
        if size > MAX_FILE_BYTES {
            return Err(Error::Config(format!(
                "the tokens file {shown} is larger than {MAX_FILE_BYTES} bytes"
            )));
        }
        let bytes = std::fs::read(path)
            .map_err(|error| Error::Config(format!("the tokens file {shown}: {error}")))?;
        StaticTokens::from_json(&bytes)
            .map_err(|error| Error::Config(format!("the tokens file {shown}: {error}")))
    }

    /// The set of a tokens file's text.
    ///
    /// # Errors
    ///
    /// A message saying what does not read.
    pub fn from_json(bytes: &[u8]) -> std::result::Result<StaticTokens, String> {
        let file: File = serde_json::from_slice(bytes).map_err(|error| error.to_string())?;
        let mut tokens = StaticTokens::default();
        for (at, entry) in file.tokens.into_iter().enumerate() {
            tokens
                .add(entry)
                .map_err(|error| format!("token {at}: {error}"))?;
        }
        Ok(tokens)
    }

    fn add(&mut self, entry: Entry) -> Result<()> {
        let hex = entry.sha256.as_bytes();
        let bad = || Error::Config("`sha256` must be 64 hex digits".into());
        if hex.len() != 64 {
            return Err(bad());
        }
        let mut hash = [0u8; 32];
        for (at, pair) in hex.chunks(2).enumerate() {
            let text = std::str::from_utf8(pair).map_err(|_| bad())?;
            hash[at] = u8::from_str_radix(text, 16).map_err(|_| bad())?;
        }
        if entry.subject.is_empty() {
            return Err(Error::Config("`subject` must not be empty".into()));
        }
        self.entries.push((
            hash,
            Caller {
                subject: entry.subject,
                client_id: None,
                scopes: entry.scopes,
                issuer: None,
            },
        ));
        Ok(())
    }

    /// How many tokens it accepts.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it accepts none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The caller of `token`, when its hash is in the set. Every entry is compared, each in
    /// constant time, so timing tells nothing about which hash came close.
    pub(crate) fn check(&self, token: &str) -> std::result::Result<Caller, Invalid> {
        let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut found = None;
        for (known, caller) in &self.entries {
            let difference = known
                .iter()
                .zip(hash.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if difference == 0 && found.is_none() {
                found = Some(caller);
            }
        }
        found
            .cloned()
            .ok_or_else(|| Invalid("a static token that is not in the tokens file".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_known_by_its_hash_alone() {
        let hex: String = Sha256::digest(b"s3cret")
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        let file =
            format!(r#"{{"tokens":[{{"sha256":"{hex}","subject":"ann","scopes":["mcp:read"]}}]}}"#);
        let tokens = StaticTokens::from_json(file.as_bytes()).unwrap();
        let caller = tokens.check("s3cret").unwrap();
        assert_eq!(caller.subject(), "ann");
        assert!(caller.has_scope("mcp:read"));
        assert!(tokens.check("s3cret ").is_err());
        assert!(tokens.check(&hex).is_err());
        assert!(StaticTokens::from_json(br#"{"tokens":[{"sha256":"zz","subject":"a"}]}"#).is_err());
        assert!(StaticTokens::from_json(br#"{"tokens":[],"extra":1}"#).is_err());
        assert_eq!(format!("{tokens:?}"), "StaticTokens { tokens: 1 }");
    }
}
