//! Requests as MCP sends them: stamped for their era, followed through 2026-07-28 input rounds,
//! paged; and the answers to what the server asks of the client (roots, sampling,
//! elicitation, log messages).

use serde_json::{json, Map, Value};

use super::config::{ElicitationHandler, McpConfig, RootsHandler, SamplingHandler};
use super::session::refused_for_stateless;
use super::types::{ElicitRequest, LogMessage, Root};
use super::{methods, McpInner, Session};
use crate::client::CallOptions;
use crate::error::{Error, Result};
use crate::sys;
use crate::wire::{ErrorCode, ErrorObject, Notification};

pub(super) enum ResultType {
    Complete,
    InputRequired,
    /// A task was created for the request (the 2026-07-28 tasks extension; `tools/call`
    /// only).
    Task,
}

/// Reads `resultType`: absent or "complete" is complete; "input_required" asks for input;
/// anything else is invalid, as the protocol requires.
pub(super) fn check_result_type(result: &Value) -> Result<ResultType> {
    match result.get("resultType") {
        None | Some(Value::Null) => Ok(ResultType::Complete),
        Some(Value::String(kind)) if kind == "complete" => Ok(ResultType::Complete),
        Some(Value::String(kind)) if kind == "input_required" => Ok(ResultType::InputRequired),
        Some(Value::String(kind)) if kind == "task" => Ok(ResultType::Task),
        Some(other) => Err(Error::Protocol(format!("unknown resultType {other}"))),
    }
}

/// What asking again needs: 2026-07-28 asks again with the same params plus the answers (and
/// a stateless server may refuse a first request for its version or headers, which is sent
/// once more), so the params and the frame's options are kept only in that era. A handshake
/// session keeps only the call's deadlines (for a task the call may become): nothing copied,
/// no `Arc` cloned. In a 2026-07-28 session `params` is filled by whoever sends the first
/// request, with the params as sent (stamped: stamping them again gives the same), handed
/// back by `Client::start_keeping` rather than copied before the send.
pub(super) struct Rounds {
    pub(super) params: Option<Value>,
    pub(super) options: CallOptions,
    pub(super) level: Option<String>,
    /// The request's client span ([`super::traced`]), when traces are recorded: ended when
    /// the answer is read.
    pub(super) span: Option<crate::telemetry::Span>,
}

impl McpInner {
    /// Stamps params for the session's era and sets the frame metadata; returns what the
    /// input rounds need to ask again.
    pub(super) fn prepare(
        &self,
        session: &Session,
        method: &str,
        mut params: Value,
        options: CallOptions,
        param_headers: Vec<(String, String)>,
    ) -> (Value, CallOptions, Rounds) {
        let span = super::traced::client_span(session, method, &mut params);
        let mut meta = session.frame_meta(method, &params);
        meta.param_headers = param_headers;
        let options = options.frame_meta(meta);
        if !session.is_stateless() {
            // Nothing to stamp, no rounds to follow.
            let rounds = Rounds {
                params: None,
                options: options.deadlines(),
                level: None,
                span,
            };
            return (params, options, rounds);
        }
        // The level travels in every request's `_meta` in this era.
        let level = self.log_level.lock().clone();
        let rounds = Rounds {
            params: None,
            options: options.clone(),
            level: level.clone(),
            span,
        };
        let stamped = session.stamp(method, params, level.as_deref());
        (stamped, options, rounds)
    }

    pub(super) fn request(
        &self,
        method: &str,
        params: Value,
        options: CallOptions,
    ) -> Result<Value> {
        self.request_with(method, params, options, Vec::new())
    }

    /// [`McpInner::request`] with parameters mirrored into headers.
    pub(super) fn request_with(
        &self,
        method: &str,
        params: Value,
        options: CallOptions,
        param_headers: Vec<(String, String)>,
    ) -> Result<Value> {
        let session = self.session()?;
        let (stamped, options, mut rounds) =
            self.prepare(&session, method, params, options, param_headers);
        let span = rounds.span.take();
        let outcome = self
            .send_first(&session, method, stamped, &options, &mut rounds)
            .and_then(|result| self.follow_rounds(&session, method, &rounds, result));
        super::traced::end(span, outcome.as_ref());
        outcome
    }

    /// One request, its `input_required` result handed back rather than answered.
    pub(super) fn request_passing(
        &self,
        method: &str,
        params: Value,
        options: CallOptions,
    ) -> Result<Value> {
        let session = self.session()?;
        let (stamped, options, mut rounds) =
            self.prepare(&session, method, params, options, Vec::new());
        let result = self.send_first(&session, method, stamped, &options, &mut rounds)?;
        check_result_type(&result)?;
        Ok(result)
    }

    /// [`McpInner::send_stamped`] for a request's first round: in a 2026-07-28 session the
    /// params as sent are kept in `rounds`, without a copy.
    fn send_first(
        &self,
        session: &Session,
        method: &str,
        params: Value,
        options: &CallOptions,
        rounds: &mut Rounds,
    ) -> Result<Value> {
        if !session.is_stateless() {
            return session.rpc.call_with(method, params, options.clone());
        }
        let (handle, kept) = session.rpc.start_keeping(method, params, options.clone())?;
        match handle.wait() {
            Err(error) if refused_for_stateless(&error) => {
                log::debug!("toolwire: `{method}` was refused ({error}); sending it again");
                let (handle, kept) = session.rpc.start_keeping(method, kept, options.clone())?;
                rounds.params = Some(kept);
                handle.wait()
            }
            other => {
                rounds.params = Some(kept);
                other
            }
        }
    }

    /// Sends requests together: each stamped for the session's era, as one JSON-RPC batch in a
    /// 2025-03-26 session (the only revision that has batches), otherwise each as its own
    /// request, all in flight at once. A stateless server's version refusal of one of them
    /// is answered as [`McpInner::send_stamped`] does. Results come back in order.
    pub(super) fn batch(
        &self,
        requests: Vec<(String, Value)>,
        options: CallOptions,
    ) -> Result<Vec<Result<Value>>> {
        let session = self.session()?;
        let prepared: Vec<(String, Value, CallOptions, Rounds)> = requests
            .into_iter()
            .map(|(method, params)| {
                let (stamped, options, mut rounds) =
                    self.prepare(&session, &method, params, options.clone(), Vec::new());
                if session.is_stateless() {
                    // Each request of the batch is sent from a copy anyway (below).
                    rounds.params = Some(stamped.clone());
                }
                (method, stamped, options, rounds)
            })
            .collect();
        if session.info.protocol_version == "2025-03-26" {
            let entries = prepared
                .iter()
                .map(
                    |(method, params, _, _)| crate::client::BatchEntry::Request {
                        method: method.clone(),
                        params: params.clone(),
                    },
                )
                .collect();
            let results = session.rpc.batch(entries, options)?;
            return Ok(results
                .into_iter()
                .zip(prepared)
                .map(|(result, (method, _, _, mut rounds))| {
                    let span = rounds.span.take();
                    let outcome = result
                        .and_then(|value| self.follow_rounds(&session, &method, &rounds, value));
                    super::traced::end(span, outcome.as_ref());
                    outcome
                })
                .collect());
        }
        let mut handles = Vec::with_capacity(prepared.len());
        for (method, params, options, rounds) in prepared {
            let handle = session.rpc.start(&method, params.clone(), options.clone());
            handles.push((method, params, options, rounds, handle));
        }
        Ok(handles
            .into_iter()
            .map(|(method, params, options, mut rounds, handle)| {
                let span = rounds.span.take();
                let result = match handle.and_then(crate::client::CallHandle::wait) {
                    Err(error) if session.is_stateless() && refused_for_stateless(&error) => {
                        log::debug!("toolwire: `{method}` was refused ({error}); sending it again");
                        session.rpc.call_with(&method, params, options)
                    }
                    other => other,
                };
                let outcome =
                    result.and_then(|value| self.follow_rounds(&session, &method, &rounds, value));
                super::traced::end(span, outcome.as_ref());
                outcome
            })
            .collect())
    }

    /// Sends one stamped request and waits. When a 2026-07-28 server refuses it with -32022
    /// while naming the version it was sent under among those it supports (a server may
    /// refuse a client's first request whatever it carries), it is sent once more, as a new
    /// request (so under a new id), with the same version in its header and `_meta`.
    pub(super) fn send_stamped(
        &self,
        session: &Session,
        method: &str,
        params: Value,
        options: &CallOptions,
    ) -> Result<Value> {
        if !session.is_stateless() {
            return session.rpc.call_with(method, params, options.clone());
        }
        match session
            .rpc
            .call_with(method, params.clone(), options.clone())
        {
            Err(error) if refused_for_stateless(&error) => {
                log::debug!("toolwire: `{method}` was refused ({error}); sending it again");
                session.rpc.call_with(method, params, options.clone())
            }
            other => other,
        }
    }

    /// Answers the server's input requests and asks again, a new request (so a new id) each
    /// round, until the result is complete or the rounds run out.
    pub(super) fn follow_rounds(
        &self,
        session: &Session,
        method: &str,
        rounds: &Rounds,
        mut result: Value,
    ) -> Result<Value> {
        // The handlers are cloned only when the server asks for input.
        let mut handlers: Option<ServerRequests> = None;
        for _round in 0..self.config.max_input_rounds {
            match check_result_type(&result)? {
                ResultType::Complete => return Ok(result),
                ResultType::Task if method == methods::TOOLS_CALL => return Ok(result),
                ResultType::Task => {
                    return Err(Error::Protocol(format!(
                        "`{method}` answered with resultType task, which only tools/call may"
                    )))
                }
                ResultType::InputRequired => {
                    let Some(original) = &rounds.params else {
                        return Err(Error::Protocol(format!(
                            "`{method}` answered with resultType input_required, which the handshake era does not have"
                        )));
                    };
                    let responses = handlers
                        .get_or_insert_with(|| ServerRequests::from_config(&self.config))
                        .answer_input_requests(&result)?;
                    let mut retry =
                        match session.stamp(method, original.clone(), rounds.level.as_deref()) {
                            Value::Object(object) => object,
                            _ => Map::new(),
                        };
                    retry.insert("inputResponses".into(), responses);
                    if let Some(state) = result.get("requestState") {
                        retry.insert("requestState".into(), state.clone());
                    }
                    result =
                        self.send_stamped(session, method, Value::Object(retry), &rounds.options)?;
                }
            }
        }
        match check_result_type(&result)? {
            ResultType::Complete | ResultType::Task => Ok(result),
            ResultType::InputRequired => Err(Error::Protocol(format!(
                "`{method}` still needs input after {} rounds",
                self.config.max_input_rounds
            ))),
        }
    }
}

/// The user's handlers for what a server may ask of the client.
#[derive(Clone)]
pub(super) struct ServerRequests {
    roots: Option<RootsHandler>,
    sampling: Option<SamplingHandler>,
    elicitation: Option<ElicitationHandler>,
}

/// The answer to a server request whose handler panicked (the panic is logged).
fn handler_failed(method: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        format!("the client's handler for `{method}` failed"),
    )
}

impl ServerRequests {
    pub(super) fn from_config(config: &McpConfig) -> ServerRequests {
        ServerRequests {
            roots: config.roots.clone(),
            sampling: config.sampling.clone(),
            elicitation: config.elicitation.clone(),
        }
    }

    /// Answers one server request; methods without a handler get -32601 (ping always `{}`).
    /// A handler that panics is answered with -32603.
    pub(super) fn answer(
        &self,
        method: &str,
        params: &Value,
    ) -> std::result::Result<Value, ErrorObject> {
        let what = format!("the {method} handler");
        match (method, &self.roots, &self.sampling, &self.elicitation) {
            (methods::PING, ..) => Ok(json!({})),
            (methods::ROOTS_LIST, Some(roots), _, _) => sys::guard(&what, || roots())
                .map(|roots| json!({"roots": roots.iter().map(Root::to_value).collect::<Vec<_>>()}))
                .ok_or_else(|| handler_failed(method)),
            (methods::SAMPLING_CREATE_MESSAGE, _, Some(sampling), _) => {
                sys::guard(&what, || sampling(params))
                    .unwrap_or_else(|| Err(handler_failed(method)))
            }
            (methods::ELICITATION_CREATE, _, _, Some(elicitation)) => {
                let request = ElicitRequest {
                    message: params
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    requested_schema: params.get("requestedSchema").cloned(),
                    raw: params.clone(),
                };
                sys::guard(&what, || elicitation(&request).to_value())
                    .ok_or_else(|| handler_failed(method))
            }
            (other, ..) => Err(ErrorObject::method_not_found(other)),
        }
    }

    /// Answers every entry of an `InputRequiredResult`'s `inputRequests`.
    pub(super) fn answer_input_requests(&self, result: &Value) -> Result<Value> {
        let requests = result
            .get("inputRequests")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                Error::Protocol("an input_required result has no `inputRequests` object".into())
            })?;
        let mut responses = Map::new();
        for (key, request) in requests {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::Protocol(format!("input request `{key}` has no method")))?;
            let params = request.get("params").cloned().unwrap_or(Value::Null);
            match self.answer(method, &params) {
                Ok(answer) => {
                    responses.insert(key.clone(), answer);
                }
                Err(error) => {
                    return Err(Error::Protocol(format!(
                        "the server asked for `{method}` (input `{key}`), which this client cannot answer: {error}"
                    )))
                }
            }
        }
        Ok(Value::Object(responses))
    }
}

pub(super) fn log_message(notification: &Notification) -> LogMessage {
    let params = notification.params.clone().unwrap_or(Value::Null);
    LogMessage {
        level: params
            .get("level")
            .and_then(Value::as_str)
            .unwrap_or("info")
            .to_owned(),
        logger: params
            .get("logger")
            .and_then(Value::as_str)
            .map(str::to_owned),
        data: params.get("data").cloned().unwrap_or(Value::Null),
    }
}

pub(super) fn forward_to_log(message: &LogMessage) {
    let level = match message.level.as_str() {
        "debug" => log::Level::Debug,
        "info" | "notice" => log::Level::Info,
        "warning" => log::Level::Warn,
        "error" | "critical" | "alert" | "emergency" => log::Level::Error,
        _ => log::Level::Info,
    };
    let logger = message.logger.as_deref().unwrap_or("server");
    log::log!(target: "toolwire::server", level, "[{logger}] {}", message.data);
}
