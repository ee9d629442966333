//! Opening a session in either era (the `initialize` handshake, or 2026-07-28's
//! `server/discover`, or a probe that tries the second and falls back to the first), the
//! per-request stamping and frame metadata of the era, and restarting a dead server.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::config::{ProtocolMode, TaskPolicy, HANDSHAKE_VERSIONS, STATELESS_VERSION};
use super::dialect::McpDialect;
use super::requests::{check_result_type, forward_to_log, log_message, ServerRequests};
use super::types::{Era, SessionInfo};
use super::{methods, McpInner, Session, META_CLIENT_CAPABILITIES, META_CLIENT_INFO};
use super::{META_LOG_LEVEL, META_PROTOCOL_VERSION};
use crate::client::{CallOptions, Client, ClientConfig};
use crate::error::{Closed, Error, Result};
use crate::transport::{FrameMeta, Lifecycle, Scrubber};
use crate::wire::{ErrorCode, Notification, Request};

/// What is left of [`crate::McpConfig::connect_timeout`] as the connection's steps go.
struct Budget {
    started: Instant,
    /// The budget as set, and when it runs out.
    limit: Option<(Duration, Instant)>,
}

impl Budget {
    fn new(budget: Option<Duration>) -> Budget {
        let started = Instant::now();
        Budget {
            started,
            limit: budget.map(|budget| (budget, started + budget)),
        }
    }

    /// The next step's timeout: its own `cap`, or what is left of the budget if less.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when nothing is left.
    fn left(&self, cap: Duration) -> Result<Duration> {
        let Some((budget, deadline)) = self.limit else {
            return Ok(cap);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Timeout {
                method: "connecting (McpConfig::connect_timeout)".into(),
                after: budget,
            });
        }
        Ok(left.min(cap))
    }

    /// As [`Budget::left`], but at most half of what is left.
    fn half_left(&self, cap: Duration) -> Result<Duration> {
        let left = self.left(Duration::MAX)?;
        Ok(if self.limit.is_some() {
            (left / 2).max(Duration::from_millis(1)).min(cap)
        } else {
            cap
        })
    }

    /// A step's timeout, once the budget has run out, is the connection's: it is reported
    /// after the whole budget as set (`3s`), not after the share the last step had of it
    /// (`1.500213141s`), which would read as a bound nobody set.
    fn spent(&self, error: Error) -> Error {
        match (error, self.limit) {
            (Error::Timeout { method, .. }, Some((budget, deadline)))
                if Instant::now() >= deadline =>
            {
                log::debug!(
                    "toolwire: the connection took its whole budget of {budget:?} ({:?})",
                    self.started.elapsed()
                );
                Error::Timeout {
                    method,
                    after: budget,
                }
            }
            (error, _) => error,
        }
    }
}

/// The restarts done recently, for the restart policy.
#[derive(Default)]
pub(super) struct RestartLedger {
    restarts: VecDeque<Instant>,
    consecutive: u32,
}

/// True for the -32022 "unsupported protocol version" refusal of a server that names
/// 2026-07-28 among the versions it supports.
pub(super) fn refused_for_stateless(error: &Error) -> bool {
    error.rpc().is_some_and(|error| {
        error.code == ErrorCode(-32022)
            && error
                .data
                .as_ref()
                .and_then(|data| data.get("supported"))
                .and_then(Value::as_array)
                .is_some_and(|versions| versions.iter().any(|version| version == STATELESS_VERSION))
    })
}

impl Session {
    /// Adds the 2026-07-28 `_meta` entries to a request's params. A `tools/call` and the
    /// `tasks/*` requests also declare the tasks extension (unless the policy is
    /// [`TaskPolicy::Never`]): a server may then answer the call with a task, which the
    /// client follows.
    pub(super) fn stamp(&self, method: &str, params: Value, log_level: Option<&str>) -> Value {
        let Some(stamp) = &self.stamp else {
            return params;
        };
        let tasks =
            self.tasks_extension && (method == methods::TOOLS_CALL || method.starts_with("tasks/"));
        let mut params = match params {
            Value::Object(object) => object,
            _ => Map::new(),
        };
        let meta = params.entry("_meta").or_insert_with(|| json!({}));
        // Capabilities the params declare already are a caller's own, passed on for its
        // client (a gateway's front client): kept as they are, the tasks extension declared
        // only when that client did (so a task comes back only to a client that follows it).
        let passed_on = meta
            .get(META_CLIENT_CAPABILITIES)
            .is_some_and(Value::is_object);
        let tasks = tasks && !passed_on;
        if let Some(meta) = meta.as_object_mut() {
            for (key, value) in stamp {
                // Capabilities the params declare already are a caller's own, passed on for
                // its client (a gateway's front client): kept.
                if key == META_CLIENT_CAPABILITIES && meta.get(key).is_some_and(Value::is_object) {
                    continue;
                }
                meta.insert(key.clone(), value.clone());
            }
            if tasks {
                if let Some(capabilities) = meta
                    .get_mut(META_CLIENT_CAPABILITIES)
                    .and_then(Value::as_object_mut)
                {
                    let extensions = capabilities
                        .entry("extensions")
                        .or_insert_with(|| json!({}));
                    if !extensions.is_object() {
                        *extensions = json!({});
                    }
                    if let Some(extensions) = extensions.as_object_mut() {
                        extensions.insert(super::tasks::TASKS_EXTENSION.into(), json!({}));
                    }
                }
            }
            if let Some(level) = log_level {
                meta.insert(META_LOG_LEVEL.into(), json!(level));
            }
        }
        Value::Object(params)
    }

    /// What the transport needs to know about a request of this session: the version it is
    /// sent under, whether the era is stateless, and the name it targets.
    pub(super) fn frame_meta(&self, method: &str, params: &Value) -> FrameMeta {
        FrameMeta {
            protocol_version: Some(Arc::clone(&self.version)),
            stateless: self.info.era == Era::Stateless,
            target: methods::target_param(method)
                .and_then(|key| params.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned),
            lifecycle: Lifecycle::Ordinary,
            param_headers: Vec::new(),
            ..FrameMeta::default()
        }
    }

    pub(super) fn is_stateless(&self) -> bool {
        self.stamp.is_some()
    }
}

impl McpInner {
    /// The live session, restarting a dead server when the policy allows.
    pub(super) fn session(&self) -> Result<Arc<Session>> {
        let current = self.session.lock().clone();
        if let Some(session) = &current {
            if !session.rpc.is_closed() {
                return Ok(Arc::clone(session));
            }
        }
        let dead_reason = current
            .as_ref()
            .and_then(|session| session.rpc.closed_reason());
        if self.closed_by_caller.load(Ordering::SeqCst) {
            return Err(Error::closed_because(
                "the MCP client was closed by the caller",
            ));
        }
        let Some(policy) = self.config.restart else {
            let mut closed = dead_reason.unwrap_or_else(|| Closed::new("no session"));
            closed
                .reason
                .push_str("; no restart policy is set, so the client stays closed");
            return Err(Error::Closed(Box::new(closed)));
        };
        let mut ledger = self.reconnect.lock();
        // Another caller may have restarted it while we waited for the lock.
        if let Some(session) = self.session.lock().clone() {
            if !session.rpc.is_closed() {
                return Ok(session);
            }
            // Reap the dead one before starting another.
            let _ = session.rpc.close();
        }
        let now = Instant::now();
        while ledger
            .restarts
            .front()
            .is_some_and(|at| now.duration_since(*at) > policy.window)
        {
            ledger.restarts.pop_front();
        }
        if ledger.restarts.len() >= policy.max_restarts as usize {
            return Err(Error::closed_because(format!(
                "the server died {} times within {:?}; not restarting it again",
                ledger.restarts.len(),
                policy.window
            )));
        }
        let backoff = policy
            .initial_backoff
            .saturating_mul(1u32 << ledger.consecutive.min(16))
            .min(policy.max_backoff);
        log::warn!(
            "toolwire: the MCP server is gone ({}); restarting it in {backoff:?}",
            dead_reason.map_or_else(|| "no session".to_owned(), |closed| closed.to_string())
        );
        std::thread::sleep(backoff);
        ledger.restarts.push_back(Instant::now());
        ledger.consecutive += 1;
        let session = Arc::new(self.open_session()?);
        *self.session.lock() = Some(Arc::clone(&session));
        // A new process may offer other tools, or other output schemas.
        self.shared.tools_changed();
        if let Some(handler) = &self.config.on_restart {
            crate::sys::guard("an MCP restart handler", || handler());
        }
        Ok(session)
    }

    pub(super) fn open_session(&self) -> Result<Session> {
        let budget = Budget::new(self.config.connect_timeout);
        let transport = (self.connector)()?;
        let scrubber = transport.scrubber();
        let rpc = Client::with_shared_transport(Arc::clone(&transport), self.rpc_config(scrubber))?;
        let opened = match self.config.mode {
            ProtocolMode::Legacy => budget
                .left(self.config.initialize_timeout)
                .and_then(|timeout| self.handshake(&rpc, timeout)),
            // Without a fallback, discover is the lifecycle itself: as patient as initialize.
            ProtocolMode::Modern => budget
                .left(self.config.initialize_timeout)
                .and_then(|timeout| self.discover(&rpc, timeout)),
            // The probe gets at most half of the budget, so the fallback always has a turn.
            ProtocolMode::Auto => budget
                .half_left(self.config.discover_timeout)
                .and_then(|timeout| self.discover(&rpc, timeout))
                .or_else(|error| {
                    // Authorization failing is no sign of the protocol era: initialize would
                    // meet the same refusal (and ask the user again).
                    if matches!(error, Error::Auth(_)) {
                        return Err(error);
                    }
                    log::debug!(
                        "toolwire: server/discover failed ({error}); falling back to initialize"
                    );
                    let timeout = budget.left(self.config.initialize_timeout)?;
                    self.handshake(&rpc, timeout).or_else(|refused| {
                        // A server that started too slowly for the probe may answer it late
                        // and then serve only 2026-07-28, refusing the handshake with -32022
                        // and the versions it supports: probe again.
                        if refused_for_stateless(&refused) {
                            log::debug!(
                                "toolwire: initialize refused ({refused}); probing server/discover again"
                            );
                            let timeout = budget.left(self.config.initialize_timeout)?;
                            self.discover(&rpc, timeout)
                        } else {
                            Err(refused)
                        }
                    })
                }),
        };
        match opened.map_err(|error| budget.spent(error)) {
            Ok((info, stamp)) => {
                log::debug!(
                    "toolwire: connected to {} {} with protocol {} ({})",
                    info.server.name,
                    info.server.version,
                    info.protocol_version,
                    info.era
                );
                Ok(Session {
                    rpc,
                    transport,
                    tasks_extension: self.config.tasks != TaskPolicy::Never,
                    version: Arc::from(info.protocol_version.as_str()),
                    info,
                    stamp,
                })
            }
            Err(error) => {
                let _ = rpc.close();
                Err(error)
            }
        }
    }

    fn stateless_stamp(&self) -> Map<String, Value> {
        let mut stamp = Map::new();
        stamp.insert(META_PROTOCOL_VERSION.into(), json!(STATELESS_VERSION));
        stamp.insert(
            META_CLIENT_CAPABILITIES.into(),
            self.config.client_capabilities(),
        );
        stamp.insert(
            META_CLIENT_INFO.into(),
            json!({"name": self.config.client_name, "version": self.config.client_version}),
        );
        stamp
    }

    fn discover(
        &self,
        rpc: &Client,
        timeout: Duration,
    ) -> Result<(SessionInfo, Option<Map<String, Value>>)> {
        let stamp = self.stateless_stamp();
        let meta = FrameMeta {
            protocol_version: Some(Arc::from(STATELESS_VERSION)),
            stateless: true,
            ..FrameMeta::default()
        };
        // The probe is answered or abandoned as a whole: never cancelled on the wire.
        let options = CallOptions::new()
            .timeout(timeout)
            .notify_cancel(false)
            .frame_meta(meta);
        let params = json!({"_meta": Value::Object(stamp.clone())});
        let started = Instant::now();
        let result = match rpc.call_with(methods::SERVER_DISCOVER, params.clone(), options.clone())
        {
            // Refused for its version while the server names that very version as supported:
            // ask once more (a new request, so a new id), within what is left of the timeout.
            Err(error) if refused_for_stateless(&error) => {
                log::debug!("toolwire: server/discover was refused ({error}); asking again");
                let left = timeout.saturating_sub(started.elapsed());
                rpc.call_with(
                    methods::SERVER_DISCOVER,
                    params,
                    options.timeout(left.max(Duration::from_millis(1))),
                )?
            }
            other => other?,
        };
        check_result_type(&result)?;
        let supported: Vec<&str> = result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .map(|versions| versions.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !supported.contains(&STATELESS_VERSION) {
            return Err(Error::Protocol(format!(
                "server/discover offers {supported:?}, not {STATELESS_VERSION}"
            )));
        }
        let info = SessionInfo::from_result(Era::Stateless, STATELESS_VERSION.into(), &result);
        Ok((info, Some(stamp)))
    }

    fn handshake(
        &self,
        rpc: &Client,
        timeout: Duration,
    ) -> Result<(SessionInfo, Option<Map<String, Value>>)> {
        let params = json!({
            "protocolVersion": self.config.handshake_version,
            "capabilities": self.config.client_capabilities(),
            "clientInfo": {"name": self.config.client_name, "version": self.config.client_version},
        });
        let open = FrameMeta {
            lifecycle: Lifecycle::Open,
            ..FrameMeta::default()
        };
        // `initialize` must never be cancelled.
        let result = rpc.call_with(
            methods::INITIALIZE,
            params,
            CallOptions::new()
                .timeout(timeout)
                .notify_cancel(false)
                .frame_meta(open),
        )?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Error::Protocol("the initialize result has no protocolVersion".into())
            })?;
        if !HANDSHAKE_VERSIONS.contains(&version) {
            return Err(Error::Protocol(format!(
                "the server chose protocol version {version:?}, which this client does not speak \
                 (it speaks {HANDSHAKE_VERSIONS:?} and {STATELESS_VERSION})"
            )));
        }
        let info = SessionInfo::from_result(Era::Handshake, version.to_owned(), &result);
        let opened = FrameMeta {
            protocol_version: Some(Arc::from(version)),
            lifecycle: Lifecycle::Opened,
            ..FrameMeta::default()
        };
        rpc.notify_with(methods::INITIALIZED, Value::Null, opened)?;
        Ok((info, None))
    }

    /// The JSON-RPC settings with the MCP dialect and the handlers for the server's requests
    /// and notifications; the log messages handed on have the transport's secrets taken out.
    fn rpc_config(&self, scrubber: Scrubber) -> ClientConfig {
        let mut rpc = self.config.rpc.clone();
        rpc.set_dialect(Arc::new(McpDialect));
        let handlers = ServerRequests::from_config(&self.config);
        rpc.set_request_handler(Arc::new(move |request: &Request| {
            handlers.answer(
                &request.method,
                request.params.as_ref().unwrap_or(&Value::Null),
            )
        }));
        // On the reader thread, before any later frame is handled: a `tools/list` reply that
        // follows the notification on the wire can then never be cached as fresh, however busy
        // the dispatch thread is.
        let shared = Arc::clone(&self.shared);
        let in_order = self.config.on_log_in_order.clone();
        let tap_scrubber = scrubber.clone();
        rpc.set_notification_tap(Arc::new(move |notification: &Notification| {
            if let (Some(handler), true) = (&in_order, notification.method == methods::LOG_MESSAGE)
            {
                let mut message = log_message(notification);
                tap_scrubber.scrub_value(&mut message.data);
                message.logger = message.logger.map(|logger| tap_scrubber.scrub(&logger));
                handler(&message);
            }
            if notification.method == methods::TOOLS_LIST_CHANGED {
                shared.tools_changed();
            }
            if notification.method == methods::TASKS_STATUS
                || notification.method == methods::TASKS_NOTIFICATION
            {
                shared.task_changed(notification.params.as_ref());
            }
        }));
        let on_notification = self.config.on_notification.clone();
        let on_log = self.config.on_log.clone();
        rpc.set_notification_handler(Arc::new(move |notification: &Notification| {
            if notification.method == methods::LOG_MESSAGE {
                // Shown and logged: the connection's secrets are taken out first.
                let mut message = log_message(notification);
                scrubber.scrub_value(&mut message.data);
                message.logger = message.logger.map(|logger| scrubber.scrub(&logger));
                forward_to_log(&message);
                if let Some(handler) = &on_log {
                    handler(&message);
                }
            }
            if let Some(handler) = &on_notification {
                handler(notification);
            }
        }));
        rpc
    }
}
