//! The HTTP exchanges themselves: a POST and its reply, response streams and their
//! resumption, the GET stream, session renewal, the DELETE at close.

use std::cell::RefCell;
use std::io::{self, Read};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Sender};
use ureq::http::Response;
use ureq::Body;

use super::conn::Slot;
use super::{frames, Exchange, Post, Reply, Shared};
use crate::error::{Error, HttpError, Result};
use crate::transport::sse::{self, SseItem, SseParser, StreamEnd};
use crate::transport::TransportEvent;
use crate::wire::RequestId;

/// How much of an error body is read (to find a JSON-RPC error in it and for the excerpt).
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// How much of an ignored body is read so the connection can be reused.
const IGNORED_BODY_LIMIT: usize = 64 * 1024;

/// The session headers a request carries.
#[derive(Debug, Default, Clone)]
pub(super) struct Stamp {
    session_id: Option<String>,
    protocol_version: Option<String>,
    generation: u64,
}

/// How a response stream ended, and whether it brought anything.
struct Pumped {
    delivered: usize,
    ended: String,
}

enum GetAnswer {
    Stream(Body),
    NotOffered(u16),
}

fn content_type_of(response: &Response<Body>) -> Option<String> {
    response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .map(frames::media_type)
}

fn is_event_stream(content_type: Option<&str>) -> bool {
    content_type == Some("text/event-stream")
}

impl Shared {
    /// The session headers for a POST: none on `initialize` and on 2026-07-28 requests.
    fn stamp_for(&self, post: &Post) -> Stamp {
        let state = self.state.lock();
        if post.modern_version.is_some() || post.init_id.is_some() {
            return Stamp {
                generation: state.generation,
                ..Stamp::default()
            };
        }
        Stamp {
            session_id: state.session_id.clone(),
            protocol_version: state.protocol_version.clone(),
            generation: state.generation,
        }
    }

    fn legacy_stamp(&self) -> Stamp {
        let state = self.state.lock();
        Stamp {
            session_id: state.session_id.clone(),
            protocol_version: state.protocol_version.clone(),
            generation: state.generation,
        }
    }

    /// The 2026-07-28 headers of a request stamped with that version.
    fn modern_headers(post: &Post) -> Vec<(&'static str, String)> {
        let Some(version) = &post.modern_version else {
            return Vec::new();
        };
        let mut headers = vec![
            ("MCP-Protocol-Version", version.clone()),
            ("Mcp-Method", frames::header_value(&post.what)),
        ];
        if let Some(name) = &post.name {
            headers.push(("Mcp-Name", frames::header_value(name)));
        }
        headers
    }

    fn common<B>(
        &self,
        mut request: ureq::RequestBuilder<B>,
        stamp: &Stamp,
    ) -> ureq::RequestBuilder<B> {
        if let Some(token) = &self.config.bearer_token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        for (name, value) in &self.config.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        if let Some(session) = &stamp.session_id {
            request = request.header("Mcp-Session-Id", session.as_str());
        }
        if let Some(version) = &stamp.protocol_version {
            request = request.header("MCP-Protocol-Version", version.as_str());
        }
        request
    }

    fn post_request(
        &self,
        body: &str,
        extra: &[(&'static str, String)],
        stamp: &Stamp,
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
        request = self.common(request, stamp);
        for (name, value) in extra {
            request = request.header(*name, value.as_str());
        }
        request.send(body.as_bytes())
    }

    fn net_error(&self, error: ureq::Error, verb: &str, what: &str, started: Instant) -> Error {
        if self.is_closed() {
            return self.closed_error();
        }
        let url = &self.config.url;
        match error {
            ureq::Error::Timeout(_) => Error::Timeout {
                method: what.to_owned(),
                after: started.elapsed(),
            },
            ureq::Error::Io(error) => Error::Io(io::Error::new(
                error.kind(),
                format!("{verb} {url} for `{what}`: {error}"),
            )),
            other => Error::Io(io::Error::other(format!(
                "{verb} {url} for `{what}`: {other}"
            ))),
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
            self.config.url.clone(),
            content_type,
            frames::excerpt(body, self.config.error_excerpt_bytes),
        )))
    }

    /// Whether an error status on a request that carried a session id means the session is
    /// gone: 404 as the spec says, or a 400 that says so (server-everything).
    fn session_expired(&self, status: u16, body: &[u8]) -> bool {
        status == 404
            || (status == 400
                && self.config.session_expired_on_400
                && String::from_utf8_lossy(body)
                    .to_ascii_lowercase()
                    .contains("session"))
    }

    /// Takes the session id of an `initialize` reply.
    fn adopt_session(&self, response: &Response<Body>) {
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let mut state = self.state.lock();
        state.session_id = session;
        state.generation += 1;
        state.protocol_version = None;
    }

    /// Runs one POST on its worker thread (inside its slot) and tells the sender how its
    /// status went.
    pub(super) fn run_post(self: &Arc<Self>, post: Post, exchange: &Arc<Exchange>, reply: Reply) {
        let mut reply = reply;
        let mut renewed = false;
        loop {
            let stamp = self.stamp_for(&post);
            let extra = Shared::modern_headers(&post);
            let response = match self.post_request(&post.body, &extra, &stamp, post.deadline) {
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
            if success && post.init_id.is_some() {
                self.adopt_session(&response);
            }
            if !success {
                let body =
                    frames::read_prefix(response.into_body().into_reader(), ERROR_BODY_LIMIT);
                if !renewed && stamp.session_id.is_some() && self.session_expired(status, &body) {
                    log::info!(
                        "toolwire: {} answered `{}` with HTTP {status}: the session expired; starting a new one",
                        self.config.url,
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
                                self.config.url
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
                let _ = frames::read_prefix(response.into_body().into_reader(), IGNORED_BODY_LIMIT);
                if post.is_initialized {
                    self.open_standalone_stream(post.deadline);
                }
                return reply.send(Ok(()));
            }
            if status == 202 || status == 204 {
                log::debug!(
                    "toolwire: {} accepted `{}` with HTTP {status} and no body; its response can only come on the GET stream",
                    self.config.url,
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
        if !post.ids.is_empty()
            && frames::response_ids(body)
                .iter()
                .any(|id| post.ids.contains(id))
        {
            log::debug!(
                "toolwire: HTTP {status} for `{}` carries a JSON-RPC response; handing it over",
                post.what
            );
            self.deliver(body, post.init_id.as_ref());
            return reply.send(Ok(()));
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
        let body = match frames::read_limited(response.into_body().into_reader(), limit) {
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
                        post.what, self.config.url
                    ),
                ))))
            }
        };
        if !body.iter().all(u8::is_ascii_whitespace) {
            self.deliver(&body, post.init_id.as_ref());
        }
        if exchange.done() {
            return reply.send(Ok(()));
        }
        reply.send(Err(Error::Protocol(format!(
            "HTTP {status} ({}) for `{}` holds no response to it: {:?}",
            content_type.as_deref().unwrap_or("no content type"),
            post.what,
            frames::excerpt(&body, 200)
        ))));
    }

    /// Reads events, handing messages to the client, until the stream ends or `exchange`
    /// has all its responses.
    fn pump(
        &self,
        reader: impl Read,
        parser: &mut SseParser,
        exchange: Option<&Exchange>,
        init_id: Option<&RequestId>,
    ) -> Pumped {
        let limit = self.config.max_event_bytes;
        let mut delivered = 0usize;
        let result = sse::read_stream(
            reader,
            parser,
            &mut |item| match item {
                SseItem::Event(event) => {
                    if event.event != "message" {
                        log::debug!("toolwire: skipped an SSE event of type `{}`", event.event);
                    } else if !event.data.trim().is_empty() {
                        delivered += 1;
                        self.deliver(event.data.as_bytes(), init_id);
                    }
                }
                SseItem::Oversized { bytes } => {
                    delivered += 1;
                    self.event(TransportEvent::Oversized { bytes, limit });
                }
            },
            &|| self.is_closed() || exchange.is_some_and(Exchange::done),
        );
        let ended = match result {
            Ok(StreamEnd::Eof) => "ended".to_owned(),
            Ok(StreamEnd::Stopped) => "was left after its last response".to_owned(),
            Err(error) => format!("broke ({error})"),
        };
        Pumped { delivered, ended }
    }

    /// Follows a POST's event stream to the response, resuming it by GET with
    /// `Last-Event-ID` when it ends early and the server gave event ids.
    fn stream_response(&self, post: &Post, exchange: &Exchange, body: Body) {
        let slot = &exchange.slot;
        let mut parser = SseParser::new(self.config.max_event_bytes);
        let mut pumped = self.pump(
            body.into_reader(),
            &mut parser,
            Some(exchange),
            post.init_id.as_ref(),
        );
        let mut quiet = 0u32;
        loop {
            if exchange.done() || slot.is_aborted() || self.is_closed() {
                return;
            }
            let Some(last_id) = parser.last_event_id().map(str::to_owned) else {
                self.fail_exchange(
                    exchange,
                    format!(
                        "the response stream {} before the response, with no event id to resume from",
                        pumped.ended
                    ),
                );
                return;
            };
            if quiet > self.config.max_reconnects {
                self.fail_exchange(
                    exchange,
                    format!("gave up resuming the response stream after {quiet} reconnections that brought nothing"),
                );
                return;
            }
            let wait = parser.retry().unwrap_or(self.config.default_retry);
            log::debug!(
                "toolwire: the response stream of `{}` {}; resuming from event `{last_id}` in {wait:?}",
                post.what,
                pumped.ended
            );
            if !slot.sleep(wait) {
                return;
            }
            match self.open_get(Some(&last_id), &post.what) {
                Ok(GetAnswer::Stream(body)) => {
                    let mut next = parser.resumed();
                    pumped = self.pump(
                        body.into_reader(),
                        &mut next,
                        Some(exchange),
                        post.init_id.as_ref(),
                    );
                    let progressed =
                        pumped.delivered > 0 || next.last_event_id() != Some(last_id.as_str());
                    quiet = if progressed { 0 } else { quiet + 1 };
                    parser = next;
                }
                Ok(GetAnswer::NotOffered(status)) => {
                    self.fail_exchange(
                        exchange,
                        format!("the response stream broke and cannot be resumed: GET answered HTTP {status}"),
                    );
                    return;
                }
                Err(error) => {
                    quiet += 1;
                    pumped.ended = format!("could not be resumed ({error})");
                }
            }
        }
    }

    /// Fails every request of an exchange whose responses can no longer arrive.
    fn fail_exchange(&self, exchange: &Exchange, reason: String) {
        let ids: Vec<RequestId> = exchange.pending.lock().drain().collect();
        for id in ids {
            log::warn!("toolwire: request {id}: {reason}");
            self.event(TransportEvent::RequestFailed {
                id,
                reason: reason.clone(),
            });
        }
    }

    /// GET for an event stream: a resumption (with `Last-Event-ID`) or the standalone one.
    fn open_get(&self, last_event_id: Option<&str>, what: &str) -> Result<GetAnswer> {
        let stamp = self.legacy_stamp();
        let started = Instant::now();
        let mut request = self
            .agent
            .get(&self.config.url)
            .config()
            .timeout_recv_response(Some(self.config.response_timeout))
            .build()
            .header("Accept", "text/event-stream");
        request = self.common(request, &stamp);
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        let response = request
            .call()
            .map_err(|error| self.net_error(error, "GET", what, started))?;
        let status = response.status().as_u16();
        let content_type = content_type_of(&response);
        match status {
            200..=299 if is_event_stream(content_type.as_deref()) => {
                Ok(GetAnswer::Stream(response.into_body()))
            }
            200..=299 => Err(Error::Protocol(format!(
                "GET for `{what}` answered {} instead of an event stream",
                content_type.as_deref().unwrap_or("no content type")
            ))),
            400 | 404 | 405 => Ok(GetAnswer::NotOffered(status)),
            _ => {
                let body =
                    frames::read_prefix(response.into_body().into_reader(), ERROR_BODY_LIMIT);
                Err(self.http_error(status, what, content_type, &body))
            }
        }
    }

    /// Starts the GET stream for server-initiated messages, once, and waits a little for its
    /// status so it is open before the first request.
    fn open_standalone_stream(self: &Arc<Self>, deadline: Option<Instant>) {
        if !self.config.standalone_stream
            || self.is_closed()
            || self
                .standalone_started
                .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let slot = Slot::new();
        let (tx, rx) = bounded(1);
        let shared = Arc::clone(self);
        let thread_slot = Arc::clone(&slot);
        if let Err(error) = self.spawn("toolwire-http-get", &slot, move || {
            shared.run_standalone(&thread_slot, tx);
        }) {
            log::warn!("toolwire: could not start the GET stream thread: {error}");
            return;
        }
        let mut until = Instant::now() + self.config.standalone_stream_wait;
        if let Some(deadline) = deadline {
            until = until.min(deadline);
        }
        let _ = rx.recv_deadline(until);
    }

    fn run_standalone(&self, slot: &Slot, started: Sender<bool>) {
        let mut started = Some(started);
        let mut signal = |open: bool| {
            if let Some(tx) = started.take() {
                let _ = tx.send(open);
            }
        };
        let mut parser: Option<SseParser> = None;
        let mut quiet = 0u32;
        loop {
            if slot.is_aborted() || self.is_closed() {
                return;
            }
            let generation = self.state.lock().generation;
            let last_id = parser
                .as_ref()
                .and_then(SseParser::last_event_id)
                .map(str::to_owned);
            match self.open_get(last_id.as_deref(), "GET stream") {
                Ok(GetAnswer::Stream(body)) => {
                    signal(true);
                    let mut current = parser.take().map_or_else(
                        || SseParser::new(self.config.max_event_bytes),
                        |p| p.resumed(),
                    );
                    let pumped = self.pump(body.into_reader(), &mut current, None, None);
                    let progressed =
                        pumped.delivered > 0 || current.last_event_id() != last_id.as_deref();
                    quiet = if progressed { 0 } else { quiet + 1 };
                    let wait = current.retry().unwrap_or(self.config.default_retry);
                    parser = Some(current);
                    if quiet > self.config.max_reconnects {
                        log::debug!(
                            "toolwire: the GET stream of {} keeps ending without messages; not reopening it",
                            self.config.url
                        );
                        return;
                    }
                    log::debug!(
                        "toolwire: the GET stream {}; reopening in {wait:?}",
                        pumped.ended
                    );
                    if !slot.sleep(wait) {
                        return;
                    }
                }
                Ok(GetAnswer::NotOffered(status)) => {
                    if self.state.lock().generation != generation {
                        // The session was renewed meanwhile: try the new one.
                        continue;
                    }
                    signal(false);
                    log::debug!(
                        "toolwire: {} offers no GET stream (HTTP {status})",
                        self.config.url
                    );
                    return;
                }
                Err(error) => {
                    signal(false);
                    quiet += 1;
                    if quiet > self.config.max_reconnects {
                        log::warn!(
                            "toolwire: giving up the GET stream of {}: {error}",
                            self.config.url
                        );
                        return;
                    }
                    log::debug!("toolwire: the GET stream failed ({error}); retrying");
                    if !slot.sleep(self.config.default_retry * quiet) {
                        return;
                    }
                }
            }
        }
    }

    /// Starts a new session after the server dropped the one of `failed_generation`:
    /// replays `initialize` and `notifications/initialized` (their replies stay here).
    /// Concurrent callers renew once.
    fn renew_session(&self, failed_generation: u64) -> Result<()> {
        let _renewing = self.renewing.lock();
        let (initialize, initialized) = {
            let state = self.state.lock();
            if state.generation != failed_generation {
                return Ok(());
            }
            (state.initialize.clone(), state.initialized.clone())
        };
        let Some((init_id, init_line)) = initialize else {
            return Err(Error::Protocol(
                "the server ended the session, and no `initialize` was seen to start another"
                    .into(),
            ));
        };
        let what = "initialize (new session)";
        let started = Instant::now();
        let response = self
            .post_request(&init_line, &[], &Stamp::default(), None)
            .map_err(|error| self.net_error(error, "POST", what, started))?;
        let status = response.status().as_u16();
        let content_type = content_type_of(&response);
        if !(200..300).contains(&status) {
            let body = frames::read_prefix(response.into_body().into_reader(), ERROR_BODY_LIMIT);
            return Err(self.http_error(status, what, content_type, &body));
        }
        let session_id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let reader = response.into_body().into_reader();
        let outcome = if is_event_stream(content_type.as_deref()) {
            let found = RefCell::new(None);
            let mut parser = SseParser::new(self.config.max_event_bytes);
            let _ = sse::read_stream(
                reader,
                &mut parser,
                &mut |item| {
                    if let SseItem::Event(event) = item {
                        let mut found = found.borrow_mut();
                        if found.is_none() {
                            *found = frames::initialize_outcome(event.data.as_bytes(), &init_id);
                        }
                    }
                },
                &|| found.borrow().is_some(),
            );
            found.into_inner()
        } else {
            frames::read_limited(reader, self.config.max_body_bytes)
                .ok()
                .flatten()
                .and_then(|body| frames::initialize_outcome(&body, &init_id))
        };
        let version = match outcome {
            Some(Ok(version)) => version,
            Some(Err(error)) => return Err(Error::Rpc(Box::new(error))),
            None => {
                return Err(Error::Protocol(
                    "the repeated `initialize` got no response".into(),
                ))
            }
        };
        {
            let mut state = self.state.lock();
            state.session_id = session_id;
            state.generation += 1;
            state.protocol_version = version;
        }
        log::info!("toolwire: started a new session with {}", self.config.url);
        if let Some(line) = initialized {
            let started = Instant::now();
            let what = "notifications/initialized (new session)";
            let response = self
                .post_request(&line, &[], &self.legacy_stamp(), None)
                .map_err(|error| self.net_error(error, "POST", what, started))?;
            let status = response.status().as_u16();
            let content_type = content_type_of(&response);
            let body = frames::read_prefix(response.into_body().into_reader(), ERROR_BODY_LIMIT);
            if !(200..300).contains(&status) {
                return Err(self.http_error(status, what, content_type, &body));
            }
        }
        Ok(())
    }

    /// Ends the session with DELETE (405 and other refusals are fine), bounded by
    /// [`super::HttpConfig::close_timeout`].
    pub(super) fn delete_session(&self) {
        if !self.config.delete_on_close {
            return;
        }
        let stamp = self.legacy_stamp();
        if stamp.session_id.is_none() {
            return;
        }
        let request = self
            .agent
            .delete(&self.config.url)
            .config()
            .timeout_global(Some(self.config.close_timeout))
            .build();
        let request = self.common(request, &stamp);
        match Slot::new().enter(|| request.call()) {
            Ok(response) => log::debug!(
                "toolwire: DELETE {} answered HTTP {}",
                self.config.url,
                response.status().as_u16()
            ),
            Err(error) => log::debug!("toolwire: DELETE {} failed: {error}", self.config.url),
        }
    }
}
