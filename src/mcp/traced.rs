//! MCP spans by the OpenTelemetry semantic conventions ([`crate::telemetry`]): the client's
//! span of each request it sends, and what client, server and harness share: span names,
//! attributes and `error.type`.

use serde_json::Value;

use super::methods;
use crate::error::Error;
use crate::telemetry::{self, Span, SpanKind};

/// `mcp.method.name`.
pub(crate) const METHOD: &str = "mcp.method.name";
/// `gen_ai.tool.name`.
pub(crate) const TOOL: &str = "gen_ai.tool.name";
/// `gen_ai.prompt.name`.
pub(crate) const PROMPT: &str = "gen_ai.prompt.name";
/// `gen_ai.operation.name`.
pub(crate) const OPERATION: &str = "gen_ai.operation.name";
/// `mcp.protocol.version`.
pub(crate) const PROTOCOL_VERSION: &str = "mcp.protocol.version";
/// `mcp.session.id`.
pub(crate) const SESSION_ID: &str = "mcp.session.id";
/// `jsonrpc.request.id`.
pub(crate) const REQUEST_ID: &str = "jsonrpc.request.id";
/// `rpc.response.status_code`.
pub(crate) const STATUS_CODE: &str = "rpc.response.status_code";
/// `error.type` of a result with `isError`.
pub(crate) const TOOL_ERROR: &str = "tool_error";

/// The span name `{mcp.method.name} {target}` (the tool's or prompt's name), or the method
/// alone, with the target's attribute set.
pub(crate) fn start(
    tracer: &telemetry::Tracer,
    kind: SpanKind,
    method: &str,
    target: Option<&str>,
    parent: Option<&telemetry::SpanContext>,
) -> Span {
    let name = match target {
        Some(target) => format!("{method} {target}"),
        None => method.to_owned(),
    };
    let mut span = tracer.start(name, kind, parent);
    span.set(METHOD, method.to_owned());
    if let Some(target) = target {
        if method == methods::TOOLS_CALL {
            span.set(TOOL, target.to_owned());
            span.set(OPERATION, "execute_tool");
        } else if method == methods::PROMPTS_GET {
            span.set(PROMPT, target.to_owned());
        }
    }
    span
}

/// The low-cardinality target of a request: a `tools/call`'s tool or a `prompts/get`'s
/// prompt (a resource URI is opt-in in the conventions, and not recorded).
pub(crate) fn target(method: &str, params: Option<&Value>) -> Option<String> {
    if method != methods::TOOLS_CALL && method != methods::PROMPTS_GET {
        return None;
    }
    params?.get("name")?.as_str().map(str::to_owned)
}

/// Marks `span` by a request's outcome: a JSON-RPC error by its code (also
/// `rpc.response.status_code`), a result with `isError` as `tool_error`, a local failure by
/// its kind (`timeout`, `cancelled`, `closed`, `busy`, or `_OTHER`).
pub(crate) fn finish(span: &mut Span, outcome: Result<&Value, &Error>) {
    match outcome {
        Ok(result) => {
            if result.get("isError").and_then(Value::as_bool) == Some(true) {
                span.fail(TOOL_ERROR, "the tool reported an error");
            }
        }
        Err(error) => fail(span, error),
    }
}

/// `jsonrpc.request.id`: the id in string form.
pub(crate) fn request_id(id: &crate::wire::RequestId) -> String {
    match id {
        crate::wire::RequestId::Number(number) => number.to_string(),
        crate::wire::RequestId::String(text) => text.clone(),
    }
}

/// Ends a client span, when there is one, by the request's outcome.
pub(super) fn end(span: Option<Span>, outcome: Result<&Value, &Error>) {
    if let Some(mut span) = span {
        finish(&mut span, outcome);
    }
}

/// Marks `span` failed by `error`.
pub(crate) fn fail(span: &mut Span, error: &Error) {
    match error {
        Error::Rpc(object) => {
            let code = object.code.0.to_string();
            span.set(STATUS_CODE, code.clone());
            span.fail(code, object.message.clone());
        }
        Error::Timeout { .. } => span.fail("timeout", "the request timed out"),
        Error::Cancelled { .. } => span.fail("cancelled", "the request was cancelled"),
        Error::Closed(_) => span.fail("closed", "the connection closed"),
        Error::Busy { .. } => span.fail("busy", "too many requests in flight"),
        _ => span.fail("_OTHER", "the request failed"),
    }
}

/// The client's span of a request it is about to send, under this thread's current context
/// ([`telemetry::enter`]), its context written into `params._meta`. `None` (and `params`
/// untouched) when there is no tracer.
pub(super) fn client_span(
    session: &super::Session,
    method: &str,
    params: &mut Value,
) -> Option<Span> {
    let tracer = telemetry::tracer()?;
    let target = target(method, Some(params));
    let parent = telemetry::current();
    let mut span = start(
        tracer,
        SpanKind::Client,
        method,
        target.as_deref(),
        parent.as_ref(),
    );
    span.set(PROTOCOL_VERSION, session.version.to_string());
    // Only the handshake era has sessions.
    if session.info.era == super::types::Era::Handshake {
        if let Some(id) = session.transport.session_id() {
            span.set(SESSION_ID, id);
        }
    }
    telemetry::to_meta(params, span.context());
    Some(span)
}
