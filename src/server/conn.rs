//! One connection's requests: each registered while it is in flight, run inline or on the
//! worker pool, answered exactly once (by its handler, its deadline, or not at all once the
//! client cancelled it), and all of them given up when the connection ends.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde_json::Value;

use super::auth::Caller;
use super::context::{
    Call, ConnectionState, Link, Peer, ProgressReporter, RequestContext, ABANDONED, ANSWERED,
    CANCELLED,
};
use super::dispatch::{self, Prepared, Rejection};
use super::stateless;
use super::types::{HandlerError, LogLevel, BUSY, REQUEST_TIMEOUT};
use super::Shared;
use crate::mcp::{CallToolResult, Era};
use crate::sys;
use crate::wire::{ErrorObject, Notification, Request, RequestId, Response};

/// Which protocol a connection's requests may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EraPolicy {
    /// stdio and other byte streams: a request whose `_meta` carries a protocol version is a
    /// 2026-07-28 request, any other a handshake-era one.
    Mixed,
    /// An HTTP session: the handshake era.
    Handshake,
    /// One stateless HTTP exchange: 2026-07-28 only.
    Stateless,
}

/// What the transport knows about a request beyond its body (HTTP's headers).
#[derive(Debug, Clone, Default)]
pub(crate) struct Envelope {
    /// The request came over HTTP, whose routing headers are checked.
    pub(crate) http: bool,
    /// `MCP-Protocol-Version`.
    pub(crate) protocol_header: Option<String>,
    /// `Mcp-Method`.
    pub(crate) method_header: Option<String>,
    /// `Mcp-Name`.
    pub(crate) name_header: Option<String>,
    /// Every `Mcp-Param-{name}` header as (name in lower case, value as sent).
    pub(crate) param_headers: Vec<(String, String)>,
}

/// The handshake era's state of a connection.
#[derive(Debug, Clone, Default)]
pub(crate) struct Handshake {
    pub(crate) version: Option<String>,
    pub(crate) peer: Peer,
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) level_set: bool,
    pub(crate) initialized: bool,
}

/// How a request past its bound is answered.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TimeoutAnswer {
    /// A tool: a result with `isError`, read by the model.
    Tool(Duration),
    /// Anything else: [`REQUEST_TIMEOUT`].
    Rpc(Duration),
}

pub(crate) struct Connection {
    pub(crate) server: Arc<Shared>,
    pub(crate) link: Arc<dyn Link>,
    pub(crate) policy: EraPolicy,
    pub(crate) handshake: Mutex<Handshake>,
    pub(crate) subscriptions: Mutex<BTreeSet<String>>,
    in_flight: Mutex<HashMap<RequestId, Arc<Call>>>,
    /// Pooled handlers of this connection still running (abandoned ones too).
    running: Mutex<usize>,
    idle: Condvar,
    closed: AtomicBool,
    /// What handlers keep for this connection ([`RequestContext::connection_state`]).
    connection_state: Arc<ConnectionState>,
    /// The client's socket address, over HTTP ([`RequestContext::peer_address`]).
    peer_address: Option<SocketAddr>,
    /// Who the connection serves, with authorization ([`RequestContext::caller`]).
    caller: Option<Arc<Caller>>,
    /// The handshake-era HTTP session it serves (`mcp.session.id` of its spans).
    session_id: std::sync::OnceLock<String>,
}

impl Connection {
    pub(crate) fn new(
        server: Arc<Shared>,
        link: Arc<dyn Link>,
        policy: EraPolicy,
        peer_address: Option<SocketAddr>,
        caller: Option<Arc<Caller>>,
    ) -> Arc<Connection> {
        let connection = Arc::new(Connection {
            handshake: Mutex::new(Handshake {
                log_level: server.config.default_log_level,
                ..Handshake::default()
            }),
            server,
            link,
            policy,
            subscriptions: Mutex::new(BTreeSet::new()),
            in_flight: Mutex::new(HashMap::new()),
            running: Mutex::new(0),
            idle: Condvar::new(),
            closed: AtomicBool::new(false),
            connection_state: Arc::default(),
            peer_address,
            caller,
            session_id: std::sync::OnceLock::new(),
        });
        if policy != EraPolicy::Stateless {
            connection.server.register(&connection);
        }
        connection
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// How many requests are unanswered right now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.lock().len()
    }

    /// Records the HTTP session it serves, once.
    pub(crate) fn set_session_id(&self, id: &str) {
        let _ = self.session_id.set(id.to_owned());
    }

    /// Who the connection serves, when authorization is in front of it.
    pub(crate) fn caller(&self) -> Option<&Caller> {
        self.caller.as_deref()
    }

    /// Takes one request: checks it, then runs it inline or hands it to the pool. Never blocks
    /// on a handler that is not inline.
    pub(crate) fn handle(self: &Arc<Self>, request: Request, envelope: &Envelope) {
        let link = Arc::clone(&self.link);
        self.handle_on(request, envelope, link);
    }

    /// [`Connection::handle`], answering through `link` (a batch's collector).
    pub(crate) fn handle_on(
        self: &Arc<Self>,
        request: Request,
        envelope: &Envelope,
        link: Arc<dyn Link>,
    ) {
        let id = request.id.clone();
        let link =
            super::metered::wrap(&self.server, &request.method, request.params.as_ref(), link);
        let (link, trace) = super::traced::wrap(
            &self.server,
            &request.method,
            request.params.as_ref(),
            &id,
            link,
        );
        if let (Some(trace), Some(session)) = (&trace, self.session_id.get()) {
            trace.set(crate::mcp::traced::SESSION_ID, session.clone());
        }
        let prepared = match dispatch::prepare(self, request, envelope) {
            Ok(prepared) => prepared,
            Err(Rejection { error, status }) => {
                link.respond(Response::error(Some(id), error), status);
                return;
            }
        };
        let call = match self.begin(&id) {
            Ok(call) => call,
            Err(error) => {
                let status = if prepared.stateless.is_some() {
                    503
                } else {
                    200
                };
                link.respond(Response::error(Some(id), error), status);
                return;
            }
        };
        self.run(prepared, call, link, trace);
    }

    fn run(
        self: &Arc<Self>,
        prepared: Prepared,
        call: Arc<Call>,
        link: Arc<dyn Link>,
        trace: Option<Arc<super::traced::Trace>>,
    ) {
        let Prepared {
            method,
            target,
            era,
            protocol_version,
            peer,
            log_level,
            progress_token,
            input,
            work,
            inline,
            timeout,
            stateless,
        } = prepared;
        let bound = match timeout {
            TimeoutAnswer::Tool(bound) | TimeoutAnswer::Rpc(bound) => bound,
        };
        let config = &self.server.config;
        let progress = progress_token.map(|token| ProgressReporter {
            token,
            call: Arc::clone(&call),
            link: Arc::clone(&link),
            last: Arc::new(Mutex::new(None)),
            answer_cancelled: config.answer_cancelled,
        });
        let context = RequestContext {
            call: Arc::clone(&call),
            method: method.clone(),
            deadline: Instant::now() + bound,
            era,
            protocol_version,
            peer,
            log_level,
            progress,
            link: Arc::clone(&link),
            input,
            client_request_timeout: config.client_request_timeout,
            answer_cancelled: config.answer_cancelled,
            deferred: Mutex::new(None),
            connection_state: Arc::clone(&self.connection_state),
            peer_address: self.peer_address,
            caller: self.caller.clone(),
            trace,
        };
        if let (Some(trace), Some(version)) = (&context.trace, &context.protocol_version) {
            trace.set(crate::mcp::traced::PROTOCOL_VERSION, version.clone());
        }
        let pending = Pending {
            conn: Arc::clone(self),
            call: Arc::clone(&call),
            link: Arc::clone(&link),
            method,
            target,
            stateless,
        };
        if inline {
            let outcome = guarded(&pending.method, || {
                let _parent = context.enter_trace();
                work(&context)
            });
            if pending.finish_or_defer(&context, outcome) {
                self.arm_timer(&call, timeout, era, &context.method, &link);
            }
            return;
        }
        self.arm_timer(&call, timeout, era, &context.method, &link);
        *self.running.lock() += 1;
        let job_conn = Arc::clone(self);
        let admitted = self.server.pool.try_admit(Box::new(move |slot| {
            let outcome = guarded(&pending.method, || {
                let _parent = context.enter_trace();
                work(&context)
            });
            // Free the worker before answering, so the client's next request finds it free.
            drop(slot);
            pending.finish_or_defer(&context, outcome);
            drop(context);
            job_conn.job_done();
        }));
        if !admitted {
            self.job_done();
            if call.settle(ANSWERED) {
                self.end(&call);
                let size = self.server.config.workers;
                let error = ErrorObject::new(
                    BUSY,
                    format!(
                        "the server is busy: all {size} workers are occupied; nothing was \
                         queued. Try again later"
                    ),
                );
                let status = if era == Era::Stateless { 503 } else { 200 };
                link.respond(Response::error(Some(call.id.clone()), error), status);
            }
        }
    }

    fn job_done(&self) {
        let mut running = self.running.lock();
        *running = running.saturating_sub(1);
        self.idle.notify_all();
    }

    /// Registers a request in flight.
    fn begin(&self, id: &RequestId) -> Result<Arc<Call>, ErrorObject> {
        if self.is_closed() {
            return Err(ErrorObject::new(BUSY, "the connection is closing"));
        }
        let mut in_flight = self.in_flight.lock();
        if in_flight.contains_key(id) {
            return Err(ErrorObject::new(
                crate::wire::ErrorCode::INVALID_REQUEST,
                format!("the id {id} is already in use by a request in flight"),
            ));
        }
        if in_flight.len() >= self.server.config.max_in_flight {
            return Err(ErrorObject::new(
                BUSY,
                format!(
                    "the server is busy: {} requests of this connection are unanswered",
                    in_flight.len()
                ),
            ));
        }
        let call = Arc::new(Call::new(id.clone()));
        in_flight.insert(id.clone(), Arc::clone(&call));
        Ok(call)
    }

    /// A request is settled: it leaves the table and its deadline is cancelled.
    pub(crate) fn end(&self, call: &Arc<Call>) {
        {
            let mut in_flight = self.in_flight.lock();
            if in_flight
                .get(&call.id)
                .is_some_and(|known| Arc::ptr_eq(known, call))
            {
                in_flight.remove(&call.id);
            }
        }
        if let Some(key) = call.timer.lock().take() {
            self.server.timer.cancel(key);
        }
    }

    fn arm_timer(
        self: &Arc<Self>,
        call: &Arc<Call>,
        timeout: TimeoutAnswer,
        era: Era,
        method: &str,
        link: &Arc<dyn Link>,
    ) {
        if call.state() != super::context::WAITING {
            return;
        }
        let link = Arc::clone(link);
        let bound = match timeout {
            TimeoutAnswer::Tool(bound) | TimeoutAnswer::Rpc(bound) => bound,
        };
        let conn: Weak<Connection> = Arc::downgrade(self);
        let timed = Arc::clone(call);
        let method = method.to_owned();
        let key = self.server.timer.schedule(
            Instant::now() + bound,
            Box::new(move || {
                if let Some(conn) = conn.upgrade() {
                    conn.abandon(&timed, timeout, era, &method, &link);
                }
            }),
        );
        *call.timer.lock() = Some(key);
        // Settled while the timer was being armed: take it back.
        if call.state() != super::context::WAITING {
            if let Some(key) = call.timer.lock().take() {
                self.server.timer.cancel(key);
            }
        }
    }

    /// The bound passed: the client is answered now, the handler is told to stop, and its
    /// late result will be dropped.
    fn abandon(
        &self,
        call: &Arc<Call>,
        timeout: TimeoutAnswer,
        era: Era,
        method: &str,
        link: &Arc<dyn Link>,
    ) {
        if !call.settle(ABANDONED) {
            return;
        }
        call.cancel.cancel();
        call.timer.lock().take();
        self.end(call);
        self.server.listeners.forget(call);
        log::warn!(
            target: super::LOG_TARGET,
            "`{method}` (id {}) passed its bound; answered with an error, its handler is told to stop",
            call.id
        );
        let response = match timeout {
            TimeoutAnswer::Tool(bound) => {
                let text = format!(
                    "the tool did not answer within {bound:?}; it may still be running, and a \
                     late result will be discarded"
                );
                let result = CallToolResult::error(text).to_value();
                let result = if era == Era::Stateless {
                    stateless::stamp(&self.server, method, result)
                } else {
                    result
                };
                Response::ok(call.id.clone(), result)
            }
            TimeoutAnswer::Rpc(bound) => Response::error(
                Some(call.id.clone()),
                ErrorObject::new(
                    REQUEST_TIMEOUT,
                    format!("`{method}` did not answer within {bound:?}; it was abandoned"),
                ),
            ),
        };
        link.respond(response, 200);
    }

    /// The client gave the request up (`notifications/cancelled`, or its stream closed): the
    /// handler sees its flag, and nothing more is sent for it.
    pub(crate) fn cancel(&self, id: &RequestId, reason: Option<&str>) {
        let call = self.in_flight.lock().get(id).cloned();
        let Some(call) = call else {
            log::debug!("toolwire: cancellation of {id}, which is not in flight");
            return;
        };
        if call.settle(CANCELLED) {
            log::debug!(
                "toolwire: the client cancelled {id} ({})",
                reason.unwrap_or("no reason given")
            );
        }
        call.cancel.cancel();
        if let Some(key) = call.timer.lock().take() {
            self.server.timer.cancel(key);
        }
        self.server.listeners.forget(&call);
        if !self.server.config.answer_cancelled {
            self.end(&call);
        }
    }

    /// The client's notifications: cancellation and the handshake's end are the server's;
    /// every one then goes to the server's notification hooks.
    pub(crate) fn on_notification(&self, notification: &Notification) {
        use crate::mcp::methods;
        let params = notification.params.as_ref();
        match notification.method.as_str() {
            methods::CANCELLED => {
                let id = params
                    .and_then(|p| p.get("requestId"))
                    .and_then(|id| RequestId::from_value(id).ok());
                let reason = params.and_then(|p| p.get("reason")).and_then(Value::as_str);
                if let Some(id) = id {
                    self.cancel(&id, reason);
                }
            }
            methods::INITIALIZED => self.handshake.lock().initialized = true,
            _ => {}
        }
        self.server.notification_hooks(notification);
    }

    /// The connection ended: every request is given up (the handlers see their flags), the
    /// running ones get the close grace to finish, and whatever they answer goes nowhere.
    pub(crate) fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let calls: Vec<Arc<Call>> = self
            .in_flight
            .lock()
            .drain()
            .map(|(_, call)| call)
            .collect();
        for call in &calls {
            call.settle(CANCELLED);
            call.cancel.cancel();
            self.server.listeners.forget(call);
            if let Some(key) = call.timer.lock().take() {
                self.server.timer.cancel(key);
            }
        }
        let deadline = Instant::now() + self.server.config.close_grace;
        let mut running = self.running.lock();
        while *running > 0 {
            if self.idle.wait_until(&mut running, deadline).timed_out() {
                log::warn!(
                    target: super::LOG_TARGET,
                    "{} handler(s) still running {:?} after their connection ended; leaving them",
                    *running,
                    self.server.config.close_grace
                );
                break;
            }
        }
    }

    /// How many pooled handlers of this connection still run.
    pub(crate) fn running(&self) -> usize {
        *self.running.lock()
    }
}

/// Runs a handler, turning a panic into -32603 (logged with the method).
pub(crate) fn guarded(
    method: &str,
    work: impl FnOnce() -> Result<Value, HandlerError>,
) -> Result<Value, HandlerError> {
    sys::guard(&format!("the server's handler for `{method}`"), work).unwrap_or_else(|| {
        Err(HandlerError::internal(
            "the server's handler for this request failed",
        ))
    })
}

/// A request's answer, still to be given.
pub(crate) struct Pending {
    conn: Arc<Connection>,
    call: Arc<Call>,
    link: Arc<dyn Link>,
    method: String,
    target: Option<String>,
    /// The client's capabilities when the request is a 2026-07-28 one.
    stateless: Option<Value>,
}

impl Pending {
    /// The handler returned: its outcome is the answer, unless it deferred the answer, in
    /// which case this pending answer goes to the responder. True when deferred.
    fn finish_or_defer(
        self,
        context: &RequestContext,
        outcome: Result<Value, HandlerError>,
    ) -> bool {
        let slot = context.deferred.lock().take();
        let Some(slot) = slot else {
            self.finish(outcome);
            return false;
        };
        let early = {
            let mut slot = slot.lock();
            match slot.early.take() {
                Some(early) => Some(early),
                None => {
                    slot.pending = Some(self);
                    return true;
                }
            }
        };
        if let Some(early) = early {
            self.finish(early);
        }
        false
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.call.cancel.is_cancelled()
    }

    /// Answers the request, exactly once: nothing when its deadline or the client's
    /// cancellation got there first (unless the server answers cancelled requests).
    pub(crate) fn finish(self, outcome: Result<Value, HandlerError>) {
        let conn = &self.conn;
        if !self.call.settle(ANSWERED) {
            let late_answer = self.call.state() == CANCELLED
                && conn.server.config.answer_cancelled
                && !conn.is_closed();
            conn.end(&self.call);
            if !late_answer {
                log::debug!(
                    "toolwire: `{}` (id {}) ended after it was given up; its answer is dropped",
                    self.method,
                    self.call.id
                );
                return;
            }
        } else {
            conn.end(&self.call);
        }
        let (response, status) = stateless::answer(
            &conn.server,
            &self.call.id,
            &self.method,
            self.target.as_deref(),
            conn.caller(),
            self.stateless.as_ref(),
            outcome,
        );
        self.link.respond(response, status);
    }
}
