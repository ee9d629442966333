//! What a handler gets with its request: the cancel flag, a progress reporter (only when the
//! client sent a token), a logger, and blocking requests back to the client with deadlines.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::auth::Caller;
use super::conn::Pending;
use super::types::{HandlerError, InputRequired, LogLevel, MISSING_CAPABILITY};
use crate::client::CallHandle;
use crate::error::{Error, Result};
use crate::harness::{CancelFlag, ToolContext, ToolFailure};
use crate::mcp::{methods, Era, Implementation};
use crate::timer::TimerKey;
use crate::wire::{ErrorObject, RequestId, Response};

/// How a request's answer is settled, once: by its handler, by its deadline, or by the
/// client's cancellation.
pub(crate) const WAITING: u8 = 0;
pub(crate) const ANSWERED: u8 = 1;
pub(crate) const ABANDONED: u8 = 2;
pub(crate) const CANCELLED: u8 = 3;

/// One request in flight on a connection.
pub(crate) struct Call {
    pub(crate) id: RequestId,
    pub(crate) state: AtomicU8,
    pub(crate) cancel: CancelFlag,
    pub(crate) timer: Mutex<Option<TimerKey>>,
    /// Requests back to the client made while answering this one, cancelled with it.
    pub(crate) outbound: Mutex<Vec<RequestId>>,
}

impl Call {
    pub(crate) fn new(id: RequestId) -> Call {
        Call {
            id,
            state: AtomicU8::new(WAITING),
            cancel: CancelFlag::new(),
            timer: Mutex::new(None),
            outbound: Mutex::new(Vec::new()),
        }
    }

    /// Moves from waiting to `to`; true for the one who did.
    pub(crate) fn settle(&self, to: u8) -> bool {
        self.state
            .compare_exchange(WAITING, to, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    pub(crate) fn state(&self) -> u8 {
        self.state.load(Ordering::SeqCst)
    }
}

/// The way out to the client, for one connection: the stdio or memory transport through the
/// JSON-RPC client, an HTTP session, or one stateless HTTP exchange.
pub(crate) trait Link: Send + Sync {
    /// Sends a notification belonging to the request `related` (progress, a log message), or
    /// to none.
    fn notify(&self, related: Option<&RequestId>, method: &str, params: Value) -> Result<()>;
    /// Sends a request to the client; `None` when this connection cannot carry one (the
    /// stateless protocol has none), which is what a link that does not override it says.
    fn request(
        &self,
        related: &RequestId,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Option<Result<CallHandle>> {
        let _ = (related, method, params, timeout);
        None
    }
    /// Answers a request; `status` is the HTTP status a stateless exchange should carry.
    fn respond(&self, response: Response, status: u16);
    /// Answers the requests of one batch, as one array.
    fn respond_batch(&self, responses: Vec<Response>);
}

/// What the client told about itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Peer {
    pub(crate) capabilities: Value,
    pub(crate) info: Option<Implementation>,
}

/// The answers of a 2026-07-28 retry: `inputResponses` and the verified state.
#[derive(Debug, Clone, Default)]
pub(crate) struct InputRound {
    pub(crate) responses: Map<String, Value>,
    pub(crate) state: Option<Value>,
}

/// Everything a handler may use while it answers one request. It lives as long as the
/// handler runs; [`RequestContext::defer`] hands the answer to another thread.
pub struct RequestContext {
    pub(crate) call: Arc<Call>,
    pub(crate) method: String,
    pub(crate) deadline: Instant,
    pub(crate) era: Era,
    /// The revision beside the era: the handshake's negotiated one (none before
    /// `initialize`), or the one a 2026-07-28 request's `_meta` named.
    pub(crate) protocol_version: Option<String>,
    pub(crate) peer: Peer,
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) progress: Option<ProgressReporter>,
    pub(crate) link: Arc<dyn Link>,
    pub(crate) input: Option<InputRound>,
    pub(crate) client_request_timeout: Duration,
    pub(crate) answer_cancelled: bool,
    pub(crate) deferred: Mutex<Option<Arc<Mutex<DeferSlot>>>>,
    /// Shared by the requests of one connection.
    pub(crate) connection_state: Arc<ConnectionState>,
    /// The client's socket address, over HTTP.
    pub(crate) peer_address: Option<SocketAddr>,
    /// Who made the request, when the HTTP server checks tokens.
    pub(crate) caller: Option<Arc<Caller>>,
    /// The request's span, when the process records traces.
    pub(crate) trace: Option<Arc<super::traced::Trace>>,
}

/// What a server's handlers keep for one connection (a stdio or memory connection, a
/// handshake-era HTTP session, one 2026-07-28 exchange), one value per type, made on first
/// use and dropped with the connection: a count of calls, a caller's identity, a per-user
/// catalog's choices. See [`RequestContext::connection_state`].
#[derive(Default)]
pub struct ConnectionState {
    values: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl std::fmt::Debug for ConnectionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionState")
            .field("values", &self.values.lock().len())
            .finish()
    }
}

impl ConnectionState {
    /// The connection's value of type `T`, made with `T::default()` the first time any of
    /// its requests asks. Use a type of your own (a newtype) so no other code shares it.
    pub fn get<T: Any + Send + Sync + Default>(&self) -> Arc<T> {
        let mut values = self.values.lock();
        let value = values
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()));
        // The entry under T's id holds a T: it was made just above, by this function.
        Arc::clone(value)
            .downcast::<T>()
            .unwrap_or_else(|_| Arc::new(T::default()))
    }
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.call.id)
            .field("method", &self.method)
            .field("era", &self.era)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl RequestContext {
    /// The request's id.
    pub fn id(&self) -> &RequestId {
        &self.call.id
    }

    /// The request's method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The protocol era the request came in under: the handshake (2024-11-05 … 2025-11-25)
    /// or the 2026-07-28 stateless protocol, everything in the request's `_meta`.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The revision the request came in under: on the handshake protocol the negotiated one
    /// (none before `initialize`), on 2026-07-28 the one its `_meta` names.
    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.as_deref()
    }

    /// True once the request is given up: the client cancelled it (`notifications/cancelled`,
    /// or on the 2026-07-28 protocol by closing its response stream), its bound passed, or
    /// the connection ended. Nothing stops a handler: it should look and return early.
    pub fn is_cancelled(&self) -> bool {
        self.call.cancel.is_cancelled()
    }

    /// The flag behind [`RequestContext::is_cancelled`], to hand to code that takes a
    /// [`CancelFlag`] (a harness tool).
    pub fn cancel_flag(&self) -> &CancelFlag {
        &self.call.cancel
    }

    /// When the request's bound passes.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The client's declared capabilities (`{}` when none were declared).
    pub fn client_capabilities(&self) -> &Value {
        &self.peer.capabilities
    }

    /// True when the client declared `capability` (`sampling`, `elicitation`, `roots`, …).
    pub fn client_supports(&self, capability: &str) -> bool {
        self.peer
            .capabilities
            .get(capability)
            .is_some_and(|value| !value.is_null())
    }

    /// The client's name and version, when it said.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.peer.info.as_ref()
    }

    /// The progress reporter, only when the client asked for progress (sent a token). Clone
    /// it to report from another thread (clones share the last value reported).
    pub fn progress(&self) -> Option<&ProgressReporter> {
        self.progress.as_ref()
    }

    /// The state this request's connection keeps across its requests (see
    /// [`ConnectionState`]).
    pub fn connection_state(&self) -> &ConnectionState {
        &self.connection_state
    }

    /// The address of the client's socket, over HTTP: for a 2026-07-28 request the
    /// connection that carried it; in a handshake-era session the connection that opened the
    /// session (its `initialize`), whichever connection carries a later request. `None` over
    /// stdio and in memory. It is the address the server saw: behind a proxy or a load
    /// balancer, the proxy's.
    pub fn peer_address(&self) -> Option<SocketAddr> {
        self.peer_address
    }

    /// Who made the request: the subject, client id and scopes of the access token it
    /// carried, when the HTTP server has authorization
    /// ([`crate::server::HttpServerConfig::authorization`]). In a handshake-era session, the
    /// caller who opened it (only they may use it); in a task, the caller who created it.
    /// `None` without authorization, over stdio and in memory.
    pub fn caller(&self) -> Option<&Caller> {
        self.caller.as_deref()
    }

    /// Sends a log message (`notifications/message`) at `level` when the client wants that
    /// level: on the handshake protocol the one set with `logging/setLevel` (or the server's
    /// default), on 2026-07-28 the one in the request's `_meta`, and none without it.
    pub fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) {
        let Some(wanted) = self.log_level else {
            return;
        };
        if level < wanted || (self.is_cancelled() && !self.answer_cancelled) {
            return;
        }
        send_log(&*self.link, &self.call, level, logger, data);
    }

    /// [`RequestContext::log`] at `info`, without a logger name.
    pub fn info(&self, data: impl Into<Value>) {
        self.log(LogLevel::Info, None, data.into());
    }

    /// Sends any notification that belongs to this request (it travels on the request's
    /// response stream over HTTP).
    ///
    /// # Errors
    ///
    /// When the connection cannot take it (closed, a full queue past the request timeout).
    pub fn notify(&self, method: &str, params: Value) -> Result<()> {
        self.link.notify(Some(&self.call.id), method, params)
    }

    /// Sends a request to the client and blocks for its result, at most `timeout` and never
    /// past this request's own bound; a cancellation of this request cancels it too. Only on
    /// the handshake protocol (2026-07-28 asks for input with [`InputRequired`] instead).
    ///
    /// # Errors
    ///
    /// [`Error::Rpc`] with the client's error, [`Error::Timeout`], [`Error::Cancelled`],
    /// [`Error::Closed`], or [`Error::Protocol`] on a connection that carries no requests
    /// to the client.
    pub fn request_with(&self, method: &str, params: Value, timeout: Duration) -> Result<Value> {
        ask_client(
            &self.call,
            self.link.as_ref(),
            self.deadline,
            method,
            params,
            timeout,
        )
    }

    /// [`RequestContext::request_with`] with the server's client request timeout.
    ///
    /// # Errors
    ///
    /// As [`RequestContext::request_with`].
    pub fn request(&self, method: &str, params: Value) -> Result<Value> {
        self.request_with(method, params, self.client_request_timeout)
    }

    /// The client's answer to input `key` of this 2026-07-28 retry, as sent.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.input.as_ref()?.responses.get(key)
    }

    /// Every answer of this retry (empty on a first round).
    pub fn input_responses(&self) -> Option<&Map<String, Value>> {
        self.input.as_ref().map(|round| &round.responses)
    }

    /// The state the handler gave with its last [`InputRequired`], verified: a retry whose
    /// state was changed never reaches the handler.
    pub fn request_state(&self) -> Option<&Value> {
        self.input.as_ref()?.state.as_ref()
    }

    /// Asks the user for input: on the handshake protocol an `elicitation/create` request
    /// (blocking, with the client request timeout), on 2026-07-28 the retry's answer under
    /// `key`, or, without one, an [`InputRequired`] for `?` to return.
    ///
    /// # Errors
    ///
    /// [`HandlerError::InputRequired`] on a first 2026-07-28 round, -32021 when the client
    /// did not declare `elicitation`, the client's error, or a failed request.
    pub fn elicit(&self, key: &str, params: Value) -> std::result::Result<Value, HandlerError> {
        self.ask(key, "elicitation", methods::ELICITATION_CREATE, params)
    }

    /// Asks the client's model for a completion (`sampling/createMessage`), as
    /// [`RequestContext::elicit`] does.
    ///
    /// # Errors
    ///
    /// As [`RequestContext::elicit`], with `sampling`.
    pub fn sample(&self, key: &str, params: Value) -> std::result::Result<Value, HandlerError> {
        self.ask(key, "sampling", methods::SAMPLING_CREATE_MESSAGE, params)
    }

    /// Asks for the client's roots (`roots/list`), as [`RequestContext::elicit`] does.
    ///
    /// # Errors
    ///
    /// As [`RequestContext::elicit`], with `roots`.
    pub fn list_roots(&self, key: &str) -> std::result::Result<Value, HandlerError> {
        self.ask(key, "roots", methods::ROOTS_LIST, json!({}))
    }

    fn ask(
        &self,
        key: &str,
        capability: &str,
        method: &str,
        params: Value,
    ) -> std::result::Result<Value, HandlerError> {
        if !self.client_supports(capability) {
            return Err(missing_capability(capability));
        }
        match &self.era {
            Era::Stateless => match self.input_response(key) {
                Some(answer) => Ok(answer.clone()),
                None => Err(InputRequired::new().request(key, method, params).into()),
            },
            Era::Handshake => Ok(self.request(method, params)?),
        }
    }

    /// Takes the answer away from the handler: whatever the handler returns after this is
    /// ignored, and the request is answered when the [`Responder`] is, or when its bound
    /// passes (with [`super::REQUEST_TIMEOUT`]), or not at all once the client cancelled it.
    /// For requests answered by some later event, without holding a worker. A responder
    /// dropped unanswered leaves the request to its bound.
    pub fn defer(&self) -> Responder {
        let mut deferred = self.deferred.lock();
        let slot = deferred.get_or_insert_with(|| Arc::new(Mutex::new(DeferSlot::default())));
        Responder {
            slot: Arc::clone(slot),
        }
    }
}

/// Sends a request to the client for the request `call`, and blocks for its result, at most
/// `timeout` and never past `deadline`; a cancellation of `call` cancels it too.
fn ask_client(
    call: &Call,
    link: &dyn Link,
    deadline: Instant,
    method: &str,
    params: Value,
    timeout: Duration,
) -> Result<Value> {
    let timeout = timeout.min(deadline.saturating_duration_since(Instant::now()));
    let mut handle = match link.request(&call.id, method, params, timeout) {
        Some(started) => started?,
        None => {
            return Err(Error::Protocol(format!(
                "`{method}`: the {} protocol carries no requests to the client; ask for \
                 input with an InputRequired result",
                crate::mcp::STATELESS_VERSION
            )))
        }
    };
    call.outbound.lock().push(handle.id().clone());
    // The answer and the request's cancellation, waited on together.
    let outcome = match handle.wait_or(&[&call.cancel.signal()]) {
        Some(outcome) => outcome,
        None => {
            handle.cancel();
            Err(Error::Cancelled {
                method: method.to_owned(),
            })
        }
    };
    call.outbound.lock().retain(|id| id != handle.id());
    outcome
}

/// A request's way back to its client, apart from its [`RequestContext`], for another
/// thread to use while the handler waits: a proxy forwarding an upstream server's requests
/// (sampling, elicitation, roots) to the client whose call they serve. Cheap to clone.
#[derive(Clone)]
pub struct BackChannel {
    call: Arc<Call>,
    link: Arc<dyn Link>,
    deadline: Instant,
    capabilities: Value,
    timeout: Duration,
    log_level: Option<LogLevel>,
}

impl std::fmt::Debug for BackChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackChannel")
            .field("id", &self.call.id)
            .finish_non_exhaustive()
    }
}

impl BackChannel {
    /// The request this channel answers for.
    pub fn id(&self) -> &RequestId {
        &self.call.id
    }

    /// True when the client declared `capability`.
    pub fn supports(&self, capability: &str) -> bool {
        self.capabilities
            .get(capability)
            .is_some_and(|value| !value.is_null())
    }

    /// As [`RequestContext::request`]: a request to the client, bounded by the server's
    /// client request timeout and the request's own bound, cancelled with the request.
    ///
    /// # Errors
    ///
    /// As [`RequestContext::request_with`].
    pub fn request(&self, method: &str, params: Value) -> Result<Value> {
        ask_client(
            &self.call,
            self.link.as_ref(),
            self.deadline,
            method,
            params,
            self.timeout,
        )
    }

    /// As [`RequestContext::log`]: a log message about the request, sent when the client
    /// wants its level (a proxy passing on an upstream server's log messages).
    pub fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) {
        if self.log_level.is_none_or(|wanted| level < wanted) {
            return;
        }
        send_log(&*self.link, &self.call, level, logger, data);
    }
}

impl RequestContext {
    /// This request's [`BackChannel`].
    pub fn back_channel(&self) -> BackChannel {
        BackChannel {
            call: Arc::clone(&self.call),
            link: Arc::clone(&self.link),
            deadline: self.deadline,
            capabilities: self.peer.capabilities.clone(),
            timeout: self.client_request_timeout,
            log_level: self.log_level,
        }
    }
}

/// Where a deferred answer meets its request: the request's pending answer arrives when the
/// handler returns, the responder's outcome whenever it is sent, in either order.
#[derive(Default)]
pub(crate) struct DeferSlot {
    pub(crate) pending: Option<Pending>,
    pub(crate) early: Option<std::result::Result<Value, HandlerError>>,
}

/// -32021 naming the capability.
pub(crate) fn missing_capability(capability: &str) -> HandlerError {
    HandlerError::Rpc(
        ErrorObject::new(
            MISSING_CAPABILITY,
            format!("this request needs the client capability `{capability}`, which the client did not declare"),
        )
        .with_data(json!({"requiredCapabilities": {capability: {}}})),
    )
}

/// Sends `notifications/progress` for one request. Reports must increase: one that does not
/// is dropped (and logged at debug). Clones report for the same request and share the last
/// value reported.
#[derive(Clone)]
pub struct ProgressReporter {
    pub(crate) token: Value,
    pub(crate) call: Arc<Call>,
    pub(crate) link: Arc<dyn Link>,
    pub(crate) last: Arc<Mutex<Option<f64>>>,
    pub(crate) answer_cancelled: bool,
}

impl std::fmt::Debug for ProgressReporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressReporter")
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl ProgressReporter {
    /// Reports `progress` (of `total`, when known) with an optional message.
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        {
            let mut last = self.last.lock();
            if last.is_some_and(|last| progress <= last) || !progress.is_finite() {
                log::debug!("toolwire: progress {progress} does not increase; not sent");
                return;
            }
            *last = Some(progress);
        }
        if self.call.cancel.is_cancelled() && !self.answer_cancelled {
            return;
        }
        let mut params = Map::new();
        params.insert("progressToken".into(), self.token.clone());
        params.insert("progress".into(), number(progress));
        if let Some(total) = total {
            params.insert("total".into(), number(total));
        }
        if let Some(message) = message {
            params.insert("message".into(), Value::from(message));
        }
        if let Err(error) = self.link.notify(
            Some(&self.call.id),
            methods::PROGRESS,
            Value::Object(params),
        ) {
            log::debug!(
                "toolwire: progress for {} was not sent: {error}",
                self.call.id
            );
        }
    }

    /// The client's token.
    pub fn token(&self) -> &Value {
        &self.token
    }
}

/// A whole number as an integer, anything else as a float, so `1` is not sent as `1.0`.
fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 {
        Value::from(value as i64)
    } else {
        Value::from(value)
    }
}

/// The answer to a deferred request ([`RequestContext::defer`]). Send it to any thread.
pub struct Responder {
    slot: Arc<Mutex<DeferSlot>>,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Responder").finish_non_exhaustive()
    }
}

impl Responder {
    /// Answers the request (unless its bound passed or the client cancelled it first).
    pub fn respond(self, outcome: std::result::Result<Value, HandlerError>) {
        let pending = {
            let mut slot = self.slot.lock();
            match slot.pending.take() {
                Some(pending) => pending,
                None => {
                    // The handler has not returned yet: it finds the answer when it does.
                    slot.early = Some(outcome);
                    return;
                }
            }
        };
        pending.finish(outcome);
    }

    /// True once the request is given up (cancelled, past its bound, connection closed).
    pub fn is_cancelled(&self) -> bool {
        self.slot
            .lock()
            .pending
            .as_ref()
            .is_some_and(Pending::is_cancelled)
    }
}

/// A served tool's context ([`crate::harness::LocalTool::with_context`]): the request's cancel
/// flag, its progress reporter (when the client sent a token), log messages to the client, and
/// input requests to it. A request that cannot be answered in this call (a 2026-07-28 first
/// round, a capability the client did not declare, the client's error) fails with the
/// server's answer carried ([`ToolFailure::carried`] holds the [`HandlerError`]), which the
/// server sends as it would for a tool of its own.
impl ToolContext for RequestContext {
    fn cancel_flag(&self) -> &CancelFlag {
        RequestContext::cancel_flag(self)
    }

    fn report_progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(progress) = self.progress() {
            progress.report(done, total, message);
        }
    }

    fn log_message(&self, level: log::Level, message: &str) {
        let level = match level {
            log::Level::Error => LogLevel::Error,
            log::Level::Warn => LogLevel::Warning,
            log::Level::Info => LogLevel::Info,
            log::Level::Debug | log::Level::Trace => LogLevel::Debug,
        };
        self.log(level, None, Value::String(message.to_owned()));
    }

    fn request_input(
        &self,
        key: &str,
        method: &str,
        params: Value,
    ) -> std::result::Result<Value, ToolFailure> {
        let answer = match method {
            methods::ELICITATION_CREATE => self.elicit(key, params),
            methods::SAMPLING_CREATE_MESSAGE => self.sample(key, params),
            methods::ROOTS_LIST => self.list_roots(key),
            other => {
                return Err(ToolFailure::internal(format!(
                    "a tool asked the client with {other:?}, which is not an input request \
                     (elicitation/create, sampling/createMessage or roots/list)"
                )))
            }
        };
        answer.map_err(HandlerError::into_failure)
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl RequestContext {
    /// The request's context behind a served tool's [`ToolContext`]
    /// ([`crate::harness::LocalTool::with_context`]), for what only a server has (the
    /// connection's state, the client's identity, [`RequestContext::defer`]); `None` when
    /// the tool runs elsewhere (a local harness).
    pub fn of(context: &dyn ToolContext) -> Option<&RequestContext> {
        context.as_any()?.downcast_ref()
    }

    /// The context of the request's SERVER span, when the process records traces
    /// ([`crate::telemetry`]): the parent to give work the request starts elsewhere
    /// ([`crate::harness::CallSettings::trace_parent`]). Spans recorded on the handler's own
    /// thread are its children already.
    pub fn trace_context(&self) -> Option<&crate::telemetry::SpanContext> {
        self.trace.as_deref().map(super::traced::Trace::context)
    }

    /// Ends the request's span with `error.type` set to `error_type`, whatever the answer: a
    /// refusal the client reads as a tool's error result (the harness's status word, e.g.
    /// `BUSY` or `BUDGET`). Nothing when no span is recorded.
    pub fn set_trace_error_type(&self, error_type: &str) {
        if let Some(trace) = &self.trace {
            trace.set_error_type(error_type);
        }
    }

    /// Makes the request's span the parent of what this thread records while the guard lives.
    pub(crate) fn enter_trace(&self) -> Option<crate::telemetry::Entered> {
        let trace = self.trace.as_ref()?;
        Some(crate::telemetry::enter(Some(trace.context().clone())))
    }
}

/// Sends `notifications/message` about `call` on `link` (the level already checked by the
/// caller); a link that cannot take it is logged at debug, as a notification is not answered.
fn send_log(link: &dyn Link, call: &Call, level: LogLevel, logger: Option<&str>, data: Value) {
    let mut params = Map::new();
    params.insert("level".into(), Value::from(level.as_str()));
    if let Some(logger) = logger {
        params.insert("logger".into(), Value::from(logger));
    }
    params.insert("data".into(), data);
    if let Err(error) = link.notify(Some(&call.id), methods::LOG_MESSAGE, Value::Object(params)) {
        log::debug!(
            "toolwire: a log message for {} was not sent: {error}",
            call.id
        );
    }
}
