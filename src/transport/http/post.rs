//! One POST and its reply: the headers it carries, its status, a JSON reply read whole, an
//! error status turned into the caller's error.

use std::io;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use ureq::http::Response;
use ureq::Body;

use super::auth::{AuthDecision, AuthRefusal, Credentials, MAX_AUTH_RETRIES};
use super::session::Stamp;
use super::{util, Exchange, Shared};
use crate::error::{Error, HttpError, Result};
use crate::transport::{FrameMeta, Lifecycle, Outgoing};
use crate::wire::{self, RequestId};

/// One outbound frame, as the HTTP layer needs it.
pub(super) struct Post {
    /// The serialized frame.
    pub(super) body: String,
    /// The JSON-RPC method, or "response" / "batch", for headers, errors and logs.
    pub(super) what: String,
    /// Requests in the frame that expect a response.
    pub(super) ids: Vec<RequestId>,
    pub(super) meta: FrameMeta,
    pub(super) deadline: Option<Instant>,
    pub(super) started: Instant,
}

impl Post {
    pub(super) fn read(message: Outgoing, deadline: Option<Instant>) -> Post {
        let mut post = Post::lent(&message, deadline);
        post.meta = message.meta;
        post
    }

    /// [`Post::read`] of a frame the sender keeps (its metadata copied).
    pub(super) fn lent(message: &Outgoing, deadline: Option<Instant>) -> Post {
        Post {
            body: message.to_line(),
            what: message.describe().to_owned(),
            ids: message.request_ids().cloned().collect(),
            deadline,
            started: Instant::now(),
            meta: FrameMeta::default(),
        }
    }

    /// The request that opens a session.
    pub(super) fn opens(&self) -> bool {
        self.meta.lifecycle == Lifecycle::Open
    }
}

/// Hands the outcome of a POST's status, once, to whoever waits for it: the sender (a
/// notification or response), or the calls of its requests.
pub(super) struct Reply {
    tx: Option<Sender<Result<()>>>,
    calls: Option<(Weak<Shared>, Vec<RequestId>)>,
    what: String,
}

impl Reply {
    pub(super) fn new(tx: Sender<Result<()>>, what: String) -> Reply {
        Reply {
            tx: Some(tx),
            calls: None,
            what,
        }
    }

    /// A reply whose failure ends the calls of `ids`, which nobody else waits for.
    pub(super) fn to_calls(shared: Weak<Shared>, ids: Vec<RequestId>, what: String) -> Reply {
        Reply {
            tx: None,
            calls: Some((shared, ids)),
            what,
        }
    }

    pub(super) fn send(&mut self, outcome: Result<()>) {
        if let Some((shared, ids)) = self.calls.take() {
            if let (Err(error), Some(shared)) = (outcome, shared.upgrade()) {
                log::debug!("toolwire: HTTP `{}` failed: {error}", self.what);
                shared.requests_failed(&ids, error);
            }
            return;
        }
        let Some(tx) = self.tx.take() else {
            if let Err(error) = outcome {
                log::debug!("toolwire: HTTP `{}`: {error}", self.what);
            }
            return;
        };
        if let Err(unsent) = tx.send(outcome) {
            if let Err(error) = unsent.into_inner() {
                // Nobody waits (a fire-and-forget notification, or the sender's deadline
                // passed): the failure can only be logged.
                log::debug!("toolwire: HTTP `{}` failed: {error}", self.what);
            }
        }
    }
}

pub(super) fn content_type_of(response: &Response<Body>) -> Option<String> {
    response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .map(util::media_type)
}

pub(super) fn is_event_stream(content_type: Option<&str>) -> bool {
    content_type == Some("text/event-stream")
}

impl Shared {
    /// The routing headers of a stateless frame: its method and, when it names one, its
    /// target.
    fn route_headers(post: &Post) -> Vec<(String, String)> {
        if !post.meta.stateless {
            return Vec::new();
        }
        let mut headers = vec![("Mcp-Method".to_owned(), util::header_value(&post.what))];
        if let Some(target) = &post.meta.target {
            headers.push(("Mcp-Name".into(), util::header_value(target)));
        }
        for (name, value) in &post.meta.param_headers {
            headers.push((format!("Mcp-Param-{name}"), util::param_value(value)));
        }
        headers
    }

    /// The headers every request carries: credentials, the configured extras, the session
    /// and the protocol version.
    pub(super) fn common<B>(
        &self,
        mut request: ureq::RequestBuilder<B>,
        stamp: &Stamp,
        credentials: &Credentials,
    ) -> ureq::RequestBuilder<B> {
        if let Some(token) = &self.config.bearer_token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        for (name, value) in &credentials.headers {
            request = request.header(*name, value.as_str());
        }
        for (name, value) in &self.config.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        if let Some(session) = &stamp.session_id {
            request = request.header("Mcp-Session-Id", session.as_str());
        }
        if let Some(version) = &stamp.protocol_version {
            request = request.header("MCP-Protocol-Version", &**version);
        }
        request
    }

    pub(super) fn post_request(
        &self,
        body: &str,
        extra: &[(String, String)],
        stamp: &Stamp,
        credentials: &Credentials,
        deadline: Option<Instant>,
    ) -> std::result::Result<Response<Body>, ureq::Error> {
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let wait = deadline.map_or(self.config.response_timeout, |deadline| {
            deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1))
        });
        let mut request = self
            .agent
            .post(&self.config.url)
            .config()
            .timeout_recv_response(Some(wait))
            .build()
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        request = self.common(request, stamp, credentials);
        for (name, value) in extra {
            request = request.header(name.as_str(), value.as_str());
        }
        request.send(body.as_bytes())
    }

    pub(super) fn net_error(
        &self,
        error: ureq::Error,
        verb: &str,
        what: &str,
        started: Instant,
    ) -> Error {
        if self.is_closed() {
            return self.closed_error();
        }
        let url = &self.display_url;
        // ureq's messages are not ours: one may quote the URL (`bad uri: …`).
        let scrubbed = |error: &dyn std::fmt::Display| self.scrub(&error.to_string());
        match error {
            ureq::Error::Timeout(_) => Error::Timeout {
                method: what.to_owned(),
                after: started.elapsed(),
            },
            ureq::Error::Io(error) => Error::Io(io::Error::new(
                error.kind(),
                format!("{verb} {url} for `{what}`: {}", scrubbed(&error)),
            )),
            other => Error::Io(io::Error::other(format!(
                "{verb} {url} for `{what}`: {}",
                scrubbed(&other)
            ))),
        }
    }

    pub(super) fn http_error(
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
            // A server may quote the credentials it refused.
            self.scrub(&util::excerpt(body, self.config.error_excerpt_bytes)),
        )))
    }

    /// Runs one POST on its worker thread (inside its slot) and tells the sender how its
    /// status went.
    pub(super) fn run_post(self: &Arc<Self>, post: Post, exchange: &Arc<Exchange>, reply: Reply) {
        let mut reply = reply;
        let mut renewed = false;
        let mut auth_retries = 0;
        loop {
            let stamp = self.stamp_for(&post);
            let credentials = match self.credentials("POST") {
                Ok(credentials) => credentials,
                Err(error) => return reply.send(Err(error)),
            };
            let extra = Shared::route_headers(&post);
            // A request's call keeps its own deadline (and tells the peer when it passes); the
            // POST's own wait is only a backstop past it, for a call nobody abandons.
            let wait_until = match post.deadline {
                Some(deadline) if !post.ids.is_empty() => {
                    Some(deadline + self.config.post_backstop)
                }
                other => other,
            };
            let response =
                match self.post_request(&post.body, &extra, &stamp, &credentials, wait_until) {
                    Ok(response) => response,
                    Err(error) => {
                        let error = if exchange.slot.is_aborted() && !self.is_closed() {
                            // Given up while waiting (the call's deadline passed and the client
                            // abandoned it): the broken socket is ours, the failure a timeout.
                            Error::Timeout {
                                method: post.what.clone(),
                                after: post.started.elapsed(),
                            }
                        } else {
                            self.net_error(error, "POST", &post.what, post.started)
                        };
                        return reply.send(Err(error));
                    }
                };
            let status = response.status().as_u16();
            let content_type = content_type_of(&response);
            let success = (200..300).contains(&status);
            if (status == 401 || status == 403)
                && self.config.auth.is_some()
                && auth_retries < MAX_AUTH_RETRIES
            {
                let refusal_headers = RefusalHeaders::of(&response);
                let body = util::read_prefix(
                    response.into_body().into_reader(),
                    self.config.error_body_bytes,
                );
                let sent = (credentials.generation, auth_retries);
                match self.auth_refused(status, refusal_headers, &post, sent, exchange) {
                    Ok(AuthDecision::Retry) => {
                        auth_retries += 1;
                        continue;
                    }
                    Ok(_) => return self.reject(&post, status, content_type, &body, &mut reply),
                    Err(error) => return reply.send(Err(error)),
                }
            }
            if success {
                self.note_nonce(&response);
            }
            if success && post.opens() {
                if let Err(error) = self.adopt_session(&response) {
                    return reply.send(Err(error));
                }
            }
            if !success {
                let body = util::read_prefix(
                    response.into_body().into_reader(),
                    self.config.error_body_bytes,
                );
                if !renewed && stamp.session_id.is_some() && self.session_expired(status, &body) {
                    log::info!(
                        "toolwire: {} answered `{}` with HTTP {status}: the session expired; starting a new one",
                        self.display_url,
                        post.what
                    );
                    match self.renew_session(stamp.generation) {
                        Ok(()) => {
                            renewed = true;
                            continue;
                        }
                        Err(error) => {
                            let reason = format!(
                                "the HTTP session with {} expired and a new one could not be started: {error}",
                                self.display_url
                            );
                            reply.send(Err(error));
                            self.fail(reason);
                            return;
                        }
                    }
                }
                return self.reject(&post, status, content_type, &body, &mut reply);
            }
            if post.ids.is_empty() {
                // A notification or a response: whatever body came is ignored.
                let _ = util::read_prefix(
                    response.into_body().into_reader(),
                    self.config.error_body_bytes,
                );
                if post.meta.lifecycle == Lifecycle::Opened {
                    self.open_standalone_stream(post.deadline);
                }
                return reply.send(Ok(()));
            }
            if status == 202 || status == 204 {
                log::debug!(
                    "toolwire: {} accepted `{}` with HTTP {status} and no body; its response can only come on the GET stream",
                    self.display_url,
                    post.what
                );
                return reply.send(Ok(()));
            }
            if is_event_stream(content_type.as_deref()) {
                reply.send(Ok(()));
                return self.stream_response(&post, exchange, response.into_body());
            }
            return self.json_response(&post, exchange, status, content_type, response, &mut reply);
        }
    }

    /// Hands a 401 or 403 to the config's [`super::HttpAuth`], on this worker thread.
    fn auth_refused(
        &self,
        status: u16,
        headers: RefusalHeaders,
        post: &Post,
        (sent, attempt): (u64, u32),
        exchange: &Exchange,
    ) -> Result<AuthDecision> {
        let Some(auth) = &self.config.auth else {
            return Ok(AuthDecision::Refuse);
        };
        let slot = std::sync::Arc::clone(&exchange.slot);
        let cancelled = move || slot.is_aborted();
        auth.refused(&AuthRefusal {
            status,
            www_authenticate: headers.www_authenticate,
            dpop_nonce: headers.dpop_nonce,
            url: &self.config.url,
            method: "POST",
            what: &post.what,
            target: post.meta.target.as_deref(),
            sent,
            attempt,
            deadline: post.deadline,
            cancelled: &cancelled,
        })
    }

    /// A `DPoP-Nonce` on a successful answer goes to the config's [`super::HttpAuth`].
    pub(super) fn note_nonce(&self, response: &Response<Body>) {
        if let (Some(auth), Some(nonce)) = (
            &self.config.auth,
            response
                .headers()
                .get("dpop-nonce")
                .and_then(|value| value.to_str().ok()),
        ) {
            auth.nonce(nonce);
        }
    }

    /// An error status: a JSON-RPC error for one of our requests goes to its caller as the
    /// peer's error; anything else is [`Error::Http`].
    fn reject(
        &self,
        post: &Post,
        status: u16,
        content_type: Option<String>,
        body: &[u8],
        reply: &mut Reply,
    ) {
        if !post.ids.is_empty() {
            let frame = wire::parse_incoming(body);
            if super::response_ids(&frame)
                .iter()
                .any(|id| post.ids.contains(id))
            {
                log::debug!(
                    "toolwire: HTTP {status} for `{}` carries a JSON-RPC response; handing it over",
                    post.what
                );
                self.deliver_parsed(frame, body);
                return reply.send(Ok(()));
            }
        }
        reply.send(Err(self.http_error(status, &post.what, content_type, body)));
    }

    fn json_response(
        &self,
        post: &Post,
        exchange: &Exchange,
        status: u16,
        content_type: Option<String>,
        response: Response<Body>,
        reply: &mut Reply,
    ) {
        let limit = self.config.max_body_bytes;
        let body = match util::read_limited(response.into_body().into_reader(), limit) {
            Ok(Some(body)) => body,
            Ok(None) => {
                return reply.send(Err(Error::Protocol(format!(
                    "the reply to `{}` is larger than {limit} bytes (HttpConfig::max_body_bytes)",
                    post.what
                ))))
            }
            Err(_) if exchange.slot.is_aborted() && !self.is_closed() => {
                return reply.send(Err(Error::Timeout {
                    method: post.what.clone(),
                    after: post.started.elapsed(),
                }))
            }
            Err(error) => {
                return reply.send(Err(Error::Io(io::Error::new(
                    error.kind(),
                    format!(
                        "reading the reply to `{}` from {}: {error}",
                        post.what, self.display_url
                    ),
                ))))
            }
        };
        if !body.iter().all(u8::is_ascii_whitespace) {
            self.deliver(&body);
        }
        if exchange.done() {
            return reply.send(Ok(()));
        }
        reply.send(Err(Error::Protocol(format!(
            "HTTP {status} ({}) for `{}` holds no response to it: {:?}",
            content_type.as_deref().unwrap_or("no content type"),
            post.what,
            self.scrub(&util::excerpt(&body, 200))
        ))));
    }
}

/// What a refusal's headers say to an authorization provider.
pub(super) struct RefusalHeaders {
    pub(super) www_authenticate: Vec<String>,
    pub(super) dpop_nonce: Option<String>,
}

impl RefusalHeaders {
    pub(super) fn of(response: &Response<Body>) -> RefusalHeaders {
        let headers = response.headers();
        RefusalHeaders {
            www_authenticate: headers
                .get_all("www-authenticate")
                .iter()
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
                .collect(),
            dpop_nonce: headers
                .get("dpop-nonce")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned),
        }
    }
}
