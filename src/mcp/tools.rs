//! Tools: the cached list (invalidated by `list_changed`), output validation against a tool's
//! `outputSchema`, and tool calls in flight.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Value};

use super::requests::{check_result_type, ResultType, Rounds};
use super::session::refused_for_stateless;
use super::tool_types::{CallToolResult, Tool};
use super::{methods, McpClient, Session};
use crate::client::CallHandle;
use crate::error::{Error, Result, SchemaError};
use crate::schema::{Schema, SchemaViolation};
use crate::wire::RequestId;

/// A tool call in flight, from [`McpClient::start_tool`]. It follows 2026-07-28 input rounds
/// when waited on, as [`McpClient::call_tool`] does.
#[derive(Debug)]
pub struct ToolCall {
    client: McpClient,
    name: String,
    handle: CallHandle,
    session: Arc<Session>,
    rounds: Rounds,
}

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rounds")
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl ToolCall {
    /// Waits for the result, answers the server's input requests when it asks for any (each
    /// round a new request), and checks the result as [`McpClient::call_tool`] does.
    ///
    /// # Errors
    ///
    /// As [`McpClient::call_tool`], plus [`Error::Cancelled`] after a cancel.
    pub fn wait(self) -> Result<CallToolResult> {
        let value = match (self.handle.wait(), &self.rounds.params) {
            // Refused for its version by a server that supports it: once more, as a new
            // request (see `McpInner::send_stamped`).
            (Err(error), Some(original)) if refused_for_stateless(&error) => {
                log::debug!(
                    "toolwire: `{}` was refused ({error}); sending it again",
                    self.name
                );
                let params = self
                    .session
                    .stamp(original.clone(), self.rounds.level.as_deref());
                self.session.rpc.call_with(
                    methods::TOOLS_CALL,
                    params,
                    self.rounds.options.clone(),
                )?
            }
            (outcome, _) => outcome?,
        };
        let value = match check_result_type(&value)? {
            ResultType::Complete => value,
            ResultType::InputRequired => {
                self.client
                    .inner
                    .follow_rounds(&self.session, self.rounds, value)?
            }
        };
        self.client.finish_tool_result(&self.name, value)
    }

    /// Cancels the call: the server is told; progress and a response that arrive later are
    /// ignored. Returns false when it had already completed.
    pub fn cancel(&self) -> bool {
        self.handle.cancel()
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The request's id (of the first round).
    pub fn id(&self) -> &RequestId {
        self.handle.id()
    }

    /// The call's current deadline (of the first round).
    pub fn deadline(&self) -> Instant {
        self.handle.deadline()
    }

    /// The underlying call handle, to poll or select over. A result obtained through it has
    /// not been checked: pass it to [`McpClient::check_tool_result`].
    pub fn handle(&mut self) -> &mut CallHandle {
        &mut self.handle
    }
}

/// The params of `tools/call`: the name and the arguments, which must serialize to a JSON
/// object (or nothing).
pub(super) fn tool_params(name: &str, arguments: impl Serialize) -> Result<Value> {
    let arguments = serde_json::to_value(arguments).map_err(|error| {
        Error::Config(format!(
            "the arguments of tool `{name}` cannot be serialized: {error}"
        ))
    })?;
    let arguments = match arguments {
        Value::Null => json!({}),
        object @ Value::Object(_) => object,
        _ => {
            return Err(Error::Config(format!(
                "the arguments of tool `{name}` must be a JSON object"
            )))
        }
    };
    Ok(json!({"name": name, "arguments": arguments}))
}

impl McpClient {
    /// Fetches the tool list again, ignoring the cache.
    ///
    /// # Errors
    ///
    /// As [`McpClient::list_tools`].
    pub fn refresh_tools(&self) -> Result<Arc<Vec<Tool>>> {
        let shared = &self.inner.shared;
        let generation = shared.tools_generation.load(Ordering::SeqCst);
        let listed = self
            .inner
            .list_all(methods::TOOLS_LIST, "tools")?
            .into_iter()
            .map(Tool::from_raw)
            .collect::<Result<Vec<Tool>>>()?;
        // A tool whose header designations break the rules is left out, so that the others
        // stay usable (SEP-2243): a client must not call it with headers it cannot build.
        let mut rejected = Vec::new();
        let tools: Vec<Tool> = listed
            .into_iter()
            .filter(|tool| match tool.header_problem() {
                Some(problem) => {
                    log::warn!(
                        "toolwire: leaving tool `{}` out of the list: {problem}",
                        tool.name
                    );
                    rejected.push((tool.name.clone(), problem.to_owned()));
                    false
                }
                None => true,
            })
            .collect();
        let tools = Arc::new(tools);
        let mut cache = shared.tools.lock();
        // A list_changed that arrived while we fetched (even before the reply) means this list
        // may already be stale: hand it back, but do not cache it.
        if shared.tools_generation.load(Ordering::SeqCst) == generation {
            cache.tools = Some(Arc::clone(&tools));
            cache.rejected = rejected;
            cache.schemas.clear();
        }
        Ok(tools)
    }

    /// The tools the last listing left out because their `x-mcp-header` designations are
    /// invalid, with the reason for each (they are also logged at warn level when listed).
    pub fn rejected_tools(&self) -> Vec<(String, String)> {
        self.inner.shared.tools.lock().rejected.clone()
    }

    /// The `Mcp-Param-*` values of a call of tool `name` (2026-07-28 only: the handshake era
    /// has no such headers). The tool list is fetched once when it is not known yet, since
    /// the designations are in it.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] for a tool the list left out for invalid designations: it cannot
    /// be called with the headers it asks for.
    pub(super) fn param_headers(
        &self,
        session: &Session,
        name: &str,
        params: &Value,
    ) -> Result<Vec<(String, String)>> {
        if !session.is_stateless() {
            return Ok(Vec::new());
        }
        let tools = match self.list_tools() {
            Ok(tools) => tools,
            Err(error) => {
                log::debug!("toolwire: no tool list for the headers of `{name}`: {error}");
                return Ok(Vec::new());
            }
        };
        if let Some((_, problem)) = self
            .inner
            .shared
            .tools
            .lock()
            .rejected
            .iter()
            .find(|(rejected, _)| rejected == name)
        {
            return Err(Error::Protocol(format!(
                "tool `{name}` was left out of the tool list: {problem}"
            )));
        }
        let arguments = params.get("arguments").unwrap_or(&Value::Null);
        Ok(tools
            .iter()
            .find(|tool| tool.name == name)
            .map(|tool| super::headers::values(tool.param_headers(), arguments))
            .unwrap_or_default())
    }

    pub(super) fn start_tool_call(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: crate::client::CallOptions,
    ) -> Result<ToolCall> {
        let session = self.inner.session()?;
        let params = tool_params(name, arguments)?;
        let headers = self.param_headers(&session, name, &params)?;
        let (stamped, options, rounds) =
            self.inner
                .prepare(&session, methods::TOOLS_CALL, params, options, headers);
        let handle = session.rpc.start(methods::TOOLS_CALL, stamped, options)?;
        Ok(ToolCall {
            client: self.clone(),
            name: name.to_owned(),
            handle,
            session,
            rounds,
        })
    }

    pub(super) fn finish_tool_result(&self, name: &str, value: Value) -> Result<CallToolResult> {
        let result = CallToolResult::from_value(value)?;
        if self.inner.config.validate_output && !result.is_error {
            self.validate_output(name, &result)?;
        }
        Ok(result)
    }

    fn validate_output(&self, name: &str, result: &CallToolResult) -> Result<()> {
        let Some(schema) = self.output_schema(name)? else {
            return Ok(());
        };
        let subject = format!("structuredContent of tool `{name}`");
        let Some(structured) = &result.structured_content else {
            return Err(Error::Schema(Box::new(SchemaError {
                subject,
                violations: vec![SchemaViolation::mismatch(
                    String::new(),
                    "the tool declares an outputSchema but returned no structuredContent",
                )],
            })));
        };
        schema.validate(structured).map_err(|violations| {
            Error::Schema(Box::new(SchemaError {
                subject,
                violations,
            }))
        })
    }

    /// The compiled output schema of a tool, from the tool list (fetched once if needed), or
    /// none when it declares none; remembered either way, so a tool without one costs a map
    /// lookup per call.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] naming the tool when its schema is refused (over the schema bounds,
    /// or not compilable): its results cannot be checked as it promises, so its calls fail;
    /// the other tools work.
    fn output_schema(&self, name: &str) -> Result<Option<Arc<Schema>>> {
        if let Some(known) = self.inner.shared.tools.lock().schemas.get(name) {
            return known.clone().map_err(Error::Protocol);
        }
        let tools = match self.list_tools() {
            Ok(tools) => tools,
            Err(error) => {
                log::debug!("toolwire: no tool list to validate `{name}` against: {error}");
                return Ok(None);
            }
        };
        let source = tools
            .iter()
            .find(|tool| tool.name == name)
            .and_then(|tool| tool.output_schema());
        let compiled = match source {
            None => Ok(None),
            Some(source) => Schema::compile(&source)
                .map(|schema| Some(Arc::new(schema)))
                .map_err(|reason| {
                    log::warn!(
                        "toolwire: the outputSchema of tool `{name}` cannot be used: {reason}"
                    );
                    format!(
                        "the outputSchema of tool `{name}` cannot be used, so its results cannot \
                         be checked: {reason}"
                    )
                }),
        };
        self.inner
            .shared
            .tools
            .lock()
            .schemas
            .insert(name.to_owned(), compiled.clone());
        compiled.map_err(Error::Protocol)
    }
}
