//! One HTTP request at the MCP endpoint: a POST goes to a session (handshake era) or is one
//! stateless exchange (2026-07-28), as its headers, its session and its `_meta` say; a GET
//! opens or resumes a session's stream; a DELETE ends a session.

use std::io;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::bounded;

use super::request::Head;
use super::response::{self, chunk, event, stream_head, write_full, LAST_CHUNK};
use super::session::{self, Session, SessionTransport, SharedTransport};
use super::socket::Socket;
use super::stream::{self, Ended, StreamItem, StreamLink, StreamMode};
use super::HttpInner;
use crate::mcp::{methods, HANDSHAKE_VERSIONS};
use crate::server::auth::{Caller, Refusal};
use crate::server::conn::{Connection, Envelope, EraPolicy};
use crate::server::serve;
use crate::server::stateless::has_protocol_meta;
use crate::wire::{self, ErrorCode, Incoming, IncomingFrame};

/// How many events may wait for a slow client on a GET stream (a session's standalone stream,
/// or a resumed one) before the handler waits.
const STREAM_QUEUE: usize = 256;

/// The same for a POST's own stream, which carries one request's notifications and answer.
/// Smaller than a GET stream's: the queue's room is allocated at once, and a POST stream is
/// opened for every call (256 slots were 16 KiB to allocate and touch per call, about 7% of
/// the HTTP server's CPU).
const POST_STREAM_QUEUE: usize = 32;

/// What the client accepts: `(json, event-stream)`. No `Accept` header accepts both.
fn accepts(head: &Head) -> (bool, bool) {
    let Some(accept) = head.header("accept") else {
        return (true, true);
    };
    let mut json = false;
    let mut sse = false;
    for item in accept.split(',') {
        let media = item
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match media.as_str() {
            "application/json" => json = true,
            "text/event-stream" => sse = true,
            "*/*" => {
                json = true;
                sse = true;
            }
            "application/*" => json = true,
            "text/*" => sse = true,
            _ => {}
        }
    }
    (json, sse)
}

fn refuse(stream: &mut Socket, status: u16, code: i32, message: &str) -> io::Result<bool> {
    let body = response::error_body(code, message);
    write_full(stream, status, Some("application/json"), &[], &body, true)?;
    Ok(true)
}

/// An error answer to a request whose id is known.
fn answer_error(
    stream: &mut Socket,
    status: u16,
    id: Option<&wire::RequestId>,
    code: ErrorCode,
    message: &str,
) -> io::Result<bool> {
    let response = wire::Response::error(id.cloned(), wire::ErrorObject::new(code, message));
    let body = wire::to_line(&wire::Message::Response(response));
    write_full(
        stream,
        status,
        Some("application/json"),
        &[],
        body.as_bytes(),
        true,
    )?;
    Ok(true)
}

/// A body that cannot be taken (not JSON, too deep, `[]`, not a message, an id that cannot be
/// read): 400 with the JSON-RPC error owed, its id when it could be read and `null` otherwise
/// (and `null` for a response gone wrong, which JSON-RPC never answers but HTTP must refuse).
fn refuse_invalid(
    stream: &mut Socket,
    headers: &[(&str, String)],
    invalid: &wire::Invalid,
) -> io::Result<bool> {
    let response = invalid.answer().unwrap_or_else(|| {
        wire::Response::error(
            None,
            wire::ErrorObject::new(invalid.error.code(), invalid.error.to_string()),
        )
    });
    let body = wire::to_line(&wire::Message::Response(response));
    write_full(
        stream,
        400,
        Some("application/json"),
        headers,
        body.as_bytes(),
        true,
    )?;
    Ok(true)
}

/// The ids of a frame's requests whose answers carry them: its requests, and the elements of
/// a batch that are requests gone wrong with an id that can be read. Each once: a batch that
/// repeats an id gets one answer routed by it.
fn answered_ids(frame: &IncomingFrame) -> Vec<wire::RequestId> {
    let mut ids: Vec<wire::RequestId> = Vec::new();
    let mut add = |id: &wire::RequestId| {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    };
    match frame {
        IncomingFrame::Single(Incoming::Request(request)) => add(&request.id),
        IncomingFrame::Batch(elements) => {
            for element in elements {
                match element {
                    Ok(Incoming::Request(request)) => add(&request.id),
                    Err(invalid) if invalid.method_present => {
                        if let Some(id) = &invalid.id {
                            add(id);
                        }
                    }
                    _ => {}
                }
            }
        }
        IncomingFrame::Single(_) => {}
    }
    ids
}

fn is_handshake_version(inner: &HttpInner, version: &str) -> bool {
    HANDSHAKE_VERSIONS.contains(&version)
        || inner
            .server
            .config()
            .handshake_versions
            .iter()
            .any(|known| known == version)
}

/// A POST. Returns whether the connection may serve another request.
pub(crate) fn post(
    inner: &Arc<HttpInner>,
    head: &Head,
    body: &[u8],
    stream: &mut Socket,
    caller: Option<Arc<Caller>>,
) -> io::Result<bool> {
    let content_type = head.header("content-type").unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim();
    if !media.eq_ignore_ascii_case("application/json") {
        return refuse(stream, 415, -32600, "the body must be application/json");
    }
    let (json, sse) = accepts(head);
    if !json && !sse {
        return refuse(
            stream,
            406,
            -32600,
            "the client must accept application/json or text/event-stream",
        );
    }
    let frame = wire::parse_incoming(body);
    if let Ok(IncomingFrame::Single(Incoming::Request(request))) = &frame {
        if let Some(refusal) = needs_scopes(inner, request, caller.as_deref()) {
            let challenge = [("WWW-Authenticate", refusal.challenge)];
            let body = &refusal.body;
            write_full(
                stream,
                refusal.status,
                Some("application/json"),
                &challenge,
                body,
                true,
            )?;
            return Ok(true);
        }
    }
    let protocol = head.header("mcp-protocol-version");
    if inner.config.sessions {
        if let Some(id) = head.header("mcp-session-id") {
            let found = inner.session(id, caller.as_deref());
            return match found {
                Some(session) => {
                    session_post(inner, &session, head, frame, body, stream, (json, sse))
                }
                None => refuse(stream, 404, -32600, "Session not found"),
            };
        }
    }
    let request = match frame {
        Ok(IncomingFrame::Single(Incoming::Request(request))) => request,
        Ok(IncomingFrame::Single(_)) => {
            // A notification or a response outside a session: nothing to answer.
            write_full(stream, 202, None, &[], b"", true)?;
            return Ok(true);
        }
        Ok(IncomingFrame::Batch(_)) => {
            return answer_error(
                stream,
                400,
                None,
                ErrorCode::INVALID_REQUEST,
                "a batch needs a session; the stateless protocol has none",
            )
        }
        Err(invalid) => return refuse_invalid(stream, &[], &invalid),
    };
    let stateless = !inner.config.sessions
        || has_protocol_meta(&request.params)
        || protocol.is_some_and(|version| !is_handshake_version(inner, version));
    if stateless {
        return stateless_post(inner, head, request, stream, (json, sse), caller);
    }
    if request.method != methods::INITIALIZE {
        return answer_error(
            stream,
            400,
            Some(&request.id),
            ErrorCode::INVALID_REQUEST,
            "Bad Request: the Mcp-Session-Id header is required (send initialize first)",
        );
    }
    let session = match open_session(inner, Some(stream.client), caller) {
        Ok(session) => session,
        Err((status, message)) => return refuse(stream, status, -32603, &message),
    };
    let frame = Ok(IncomingFrame::Single(Incoming::Request(request)));
    session_post(inner, &session, head, frame, body, stream, (json, sse))
}

/// A `tools/call` of a tool that needs scopes the caller's token lacks
/// ([`crate::server::ToolAccess::NeedsScopes`]) is answered 403 with the step-up challenge
/// naming them, before it is routed; `None` for every other request.
fn needs_scopes(
    inner: &HttpInner,
    request: &wire::Request,
    caller: Option<&Caller>,
) -> Option<Refusal> {
    let authorization = inner.config.authorization.as_ref()?;
    if request.method != methods::TOOLS_CALL {
        return None;
    }
    let name = request.params.as_ref()?.get("name")?.as_str()?;
    let access = inner.server.shared().catalog.read().access(name, caller);
    let crate::server::ToolAccess::NeedsScopes(scopes) = access else {
        return None;
    };
    log::info!(target: crate::server::LOG_TARGET, "refused a call of {name:?}: the token lacks scope(s) of {scopes:?}");
    Some(authorization.insufficient_scope(&scopes))
}

/// Opens a session for a client at `peer` (its [`crate::server::RequestContext::peer_address`]
/// for every request of the session).
fn open_session(
    inner: &Arc<HttpInner>,
    peer: Option<std::net::SocketAddr>,
    caller: Option<Arc<Caller>>,
) -> Result<Arc<Session>, (u16, String)> {
    inner.sweep_sessions();
    if inner.sessions.lock().len() >= inner.config.max_sessions {
        return Err((
            503,
            format!(
                "the server has {} sessions open, its limit; try again later",
                inner.config.max_sessions
            ),
        ));
    }
    let id = session::new_session_id(inner.config.instance_id.as_deref())
        .ok_or_else(|| (500, "no random source for a session id".to_owned()))?;
    let transport = Arc::new(SessionTransport::new(
        inner.config.replay_events,
        inner.config.replay_bytes,
    ));
    let connection = serve::connect(
        inner.server.shared(),
        Arc::new(SharedTransport(Arc::clone(&transport))),
        EraPolicy::Handshake,
        peer,
        caller.clone(),
    )
    .map_err(|error| (500, error.to_string()))?;
    connection.set_session_id(&id);
    let session = Arc::new(Session {
        id: id.clone(),
        transport,
        connection,
        last_seen: parking_lot::Mutex::new(Instant::now()),
        caller,
    });
    inner.sessions.lock().insert(id, Arc::clone(&session));
    Ok(session)
}

/// Whether a session's streams start with a priming event (2025-11-25 on).
fn resumable(session: &Session) -> bool {
    session
        .connection
        .negotiated_version()
        .is_some_and(|version| version.as_str() >= "2025-11-25")
}

fn session_post(
    inner: &Arc<HttpInner>,
    session: &Arc<Session>,
    head: &Head,
    frame: std::result::Result<IncomingFrame, wire::Invalid>,
    body: &[u8],
    stream: &mut Socket,
    (json, sse): (bool, bool),
) -> io::Result<bool> {
    *session.last_seen.lock() = Instant::now();
    if let Some(version) = head.header("mcp-protocol-version") {
        if !is_handshake_version(inner, version) {
            return refuse(
                stream,
                400,
                -32600,
                &format!("unsupported MCP-Protocol-Version {version:?}"),
            );
        }
    }
    let headers = [("Mcp-Session-Id", session.id.clone())];
    let frame = match frame {
        Ok(frame) => frame,
        Err(invalid) => {
            // Refused as outside a session; a response gone wrong still reaches the session,
            // so the request of the server's it answers fails at once.
            if invalid.answer().is_none() {
                session.transport.deliver(Err(invalid.clone()), body);
            }
            return refuse_invalid(stream, &headers, &invalid);
        }
    };
    let ids = answered_ids(&frame);
    if ids.is_empty() {
        return session_post_unanswerable(session, frame, body, stream, &headers);
    }
    let (tx, rx) = bounded(POST_STREAM_QUEUE);
    let stream_id = session.transport.open_stream(&ids, tx);
    session.transport.deliver(Ok(frame), body);
    let priming = resumable(session).then(|| format!("{stream_id}-0"));
    // Nobody can resume a stream answered as JSON: its events leave the replay buffer before
    // the answer goes, not when newer ones push them out (each idle session would keep up to
    // `replay_buffer`'s bytes of answers already delivered).
    let forget = || session.transport.forget(stream_id);
    let mode = StreamMode {
        json: json && inner.config.json_first,
        sse,
        priming,
        headers: &headers,
        standalone: false,
        opened: false,
        as_json: Some(&forget),
    };
    match stream::serve(inner, stream, &rx, mode)? {
        Ended::Answered => Ok(true),
        Ended::Closed => Ok(false),
        Ended::Gone => {
            // The handshake era keeps going: the events wait for a resumption.
            session.transport.detach(stream_id);
            Ok(false)
        }
    }
}

/// A session's POST with no answer a stream could carry by its id: notifications and
/// responses are delivered (202), and a batch's elements owed an answer with a `null` id
/// (`[1, 2]`, a request whose id cannot be read) are answered here, in one array with 400,
/// since no id of theirs could route the session's answer to this POST.
fn session_post_unanswerable(
    session: &Arc<Session>,
    frame: IncomingFrame,
    body: &[u8],
    stream: &mut Socket,
    headers: &[(&str, String)],
) -> io::Result<bool> {
    let IncomingFrame::Batch(elements) = frame else {
        session.transport.deliver(Ok(frame), body);
        write_full(stream, 202, None, headers, b"", true)?;
        return Ok(true);
    };
    let mut answers = Vec::new();
    let mut rest = Vec::new();
    for element in elements {
        match element {
            Err(invalid) => match invalid.answer() {
                Some(answer) => answers.push(wire::Message::Response(answer)),
                None => rest.push(Err(invalid)),
            },
            accepted => rest.push(accepted),
        }
    }
    if !rest.is_empty() {
        session
            .transport
            .deliver(Ok(IncomingFrame::Batch(rest)), body);
    }
    if answers.is_empty() {
        write_full(stream, 202, None, headers, b"", true)?;
    } else {
        let body = wire::batch_to_line(&answers);
        write_full(
            stream,
            400,
            Some("application/json"),
            headers,
            body.as_bytes(),
            true,
        )?;
    }
    Ok(true)
}

fn stateless_post(
    inner: &Arc<HttpInner>,
    head: &Head,
    request: wire::Request,
    stream: &mut Socket,
    (json, sse): (bool, bool),
    caller: Option<Arc<Caller>>,
) -> io::Result<bool> {
    let envelope = Envelope {
        http: true,
        protocol_header: head.header("mcp-protocol-version").map(str::to_owned),
        method_header: head.header("mcp-method").map(str::to_owned),
        name_header: head.header("mcp-name").map(str::to_owned),
        param_headers: head
            .headers
            .iter()
            .filter_map(|(name, value)| {
                let name = name.strip_prefix("mcp-param-")?;
                Some((name.to_owned(), value.clone()))
            })
            .collect(),
    };
    let (tx, rx) = bounded(POST_STREAM_QUEUE);
    let link = Arc::new(StreamLink { tx });
    let connection = Connection::new(
        Arc::clone(inner.server.shared()),
        link,
        EraPolicy::Stateless,
        Some(stream.client),
        caller,
    );
    let id = request.id.clone();
    connection.handle(request, &envelope);
    let mode = StreamMode {
        json: json && inner.config.json_first,
        sse,
        priming: None,
        headers: &[],
        standalone: false,
        opened: false,
        as_json: None,
    };
    let ended = stream::serve(inner, stream, &rx, mode);
    match ended {
        Ok(Ended::Answered) => Ok(true),
        Ok(Ended::Closed) => {
            connection.cancel(&id, Some("the server closed the response stream"));
            Ok(false)
        }
        Ok(Ended::Gone) | Err(_) => {
            // On this protocol closing the response stream is the cancellation.
            connection.cancel(&id, Some("the client closed the response stream"));
            ended.map(|_| false)
        }
    }
}

/// A GET: the session's standalone stream, or a resumption of one of its streams.
pub(crate) fn get(
    inner: &Arc<HttpInner>,
    head: &Head,
    stream: &mut Socket,
    caller: Option<&Caller>,
) -> io::Result<bool> {
    let session_id = head
        .header("mcp-session-id")
        .filter(|_| inner.config.sessions);
    let Some(session_id) = session_id else {
        let allow = [("Allow", "POST".to_owned())];
        let body = response::error_body(-32600, "GET needs a session; this endpoint takes POST");
        write_full(stream, 405, Some("application/json"), &allow, &body, true)?;
        return Ok(true);
    };
    let (_, sse) = accepts(head);
    if !sse {
        return refuse(stream, 406, -32600, "a GET stream is text/event-stream");
    }
    let Some(session) = inner.session(session_id, caller) else {
        return refuse(stream, 404, -32600, "Session not found");
    };
    *session.last_seen.lock() = Instant::now();
    let headers = [("Mcp-Session-Id", session.id.clone())];
    let (tx, rx) = bounded(STREAM_QUEUE);
    if let Some(last) = head.header("last-event-id") {
        let Some((stream_id, seq)) = session::parse_event_id(last) else {
            return refuse(
                stream,
                400,
                -32600,
                "a Last-Event-ID this server did not send",
            );
        };
        let resumed = session.transport.resume(stream_id, seq, tx);
        let mut out = stream_head(&headers);
        let mut answered = false;
        for (id, data, last) in &resumed.events {
            out.extend(chunk(event(Some(id), data).as_bytes()));
            answered |= *last;
        }
        if answered || !resumed.live {
            out.extend_from_slice(LAST_CHUNK);
            stream.write_all_flush(&out)?;
            return Ok(true);
        }
        stream.write_all_flush(&out)?;
        let mode = StreamMode {
            json: false,
            sse: true,
            priming: None,
            headers: &headers,
            standalone: false,
            opened: true,
            as_json: None,
        };
        return finish_get(inner, &session, stream_id, stream, &rx, mode, true);
    }
    let Some(stream_id) = session.transport.open_standalone(tx) else {
        return refuse(
            stream,
            409,
            -32600,
            "the session's GET stream is already open",
        );
    };
    let mode = StreamMode {
        json: false,
        sse: true,
        priming: resumable(&session).then(|| format!("{stream_id}-0")),
        headers: &headers,
        standalone: true,
        opened: false,
        as_json: None,
    };
    finish_get(inner, &session, stream_id, stream, &rx, mode, false)
}

fn finish_get(
    inner: &Arc<HttpInner>,
    session: &Arc<Session>,
    stream_id: u64,
    stream: &mut Socket,
    rx: &crossbeam_channel::Receiver<StreamItem>,
    mode: StreamMode<'_>,
    resumed: bool,
) -> io::Result<bool> {
    // A resumed stream's head is already written.
    let mode = StreamMode {
        opened: resumed,
        ..mode
    };
    let result = stream::serve(inner, stream, rx, mode);
    match result {
        Ok(Ended::Answered) => Ok(true),
        Ok(Ended::Closed) => Ok(false),
        Ok(Ended::Gone) | Err(_) => {
            session.transport.detach(stream_id);
            result.map(|_| false)
        }
    }
}

/// A DELETE: the session ends.
pub(crate) fn delete(
    inner: &Arc<HttpInner>,
    head: &Head,
    stream: &mut Socket,
    caller: Option<&Caller>,
) -> io::Result<bool> {
    let session_id = head
        .header("mcp-session-id")
        .filter(|_| inner.config.sessions);
    let Some(session_id) = session_id else {
        let allow = [("Allow", "POST".to_owned())];
        let body = response::error_body(-32600, "DELETE needs a session");
        write_full(stream, 405, Some("application/json"), &allow, &body, true)?;
        return Ok(true);
    };
    let Some(session) = inner.remove_session(session_id, caller) else {
        return refuse(stream, 404, -32600, "Session not found");
    };
    let _ = session.connection.close();
    write_full(stream, 200, None, &[], b"", true)?;
    Ok(true)
}

/// `write_all` then `flush`.
trait WriteFlush {
    fn write_all_flush(&mut self, bytes: &[u8]) -> io::Result<()>;
}

impl WriteFlush for Socket {
    fn write_all_flush(&mut self, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        self.write_all(bytes)?;
        self.flush()
    }
}
