//! Frames coming in: responses complete their calls, progress reaches the waiting caller,
//! the peer's requests and notifications go to the dispatch thread, and frames that break
//! the protocol are answered or dropped as the architecture decides.

use std::collections::HashSet;
use std::sync::{Arc, Weak};
use std::time::Instant;

use serde_json::Value;

use super::{bump, CallEvent, Inner, PeerRequests, Progress};
use crate::error::{Closed, Error};
use crate::transport::{FrameMeta, Inbound, OutFrame, Outgoing, TransportEvent};
use crate::wire::{
    ErrorObject, Incoming, IncomingFrame, Invalid, Message, RawResponse, RequestId, Response,
};

/// The transport's view of the client. Weak, so transport threads never keep it alive.
pub(super) struct Link(pub(super) Weak<Inner>);

impl Inbound for Link {
    fn frame(&self, frame: Result<IncomingFrame, Invalid>, bytes: &[u8]) {
        if let Some(inner) = self.0.upgrade() {
            inner.on_frame(frame, bytes);
        }
    }

    fn event(&self, event: TransportEvent) {
        let Some(inner) = self.0.upgrade() else {
            return;
        };
        match event {
            TransportEvent::Oversized { bytes, limit } => {
                bump(&inner.counters.oversized_frames);
                log::warn!("toolwire: discarded a frame of {bytes} bytes (limit {limit})");
            }
            TransportEvent::OversizedResponse {
                id,
                bytes,
                limit,
                setting,
            } => inner.fail_oversized(&id, bytes, limit, setting),
            TransportEvent::Note(note) => log::debug!("toolwire: {note}"),
            TransportEvent::RequestFailed { id, reason } => {
                let error = std::io::Error::new(std::io::ErrorKind::ConnectionAborted, reason);
                inner.fail_request(&id, Error::Io(error));
            }
        }
    }

    fn request_failed(&self, id: &RequestId, error: Error) {
        if let Some(inner) = self.0.upgrade() {
            inner.fail_request(id, error);
        }
    }

    fn closed(&self, closed: Closed) {
        if let Some(inner) = self.0.upgrade() {
            log::debug!("toolwire: {closed}");
            inner.mark_closed(closed);
        }
    }
}

impl Inner {
    fn on_frame(&self, frame: Result<IncomingFrame, Invalid>, bytes: &[u8]) {
        bump(&self.counters.received);
        match frame {
            Ok(IncomingFrame::Single(message)) => self.on_message(message),
            Ok(IncomingFrame::Batch(elements)) => self.on_batch(elements, bytes),
            Err(invalid) => self.on_invalid(invalid, bytes),
        }
    }

    fn on_invalid(&self, invalid: Invalid, bytes: &[u8]) {
        bump(&self.counters.skipped_lines);
        if !invalid.method_present {
            if let Some(id) = &invalid.id {
                // A malformed response to one of our requests (or text that is not JSON but
                // shows whose response it was): its caller learns why at once.
                self.fail_malformed(id, &invalid);
                return;
            }
        }
        match self.owed_answer(&invalid) {
            Some(response) => {
                log::debug!(
                    "toolwire: invalid request from the peer: {}",
                    self.scrubber.scrub(&invalid.error.to_string())
                );
                self.reply(response);
            }
            None => {
                let excerpt = self
                    .scrubber
                    .scrub(&String::from_utf8_lossy(&bytes[..bytes.len().min(200)]));
                log::debug!(
                    "toolwire: skipped an invalid message ({}): {excerpt:?}",
                    self.scrubber.scrub(&invalid.error.to_string())
                );
            }
        }
    }

    /// The answer owed to a message that could not be read: a request (or notification) gone
    /// wrong is answered, with its id when it can be read and `null` otherwise, whatever the
    /// fault (not JSON, too deep, an unreadable id); text that is no message at all only by a
    /// server (its requests go to a sink), as JSON-RPC 2.0 shows: a client skips it, since a
    /// server that writes stray lines gains nothing from a storm of errors.
    fn owed_answer(&self, invalid: &Invalid) -> Option<Response> {
        if invalid.method_present || self.config.request_sink.is_some() {
            invalid.answer()
        } else {
            None
        }
    }

    /// A batch: its responses complete their calls, and a batch of ours whose reply leaves a
    /// request out fails that request at once; its requests are answered together in one
    /// array (JSON-RPC 2.0 §6), the error responses of its invalid elements included; its
    /// notifications go their usual way.
    fn on_batch(&self, elements: Vec<Result<Incoming, Invalid>>, bytes: &[u8]) {
        let mut requests = Vec::new();
        let mut errors = Vec::new();
        let mut answered: HashSet<RequestId> = HashSet::new();
        let mut groups: Vec<Arc<[RequestId]>> = Vec::new();
        {
            let pending = self.pending.lock();
            for element in &elements {
                if let Ok(Incoming::Response(RawResponse { id: Some(id), .. })) = element {
                    answered.insert(id.clone());
                    if let Some(group) = pending.get(id).and_then(|entry| entry.batch()) {
                        if !groups.iter().any(|known| Arc::ptr_eq(known, group)) {
                            groups.push(Arc::clone(group));
                        }
                    }
                }
            }
        }
        for element in elements {
            match element {
                Ok(Incoming::Request(request)) => requests.push(request),
                Ok(message) => self.on_message(message),
                Err(invalid) => match self.owed_answer(&invalid) {
                    // Answered in the batch's reply, with its id or `null` (JSON-RPC 2.0 §6).
                    Some(response) => {
                        bump(&self.counters.skipped_lines);
                        log::debug!(
                            "toolwire: invalid request in a batch from the peer: {}",
                            self.scrubber.scrub(&invalid.error.to_string())
                        );
                        errors.push(response);
                    }
                    None => self.on_invalid(invalid, bytes),
                },
            }
        }
        for group in groups {
            for id in group.iter().filter(|id| !answered.contains(*id)) {
                self.fail_request(
                    id,
                    Error::Protocol(
                        "the peer's reply to the batch has no response to this request".into(),
                    ),
                );
            }
        }
        if !requests.is_empty() || !errors.is_empty() {
            match &self.config.request_sink {
                Some(sink) => sink(PeerRequests::Batch(requests, errors)),
                None => self.dispatch.batch(requests, errors, self),
            }
        }
    }

    fn fail_malformed(&self, id: &RequestId, invalid: &Invalid) {
        // What is wrong may quote the peer's text.
        let why = self.scrubber.scrub(&invalid.error.to_string());
        match self.take_pending(id) {
            Some(pending) => {
                log::warn!(
                    "toolwire: malformed response to `{}` (id {id}): {why}",
                    pending.method,
                );
                pending
                    .sink
                    .send(CallEvent::Done(Err(Error::Protocol(format!(
                        "malformed response to `{}`: {why}",
                        pending.method
                    )))));
            }
            None => log::debug!("toolwire: skipped a malformed message: {why}"),
        }
    }

    /// A response too long to read, whose id was found while it was skipped: its caller
    /// learns why at once instead of at its deadline.
    fn fail_oversized(&self, id: &RequestId, bytes: u64, limit: usize, setting: &str) {
        let Some(pending) = self.take_pending(id) else {
            log::debug!("toolwire: the discarded frame answered no pending request (id {id})");
            return;
        };
        let message = format!(
            "the response to `{}` (id {id}) was {} bytes, over the {}-byte frame limit \
             ({setting}); it was discarded",
            pending.method,
            grouped(bytes),
            grouped(limit as u64),
        );
        log::warn!("toolwire: {message}");
        pending
            .sink
            .send(CallEvent::Done(Err(Error::Protocol(message))));
    }

    /// The peer's error object with the connection's secrets taken out of its message and
    /// data: the one place every error a peer sends passes, before any caller, log,
    /// transcript or front client sees it.
    fn scrubbed(&self, mut error: ErrorObject) -> ErrorObject {
        error.message = self.scrubber.scrub(&error.message);
        if let Some(data) = &mut error.data {
            self.scrubber.scrub_value(data);
        }
        error
    }

    fn on_message(&self, message: Incoming) {
        match message {
            Incoming::Response(response) => self.on_response(response),
            Incoming::Request(request) => match &self.config.request_sink {
                Some(sink) => sink(PeerRequests::One(request)),
                None => self.dispatch.request(request, self),
            },
            Incoming::Notification(notification) => {
                if let Some((token, mut progress)) =
                    self.config.dialect.read_progress(&notification)
                {
                    // Its message is shown (the CLI's progress line, a log).
                    progress.message = progress.message.map(|text| self.scrubber.scrub(&text));
                    self.on_progress(&token, progress);
                    return;
                }
                if let Some(tap) = &self.config.notification_tap {
                    tap(&notification);
                }
                self.dispatch.notification(notification);
            }
        }
    }

    fn on_response(&self, response: RawResponse) {
        let Some(id) = response.id else {
            bump(&self.counters.late_responses);
            match response.payload {
                Err(error) => log::warn!(
                    "toolwire: the peer reported an error without an id: {}",
                    self.scrubbed(error)
                ),
                Ok(_) => log::debug!("toolwire: dropped a result without an id"),
            }
            return;
        };
        match self.take_pending(&id) {
            Some(pending) => {
                let outcome = match response.payload {
                    Err(error) => Err(Error::Rpc(Box::new(self.scrubbed(error)))),
                    // The caller reads the text itself (a large result taken apart item by
                    // item): it never becomes a tree of values here.
                    Ok(text) if pending.raw => {
                        Ok(Value::String(String::from(Box::<str>::from(text))))
                    }
                    Ok(text) => serde_json::from_str(text.get()).map_err(|error| {
                        // serde's message may quote the text.
                        Error::Protocol(format!(
                            "the result of `{}` cannot be read: {}",
                            pending.method,
                            self.scrubber.scrub(&error.to_string())
                        ))
                    }),
                };
                pending.sink.send(CallEvent::Done(outcome));
            }
            None => {
                bump(&self.counters.late_responses);
                log::debug!("toolwire: dropped a response for unknown or completed id {id}");
            }
        }
    }

    /// Routes a progress report to its caller; progress for a token that is not, or no
    /// longer, in flight is dropped quietly, as protocols allow.
    fn on_progress(&self, token: &RequestId, progress: Progress) {
        let pending = self.pending.lock();
        let Some(entry) = pending.get(token) else {
            // Progress after completion or cancel: ignored.
            log::trace!("toolwire: progress for a finished request {token} ignored");
            return;
        };
        if !entry.forward_progress {
            return;
        }
        if let (Some((timeout, hard)), Some(key)) = (entry.reset(), entry.timer) {
            let deadline = (Instant::now() + timeout).min(hard);
            self.timer.reset(key, deadline);
        }
        entry.sink.send(CallEvent::Progress(progress));
    }

    /// Sends the responses to one batch of the peer's, as one array.
    pub(super) fn reply_batch(&self, responses: Vec<Response>) {
        if responses.is_empty() {
            return;
        }
        let deadline = Instant::now() + self.config.request_timeout;
        let outgoing = Outgoing {
            frame: OutFrame::Batch(responses.into_iter().map(Message::Response).collect()),
            meta: FrameMeta::default(),
        };
        if let Err(error) = self.send(outgoing, Some(deadline)) {
            log::debug!("toolwire: could not send a batch response: {error}");
        }
    }

    /// Sends a response to one of the peer's requests.
    pub(super) fn reply(&self, response: Response) {
        let deadline = Instant::now() + self.config.request_timeout;
        if let Err(error) = self.send(Outgoing::message(response), Some(deadline)) {
            log::debug!("toolwire: could not send a response: {error}");
        }
    }
}

/// `17000000` as `17,000,000`.
fn grouped(number: u64) -> String {
    let digits = number.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}
