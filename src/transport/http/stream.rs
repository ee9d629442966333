//! Event streams: a POST's response stream read to its response and resumed when it breaks,
//! and the optional GET stream for server-initiated messages.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Sender};
use ureq::Body;

use super::conn::Slot;
use super::post::{content_type_of, is_event_stream, Post};
use super::{util, Exchange, Shared};
use crate::error::{Error, Result};
use crate::transport::sse::{self, SseItem, SseParser, StreamEnd};
use crate::transport::TransportEvent;
use crate::wire::RequestId;

/// The reconnections of one stream in the last minute, for
/// [`super::HttpConfig::max_reconnects_per_minute`].
struct Reconnects {
    times: VecDeque<Instant>,
    cap: u32,
}

impl Reconnects {
    fn new(cap: u32) -> Reconnects {
        Reconnects {
            times: VecDeque::new(),
            cap,
        }
    }

    /// Records a reconnection; false when it would be one too many within a minute.
    fn allow(&mut self) -> bool {
        let now = Instant::now();
        while self
            .times
            .front()
            .is_some_and(|at| now.duration_since(*at) >= Duration::from_secs(60))
        {
            self.times.pop_front();
        }
        if self.times.len() >= self.cap as usize {
            return false;
        }
        self.times.push_back(now);
        true
    }
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

impl Shared {
    /// Reads events, handing messages to the client, until the stream ends or `exchange`
    /// has all its responses.
    fn pump(
        &self,
        reader: impl Read,
        parser: &mut SseParser,
        exchange: Option<&Exchange>,
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
                        self.deliver(event.data.as_bytes());
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
    pub(super) fn stream_response(&self, post: &Post, exchange: &Exchange, body: Body) {
        let slot = &exchange.slot;
        let mut parser = SseParser::new(self.config.max_event_bytes);
        let mut pumped = self.pump(body.into_reader(), &mut parser, Some(exchange));
        let mut quiet = 0u32;
        let mut reconnects = Reconnects::new(self.config.max_reconnects_per_minute);
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
            if !reconnects.allow() {
                self.fail_exchange(
                    exchange,
                    format!(
                        "gave up resuming the response stream: {} reconnections within a minute",
                        self.config.max_reconnects_per_minute
                    ),
                );
                return;
            }
            let wait = self.retry_wait(&parser);
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
                    pumped = self.pump(body.into_reader(), &mut next, Some(exchange));
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

    /// The wait before reconnecting: the server's `retry:` (or the default), never below the
    /// floor.
    fn retry_wait(&self, parser: &SseParser) -> Duration {
        parser
            .retry()
            .unwrap_or(self.config.default_retry)
            .max(self.config.min_retry)
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
        let stamp = self.session_stamp();
        let started = Instant::now();
        let mut request = self
            .agent
            .get(&self.config.url)
            .config()
            .timeout_recv_response(Some(self.config.response_timeout))
            .build()
            .header("Accept", "text/event-stream");
        request = self.common(request, &stamp, &self.credentials_or_none("GET"));
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
                let body = util::read_prefix(
                    response.into_body().into_reader(),
                    self.config.error_body_bytes,
                );
                Err(self.http_error(status, what, content_type, &body))
            }
        }
    }

    /// Starts the GET stream for server-initiated messages, once, and waits a little for its
    /// status so it is open before the first request.
    pub(super) fn open_standalone_stream(self: &Arc<Self>, deadline: Option<Instant>) {
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
        if let Err(error) = self.spawn(&slot, move || {
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
        let mut reconnects = Reconnects::new(self.config.max_reconnects_per_minute);
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
                    let pumped = self.pump(body.into_reader(), &mut current, None);
                    let progressed =
                        pumped.delivered > 0 || current.last_event_id() != last_id.as_deref();
                    quiet = if progressed { 0 } else { quiet + 1 };
                    let wait = self.retry_wait(&current);
                    parser = Some(current);
                    if !reconnects.allow() {
                        log::warn!(
                            "toolwire: the GET stream of {} reconnected {} times within a minute; not reopening it",
                            self.display_url,
                            self.config.max_reconnects_per_minute
                        );
                        return;
                    }
                    if quiet > self.config.max_reconnects {
                        log::debug!(
                            "toolwire: the GET stream of {} keeps ending without messages; not reopening it",
                            self.display_url
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
                        self.display_url
                    );
                    return;
                }
                Err(error) => {
                    signal(false);
                    quiet += 1;
                    if !reconnects.allow() {
                        log::warn!(
                            "toolwire: giving up the GET stream of {}: {error}",
                            self.display_url
                        );
                        return;
                    }
                    if quiet > self.config.max_reconnects {
                        log::warn!(
                            "toolwire: giving up the GET stream of {}: {error}",
                            self.display_url
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
}
