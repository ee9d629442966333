//! The 2026-07-28 tasks extension through the gateway, for backends that offer it.
//!
//! A 2026-07-28 front client's `tools/call` goes to the backend with the client's own
//! capabilities (the harness runs it, one call for the budget and the audit): when they
//! declare the extension, the backend may answer with a task (`resultType: "task"`), which
//! the gateway passes on as it came, its `taskId` sealed: the backend's name and its task id
//! signed with the front server's state keys, for the front request's caller, valid for the
//! task's `ttlMs` (at most [`MAX_SEALED_TTL`]). So a front client reaches only the task its
//! call created, on the backend that created it, and the gateway keeps nothing per task.
//! `tasks/get`, `tasks/update` and `tasks/cancel` with a sealed id go to that backend with
//! its own id (the other params as sent), and the answer comes back with the sealed id in
//! place of the backend's. An id the gateway did not seal is the front server's own to
//! answer (an unknown task, -32602). Polls are not tool calls: they spend no budget.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::{catalog, Core};
use crate::client::CallOptions;
use crate::mcp::CallToolResult;
use crate::server::{HandlerError, RequestContext};

/// The longest a sealed task id is honoured, whatever the backend's `ttlMs` says (or when it
/// says none): a day.
pub(crate) const MAX_SEALED_TTL: Duration = Duration::from_secs(24 * 3600);

/// A backend's `CreateTaskResult`, its task id sealed for the front client; `None` for any
/// other result.
pub(super) fn passed_on(
    core: &Core,
    server: &str,
    context: &RequestContext,
    result: &CallToolResult,
) -> Option<CallToolResult> {
    if result.raw.get("resultType").and_then(Value::as_str) != Some("task") {
        return None;
    }
    let mut raw = result.raw.clone();
    let task = raw.get("taskId").and_then(Value::as_str)?.to_owned();
    let sealed = seal(core, server, context, &task, &raw);
    raw["taskId"] = Value::String(sealed);
    Some(CallToolResult {
        raw,
        ..CallToolResult::default()
    })
}

fn seal(core: &Core, server: &str, context: &RequestContext, task: &str, raw: &Value) -> String {
    let ttl = raw
        .get("ttlMs")
        .and_then(Value::as_u64)
        .map_or(MAX_SEALED_TTL, Duration::from_millis)
        .min(MAX_SEALED_TTL);
    core.server.seal_task(context, server, task, ttl)
}

/// Has the front server send `tasks/*` requests with a sealed id to their backends (and
/// declare the extension to 2026-07-28 front clients), when a started backend offers the
/// extension, or with `every` (backends that join later may).
pub(super) fn serve(core: &Arc<Core>, every: bool) {
    let offered = every
        || core.backends.read().values().any(|backend| {
            backend
                .client()
                .and_then(|client| client.session_info().ok())
                .is_some_and(|info| {
                    !info.capabilities["extensions"][crate::mcp::TASKS_EXTENSION].is_null()
                })
        });
    if !offered {
        return;
    }
    let weak = Arc::downgrade(core);
    core.server
        .set_forwarded_tasks(move |context, method, params| {
            let core = weak.upgrade()?;
            let sealed = params.get("taskId").and_then(Value::as_str)?;
            let (server, task) = core.server.open_task(context, sealed)?;
            Some(forward(
                &core, context, method, params, &server, &task, sealed,
            ))
        });
}

fn forward(
    core: &Core,
    context: &RequestContext,
    method: &str,
    params: &Value,
    server: &str,
    task: &str,
    sealed: &str,
) -> Result<Value, HandlerError> {
    let backend = core.backends.read().get(server).cloned().ok_or_else(|| {
        HandlerError::invalid_params(format!(
            "unknown task: the server {server:?} that ran it is not served now"
        ))
    })?;
    let client = backend.client().ok_or_else(|| {
        HandlerError::internal(format!(
            "the server {server:?} is not connected, so {method} cannot be answered"
        ))
    })?;
    // The params as sent, but the front request's own `_meta` (the backend's client stamps
    // its own) and with the backend's task id.
    let mut sent: Map<String, Value> = params.as_object().cloned().unwrap_or_default();
    sent.remove("_meta");
    sent.insert("taskId".into(), Value::String(task.to_owned()));
    let left = context.deadline().saturating_duration_since(Instant::now());
    let options = CallOptions::new().timeout(left.max(Duration::from_millis(1)));
    let mut answer = client
        .request(method, Value::Object(sent), options)
        .map_err(|error| catalog::passed_on(&backend, method, error))?;
    if let Some(object) = answer.as_object_mut() {
        if object.get("taskId").and_then(Value::as_str) == Some(task) {
            object.insert("taskId".into(), Value::String(sealed.to_owned()));
        }
        // The backend's own `_meta` (its server info) is not the gateway's.
        if let Some(Value::Object(meta)) = object.get_mut("_meta") {
            meta.remove("io.modelcontextprotocol/serverInfo");
        }
    }
    Ok(answer)
}
