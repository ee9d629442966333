//! Tools: the cached list (invalidated by `list_changed`), output validation against a tool's
//! `outputSchema`, and tool calls in flight.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::call::ToolCall;
use super::config::TaskPolicy;
use super::requests::Rounds;
use super::result::CallToolResult;
use super::tool_types::{TaskSupport, Tool};
use super::types::Era;
use super::{methods, McpClient, Session};
use crate::error::{Error, Result, SchemaError};
use crate::schema::{Schema, SchemaViolation};

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rounds")
            .field("kept", &self.params.is_some())
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

/// The params of `tools/call`: the name and the arguments, which must serialize to a JSON
/// object (or nothing). The arguments' tree is built once, here, and moved into the params
/// (`json!` would serialize it once more).
pub(super) fn tool_params(name: &str, arguments: impl Serialize) -> Result<Value> {
    let arguments = serde_json::to_value(arguments).map_err(|error| {
        Error::Config(format!(
            "the arguments of tool `{name}` cannot be serialized: {error}"
        ))
    })?;
    let arguments = match arguments {
        Value::Null => Value::Object(Map::new()),
        object @ Value::Object(_) => object,
        _ => {
            return Err(Error::Config(format!(
                "the arguments of tool `{name}` must be a JSON object"
            )))
        }
    };
    let mut params = Map::new();
    params.insert("name".into(), Value::String(name.to_owned()));
    params.insert("arguments".into(), arguments);
    Ok(Value::Object(params))
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
    /// has no such headers), from the tool list when it is known. A call made before any
    /// listing sends none; a server that requires them answers -32020, and the call lists
    /// the tools and is sent once more with them (see `ToolCall`).
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
        let cache = self.inner.shared.tools.lock();
        if let Some((_, problem)) = cache.rejected.iter().find(|(rejected, _)| rejected == name) {
            return Err(Error::Protocol(format!(
                "tool `{name}` was left out of the tool list: {problem}"
            )));
        }
        let arguments = params.get("arguments").unwrap_or(&Value::Null);
        Ok(cache
            .tools
            .as_ref()
            .and_then(|tools| tools.iter().find(|tool| tool.name == name))
            .map(|tool| super::headers::values(tool.param_headers(), arguments))
            .unwrap_or_default())
    }

    pub(super) fn start_tool_call(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: crate::client::CallOptions,
    ) -> Result<ToolCall> {
        self.start_tool_rounds(name, arguments, options, None)
    }

    /// A tool call whose 2026-07-28 input rounds are handed back rather than answered, when
    /// `passed` is given: its fields (`inputResponses`, `requestState` of a retry) are added
    /// to the first request's params (in a 2026-07-28 session only).
    pub(super) fn start_tool_rounds(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: crate::client::CallOptions,
        passed: Option<Map<String, Value>>,
    ) -> Result<ToolCall> {
        let session = self.inner.session()?;
        let mut params = tool_params(name, arguments)?;
        let pass_rounds = passed.is_some();
        if let (Some(fields), Value::Object(object)) = (passed, &mut params) {
            if session.is_stateless() {
                merge_params(object, fields);
            }
        }
        let headers = self.param_headers(&session, name, &params)?;
        if self.runs_as_task(&session, name) {
            let ttl = u64::try_from(self.inner.config.task_ttl.as_millis()).unwrap_or(u64::MAX);
            params["task"] = json!({"ttl": ttl});
        }
        let (stamped, options, rounds) =
            self.inner
                .prepare(&session, methods::TOOLS_CALL, params, options, headers);
        ToolCall::start(self, name, session, stamped, options, rounds).map(|mut call| {
            call.pass_rounds = pass_rounds;
            call
        })
    }

    /// Whether a 2025-11-25 call of `name` asks for a task: the server must offer tasks for
    /// `tools/call`, and the tool must require them (or allow them, with
    /// [`TaskPolicy::WhenAllowed`]). 2026-07-28 servers decide for themselves.
    fn runs_as_task(&self, session: &Session, name: &str) -> bool {
        let policy = self.inner.config.tasks;
        let offered = session.info.era == Era::Handshake
            && policy != TaskPolicy::Never
            && session
                .info
                .capabilities
                .pointer("/tasks/requests/tools/call")
                .is_some_and(Value::is_object);
        if !offered {
            return false;
        }
        let support = match self.list_tools() {
            Ok(tools) => tools
                .iter()
                .find(|tool| tool.name == name)
                .map(Tool::task_support)
                .unwrap_or_default(),
            Err(error) => {
                log::debug!("toolwire: no tool list to learn whether `{name}` is a task: {error}");
                TaskSupport::Forbidden
            }
        };
        match support {
            TaskSupport::Required => true,
            TaskSupport::Optional => policy == TaskPolicy::WhenAllowed,
            _ => false,
        }
    }

    pub(super) fn finish_tool_result(&self, name: &str, value: Value) -> Result<CallToolResult> {
        let result = self.read_tool_result(value)?;
        if self.inner.config.validate_output && !result.is_error {
            self.validate_output(name, &result)?;
        }
        Ok(result)
    }

    /// A result with `isError` is the tool's error text, which the caller shows, logs and
    /// records (the harness's audit, a gateway's transcript and front client): the
    /// connection's secrets are taken out of all of it (every string of its content,
    /// `structuredContent` and `_meta`), here, where every tool result from the server is
    /// read. A successful result is the caller's data and passes as the server sent it.
    pub(super) fn read_tool_result(&self, mut value: Value) -> Result<CallToolResult> {
        if value.get("isError") == Some(&Value::Bool(true)) {
            if let Ok(session) = self.inner.session() {
                session.rpc.scrubber().scrub_value(&mut value);
            }
        }
        CallToolResult::from_value(value)
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
        let generation = self.inner.shared.tools_generation.load(Ordering::SeqCst);
        let tools = match self.list_tools() {
            Ok(tools) => tools,
            Err(error) => {
                // Remembered like "no schema", so that the next calls do not list again: until
                // the list changes (`list_changed`) or is fetched again (`refresh_tools`).
                log::debug!("toolwire: no tool list to validate `{name}` against: {error}");
                let mut cache = self.inner.shared.tools.lock();
                if self.inner.shared.tools_generation.load(Ordering::SeqCst) == generation {
                    cache.schemas.insert(name.to_owned(), Ok(None));
                }
                return Ok(None);
            }
        };
        let source = tools
            .iter()
            .find(|tool| tool.name == name)
            .map(Tool::output_schema)
            .transpose()
            .map(Option::flatten);
        let compiled = match source {
            Ok(None) => Ok(None),
            // Declared but unusable: the results are not passed unchecked.
            Err(error) => {
                log::warn!("toolwire: {error}");
                Err(format!(
                    "the results of tool `{name}` cannot be checked: {}",
                    unprefixed(&error)
                ))
            }
            Ok(Some(source)) => Schema::compile(&source)
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

/// An error's message without the "protocol error: " its `Display` starts with.
fn unprefixed(error: &Error) -> String {
    match error {
        Error::Protocol(message) => message.clone(),
        other => other.to_string(),
    }
}

/// Adds `fields` to request params: a `_meta` object's entries join the params' own, every
/// other field replaces the params' field of its name. For a proxy that passes a retry's
/// input-round fields (`inputResponses`, `requestState`) on with the params it forwards.
pub fn merge_params(params: &mut Map<String, Value>, fields: Map<String, Value>) {
    for (key, value) in fields {
        match (key.as_str(), value, params.get_mut("_meta")) {
            ("_meta", Value::Object(entries), Some(Value::Object(meta))) => meta.extend(entries),
            (_, value, _) => {
                params.insert(key, value);
            }
        }
    }
}
