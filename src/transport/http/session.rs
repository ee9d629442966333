//! The session a Streamable HTTP connection keeps: its id, the protocol version its frames
//! declare, the opening frames to replay when the server drops it, and the DELETE at close.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Instant;

use ureq::http::Response;
use ureq::Body;

use super::conn::Slot;
use super::post::{content_type_of, is_event_stream, Post};
use super::{util, Shared};
use crate::error::{Error, Result};
use crate::transport::sse::{self, SseItem, SseParser};
use crate::transport::Lifecycle;
use crate::wire::{self, ErrorObject, Incoming, IncomingFrame, RequestId};

/// What the transport learned of the session.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) session_id: Option<String>,
    /// Bumped whenever a session starts, so concurrent expiries renew it once.
    pub(super) generation: u64,
    /// The protocol version the session's frames declared last.
    pub(super) protocol_version: Option<Arc<str>>,
    /// The last opening request seen, to replay when the session expires.
    opening: Option<(RequestId, String)>,
    /// The last notification that completed an opening.
    opened: Option<String>,
}

/// The session headers a request carries.
#[derive(Debug, Default, Clone)]
pub(super) struct Stamp {
    pub(super) session_id: Option<String>,
    pub(super) protocol_version: Option<Arc<str>>,
    pub(super) generation: u64,
}

/// The `Mcp-Session-Id` of a reply, which must be visible ASCII.
fn session_id_of(response: &Response<Body>) -> Result<Option<String>> {
    let Some(value) = response.headers().get("mcp-session-id") else {
        return Ok(None);
    };
    let bytes = value.as_bytes();
    if bytes.is_empty() || !bytes.iter().all(|byte| (0x21..=0x7e).contains(byte)) {
        return Err(Error::Protocol(format!(
            "the server's Mcp-Session-Id ({} bytes) is not visible ASCII, so it cannot be sent \
             back as it came",
            bytes.len()
        )));
    }
    Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
}

/// The outcome of the response to `id` when `bytes` holds it.
fn response_to(bytes: &[u8], id: &RequestId) -> Option<std::result::Result<(), ErrorObject>> {
    match wire::parse_incoming(bytes) {
        Ok(IncomingFrame::Single(Incoming::Response(response)))
            if response.id.as_ref() == Some(id) =>
        {
            Some(response.payload.map(drop))
        }
        _ => None,
    }
}

impl Shared {
    /// Remembers what a frame says about the session before it is posted.
    pub(super) fn note_lifecycle(&self, post: &Post) {
        let mut state = self.state.lock();
        match post.meta.lifecycle {
            Lifecycle::Open => {
                if let Some(id) = post.ids.first() {
                    state.opening = Some((id.clone(), post.body.clone()));
                }
            }
            Lifecycle::Opened => state.opened = Some(post.body.clone()),
            _ => {}
        }
        if !post.meta.stateless && !post.opens() {
            if let Some(version) = &post.meta.protocol_version {
                state.protocol_version = Some(Arc::clone(version));
            }
        }
    }

    /// The session headers for a POST: none on the opening request; stateless frames carry
    /// only their own version.
    pub(super) fn stamp_for(&self, post: &Post) -> Stamp {
        let state = self.state.lock();
        if post.meta.stateless || post.opens() {
            return Stamp {
                session_id: None,
                protocol_version: if post.meta.stateless {
                    post.meta.protocol_version.clone()
                } else {
                    None
                },
                generation: state.generation,
            };
        }
        Stamp {
            session_id: state.session_id.clone(),
            protocol_version: post
                .meta
                .protocol_version
                .clone()
                .or_else(|| state.protocol_version.clone()),
            generation: state.generation,
        }
    }

    pub(super) fn session_stamp(&self) -> Stamp {
        let state = self.state.lock();
        Stamp {
            session_id: state.session_id.clone(),
            protocol_version: state.protocol_version.clone(),
            generation: state.generation,
        }
    }

    /// Whether an error status on a request that carried a session id means the session is
    /// gone: 404 as the spec says, or a 400 that says so (server-everything).
    pub(super) fn session_expired(&self, status: u16, body: &[u8]) -> bool {
        status == 404
            || (status == 400
                && self.config.session_expired_on_400
                && String::from_utf8_lossy(body)
                    .to_ascii_lowercase()
                    .contains("session"))
    }

    /// Takes the session id of the opening request's reply.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] for a session id that is not visible ASCII (0x21 to 0x7E, as the
    /// specification requires), which could not be sent back as it came.
    pub(super) fn adopt_session(&self, response: &Response<Body>) -> Result<()> {
        let session = session_id_of(response)?;
        let mut state = self.state.lock();
        state.session_id = session;
        state.generation += 1;
        Ok(())
    }

    /// Starts a new session after the server dropped the one of `failed_generation`:
    /// replays the opening request and notification (their replies stay here). Concurrent
    /// callers renew once.
    pub(super) fn renew_session(&self, failed_generation: u64) -> Result<()> {
        let _renewing = self.renewing.lock();
        let (opening, opened) = {
            let state = self.state.lock();
            if state.generation != failed_generation {
                return Ok(());
            }
            (state.opening.clone(), state.opened.clone())
        };
        let Some((open_id, open_line)) = opening else {
            return Err(Error::Protocol(
                "the server ended the session, and no opening request was seen to start another"
                    .into(),
            ));
        };
        let what = "the opening request (new session)";
        let started = Instant::now();
        let response = self
            .post_request(
                &open_line,
                &[],
                &Stamp::default(),
                &self.credentials_or_none("POST"),
                None,
            )
            .map_err(|error| self.net_error(error, "POST", what, started))?;
        let status = response.status().as_u16();
        let content_type = content_type_of(&response);
        if !(200..300).contains(&status) {
            let body = util::read_prefix(
                response.into_body().into_reader(),
                self.config.error_body_bytes,
            );
            return Err(self.http_error(status, what, content_type, &body));
        }
        let session_id = session_id_of(&response)?;
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
                            *found = response_to(event.data.as_bytes(), &open_id);
                        }
                    }
                },
                &|| found.borrow().is_some(),
            );
            found.into_inner()
        } else {
            util::read_limited(reader, self.config.max_body_bytes)
                .ok()
                .flatten()
                .and_then(|body| response_to(&body, &open_id))
        };
        match outcome {
            Some(Ok(())) => {}
            Some(Err(error)) => return Err(Error::Rpc(Box::new(error))),
            None => {
                return Err(Error::Protocol(
                    "the repeated opening request got no response".into(),
                ))
            }
        }
        {
            let mut state = self.state.lock();
            state.session_id = session_id;
            state.generation += 1;
        }
        log::info!("toolwire: started a new session with {}", self.display_url);
        if let Some(line) = opened {
            let started = Instant::now();
            let what = "the opening notification (new session)";
            let response = self
                .post_request(
                    &line,
                    &[],
                    &self.session_stamp(),
                    &self.credentials_or_none("POST"),
                    None,
                )
                .map_err(|error| self.net_error(error, "POST", what, started))?;
            let status = response.status().as_u16();
            let content_type = content_type_of(&response);
            let body = util::read_prefix(
                response.into_body().into_reader(),
                self.config.error_body_bytes,
            );
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
        let stamp = self.session_stamp();
        if stamp.session_id.is_none() {
            return;
        }
        let request = self
            .agent
            .delete(&self.config.url)
            .config()
            .timeout_global(Some(self.config.close_timeout))
            .build();
        let request = self.common(request, &stamp, &self.credentials_or_none("DELETE"));
        match Slot::new().enter(|| request.call()) {
            Ok(response) => log::debug!(
                "toolwire: DELETE {} answered HTTP {}",
                self.display_url,
                response.status().as_u16()
            ),
            Err(error) => log::debug!(
                "toolwire: DELETE {} failed: {}",
                self.display_url,
                self.scrub(&error.to_string())
            ),
        }
    }
}
