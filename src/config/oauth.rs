//! The OAuth fields of an HTTP entry, in each host's spelling.
//!
//! - Claude Code (`.mcp.json`): `"oauth": {"clientId", "callbackPort", "scopes",
//!   "authServerMetadataUrl"}`, `scopes` one space-separated string; the client secret is not
//!   kept in the file (Claude Code asks for it and keeps it in the keychain; toolwire takes
//!   `--client-secret` or `MCP_CLIENT_SECRET`).
//! - VS Code (`.vscode/mcp.json`): `"oauth": {"clientId"}`.
//! - Cursor (`.cursor/mcp.json`): `"auth": {"CLIENT_ID", "CLIENT_SECRET", "scopes"}`,
//!   `scopes` an array.
//! - Claude Desktop: none (remote servers are added in the app).
//!
//! Values are expanded like the entry's other strings; the secret never shows in a `Debug`.

use std::fmt;

use serde_json::{Map, Value};

use super::entry::EntryReader;
use super::ConfigFormat;
use crate::error::Result;

/// The OAuth settings of one HTTP entry. Every field is optional: an entry without any
/// still gets MCP authorization (discovery and registration) from a program that enables it.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthSettings {
    /// A pre-registered client id (`clientId`, Cursor's `CLIENT_ID`).
    pub client_id: Option<String>,
    /// The client's secret (Cursor's `CLIENT_SECRET`).
    pub client_secret: Option<String>,
    /// The scopes to ask for instead of the server's (`scopes`).
    pub scopes: Option<Vec<String>>,
    /// A fixed port for the loopback redirect (Claude Code's `callbackPort`), for a client
    /// registered with one redirect URI.
    pub callback_port: Option<u16>,
    /// The authorization server's metadata URL, instead of discovering it (Claude Code's
    /// `authServerMetadataUrl`; must be https).
    pub auth_server_metadata_url: Option<String>,
}

impl fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| crate::mask::MASK),
            )
            .field("scopes", &self.scopes)
            .field("callback_port", &self.callback_port)
            .field("auth_server_metadata_url", &self.auth_server_metadata_url)
            .finish()
    }
}

impl OAuthSettings {
    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        *self == OAuthSettings::default()
    }
}

/// The field an entry's OAuth settings are under, in its format.
pub(super) fn field_of(format: ConfigFormat) -> &'static str {
    match format {
        ConfigFormat::Cursor => "auth",
        _ => "oauth",
    }
}

impl EntryReader<'_> {
    /// Reads the entry's OAuth field, when it has one.
    pub(super) fn oauth(&self, object: &Map<String, Value>) -> Result<Option<OAuthSettings>> {
        let field = field_of(self.format);
        let settings = match object.get(field) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(settings)) => settings,
            Some(_) => return Err(self.error(field, "must be an object")),
        };
        let cursor = self.format == ConfigFormat::Cursor;
        let mut out = OAuthSettings::default();
        for (key, value) in settings {
            let path = format!("{field}.{key}");
            let text = |value: &Value| match value {
                Value::String(text) => self.expand(text, &path),
                _ => Err(self.error(&path, "must be a string")),
            };
            match (key.as_str(), cursor) {
                ("clientId", false) | ("CLIENT_ID", true) => out.client_id = Some(text(value)?),
                ("clientSecret", false) | ("CLIENT_SECRET", true) => {
                    out.client_secret = Some(text(value)?)
                }
                ("scopes", _) => {
                    out.scopes = Some(match value {
                        Value::String(text) => self
                            .expand(text, &path)?
                            .split_ascii_whitespace()
                            .map(str::to_owned)
                            .collect(),
                        Value::Array(items) => items
                            .iter()
                            .map(|item| match item {
                                Value::String(text) => self.expand(text, &path),
                                _ => Err(self.error(&path, "must hold strings")),
                            })
                            .collect::<Result<Vec<_>>>()?,
                        _ => {
                            return Err(self.error(&path, "must be a string or an array of strings"))
                        }
                    })
                }
                ("callbackPort", false) => {
                    let port = value
                        .as_u64()
                        .and_then(|port| u16::try_from(port).ok())
                        .filter(|port| *port > 0)
                        .ok_or_else(|| self.error(&path, "must be a port number (1 to 65535)"))?;
                    out.callback_port = Some(port);
                }
                ("authServerMetadataUrl", false) => {
                    let url = text(value)?;
                    if !url.to_ascii_lowercase().starts_with("https://") {
                        return Err(self.error(&path, "must be an https:// URL"));
                    }
                    out.auth_server_metadata_url = Some(url);
                }
                _ => log::warn!(
                    "toolwire: {}: server `{}`: ignoring `{path}`, which this reader does not know",
                    self.source,
                    self.name
                ),
            }
        }
        Ok(Some(out))
    }
}
