//! Where tokens and client registrations are kept: the [`TokenStore`] trait, a memory store
//! (the library's default) and a file store (what the `toolwire` command uses).
//!
//! Tokens are keyed by the resource, the issuer and the client ([`TokenKey`]); registrations
//! by the issuer that made them, so that a server moving to another authorization server
//! never has one server's client presented at the other. Expiry is stored as an absolute
//! time. Nothing here shows a secret: every `Debug` prints `[REDACTED]` for tokens, secrets
//! and keys.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::error::{AuthErrorKind, Error, Result};

/// What tokens are kept under.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TokenKey {
    /// The resource identifier (RFC 8707), exactly as the resource's metadata wrote it.
    pub resource: String,
    /// The issuer of the tokens.
    pub issuer: String,
    /// The client the tokens were issued to.
    pub client_id: String,
}

/// The tokens of one grant.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TokenSet {
    /// The access token.
    pub access_token: String,
    /// `Bearer` or `DPoP`, as the token endpoint said.
    pub token_type: String,
    /// The refresh token, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch; `None` when the
    /// server did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted (the ones requested when the server did not say).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Who the server says the user is, when it says (an ID token's or a JWT's claims).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The DPoP key the tokens are bound to (its secret scalar, base64url): the tokens are
    /// useless without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<String>,
}

impl fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redacted = |present: bool| if present { "[REDACTED]" } else { "none" };
        f.debug_struct("TokenSet")
            .field("access_token", &"[REDACTED]")
            .field("token_type", &self.token_type)
            .field("refresh_token", &redacted(self.refresh_token.is_some()))
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .field("subject", &self.subject)
            .field("dpop_key", &redacted(self.dpop_key.is_some()))
            .finish()
    }
}

impl TokenSet {
    /// Whether the access token expires within `skew_secs` of `now` (never, when unknown).
    pub fn expired(&self, now: u64, skew_secs: u64) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now.saturating_add(skew_secs))
    }
}

/// A client registered with an authorization server (RFC 7591), or configured for it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ClientRegistration {
    /// The issuer the client is registered with.
    pub issuer: String,
    /// The client id.
    pub client_id: String,
    /// The client secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// When the secret expires (seconds since the epoch; 0 or none: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<u64>,
    /// The token endpoint authentication method the server registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// The redirect URI the client was registered with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

impl fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .finish_non_exhaustive()
    }
}

/// Keeps tokens and registrations. Called from the transport's threads; implementations
/// are `Send + Sync` and serialize their own writes.
pub trait TokenStore: Send + Sync {
    /// The tokens under `key`.
    ///
    /// # Errors
    ///
    /// When the store cannot be read ([`AuthErrorKind::Store`]).
    fn load(&self, key: &TokenKey) -> Result<Option<TokenSet>>;
    /// Keeps `tokens` under `key`, replacing what was there.
    ///
    /// # Errors
    ///
    /// When the store cannot be written.
    fn save(&self, key: &TokenKey, tokens: &TokenSet) -> Result<()>;
    /// Forgets the tokens under `key`.
    ///
    /// # Errors
    ///
    /// When the store cannot be written.
    fn remove(&self, key: &TokenKey) -> Result<()>;
    /// Every key with tokens.
    ///
    /// # Errors
    ///
    /// When the store cannot be read.
    fn keys(&self) -> Result<Vec<TokenKey>>;
    /// The client registered with `issuer`.
    ///
    /// # Errors
    ///
    /// When the store cannot be read.
    fn load_client(&self, issuer: &str) -> Result<Option<ClientRegistration>>;
    /// Keeps a registration, under its issuer.
    ///
    /// # Errors
    ///
    /// When the store cannot be written.
    fn save_client(&self, client: &ClientRegistration) -> Result<()>;
    /// Forgets the registration with `issuer`.
    ///
    /// # Errors
    ///
    /// When the store cannot be written.
    fn remove_client(&self, issuer: &str) -> Result<()>;
}

/// What a store holds, as the file store writes it.
#[derive(Default, Serialize, Deserialize)]
struct Contents {
    #[serde(default)]
    version: u32,
    #[serde(default)]
    tokens: Vec<(TokenKey, TokenSet)>,
    #[serde(default)]
    clients: Vec<ClientRegistration>,
}

#[derive(Default)]
struct Maps {
    tokens: BTreeMap<TokenKey, TokenSet>,
    clients: BTreeMap<String, ClientRegistration>,
}

impl Maps {
    fn from_contents(contents: Contents) -> Maps {
        Maps {
            tokens: contents.tokens.into_iter().collect(),
            clients: contents
                .clients
                .into_iter()
                .map(|client| (client.issuer.clone(), client))
                .collect(),
        }
    }

    fn to_contents(&self) -> Contents {
        Contents {
            version: 1,
            tokens: self
                .tokens
                .iter()
                .map(|(key, set)| (key.clone(), set.clone()))
                .collect(),
            clients: self.clients.values().cloned().collect(),
        }
    }
}

/// Tokens in memory, for the life of the process: the default.
#[derive(Default)]
pub struct MemoryTokenStore {
    maps: Mutex<Maps>,
}

impl fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let maps = self.maps.lock();
        write!(
            f,
            "MemoryTokenStore({} tokens, {} clients)",
            maps.tokens.len(),
            maps.clients.len()
        )
    }
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> MemoryTokenStore {
        MemoryTokenStore::default()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load(&self, key: &TokenKey) -> Result<Option<TokenSet>> {
        Ok(self.maps.lock().tokens.get(key).cloned())
    }
    fn save(&self, key: &TokenKey, tokens: &TokenSet) -> Result<()> {
        self.maps.lock().tokens.insert(key.clone(), tokens.clone());
        Ok(())
    }
    fn remove(&self, key: &TokenKey) -> Result<()> {
        self.maps.lock().tokens.remove(key);
        Ok(())
    }
    fn keys(&self) -> Result<Vec<TokenKey>> {
        Ok(self.maps.lock().tokens.keys().cloned().collect())
    }
    fn load_client(&self, issuer: &str) -> Result<Option<ClientRegistration>> {
        Ok(self.maps.lock().clients.get(issuer).cloned())
    }
    fn save_client(&self, client: &ClientRegistration) -> Result<()> {
        self.maps
            .lock()
            .clients
            .insert(client.issuer.clone(), client.clone());
        Ok(())
    }
    fn remove_client(&self, issuer: &str) -> Result<()> {
        self.maps.lock().clients.remove(issuer);
        Ok(())
    }
}

/// Tokens in one JSON file, readable by its owner only.
///
/// The folder is created with mode 0700 and the file with 0600 (on Unix, at creation, never
/// widened and narrowed later); every write goes to a temporary file beside it, is synced and
/// renamed over the old one, so a crash leaves the old file or the new, never half of one.
/// A file that does not read is taken for an empty store, with a warning: tokens can always
/// be had again, a crash would help nobody. Several processes may share the file: each
/// change re-reads it under the process's lock first; two processes writing at the same
/// instant may lose one of the two changes, never the file.
pub struct FileTokenStore {
    path: PathBuf,
    lock: Mutex<()>,
}

impl fmt::Debug for FileTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileTokenStore")
            .field("path", &self.path)
            .finish()
    }
}

/// The most bytes of a token file read.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

fn store_error(what: &str, path: &Path, error: impl fmt::Display) -> Error {
    Error::auth_error(
        AuthErrorKind::Store,
        format!("{what} {}: {error}", path.display()),
    )
}

impl FileTokenStore {
    /// A store in the file at `path` (created on the first write).
    pub fn new(path: impl Into<PathBuf>) -> FileTokenStore {
        FileTokenStore {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The default file: `toolwire/tokens.json` under the user's config folder
    /// (`$XDG_CONFIG_HOME`, else `~/.config`; `%APPDATA%` on Windows).
    pub fn default_path() -> Option<PathBuf> {
        let base = if cfg!(windows) {
            std::env::var_os("APPDATA").map(PathBuf::from)
        } else {
            std::env::var_os("XDG_CONFIG_HOME")
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config"))
                })
        }?;
        Some(base.join("toolwire").join("tokens.json"))
    }

    fn read(&self) -> Maps {
        use std::io::Read;
        let file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(_) => return Maps::default(),
        };
        let mut text = Vec::new();
        if file.take(MAX_FILE_BYTES).read_to_end(&mut text).is_err() {
            return Maps::default();
        }
        match serde_json::from_slice::<Contents>(&text) {
            Ok(contents) => Maps::from_contents(contents),
            Err(error) => {
                log::warn!(
                    "toolwire: the token file {} does not read ({error}); starting from an empty store",
                    self.path.display()
                );
                Maps::default()
            }
        }
    }

    fn write(&self, maps: &Maps) -> Result<()> {
        let folder = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(folder)
            .map_err(|error| store_error("cannot create the folder of", &self.path, error))?;
        let text = serde_json::to_vec_pretty(&maps.to_contents())
            .map_err(|error| store_error("cannot write", &self.path, error))?;
        let temp = folder.join(format!(
            ".{}.{}.tmp",
            self.path
                .file_name()
                .and_then(|name| name.to_str())
                .unwrap_or("tokens"),
            std::process::id()
        ));
        let result = (|| -> std::io::Result<()> {
            let mut file = create_private_file(&temp)?;
            file.write_all(&text)?;
            file.sync_all()?;
            std::fs::rename(&temp, &self.path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        result.map_err(|error| store_error("cannot write", &self.path, error))
    }

    fn change(&self, edit: impl FnOnce(&mut Maps)) -> Result<()> {
        let _guard = self.lock.lock();
        let mut maps = self.read();
        edit(&mut maps);
        self.write(&maps)
    }
}

#[cfg(unix)]
fn create_private_dir(folder: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if folder.as_os_str().is_empty() || folder.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
}

#[cfg(not(unix))]
fn create_private_dir(folder: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(folder)
}

#[cfg(unix)]
fn create_private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn create_private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let _ = std::fs::remove_file(path);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

impl TokenStore for FileTokenStore {
    fn load(&self, key: &TokenKey) -> Result<Option<TokenSet>> {
        let _guard = self.lock.lock();
        Ok(self.read().tokens.get(key).cloned())
    }
    fn save(&self, key: &TokenKey, tokens: &TokenSet) -> Result<()> {
        self.change(|maps| {
            maps.tokens.insert(key.clone(), tokens.clone());
        })
    }
    fn remove(&self, key: &TokenKey) -> Result<()> {
        self.change(|maps| {
            maps.tokens.remove(key);
        })
    }
    fn keys(&self) -> Result<Vec<TokenKey>> {
        let _guard = self.lock.lock();
        Ok(self.read().tokens.keys().cloned().collect())
    }
    fn load_client(&self, issuer: &str) -> Result<Option<ClientRegistration>> {
        let _guard = self.lock.lock();
        Ok(self.read().clients.get(issuer).cloned())
    }
    fn save_client(&self, client: &ClientRegistration) -> Result<()> {
        self.change(|maps| {
            maps.clients.insert(client.issuer.clone(), client.clone());
        })
    }
    fn remove_client(&self, issuer: &str) -> Result<()> {
        self.change(|maps| {
            maps.clients.remove(issuer);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_tokens() {
        let set = TokenSet {
            access_token: "planted-access".into(),
            refresh_token: Some("planted-refresh".into()),
            token_type: "Bearer".into(),
            ..TokenSet::default()
        };
        let client = ClientRegistration {
            client_secret: Some("planted-secret".into()),
            ..ClientRegistration::default()
        };
        let text = format!("{set:?} {client:?}");
        assert!(!text.contains("planted"), "{text}");
    }

    #[test]
    fn expiry_with_skew() {
        let set = TokenSet {
            expires_at: Some(100),
            ..TokenSet::default()
        };
        assert!(!set.expired(50, 10));
        assert!(set.expired(95, 10));
        assert!(!TokenSet::default().expired(u64::MAX, 10));
    }
}
