//! The crate's one error type.

use std::fmt;
use std::time::Duration;

use crate::wire::{ErrorObject, ParseError};

/// Everything that can go wrong between a caller and a tool.
///
/// Local failures ([`Error::Timeout`], [`Error::Closed`], [`Error::Busy`], [`Error::Cancelled`])
/// never carry a JSON-RPC code: only [`Error::Rpc`] holds an error object, and only when the
/// peer sent one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The peer answered with a JSON-RPC error object.
    #[error("the peer answered with an error: {0}")]
    Rpc(Box<ErrorObject>),
    /// No response arrived before the deadline. The request was released; the peer was not
    /// stopped.
    #[error("`{method}` timed out after {after:?}")]
    Timeout {
        /// The method of the request.
        method: String,
        /// How long the caller waited.
        after: Duration,
    },
    /// The caller cancelled the request.
    #[error("`{method}` was cancelled")]
    Cancelled {
        /// The method of the request.
        method: String,
    },
    /// The connection is closed: the peer exited, its output ended, or `close()` was called.
    #[error("{0}")]
    Closed(Box<Closed>),
    /// Too many requests are already in flight on this client.
    #[error("too many requests in flight (the limit is {limit})")]
    Busy {
        /// The configured limit.
        limit: usize,
    },
    /// The peer sent something that breaks the protocol, e.g. a result of the wrong shape;
    /// or an assistant message given to [`crate::Harness::handle_message`] is not a message of
    /// its shape.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// A frame could not be parsed.
    #[error("invalid message: {0}")]
    Parse(#[from] ParseError),
    /// The child process could not be started.
    #[error("could not start `{command}`: {source}")]
    Spawn {
        /// The program that failed to start.
        command: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A value does not match its JSON Schema (e.g. a tool's `structuredContent` against its
    /// `outputSchema`).
    #[error("{0}")]
    Schema(Box<SchemaError>),
    /// An HTTP server answered with a status that is neither a success nor one the transport
    /// handles itself (e.g. 500, 401, 400 outside session expiry). Carries the status and a
    /// bounded excerpt of the body.
    #[error("{0}")]
    Http(Box<HttpError>),
    /// Authorization failed: the server wants credentials the client could not obtain
    /// (discovery, registration, the user's consent or a token request failed, or a check
    /// refused what a server sent). Carries what went wrong, never a secret.
    #[error("{0}")]
    Auth(Box<AuthError>),
    /// Invalid configuration or arguments, before anything was sent.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A tool could not be registered: a name outside the tool-name rule
    /// ([`crate::mcp::TOOL_NAME_RULE`]), a name already taken, or an input schema that is not a
    /// compilable object schema. Calls never fail this way: they end in an
    /// [`crate::harness::Outcome`].
    #[error("{0}")]
    Registry(Box<RegistryError>),
    /// The tool list of an MCP server could not be fetched while importing it into a
    /// registry.
    #[error("could not list the tools of MCP server {server:?}: {source}")]
    Import {
        /// The server name given to [`crate::harness::McpImport::new`].
        server: String,
        /// The client's error.
        #[source]
        source: Box<Error>,
    },
    /// An I/O error outside the cases above.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// True for [`Error::Timeout`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout { .. })
    }

    /// True for [`Error::Closed`].
    pub fn is_closed(&self) -> bool {
        matches!(self, Error::Closed(_))
    }

    /// The peer's error object, for [`Error::Rpc`].
    pub fn rpc(&self) -> Option<&ErrorObject> {
        match self {
            Error::Rpc(error) => Some(error),
            _ => None,
        }
    }

    /// The status and body excerpt, for [`Error::Http`].
    pub fn http(&self) -> Option<&HttpError> {
        match self {
            Error::Http(error) => Some(error),
            _ => None,
        }
    }

    /// The close details, for [`Error::Closed`].
    pub fn closed(&self) -> Option<&Closed> {
        match self {
            Error::Closed(closed) => Some(closed),
            _ => None,
        }
    }

    /// The registry details, for [`Error::Registry`].
    pub fn registry(&self) -> Option<&RegistryError> {
        match self {
            Error::Registry(error) => Some(error),
            _ => None,
        }
    }

    /// The authorization details, for [`Error::Auth`].
    pub fn auth(&self) -> Option<&AuthError> {
        match self {
            Error::Auth(error) => Some(error),
            _ => None,
        }
    }

    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    pub(crate) fn auth_error(kind: AuthErrorKind, message: impl Into<String>) -> Error {
        Error::Auth(Box::new(AuthError {
            kind,
            message: message.into(),
        }))
    }

    pub(crate) fn closed_because(reason: impl Into<String>) -> Error {
        Error::Closed(Box::new(Closed::new(reason)))
    }

    pub(crate) fn registry_error(kind: RegistryErrorKind, tool: &str, reason: String) -> Error {
        Error::Registry(Box::new(RegistryError {
            kind,
            tool: tool.to_owned(),
            reason,
        }))
    }
}

/// Which step of authorization failed, for [`Error::Auth`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthErrorKind {
    /// Credentials are needed and this client may not ask a user for them (a non-interactive
    /// authorizer): log in first (`toolwire login`).
    LoginRequired,
    /// The protected resource metadata or the authorization server metadata could not be
    /// found or read.
    Discovery,
    /// The authorization server metadata names another issuer than the one it was fetched
    /// for, or the redirect's `iss` differs from the issuer (RFC 8414 §3.3, RFC 9207).
    IssuerMismatch,
    /// The protected resource metadata names a resource this URL is not (RFC 9728 §3.3).
    ResourceMismatch,
    /// The authorization server does not support PKCE with S256, or something else the flow
    /// needs (the response type `code`, a grant type).
    Unsupported,
    /// Client registration was refused, or no client id could be had.
    Registration,
    /// The user's authorization step failed: denied, timed out, a redirect that does not
    /// match (`state`), or the authorizer failed.
    Authorization,
    /// The token endpoint refused a request (its OAuth `error` code is in the message).
    Token,
    /// The server wants a scope that more authorizations will not bring (retry limit
    /// reached, or a step-up that adds nothing).
    InsufficientScope,
    /// The server refused the credentials just obtained.
    Refused,
    /// Stored credentials could not be read or written.
    Store,
}

/// Why authorization failed, for [`Error::Auth`]. The message names the step and the
/// server's OAuth error code; it never holds a token, a code, a verifier or a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthError {
    /// Which step failed.
    pub kind: AuthErrorKind,
    /// What went wrong, in plain words.
    pub message: String,
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "authorization failed: {}", self.message)
    }
}

/// Which rule a tool broke when it was registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryErrorKind {
    /// The name is outside the tool-name rule, [`crate::mcp::TOOL_NAME_RULE`] (or, for an
    /// import, the server's name is not `[a-z0-9-]+`).
    BadName,
    /// A tool with this name is already registered.
    Duplicate,
    /// The input schema does not compile, or is not an object schema.
    BadSchema,
}

/// Why a tool could not be registered, for [`Error::Registry`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegistryError {
    /// Which rule was broken.
    pub kind: RegistryErrorKind,
    /// The tool's name (or the server's, for an import).
    pub tool: String,
    /// What is wrong, in plain words.
    pub reason: String,
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// Why a connection closed, with what the peer left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Closed {
    /// What happened, in plain words ("the server's stdout ended", "closed by the caller").
    pub reason: String,
    /// The child's exit status, when it is known (e.g. "exit status: 3", "signal: 9").
    pub exit_status: Option<String>,
    /// The last bytes the child wrote to stderr (lossy UTF-8), possibly empty.
    pub stderr_tail: String,
}

impl Closed {
    /// A close with a reason and nothing left behind (no exit status, no stderr).
    pub fn new(reason: impl Into<String>) -> Closed {
        Closed {
            reason: reason.into(),
            exit_status: None,
            stderr_tail: String::new(),
        }
    }

    /// A close with the child's exit status and the tail of its stderr.
    pub fn with_exit(
        reason: impl Into<String>,
        exit_status: Option<String>,
        stderr_tail: String,
    ) -> Closed {
        Closed {
            reason: reason.into(),
            exit_status,
            stderr_tail,
        }
    }
}

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "connection closed: {}", self.reason)?;
        if let Some(status) = &self.exit_status {
            write!(f, " ({status})")?;
        }
        let tail = self.stderr_tail.trim_end();
        if !tail.is_empty() {
            // Only the last lines: the whole tail is in the field for whoever wants it.
            let lines: Vec<&str> = tail.lines().collect();
            let start = lines.len().saturating_sub(5);
            write!(f, "; stderr tail:\n{}", lines[start..].join("\n"))?;
        }
        Ok(())
    }
}

/// An HTTP answer the transport could not use: the status and what the body began with.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpError {
    /// The HTTP status code.
    pub status: u16,
    /// What was being sent: the JSON-RPC method, or e.g. "GET stream".
    pub what: String,
    /// The URL that answered, masked: a password in it shows as `***` (see
    /// [`crate::transport::mask_url`]).
    pub url: String,
    /// The response's `Content-Type`, when it had one.
    pub content_type: Option<String>,
    /// The start of the body (lossy UTF-8), at most the transport's excerpt limit, with the
    /// connection's token, header values and URL password taken out.
    pub body_excerpt: String,
}

impl HttpError {
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn new(
        status: u16,
        what: impl Into<String>,
        url: impl Into<String>,
        content_type: Option<String>,
        body_excerpt: String,
    ) -> HttpError {
        HttpError {
            status,
            what: what.into(),
            // Stored masked, so no path from here can show the password.
            url: crate::mask::mask_url(&url.into()),
            content_type,
            body_excerpt,
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "HTTP {} for `{}` from {}",
            self.status, self.what, self.url
        )?;
        let excerpt = self.body_excerpt.trim();
        if !excerpt.is_empty() {
            write!(f, ": {excerpt}")?;
        }
        Ok(())
    }
}

/// A value that failed its JSON Schema, with every violation found (up to a bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// What was checked, e.g. "structuredContent of tool `add`".
    pub subject: String,
    /// The violations, each naming its path.
    pub violations: Vec<crate::schema::SchemaViolation>,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} does not match its schema", self.subject)?;
        for violation in &self.violations {
            write!(f, "; {violation}")?;
        }
        Ok(())
    }
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_stays_small() {
        // Errors travel through channels on every call; keep them a few words wide.
        assert!(
            std::mem::size_of::<Error>() <= 48,
            "{}",
            std::mem::size_of::<Error>()
        );
    }

    #[test]
    fn closed_display_shows_status_and_last_lines_of_the_tail() {
        let closed = Closed {
            reason: "the server's stdout ended".into(),
            exit_status: Some("exit status: 3".into()),
            stderr_tail: "1\n2\n3\n4\n5\n6\n7\n".into(),
        };
        let text = closed.to_string();
        assert!(text.contains("exit status: 3"));
        assert!(text.ends_with("3\n4\n5\n6\n7"), "{text}");
        assert!(!text.contains("\n2\n"));
    }
}
