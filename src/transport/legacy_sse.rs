//! The legacy HTTP+SSE transport of MCP 2024-11-05 (deprecated, still served by many
//! deployed servers and by every official SDK): one long GET event stream from the server,
//! and a POST per client message to the endpoint that stream names.
//!
//! # How it goes
//!
//! [`Transport::start`] opens the GET (`Accept: text/event-stream`) on the `toolwire-sse`
//! thread. The stream's first event is `endpoint`, whose data is the URL to POST to, usually
//! relative: it is resolved against the stream's URL, and an endpoint on another origin
//! (scheme, host, port) is refused (the connection fails), since a server must not send the
//! client's messages, and its credentials, elsewhere. Every server message (responses
//! included) then arrives as an `event: message`, parsed once and handed up.
//!
//! Frames go out in order from a bounded queue ([`HttpConfig::max_concurrent_posts`] frames),
//! each POSTed by the `toolwire-sse-post` thread to the endpoint (waiting for it at most
//! [`HttpConfig::endpoint_timeout`]); the server answers 202. A POST that fails (a refused
//! connection, an error status) fails the calls of its requests at once with the precise
//! error (the server's body excerpt, secrets taken out); a failed notification is logged.
//!
//! # Bounds and close
//!
//! The same as the Streamable HTTP transport's, from the same [`HttpConfig`]: connect,
//! write and per-read timeouts (a stream silent for longer than
//! [`HttpConfig::read_timeout`] counts as dropped; servers send comment pings), events over
//! [`HttpConfig::max_event_bytes`] skipped and reported while the stream goes on, POST
//! replies read at most [`HttpConfig::error_body_bytes`]. The session lives in the stream:
//! when it ends or breaks the connection is closed and every pending call fails at once
//! (there is no resumption in this transport). `close()` aborts the stream and a POST in
//! progress (their sockets are shut down), and waits for both threads at most
//! [`HttpConfig::thread_join_grace`]. URLs in messages are masked, and the connection's
//! credentials are taken out of what the server says.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Instant;

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::{Condvar, Mutex};
use ureq::http::Uri;

use super::http::conn::{AbortableConnector, Slot};
use super::http::{util, HttpConfig};
use super::sse::{self, SseItem, SseParser, StreamEnd};
use super::{Inbound, Outgoing, Transport, TransportEvent};
use crate::error::{Closed, Error, HttpError, Result};
use crate::sys::spawn_named;
use crate::wire::{self, RequestId};

/// A connection to a server speaking the 2024-11-05 HTTP+SSE transport. See the module
/// documentation.
pub struct LegacySseTransport {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LegacySseTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacySseTransport")
            .field("url", &self.shared.display_url)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone)]
enum Endpoint {
    Waiting,
    Ready(String),
    Failed(String),
}

struct Shared {
    config: HttpConfig,
    display_url: String,
    secrets: crate::mask::Scrubber,
    agent: ureq::Agent,
    inbound: Mutex<Option<Arc<dyn Inbound>>>,
    endpoint: Mutex<Endpoint>,
    endpoint_changed: Condvar,
    writer: Mutex<Option<Sender<Outgoing>>>,
    stream_slot: Arc<Slot>,
    post_slot: Arc<Slot>,
    /// Disconnected once both threads have ended (each holds a sender).
    threads_done: Receiver<()>,
    threads_done_tx: Mutex<Option<Sender<()>>>,
    thread_ids: Mutex<Vec<ThreadId>>,
    started: AtomicBool,
    closed: AtomicBool,
    close_reason: Mutex<Option<Closed>>,
    close_reported: AtomicBool,
    posts: AtomicU64,
}

impl LegacySseTransport {
    /// A transport for the config's URL (the server's SSE endpoint, e.g.
    /// `http://127.0.0.1:8000/sse`). Nothing is sent until [`Transport::start`].
    ///
    /// # Errors
    ///
    /// [`Error::Config`] as for [`crate::transport::HttpTransport::new`].
    pub fn new(config: HttpConfig) -> Result<LegacySseTransport> {
        config.check()?;
        let agent_config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(format!("toolwire/{}", env!("CARGO_PKG_VERSION")))
            .timeout_connect(Some(config.connect_timeout))
            .timeout_per_read(config.read_timeout)
            .timeout_per_write(Some(config.write_timeout));
        #[cfg(feature = "rustls")]
        let agent_config = agent_config.tls_config(config.tls_config()?);
        let agent_config = agent_config.build();
        let agent = ureq::Agent::with_parts(
            agent_config,
            AbortableConnector::default(),
            ureq::unversioned::resolver::DefaultResolver::default(),
        );
        let (done_tx, threads_done) = bounded(0);
        Ok(LegacySseTransport {
            shared: Arc::new(Shared {
                display_url: config.display_url(),
                secrets: crate::mask::Scrubber::new(config.secrets()),
                config,
                agent,
                inbound: Mutex::new(None),
                endpoint: Mutex::new(Endpoint::Waiting),
                endpoint_changed: Condvar::new(),
                writer: Mutex::new(None),
                stream_slot: Slot::new(),
                post_slot: Slot::new(),
                threads_done,
                threads_done_tx: Mutex::new(Some(done_tx)),
                thread_ids: Mutex::new(Vec::new()),
                started: AtomicBool::new(false),
                closed: AtomicBool::new(false),
                close_reason: Mutex::new(None),
                close_reported: AtomicBool::new(false),
                posts: AtomicU64::new(0),
            }),
        })
    }

    /// The endpoint the server named, once its `endpoint` event came.
    pub fn endpoint(&self) -> Option<String> {
        match &*self.shared.endpoint.lock() {
            Endpoint::Ready(url) => Some(url.clone()),
            _ => None,
        }
    }

    /// How many POSTs were made.
    pub fn posts_sent(&self) -> u64 {
        self.shared.posts.load(Ordering::Relaxed)
    }
}

impl HttpConfig {
    /// A connector for the legacy HTTP+SSE transport: a fresh event stream (so a fresh
    /// session) for every (re)connection.
    pub fn legacy_sse_connector(self) -> super::Connector {
        Box::new(move || Ok(Arc::new(LegacySseTransport::new(self.clone())?) as Arc<dyn Transport>))
    }
}

impl Transport for LegacySseTransport {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        let shared = &self.shared;
        if shared.started.swap(true, Ordering::SeqCst) {
            return Err(Error::Config(
                "the HTTP+SSE transport was already started".into(),
            ));
        }
        *shared.inbound.lock() = Some(inbound);
        let (tx, rx) = bounded(shared.config.max_concurrent_posts.max(1));
        *shared.writer.lock() = Some(tx);
        let done = shared.threads_done_tx.lock().take();
        let reader = {
            let shared = Arc::clone(shared);
            let done = done.clone();
            spawn_named("toolwire-sse", move || {
                let _done = done;
                shared.thread_ids.lock().push(std::thread::current().id());
                let slot = Arc::clone(&shared.stream_slot);
                slot.enter(|| shared.run_stream());
                slot.finish();
            })?
        };
        drop(reader);
        let writer = {
            let shared = Arc::clone(shared);
            spawn_named("toolwire-sse-post", move || {
                let _done = done;
                shared.thread_ids.lock().push(std::thread::current().id());
                let slot = Arc::clone(&shared.post_slot);
                slot.enter(|| shared.run_posts(&rx));
                slot.finish();
            })
        };
        if let Err(error) = writer {
            shared.fail("the POST thread could not be started".into());
            return Err(error);
        }
        Ok(())
    }

    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()> {
        let shared = &self.shared;
        if shared.closed.load(Ordering::SeqCst) {
            return Err(shared.closed_error());
        }
        let Some(tx) = shared.writer.lock().clone() else {
            return Err(Error::Config(
                "the HTTP+SSE transport was not started".into(),
            ));
        };
        let limit = shared.config.max_concurrent_posts;
        super::enqueue(&tx, message, deadline, limit, || shared.closed_error())
    }

    fn close(&self) -> Result<()> {
        self.shared.close("closed by the caller");
        Ok(())
    }

    fn describe(&self) -> String {
        self.shared.display_url.clone()
    }

    fn scrubber(&self) -> crate::mask::Scrubber {
        self.shared.secrets.clone()
    }
}

impl Drop for LegacySseTransport {
    fn drop(&mut self) {
        self.shared.close("the transport was dropped");
    }
}

impl Shared {
    fn closed_error(&self) -> Error {
        let closed = self
            .close_reason
            .lock()
            .clone()
            .unwrap_or_else(|| Closed::new("the HTTP+SSE transport is closed"));
        Error::Closed(Box::new(closed))
    }

    fn inbound(&self) -> Option<Arc<dyn Inbound>> {
        self.inbound.lock().clone()
    }

    fn set_endpoint(&self, endpoint: Endpoint) {
        *self.endpoint.lock() = endpoint;
        self.endpoint_changed.notify_all();
    }

    /// The connection cannot go on: every pending call fails at once with `reason`.
    fn fail(&self, reason: String) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        log::debug!("toolwire: {reason}");
        let closed = Closed::new(reason.clone());
        *self.close_reason.lock() = Some(closed.clone());
        self.set_endpoint(Endpoint::Failed(reason));
        self.stream_slot.abort();
        self.post_slot.abort();
        drop(self.writer.lock().take());
        self.report_closed(closed);
    }

    fn report_closed(&self, closed: Closed) {
        if self.close_reported.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(inbound) = self.inbound.lock().take() {
            inbound.closed(closed);
        }
    }

    fn close(&self, reason: &str) {
        self.fail(reason.to_owned());
        drop(self.threads_done_tx.lock().take());
        let ours = self
            .thread_ids
            .lock()
            .contains(&std::thread::current().id());
        if ours || !self.started.load(Ordering::SeqCst) {
            return;
        }
        let grace = self.config.thread_join_grace;
        if let Err(RecvTimeoutError::Timeout) = self.threads_done.recv_timeout(grace) {
            log::warn!(
                "toolwire: HTTP+SSE threads for {} did not end within {grace:?}; leaving them",
                self.display_url
            );
        }
    }

    /// The GET stream, on its own thread: the endpoint first, then the server's messages,
    /// until it ends (which ends the connection).
    fn run_stream(&self) {
        let started = Instant::now();
        let request = self
            .agent
            .get(&self.config.url)
            .config()
            .timeout_recv_response(Some(self.config.endpoint_timeout))
            .build()
            .header("Accept", "text/event-stream")
            .header("Cache-Control", "no-cache");
        let response = match self.credentials(request).call() {
            Ok(response) => response,
            Err(error) => {
                let error = self.net_error(&error, "GET", started);
                return self.fail(format!(
                    "the SSE stream of {} could not be opened: {error}",
                    self.display_url
                ));
            }
        };
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .map(util::media_type);
        if !(200..300).contains(&status) || content_type.as_deref() != Some("text/event-stream") {
            let body = util::read_prefix(
                response.into_body().into_reader(),
                self.config.error_body_bytes,
            );
            let error = self.http_error(status, "GET", content_type, &body);
            return self.fail(format!(
                "the SSE stream of {} was refused: {error}",
                self.display_url
            ));
        }
        let limit = self.config.max_event_bytes;
        let mut parser = SseParser::new(limit);
        let ended = sse::read_stream(
            response.into_body().into_reader(),
            &mut parser,
            &mut |item| match item {
                SseItem::Event(event) if event.event == "endpoint" => {
                    self.endpoint_event(&event.data)
                }
                SseItem::Event(event) if event.event == "message" => {
                    if !event.data.trim().is_empty() {
                        if let Some(inbound) = self.inbound() {
                            super::deliver(&*inbound, event.data.as_bytes());
                        }
                    }
                }
                SseItem::Event(event) => {
                    log::debug!("toolwire: skipped an SSE event of type `{}`", event.event);
                }
                SseItem::Oversized { bytes } => {
                    if let Some(inbound) = self.inbound() {
                        inbound.event(TransportEvent::Oversized { bytes, limit });
                    }
                }
            },
            &|| self.closed.load(Ordering::SeqCst),
        );
        let how = match ended {
            Ok(StreamEnd::Eof) => "ended".to_owned(),
            Ok(StreamEnd::Stopped) => return,
            Err(error) => format!("broke ({})", self.secrets.scrub(&error.to_string())),
        };
        self.fail(format!(
            "the SSE stream of {} {how}: the session is over",
            self.display_url
        ));
    }

    /// The `endpoint` event: resolved against the stream's URL, on the same origin only.
    fn endpoint_event(&self, data: &str) {
        if matches!(&*self.endpoint.lock(), Endpoint::Ready(_)) {
            log::debug!("toolwire: ignored a second `endpoint` event");
            return;
        }
        match resolve_endpoint(&self.config.url, data.trim()) {
            Ok(url) => {
                log::debug!(
                    "toolwire: the SSE stream of {} names the endpoint {}",
                    self.display_url,
                    crate::mask::mask_url(&url)
                );
                self.set_endpoint(Endpoint::Ready(url));
            }
            Err(problem) => self.fail(format!(
                "the SSE stream of {} named an endpoint that cannot be used: {problem}",
                self.display_url
            )),
        }
    }

    /// Waits for the endpoint, at most the endpoint timeout.
    fn wait_endpoint(&self) -> std::result::Result<String, String> {
        let deadline = Instant::now() + self.config.endpoint_timeout;
        let mut endpoint = self.endpoint.lock();
        loop {
            match &*endpoint {
                Endpoint::Ready(url) => return Ok(url.clone()),
                Endpoint::Failed(reason) => return Err(reason.clone()),
                Endpoint::Waiting => {}
            }
            if self
                .endpoint_changed
                .wait_until(&mut endpoint, deadline)
                .timed_out()
                && matches!(&*endpoint, Endpoint::Waiting)
            {
                return Err(format!(
                    "the SSE stream of {} named no endpoint within {:?} (HttpConfig::endpoint_timeout)",
                    self.display_url, self.config.endpoint_timeout
                ));
            }
        }
    }

    /// The POST thread: each queued frame, in order, to the endpoint.
    fn run_posts(&self, frames: &Receiver<Outgoing>) {
        while let Ok(frame) = frames.recv() {
            let endpoint = match self.wait_endpoint() {
                Ok(endpoint) => endpoint,
                Err(reason) => {
                    self.fail(reason);
                    return;
                }
            };
            self.post(&endpoint, frame);
        }
    }

    fn post(&self, endpoint: &str, frame: Outgoing) {
        let ids: Vec<RequestId> = frame.request_ids().cloned().collect();
        let what = frame.describe().to_owned();
        let body = frame.to_line();
        let started = Instant::now();
        self.posts.fetch_add(1, Ordering::Relaxed);
        let request = self
            .agent
            .post(endpoint)
            .config()
            .timeout_recv_response(Some(self.config.response_timeout))
            .build()
            .header("Content-Type", "application/json");
        let outcome = match self.credentials(request).send(body.as_bytes()) {
            Err(error) => Err(self.net_error(&error, &what, started)),
            Ok(response) => {
                let status = response.status().as_u16();
                let content_type = response
                    .headers()
                    .get("content-type")
                    .and_then(|value| value.to_str().ok())
                    .map(util::media_type);
                let body = util::read_prefix(
                    response.into_body().into_reader(),
                    self.config.error_body_bytes,
                );
                if (200..300).contains(&status) {
                    // The answer belongs on the stream; a server that answers in the body is
                    // taken at its word.
                    if content_type.as_deref() == Some("application/json")
                        && !body.iter().all(u8::is_ascii_whitespace)
                    {
                        let frame = wire::parse_incoming(&body);
                        if let Some(inbound) = self.inbound() {
                            inbound.frame(frame, &body);
                        }
                    }
                    Ok(())
                } else {
                    Err(self.http_error(status, &what, content_type, &body))
                }
            }
        };
        let Err(error) = outcome else { return };
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        match (ids.split_first(), self.inbound()) {
            (Some((first, rest)), Some(inbound)) => {
                for id in rest {
                    inbound.request_failed(id, Error::Protocol(error.to_string()));
                }
                inbound.request_failed(first, error);
            }
            _ => log::warn!(
                "toolwire: POST of `{what}` to {} failed: {error}",
                self.display_url
            ),
        }
    }

    fn credentials<B>(&self, mut request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        if let Some(token) = &self.config.bearer_token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        for (name, value) in &self.config.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        request
    }

    fn net_error(&self, error: &ureq::Error, what: &str, started: Instant) -> Error {
        if self.closed.load(Ordering::SeqCst) {
            return self.closed_error();
        }
        match error {
            ureq::Error::Timeout(_) => Error::Timeout {
                method: what.to_owned(),
                after: started.elapsed(),
            },
            other => Error::Io(std::io::Error::new(
                match other {
                    ureq::Error::Io(io) => io.kind(),
                    _ => std::io::ErrorKind::Other,
                },
                format!(
                    "{} for `{what}`: {}",
                    self.display_url,
                    self.secrets.scrub(&other.to_string())
                ),
            )),
        }
    }

    fn http_error(
        &self,
        status: u16,
        what: &str,
        content_type: Option<String>,
        body: &[u8],
    ) -> Error {
        Error::Http(Box::new(HttpError::new(
            status,
            what,
            self.display_url.clone(),
            content_type,
            self.secrets
                .scrub(&util::excerpt(body, self.config.error_excerpt_bytes)),
        )))
    }
}

/// The origin (`scheme://host:port`, lower case, the default port filled in) of a URL.
fn origin(uri: &Uri) -> Option<String> {
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let host = uri.host()?.to_ascii_lowercase();
    let port = uri.port_u16().or(match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    })?;
    Some(format!("{scheme}://{host}:{port}"))
}

/// Resolves the `endpoint` event's data against the stream's URL; refuses another origin.
fn resolve_endpoint(base: &str, data: &str) -> std::result::Result<String, String> {
    let base_uri: Uri = base
        .parse()
        .map_err(|_| "the stream's URL does not parse".to_owned())?;
    let base_origin = origin(&base_uri).ok_or("the stream's URL has no origin")?;
    if data.is_empty() {
        return Err("it is empty".into());
    }
    if data.chars().any(|c| c.is_control() || c == ' ') {
        return Err("it holds spaces or control characters".into());
    }
    let lower = data.to_ascii_lowercase();
    let absolute = if lower.starts_with("http://") || lower.starts_with("https://") {
        data.to_owned()
    } else if let Some(rest) = data.strip_prefix("//") {
        format!("{}://{rest}", base_uri.scheme_str().unwrap_or("http"))
    } else if data.starts_with('/') {
        let authority = base_uri.authority().map(|a| a.as_str()).unwrap_or("");
        format!(
            "{}://{authority}{data}",
            base_uri.scheme_str().unwrap_or("http")
        )
    } else {
        // Relative to the stream's path: its last segment is replaced.
        let path = base_uri.path();
        let directory = &path[..path.rfind('/').map_or(0, |slash| slash + 1)];
        let authority = base_uri.authority().map(|a| a.as_str()).unwrap_or("");
        format!(
            "{}://{authority}{}{data}",
            base_uri.scheme_str().unwrap_or("http"),
            if directory.is_empty() { "/" } else { directory }
        )
    };
    let uri: Uri = absolute
        .parse()
        .map_err(|_| format!("{:?} is not a URL", crate::mask::mask_url(&absolute)))?;
    let endpoint_origin = origin(&uri).ok_or("it has no origin")?;
    if endpoint_origin != base_origin {
        return Err(format!(
            "{} is on another origin than the stream ({base_origin}); refused",
            crate::mask::mask_url(&absolute)
        ));
    }
    Ok(absolute)
}

#[cfg(test)]
mod tests {
    use super::resolve_endpoint;

    #[test]
    fn endpoints_resolve_against_the_stream_and_stay_on_its_origin() {
        let base = "http://127.0.0.1:8000/sse";
        assert_eq!(
            resolve_endpoint(base, "/messages/?session_id=ab").unwrap(),
            "http://127.0.0.1:8000/messages/?session_id=ab"
        );
        assert_eq!(
            resolve_endpoint(base, "message?sessionId=1").unwrap(),
            "http://127.0.0.1:8000/message?sessionId=1"
        );
        assert_eq!(
            resolve_endpoint("http://h/a/b/sse", "post").unwrap(),
            "http://h/a/b/post"
        );
        assert_eq!(
            resolve_endpoint(base, "http://127.0.0.1:8000/m").unwrap(),
            "http://127.0.0.1:8000/m"
        );
        assert!(resolve_endpoint("http://h/sse", "http://h:80/m").is_ok());
        for bad in [
            "http://evil.example/m",
            "//evil.example/m",
            "http://127.0.0.1:9/m",
            "https://127.0.0.1:8000/m",
            "",
            "a b",
        ] {
            assert!(resolve_endpoint(base, bad).is_err(), "{bad} was accepted");
        }
    }
}
