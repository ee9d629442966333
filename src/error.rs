//! The crate's one error type.

use std::fmt;
use std::time::Duration;

use crate::wire::{ErrorObject, ParseError};

/// Everything that can go wrong between a caller and a tool.
///
/// Local failures ([`Error::Timeout`], [`Error::Closed`], [`Error::Busy`], [`Error::Cancelled`])
/// never carry a JSON-RPC code: only [`Error::Rpc`] holds an error object, and only when the
/// peer sent one.
///
/// `Debug` is the derived one except for [`Error::Spawn`], whose `Debug` is its message: a
/// `main` that returns the error with `?` prints `Error: could not start …` rather than the
/// operating system's error structure.
#[derive(thiserror::Error)]
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
    /// The child process could not be started. Its message says why in words: no such file
    /// at a path (taken from the working folder when relative), no such program in `PATH`,
    /// or not executable.
    #[error("could not start `{command}`: {}", spawn_reason(command, source))]
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

/// Why a program did not start, in words a newcomer can act on.
fn spawn_reason(command: &str, source: &std::io::Error) -> String {
    let program = command.split(' ').next().unwrap_or(command);
    match source.kind() {
        std::io::ErrorKind::NotFound if program.contains('/') => format!(
            "there is no file `{program}` (a relative path is taken from the working folder: \
             is it built, and is the path right from there?)"
        ),
        std::io::ErrorKind::NotFound => {
            format!("there is no program `{program}` in PATH (install it, or give its full path)")
        }
        std::io::ErrorKind::PermissionDenied => {
            format!("`{program}` may not be run (is it an executable file?)")
        }
        _ => source.to_string(),
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Rpc(error) => f.debug_tuple("Rpc").field(error).finish(),
            Error::Timeout { method, after } => f
                .debug_struct("Timeout")
                .field("method", method)
                .field("after", after)
                .finish(),
            Error::Cancelled { method } => {
                f.debug_struct("Cancelled").field("method", method).finish()
            }
            Error::Closed(closed) => f.debug_tuple("Closed").field(closed).finish(),
            Error::Busy { limit } => f.debug_struct("Busy").field("limit", limit).finish(),
            Error::Protocol(text) => f.debug_tuple("Protocol").field(text).finish(),
            Error::Parse(error) => f.debug_tuple("Parse").field(error).finish(),
            Error::Spawn { .. } => write!(f, "{self}"),
            Error::Schema(error) => f.debug_tuple("Schema").field(error).finish(),
            Error::Http(error) => f.debug_tuple("Http").field(error).finish(),
            Error::Auth(error) => f.debug_tuple("Auth").field(error).finish(),
            Error::Config(text) => f.debug_tuple("Config").field(text).finish(),
            Error::Registry(error) => f.debug_tuple("Registry").field(error).finish(),
            Error::Import { server, source } => f
                .debug_struct("Import")
                .field("server", server)
                .field("source", source)
                .finish(),
            Error::Io(error) => f.debug_tuple("Io").field(error).finish(),
        }
    }
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
        let excerpt = shown_excerpt(self.content_type.as_deref(), &self.body_excerpt);
        if !excerpt.is_empty() {
            write!(f, ": {excerpt}")?;
        }
        if self.status == 404 {
            if let Some(hint) = endpoint_hint(&self.url) {
                write!(f, " (no MCP endpoint at this path? {hint})")?;
            }
        }
        Ok(())
    }
}

/// The most characters of an HTML page's text shown in an error.
const HTML_EXCERPT_CHARS: usize = 160;

/// The body as an error shows it: a web page (a server's HTML error page, a proxy's) as its
/// title, or else its text without markup, whitespace folded, at most [`HTML_EXCERPT_CHARS`]
/// characters; any other body as it came (already bounded and scrubbed by the transport).
fn shown_excerpt(content_type: Option<&str>, body: &str) -> String {
    let body = body.trim();
    let html = content_type.is_some_and(|kind| kind.to_ascii_lowercase().contains("html"))
        || body.starts_with('<');
    if !html {
        return body.to_owned();
    }
    let lower = body.to_ascii_lowercase();
    let title = lower.find("<title").and_then(|start| {
        let open = start + lower[start..].find('>')? + 1;
        let close = open + lower[open..].find("</title")?;
        Some(&body[open..close])
    });
    let mut text = String::new();
    let mut in_tag = false;
    for character in title.unwrap_or(body).chars() {
        match character {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            _ if in_tag => {}
            _ => text.push(character),
        }
    }
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut shown: String = folded.chars().take(HTML_EXCERPT_CHARS).collect();
    if folded.chars().count() > HTML_EXCERPT_CHARS {
        shown.push('…');
    }
    if shown.is_empty() {
        "an HTML page".into()
    } else {
        format!("an HTML page: {shown}")
    }
}

/// For a 404: the endpoint most servers use, when the URL's path is not it already.
fn endpoint_hint(url: &str) -> Option<String> {
    let after_scheme = url.find("://")? + 3;
    let path_start = url[after_scheme..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |at| after_scheme + at);
    let path = url[path_start..].split(['?', '#']).next().unwrap_or("");
    if path.trim_end_matches('/').ends_with("/mcp") {
        return None;
    }
    Some(format!(
        "the endpoint is usually `/mcp`: try {}/mcp",
        &url[..path_start]
    ))
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
    fn an_html_error_page_is_one_short_line_and_a_404_names_the_usual_endpoint() {
        let page = format!(
            "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\n<body>{}</body></html>",
            "<p>The page you asked for is not here.</p>".repeat(50)
        );
        let error = HttpError::new(
            404,
            "initialize",
            "http://127.0.0.1:3911/",
            Some("text/html; charset=utf-8".into()),
            page,
        );
        assert_eq!(
            error.to_string(),
            "HTTP 404 for `initialize` from http://127.0.0.1:3911/: an HTML page: 404 Not Found \
             (no MCP endpoint at this path? the endpoint is usually `/mcp`: try \
             http://127.0.0.1:3911/mcp)"
        );
        // No title: the page's text, folded and cut short.
        let untitled = HttpError::new(
            502,
            "tools/list",
            "http://h/mcp",
            None,
            format!(
                "<html><body><h1>Bad gateway</h1>{}</body></html>",
                "x ".repeat(400)
            ),
        )
        .to_string();
        assert!(
            untitled.starts_with(
                "HTTP 502 for `tools/list` from http://h/mcp: an HTML page: Bad gateway x x"
            ),
            "{untitled}"
        );
        assert!(
            untitled.ends_with('…') && untitled.len() < 260,
            "{untitled}"
        );
        // A 404 at `/mcp` itself gets no suggestion; JSON bodies are shown as they came.
        let at_mcp = HttpError::new(
            404,
            "initialize",
            "http://h:1/mcp",
            Some("application/json".into()),
            r#"{"error":"no session"}"#.into(),
        );
        assert_eq!(
            at_mcp.to_string(),
            r#"HTTP 404 for `initialize` from http://h:1/mcp: {"error":"no session"}"#
        );
    }

    #[test]
    fn a_program_that_does_not_start_is_said_in_words_by_display_and_debug() {
        let spawn = |command: &str, kind: std::io::ErrorKind| Error::Spawn {
            command: command.into(),
            source: std::io::Error::from(kind),
        };
        let missing = spawn(
            "target/debug/examples/tool_server --catalog",
            std::io::ErrorKind::NotFound,
        );
        let expected = "could not start `target/debug/examples/tool_server --catalog`: there is \
                        no file `target/debug/examples/tool_server` (a relative path is taken \
                        from the working folder: is it built, and is the path right from there?)";
        assert_eq!(missing.to_string(), expected);
        // What `fn main() -> Result<(), Error>` prints: the same words, no `Os { code: 2 … }`.
        assert_eq!(format!("{missing:?}"), expected);
        let unknown = spawn("mcp-nosuch", std::io::ErrorKind::NotFound);
        assert!(
            format!("{unknown:?}").ends_with(
                "there is no program `mcp-nosuch` in PATH (install it, or give its full path)"
            ),
            "{unknown:?}"
        );
        let denied = spawn("./notes.txt", std::io::ErrorKind::PermissionDenied);
        assert!(
            denied
                .to_string()
                .ends_with("`./notes.txt` may not be run (is it an executable file?)"),
            "{denied}"
        );
        // Every other variant keeps its derived form.
        assert_eq!(
            format!("{:?}", Error::Busy { limit: 3 }),
            "Busy { limit: 3 }"
        );
    }

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
