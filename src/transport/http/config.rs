//! The settings of a Streamable HTTP connection: where, with which headers, and every bound.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::{HttpAuth, HttpTransport};
use crate::error::{Error, Result};
use crate::mask::{mask_url, userinfo, MaskedHeaders, Secrets, MASK};
use crate::transport::{Connector, Transport};

/// How to reach and bound a Streamable HTTP server. [`HttpConfig::new`] sets every bound to
/// its default; each knob has a setter that says its default.
#[derive(Clone)]
pub struct HttpConfig {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) bearer_token: Option<String>,
    pub(crate) auth: Option<Arc<dyn HttpAuth>>,
    pub(crate) connect_timeout: Duration,
    pub(crate) response_timeout: Duration,
    pub(crate) read_timeout: Option<Duration>,
    pub(crate) write_timeout: Duration,
    pub(crate) max_body_bytes: usize,
    pub(crate) max_event_bytes: usize,
    pub(crate) error_excerpt_bytes: usize,
    pub(crate) error_body_bytes: usize,
    pub(crate) max_concurrent_posts: usize,
    pub(crate) standalone_stream: bool,
    pub(crate) standalone_stream_wait: Duration,
    pub(crate) default_retry: Duration,
    pub(crate) max_reconnects: u32,
    pub(crate) min_retry: Duration,
    pub(crate) max_reconnects_per_minute: u32,
    pub(crate) session_expired_on_400: bool,
    pub(crate) delete_on_close: bool,
    pub(crate) close_timeout: Duration,
    pub(crate) thread_join_grace: Duration,
    pub(crate) worker_idle: Duration,
    pub(crate) post_backstop: Duration,
    pub(crate) endpoint_timeout: Duration,
    pub(crate) root_certificates: Option<Arc<Vec<u8>>>,
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values and the token may be secrets, and so may a password in the URL: the
        // names show, the values are `***` (see `crate::mask`).
        f.debug_struct("HttpConfig")
            .field("url", &mask_url(&self.url))
            .field("headers", &MaskedHeaders(&self.headers))
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| MASK))
            .field("auth", &self.auth.as_ref().map(|_| "<provider>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("response_timeout", &self.response_timeout)
            .field("read_timeout", &self.read_timeout)
            .field("write_timeout", &self.write_timeout)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_event_bytes", &self.max_event_bytes)
            .field("root_certificates", &self.root_certificates.is_some())
            .field("max_concurrent_posts", &self.max_concurrent_posts)
            .field("standalone_stream", &self.standalone_stream)
            .field("default_retry", &self.default_retry)
            .field("max_reconnects", &self.max_reconnects)
            .finish_non_exhaustive()
    }
}

impl From<&str> for HttpConfig {
    fn from(url: &str) -> Self {
        HttpConfig::new(url)
    }
}

impl From<String> for HttpConfig {
    fn from(url: String) -> Self {
        HttpConfig::new(url)
    }
}

impl HttpConfig {
    /// A config for `url` (the MCP endpoint, e.g. `http://127.0.0.1:8000/mcp`; `https://`
    /// needs the `rustls` feature) with every bound at its default.
    pub fn new(url: impl Into<String>) -> HttpConfig {
        HttpConfig {
            url: url.into(),
            headers: Vec::new(),
            bearer_token: None,
            auth: None,
            connect_timeout: Duration::from_secs(10),
            response_timeout: Duration::from_secs(60),
            read_timeout: Some(Duration::from_secs(300)),
            write_timeout: Duration::from_secs(30),
            max_body_bytes: 16 * 1024 * 1024,
            max_event_bytes: 16 * 1024 * 1024,
            error_excerpt_bytes: 1024,
            error_body_bytes: 64 * 1024,
            max_concurrent_posts: 64,
            standalone_stream: true,
            standalone_stream_wait: Duration::from_secs(2),
            default_retry: Duration::from_secs(1),
            max_reconnects: 5,
            min_retry: Duration::from_millis(250),
            max_reconnects_per_minute: 30,
            session_expired_on_400: true,
            delete_on_close: true,
            close_timeout: Duration::from_secs(2),
            thread_join_grace: Duration::from_secs(1),
            worker_idle: Duration::from_secs(5),
            post_backstop: Duration::from_secs(1),
            endpoint_timeout: Duration::from_secs(10),
            root_certificates: None,
        }
    }

    /// The certificates (PEM, one or more `CERTIFICATE` blocks) an `https://` server's chain
    /// must lead to, instead of the built-in web roots: a private CA, or a server's own
    /// self-signed certificate (as `curl --cacert` does). Checked by
    /// [`HttpTransport::new`]: PEM without a certificate is a config error. Defaults to none
    /// (the webpki roots of the `rustls` feature).
    pub fn root_certificates_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificates = Some(Arc::new(pem.into()));
        self
    }

    /// The TLS settings of the agent: the built-in roots, or only
    /// [`HttpConfig::root_certificates_pem`].
    #[cfg(feature = "rustls")]
    pub(in crate::transport) fn tls_config(&self) -> Result<ureq::tls::TlsConfig> {
        use ureq::tls::{parse_pem, PemItem, RootCerts, TlsConfig};
        let Some(pem) = &self.root_certificates else {
            return Ok(TlsConfig::default());
        };
        let mut roots = Vec::new();
        for item in parse_pem(pem) {
            match item {
                Ok(PemItem::Certificate(cert)) => roots.push(cert.to_owned()),
                Ok(_) => {}
                Err(error) => {
                    return Err(Error::Config(format!(
                        "the root certificates are not PEM: {error}"
                    )))
                }
            }
        }
        if roots.is_empty() {
            return Err(Error::Config(
                "the root certificates hold no certificate (-----BEGIN CERTIFICATE-----)".into(),
            ));
        }
        Ok(TlsConfig::builder()
            .root_certs(RootCerts::new_with_certs(&roots))
            .build())
    }

    /// The endpoint, as given. It may hold a password: to show it, use
    /// [`crate::transport::mask_url`], as every message of this crate does.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The connect timeout in force.
    pub fn get_connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The names of the extra headers (their values may be secrets and are not shown).
    pub fn header_names(&self) -> impl Iterator<Item = &str> {
        self.headers.iter().map(|(name, _)| name.as_str())
    }

    /// Adds a header sent with every request (POST, GET, DELETE). Defaults to none.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request. Defaults to none.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Asks `auth` for the credentials of every request, and hands it every 401 and 403
    /// (see [`HttpAuth`]); a refused request is sent again when it says so, at most
    /// [`super::MAX_AUTH_RETRIES`] times. `toolwire::auth::OAuth` (feature `oauth`) is MCP
    /// authorization. Defaults to none: a 401 is [`Error::Http`].
    pub fn auth(mut self, auth: Arc<dyn HttpAuth>) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Whether an authorization provider is set.
    pub fn has_auth(&self) -> bool {
        self.auth.is_some()
    }

    /// The longest a TCP (and TLS) connect may take. Defaults to 10 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long the headers of a reply may take when the frame has no deadline of its own (a
    /// fire-and-forget notification, a session renewal, a GET). Requests use their call's
    /// deadline instead. Defaults to 60 s.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// The longest one read of a body may wait; a response stream silent for longer counts as
    /// dropped (and is resumed when it can be). `None` waits without limit, which only the
    /// call's deadline then bounds. Defaults to 5 minutes.
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// The longest one write may take. Defaults to 30 s.
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.write_timeout = timeout;
        self
    }

    /// The largest `application/json` reply accepted. Defaults to 16 MiB.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// The largest SSE event accepted; larger ones are skipped and reported, and the stream
    /// goes on. Defaults to 16 MiB.
    pub fn max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event_bytes = bytes;
        self
    }

    /// How much of an error body is kept in [`crate::error::HttpError::body_excerpt`].
    /// Defaults to 1 KiB.
    pub fn error_excerpt_bytes(mut self, bytes: usize) -> Self {
        self.error_excerpt_bytes = bytes;
        self
    }

    /// How much of an error body (or of a body that is ignored, so the connection can be
    /// reused) is read at all. Defaults to 64 KiB.
    pub fn error_body_bytes(mut self, bytes: usize) -> Self {
        self.error_body_bytes = bytes;
        self
    }

    /// The most POSTs in flight at once; one more waits for its deadline, then fails with
    /// [`Error::Busy`]. Defaults to 64.
    pub fn max_concurrent_posts(mut self, posts: usize) -> Self {
        self.max_concurrent_posts = posts;
        self
    }

    /// Open the GET stream for server-initiated messages once a session is open. Defaults to
    /// true.
    pub fn standalone_stream(mut self, open: bool) -> Self {
        self.standalone_stream = open;
        self
    }

    /// How long the notification that completes a session's opening waits for the GET
    /// stream's status, so the stream is there before the first request. Defaults to 2 s.
    pub fn standalone_stream_wait(mut self, wait: Duration) -> Self {
        self.standalone_stream_wait = wait;
        self
    }

    /// The reconnection delay when the server sent no `retry:`. Defaults to 1 s.
    pub fn default_retry(mut self, retry: Duration) -> Self {
        self.default_retry = retry;
        self
    }

    /// How many reconnections in a row may bring nothing new before a stream is given up.
    /// Defaults to 5.
    pub fn max_reconnects(mut self, reconnects: u32) -> Self {
        self.max_reconnects = reconnects;
        self
    }

    /// The shortest wait before reconnecting a stream, whatever `retry:` the server sent (a
    /// `retry: 0` would otherwise reconnect in a loop). Defaults to 250 ms.
    pub fn min_retry(mut self, floor: Duration) -> Self {
        self.min_retry = floor;
        self
    }

    /// The most reconnections of one stream within any minute, whatever each brings (fresh
    /// event ids count as progress, so they alone cannot stop a storm); past it the stream is
    /// given up with a warning. Defaults to 30.
    pub fn max_reconnects_per_minute(mut self, reconnects: u32) -> Self {
        self.max_reconnects_per_minute = reconnects;
        self
    }

    /// Treat a 400 whose body mentions a session, on a request that carried a session id, as
    /// an expired session (what server-everything sends), like 404. Defaults to true.
    pub fn session_expired_on_400(mut self, expired: bool) -> Self {
        self.session_expired_on_400 = expired;
        self
    }

    /// Send DELETE with the session id on close. Defaults to true.
    pub fn delete_on_close(mut self, delete: bool) -> Self {
        self.delete_on_close = delete;
        self
    }

    /// The bound on the DELETE at close. Defaults to 2 s.
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// How long `close()` waits for the transport's threads after aborting their exchanges;
    /// threads that have not ended by then are left behind with a warning. Defaults to 1 s.
    pub fn thread_join_grace(mut self, grace: Duration) -> Self {
        self.thread_join_grace = grace;
        self
    }

    /// How long an idle pooled thread waits for the next exchange before it ends. Defaults
    /// to 5 s.
    pub fn worker_idle(mut self, idle: Duration) -> Self {
        self.worker_idle = idle;
        self
    }

    /// How long past its call's deadline a request's POST still waits for the reply's
    /// headers. The call itself ends at its deadline and abandons the POST (closing it); this
    /// only frees the worker of a call nobody abandoned. Defaults to 1 s.
    pub fn post_backstop(mut self, backstop: Duration) -> Self {
        self.post_backstop = backstop;
        self
    }

    /// The legacy HTTP+SSE transport only ([`crate::transport::LegacySseTransport`]): how
    /// long the event stream may take to name the endpoint to POST to (its `endpoint`
    /// event); past it the connection fails. Defaults to 10 s.
    pub fn endpoint_timeout(mut self, timeout: Duration) -> Self {
        self.endpoint_timeout = timeout;
        self
    }

    /// A connector that makes a fresh transport (and so a fresh session) for every
    /// (re)connection.
    pub fn connector(self) -> Connector {
        Box::new(move || Ok(Arc::new(HttpTransport::new(self.clone())?) as Arc<dyn Transport>))
    }

    /// The URL as messages show it (see [`crate::transport::mask_url`]).
    pub(in crate::transport) fn display_url(&self) -> String {
        mask_url(&self.url)
    }

    /// The secrets to take out of foreign text: the URL's userinfo, the token, the header
    /// values.
    pub(in crate::transport) fn secrets(&self) -> Secrets {
        let mut credentials: Vec<String> = self
            .bearer_token
            .iter()
            .chain(self.headers.iter().map(|(_, value)| value))
            .cloned()
            .collect();
        // ureq sends a URL's userinfo as `Authorization: Basic base64(user:pass)`, which a
        // server may quote back.
        if let Some(userinfo) = userinfo(&self.url) {
            let pair = if userinfo.contains(':') {
                userinfo.to_owned()
            } else {
                format!("{userinfo}:")
            };
            credentials.push(format!("Basic {}", super::util::base64(pair.as_bytes())));
        }
        Secrets::new(&self.url, credentials.iter().map(String::as_str))
    }

    pub(in crate::transport) fn check(&self) -> Result<()> {
        let shown = self.display_url();
        let lower = self.url.to_ascii_lowercase();
        if lower.starts_with("https://") {
            if !cfg!(feature = "rustls") {
                return Err(Error::Config(format!(
                    "`{shown}` needs TLS: enable toolwire's `rustls` feature"
                )));
            }
        } else if !lower.starts_with("http://") {
            return Err(Error::Config(format!(
                "`{shown}` is not an http:// or https:// URL"
            )));
        }
        #[cfg(feature = "rustls")]
        self.tls_config()?;
        if self.url.parse::<ureq::http::Uri>().is_err() {
            return Err(Error::Config(format!("`{shown}` is not a valid URL")));
        }
        for (name, value) in &self.headers {
            if ureq::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(Error::Config(format!(
                    "`{name}` is not a valid header name"
                )));
            }
            if ureq::http::HeaderValue::from_str(value).is_err() {
                return Err(Error::Config(format!(
                    "the value of header `{name}` is not a valid header value"
                )));
            }
        }
        if let Some(token) = &self.bearer_token {
            if ureq::http::HeaderValue::from_str(&format!("Bearer {token}")).is_err() {
                return Err(Error::Config(
                    "the bearer token is not a valid header value".into(),
                ));
            }
        }
        Ok(())
    }
}
