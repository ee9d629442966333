//! The user-agent step: whoever takes the user to the authorization page and brings back the
//! address the server redirected to. [`Authorizer`] is the seam; four are shipped:
//!
//! - [`LoopbackAuthorizer`] (for programs with a user): a listener on `127.0.0.1` at a random
//!   port (RFC 8252 §7.3) bound before the client registers, the browser opened where one can
//!   be (and the address printed either way), the redirect awaited until a deadline;
//! - [`HeadlessAuthorizer`]: prints the address and reads back the redirect address (or the
//!   code) on a line of standard input, for SSH sessions and containers;
//! - [`NonInteractive`]: refuses at once with an error that says how to log in;
//! - [`FetchRedirect`]: follows the authorization endpoint's redirect itself, for tests and
//!   conformance runs whose server consents at once.

use std::fmt;
use std::io::{BufRead, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::http::FlowHttp;
use crate::error::{AuthErrorKind, Error, Result};

/// One authorization for the user to give.
#[non_exhaustive]
pub struct AuthorizationRequest<'a> {
    /// The authorization endpoint with its query: where the user goes.
    pub url: &'a str,
    /// The redirect URI the request names.
    pub redirect_uri: &'a str,
    /// The request's `state` (to build a redirect address from a pasted code).
    pub state: &'a str,
    /// When to give up.
    pub deadline: Instant,
    /// True once the request that needed authorization was given up.
    pub cancelled: &'a (dyn Fn() -> bool + Sync),
}

impl<'a> AuthorizationRequest<'a> {
    /// A request for an authorizer (for programs that drive one themselves, and tests).
    pub fn new(
        url: &'a str,
        redirect_uri: &'a str,
        state: &'a str,
        deadline: Instant,
        cancelled: &'a (dyn Fn() -> bool + Sync),
    ) -> AuthorizationRequest<'a> {
        AuthorizationRequest {
            url,
            redirect_uri,
            state,
            deadline,
            cancelled,
        }
    }
}

impl fmt::Debug for AuthorizationRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizationRequest")
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// Takes the user through authorization and returns the address the server redirected to.
pub trait Authorizer: Send + Sync {
    /// Whether this authorizer can bring back an authorization at all. A flow that needs one
    /// stops before registering a client when it cannot. Defaults to true.
    fn can_authorize(&self) -> bool {
        true
    }

    /// The redirect URI to register and send. Called before registration, once per
    /// authorization (the loopback authorizer binds its listener here).
    ///
    /// # Errors
    ///
    /// When no redirect URI can be had (no port to listen on).
    fn redirect_uri(&self) -> Result<String>;

    /// Has the user authorize `request.url` and returns the full redirect address (with its
    /// query), which the flow then checks (`state`, `iss`, `code`).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Auth`] ([`AuthErrorKind::Authorization`] or
    /// [`AuthErrorKind::LoginRequired`]) when no redirect came.
    fn authorize(&self, request: &AuthorizationRequest<'_>) -> Result<String>;
}

type Notice = Arc<dyn Fn(&str) + Send + Sync>;

fn stderr_notice() -> Notice {
    Arc::new(|text: &str| eprintln!("{text}"))
}

/// A loopback redirect listener and the system browser (see the module documentation).
pub struct LoopbackAuthorizer {
    port: u16,
    path: String,
    open_browser: bool,
    notice: Notice,
    listener: Mutex<Option<(TcpListener, String)>>,
}

impl fmt::Debug for LoopbackAuthorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackAuthorizer")
            .field("port", &self.port)
            .field("open_browser", &self.open_browser)
            .finish_non_exhaustive()
    }
}

impl Default for LoopbackAuthorizer {
    fn default() -> Self {
        LoopbackAuthorizer::new()
    }
}

/// The most bytes of a request the loopback listener reads.
const MAX_CALLBACK_REQUEST: usize = 16 * 1024;

impl LoopbackAuthorizer {
    /// A listener on a random port, the browser opened, the address printed on stderr.
    pub fn new() -> LoopbackAuthorizer {
        LoopbackAuthorizer {
            port: 0,
            path: "/callback".into(),
            open_browser: true,
            notice: stderr_notice(),
            listener: Mutex::new(None),
        }
    }

    /// Listens on this port (for clients registered with a fixed redirect URI). Defaults to
    /// 0: a random free port.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Opens the system browser (`xdg-open`, `open`, or Windows' URL handler, started
    /// without a shell). Defaults to true; the address is printed either way.
    pub fn open_browser(mut self, open: bool) -> Self {
        self.open_browser = open;
        self
    }

    /// Where the "open this address" line goes. Defaults to stderr.
    pub fn notice(mut self, notice: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.notice = Arc::new(notice);
        self
    }

    fn answer(stream: &mut TcpStream, status: &str, text: &str) {
        let body =
            format!("<!doctype html><meta charset=utf-8><title>toolwire</title><p>{text}</p>");
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    }

    /// Reads one request's target (`GET /callback?… HTTP/1.1`), bounded in bytes and time.
    fn request_target(stream: &mut TcpStream, deadline: Instant) -> Option<String> {
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .min(Duration::from_secs(10));
        stream
            .set_read_timeout(Some(wait.max(Duration::from_millis(10))))
            .ok()?;
        let mut reader = std::io::BufReader::new(stream.take(MAX_CALLBACK_REQUEST as u64));
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let mut parts = line.split_ascii_whitespace();
        let (method, target) = (parts.next()?, parts.next()?);
        (method == "GET").then(|| target.to_owned())
    }
}

/// Starts the platform's URL opener, without a shell (a `&` in the URL would end a command).
fn open_in_browser(url: &str) -> bool {
    let mut command = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut command = std::process::Command::new("rundll32");
        command.arg("url.dll,FileProtocolHandler");
        command
    } else {
        std::process::Command::new("xdg-open")
    };
    command
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(|mut child| {
            // Reaped on its own thread: the opener returns at once, and no zombie stays.
            std::thread::Builder::new()
                .name("toolwire-browser".into())
                .spawn(move || {
                    let _ = child.wait();
                })
                .is_ok()
        })
        .unwrap_or(false)
}

impl Authorizer for LoopbackAuthorizer {
    fn redirect_uri(&self) -> Result<String> {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).map_err(|error| {
            Error::auth_error(
                AuthErrorKind::Authorization,
                format!(
                    "cannot listen on 127.0.0.1:{} for the redirect: {error}",
                    self.port
                ),
            )
        })?;
        let port = listener
            .local_addr()
            .map(|address| address.port())
            .unwrap_or(self.port);
        let uri = format!("http://127.0.0.1:{port}{}", self.path);
        *self.listener.lock() = Some((listener, uri.clone()));
        Ok(uri)
    }

    fn authorize(&self, request: &AuthorizationRequest<'_>) -> Result<String> {
        let Some((listener, uri)) = self.listener.lock().take() else {
            return Err(Error::auth_error(
                AuthErrorKind::Authorization,
                "the loopback listener was not started (redirect_uri first)",
            ));
        };
        let opened = self.open_browser && open_in_browser(request.url);
        (self.notice)(&format!(
            "{} this address to authorize toolwire:\n  {}",
            if opened {
                "Your browser was opened; if it did not, open"
            } else {
                "Open"
            },
            request.url
        ));
        listener.set_nonblocking(true).map_err(|error| {
            Error::auth_error(
                AuthErrorKind::Authorization,
                format!("the loopback listener: {error}"),
            )
        })?;
        let origin = uri.trim_end_matches(&self.path).to_owned();
        loop {
            if (request.cancelled)() {
                return Err(Error::auth_error(
                    AuthErrorKind::Authorization,
                    "the authorization was given up",
                ));
            }
            if Instant::now() >= request.deadline {
                return Err(Error::auth_error(
                    AuthErrorKind::Authorization,
                    "no redirect came back before the authorization deadline (OAuthConfig::authorization_timeout)",
                ));
            }
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let Some(target) = Self::request_target(&mut stream, request.deadline) else {
                        continue;
                    };
                    let path = target.split('?').next().unwrap_or("");
                    if path != self.path {
                        // A browser asks for /favicon.ico, a scanner for anything.
                        Self::answer(&mut stream, "404 Not Found", "Not here.");
                        continue;
                    }
                    Self::answer(
                        &mut stream,
                        "200 OK",
                        "Authorization received: you may close this tab and go back to toolwire.",
                    );
                    return Ok(format!("{origin}{target}"));
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(error) => {
                    return Err(Error::auth_error(
                        AuthErrorKind::Authorization,
                        format!("the loopback listener failed: {error}"),
                    ))
                }
            }
        }
    }
}

type LineSource = Arc<dyn Fn() -> std::io::Result<String> + Send + Sync>;

/// Prints the address and reads the redirect address back from standard input (or a source
/// given with [`HeadlessAuthorizer::lines`]). The browser, wherever it runs, lands on a dead
/// `127.0.0.1` page: its address is what to paste. A bare code is taken too.
pub struct HeadlessAuthorizer {
    redirect_uri: String,
    notice: Notice,
    lines: LineSource,
}

impl fmt::Debug for HeadlessAuthorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeadlessAuthorizer")
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl Default for HeadlessAuthorizer {
    fn default() -> Self {
        HeadlessAuthorizer::new()
    }
}

impl HeadlessAuthorizer {
    /// Redirects to `http://127.0.0.1:8976/callback` (nothing listens), prints on stderr,
    /// reads stdin.
    pub fn new() -> HeadlessAuthorizer {
        HeadlessAuthorizer {
            redirect_uri: "http://127.0.0.1:8976/callback".into(),
            notice: stderr_notice(),
            lines: Arc::new(|| {
                let mut line = String::new();
                std::io::stdin()
                    .lock()
                    .take(MAX_CALLBACK_REQUEST as u64)
                    .read_line(&mut line)?;
                Ok(line)
            }),
        }
    }

    /// The redirect URI to register and send. Defaults to `http://127.0.0.1:8976/callback`.
    pub fn redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = uri.into();
        self
    }

    /// Where the prompt goes. Defaults to stderr.
    pub fn notice(mut self, notice: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.notice = Arc::new(notice);
        self
    }

    /// Where the pasted line comes from. Defaults to one line of stdin.
    pub fn lines(
        mut self,
        lines: impl Fn() -> std::io::Result<String> + Send + Sync + 'static,
    ) -> Self {
        self.lines = Arc::new(lines);
        self
    }
}

impl Authorizer for HeadlessAuthorizer {
    fn redirect_uri(&self) -> Result<String> {
        Ok(self.redirect_uri.clone())
    }

    fn authorize(&self, request: &AuthorizationRequest<'_>) -> Result<String> {
        (self.notice)(&format!(
            "Open this address in a browser to authorize toolwire:\n  {}\nThen paste the address the browser was sent to (it starts with {}), or the code:",
            request.url, request.redirect_uri
        ));
        // stdin blocks without a timeout: a thread reads it, the deadline bounds the wait.
        let (tx, rx) = crossbeam_channel::bounded(1);
        let lines = Arc::clone(&self.lines);
        std::thread::Builder::new()
            .name("toolwire-paste".into())
            .spawn(move || {
                let _ = tx.send(lines());
            })
            .map_err(Error::Io)?;
        let line = loop {
            if (request.cancelled)() {
                return Err(Error::auth_error(
                    AuthErrorKind::Authorization,
                    "the authorization was given up",
                ));
            }
            let step = (Instant::now() + Duration::from_millis(100)).min(request.deadline);
            match rx.recv_deadline(step) {
                Ok(Ok(line)) => break line,
                Ok(Err(error)) => {
                    return Err(Error::auth_error(AuthErrorKind::Authorization, format!("reading the pasted address: {error}")))
                }
                Err(_) if Instant::now() >= request.deadline => {
                    return Err(Error::auth_error(
                        AuthErrorKind::Authorization,
                        "nothing was pasted before the authorization deadline (OAuthConfig::authorization_timeout)",
                    ))
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    return Err(Error::auth_error(AuthErrorKind::Authorization, "standard input ended"))
                }
                Err(_) => {}
            }
        };
        let line = line.trim();
        if line.is_empty() {
            return Err(Error::auth_error(
                AuthErrorKind::Authorization,
                "nothing was pasted",
            ));
        }
        if line.contains("://") {
            return Ok(line.to_owned());
        }
        Ok(format!(
            "{}?code={}&state={}",
            request.redirect_uri,
            super::util::form_encode(line),
            super::util::form_encode(request.state)
        ))
    }
}

/// Refuses to ask anyone: the flow stops before registering, with an error that names what
/// to do (for programs without a user, and the CLI when stdin is not a terminal).
#[derive(Debug, Clone)]
pub struct NonInteractive {
    hint: String,
}

impl Default for NonInteractive {
    fn default() -> Self {
        NonInteractive::new("log in first (e.g. `toolwire login`), or supply a token")
    }
}

impl NonInteractive {
    /// A refusal whose message ends with `hint`.
    pub fn new(hint: impl Into<String>) -> NonInteractive {
        NonInteractive { hint: hint.into() }
    }
}

impl Authorizer for NonInteractive {
    fn can_authorize(&self) -> bool {
        false
    }
    fn redirect_uri(&self) -> Result<String> {
        Err(self.refusal())
    }
    fn authorize(&self, _request: &AuthorizationRequest<'_>) -> Result<String> {
        Err(self.refusal())
    }
}

impl NonInteractive {
    fn refusal(&self) -> Error {
        Error::auth_error(
            AuthErrorKind::LoginRequired,
            format!(
                "the server needs a user's authorization and this client cannot ask for it: {}",
                self.hint
            ),
        )
    }
}

/// Fetches the authorization address itself and reads the redirect's `Location`, as the
/// conformance suite's reference client does: for test servers that consent at once. Never
/// for real servers (no user sees anything).
#[derive(Clone)]
pub struct FetchRedirect {
    redirect_uri: String,
    http: FlowHttp,
}

impl fmt::Debug for FetchRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchRedirect")
            .field("redirect_uri", &self.redirect_uri)
            .finish()
    }
}

impl FetchRedirect {
    /// Registers and sends `redirect_uri` (nothing needs to listen there).
    pub fn new(redirect_uri: impl Into<String>) -> FetchRedirect {
        FetchRedirect {
            redirect_uri: redirect_uri.into(),
            http: FlowHttp::new(Duration::from_secs(30), 64 * 1024),
        }
    }
}

impl Authorizer for FetchRedirect {
    fn redirect_uri(&self) -> Result<String> {
        Ok(self.redirect_uri.clone())
    }

    fn authorize(&self, request: &AuthorizationRequest<'_>) -> Result<String> {
        let answer = self
            .http
            .get(request.url, &[], AuthErrorKind::Authorization)?;
        match (answer.status, answer.location) {
            (300..=399, Some(location)) => Ok(location),
            (status, _) => Err(Error::auth_error(
                AuthErrorKind::Authorization,
                format!("the authorization endpoint answered HTTP {status} without a redirect"),
            )),
        }
    }
}
