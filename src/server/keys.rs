//! The keys that sign 2026-07-28 `requestState` tokens: one made per process by default, or a
//! ring read from configuration so that several instances verify each other's states.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};

/// The fewest bytes a configured key may have.
pub const MIN_STATE_KEY_BYTES: usize = 32;
/// The most bytes a configured key may have.
pub const MAX_STATE_KEY_BYTES: usize = 1024;
/// The most keys a ring holds.
pub const MAX_STATE_KEYS: usize = 16;
/// The largest key file read, in bytes.
pub const MAX_STATE_KEY_FILE_BYTES: u64 = 64 * 1024;

/// The keys that sign and verify `requestState` tokens (HMAC-SHA-256): the first signs, every
/// one verifies. Instances behind one load balancer share a ring, so the retry of an input
/// round may land on any of them; rotating is putting a new key first and keeping the old
/// one second until the states it signed have expired (`ServerConfig::input_state_ttl`).
///
/// Its `Debug` shows how many keys it holds, never their bytes.
#[derive(Clone)]
pub struct StateKeys {
    keys: Arc<Vec<Vec<u8>>>,
}

impl std::fmt::Debug for StateKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateKeys")
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl StateKeys {
    /// A ring of `keys`, the first signing.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for no key, more than [`MAX_STATE_KEYS`], or a key shorter than
    /// [`MIN_STATE_KEY_BYTES`] or longer than [`MAX_STATE_KEY_BYTES`].
    pub fn new<I, K>(keys: I) -> Result<StateKeys>
    where
        I: IntoIterator<Item = K>,
        K: Into<Vec<u8>>,
    {
        let keys: Vec<Vec<u8>> = keys.into_iter().map(Into::into).collect();
        if keys.is_empty() || keys.len() > MAX_STATE_KEYS {
            return Err(Error::Config(format!(
                "a state key ring holds 1 to {MAX_STATE_KEYS} keys, not {}",
                keys.len()
            )));
        }
        for (at, key) in keys.iter().enumerate() {
            check_length(key.len())
                .map_err(|why| Error::Config(format!("key {}: {why}", at + 1)))?;
        }
        Ok(StateKeys {
            keys: Arc::new(keys),
        })
    }

    /// A ring of one key of 32 random bytes: what a server without a configured ring uses,
    /// one per process.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the system has no random source.
    pub fn random() -> Result<StateKeys> {
        let mut key = vec![0u8; MIN_STATE_KEY_BYTES];
        getrandom::fill(&mut key)
            .map_err(|error| Error::Config(format!("no random source for a state key: {error}")))?;
        StateKeys::new([key])
    }

    /// The ring of a key file's text: each line the standard base64 (RFC 4648 §4, with its
    /// padding) of one key of at least 32 bytes; the first line signs. Blank lines and lines
    /// starting with `#` are skipped; a line's surrounding spaces are ignored.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] naming the line that does not read (never its text).
    pub fn parse(text: &str) -> Result<StateKeys> {
        let mut keys = Vec::new();
        for (at, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let key = super::state::decode_standard(line).ok_or_else(|| {
                Error::Config(format!(
                    "line {}: not standard base64 (A-Z a-z 0-9 + / with its = padding)",
                    at + 1
                ))
            })?;
            check_length(key.len())
                .map_err(|why| Error::Config(format!("line {}: {why}", at + 1)))?;
            keys.push(key);
        }
        if keys.is_empty() {
            return Err(Error::Config("no key in it".into()));
        }
        StateKeys::new(keys)
    }

    /// The ring of the key file at `path` (see [`StateKeys::parse`]; at most
    /// [`MAX_STATE_KEY_FILE_BYTES`]).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] saying why it cannot be read or what does not read, naming the file
    /// and line, never a key's text.
    pub fn from_file(path: &Path) -> Result<StateKeys> {
        let shown = path.display();
        let size = std::fs::metadata(path)
            .map_err(|error| Error::Config(format!("the state key file {shown}: {error}")))?
            .len();
        if size > MAX_STATE_KEY_FILE_BYTES {
            return Err(Error::Config(format!(
                "the state key file {shown} is larger than {MAX_STATE_KEY_FILE_BYTES} bytes"
            )));
        }
        let bytes = std::fs::read(path)
            .map_err(|error| Error::Config(format!("the state key file {shown}: {error}")))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| Error::Config(format!("the state key file {shown} is not UTF-8 text")))?;
        StateKeys::parse(&text).map_err(|error| match error {
            Error::Config(why) => Error::Config(format!("the state key file {shown}: {why}")),
            other => other,
        })
    }

    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Never true: a ring holds at least one key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key that signs.
    pub(crate) fn signing(&self) -> &[u8] {
        &self.keys[0]
    }

    /// Every key that verifies, the signing one first.
    pub(crate) fn verifying(&self) -> impl Iterator<Item = &[u8]> {
        self.keys.iter().map(Vec::as_slice)
    }

    /// The process's own ring, made once: the default of a server given none.
    pub(crate) fn process() -> &'static StateKeys {
        static KEYS: OnceLock<StateKeys> = OnceLock::new();
        KEYS.get_or_init(|| match StateKeys::random() {
            Ok(keys) => keys,
            // Without randomness a predictable key would let a client forge states; refuse
            // to run input rounds rather than sign with one.
            Err(error) => panic!("toolwire: {error}"),
        })
    }
}

fn check_length(bytes: usize) -> std::result::Result<(), String> {
    if bytes < MIN_STATE_KEY_BYTES {
        return Err(format!(
            "a key needs at least {MIN_STATE_KEY_BYTES} bytes (this one has {bytes}): make one \
             with `head -c 32 /dev/urandom | base64`"
        ));
    }
    if bytes > MAX_STATE_KEY_BYTES {
        return Err(format!(
            "a key has at most {MAX_STATE_KEY_BYTES} bytes (this one has {bytes})"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_read_line_by_line_and_never_show_a_key() {
        let a = "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=";
        let b = "QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI=";
        let ring = StateKeys::parse(&format!("# rotated today\n{b}\n\n  {a}  \n")).unwrap();
        assert_eq!(ring.len(), 2);
        assert_eq!(ring.signing(), [b'B'; 32]);
        assert_eq!(format!("{ring:?}"), "StateKeys { keys: 2 }");
        let short = "QUFBQQ==";
        let error = StateKeys::parse(&format!("{a}\n{short}\n"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("line 2") && error.contains("at least 32"),
            "{error}"
        );
        assert!(!error.contains(short));
        let bad = "QUFB!UFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=";
        let error = StateKeys::parse(bad).unwrap_err().to_string();
        assert!(error.contains("line 1") && !error.contains(bad), "{error}");
        assert!(StateKeys::parse("# nothing\n\n").is_err());
        assert!(StateKeys::new(Vec::<Vec<u8>>::new()).is_err());
        assert!(StateKeys::new(vec![vec![0u8; 32]; MAX_STATE_KEYS + 1]).is_err());
        assert!(StateKeys::new([vec![0u8; MAX_STATE_KEY_BYTES + 1]]).is_err());
    }
}
