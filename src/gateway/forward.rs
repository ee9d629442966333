//! One front call of a backend's tool, through the gateway's harness: a backend's tool is an
//! [`ImportedTool`] whose run is the forwarded call, so the checks (the arguments against the
//! backend's schema, the integer bound), the session's budget scope, the backend's
//! admission handle (`BUSY`), the retries of an idempotent tool, the result limit (text,
//! blocks and `structuredContent` together) and the audit are the harness's
//! ([`crate::harness::Harness::call_imported`]). The gateway adds the front request's
//! cancellation, progress and deadline, and routes the backend's requests to the client.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use serde_json::Value;

use super::backend::Backend;
use super::Core;
use crate::harness::{BudgetScope, CallSettings, ImportedTool, Outcome, Status};
use crate::mcp::{CallToolResult, Era};
use crate::server::RequestContext;

/// The key of the budget scope all 2026-07-28 front requests share (they have no session).
const STATELESS_SCOPE: &str = "stateless";

/// The number of a front connection's budget scope, kept in its connection state (0 until
/// its first call).
#[derive(Default)]
struct SessionNumber(AtomicU32);

/// A backend's tool as the gateway serves it: its imported tool, named with its front name.
pub(crate) struct FrontTool {
    pub(crate) imported: ImportedTool,
}

/// Runs one front call.
pub(crate) fn call(
    core: &Core,
    backend: &Arc<Backend>,
    tool: &FrontTool,
    context: &RequestContext,
    arguments: &Value,
) -> CallToolResult {
    let mut settings = CallSettings::new()
        .budget(session_scope(core, context))
        .cancel(context.cancel_flag().clone())
        .deadline(context.deadline());
    // Progress goes back only when the front client asked for it (sent a token).
    if let Some(progress) = context.progress().cloned() {
        settings = settings.on_progress(move |done, total, message| {
            progress.report(done, total, message);
        });
    }
    // While it runs, the backend's requests to the client go to this call's front client.
    let entered = backend.enter(context.back_channel());
    let outcome = core
        .harness
        .call_imported(&tool.imported, arguments.clone(), &settings);
    drop(entered);
    if outcome.status == Status::Timeout && context.is_cancelled() {
        core.stats.cancelled(&backend.name);
    } else {
        core.stats.status(&backend.name, outcome.status);
    }
    front_result(outcome)
}

/// The budget scope of the front request's session: one per handshake-era session (a stdio
/// connection, an HTTP session), numbered on the session's first call; every 2026-07-28
/// request shares one (they carry no session).
fn session_scope(core: &Core, context: &RequestContext) -> BudgetScope {
    let key = match context.era() {
        Era::Stateless => STATELESS_SCOPE.to_owned(),
        Era::Handshake => {
            let session = context.connection_state().get::<SessionNumber>();
            let slot = &session.0;
            let mut number = slot.load(Ordering::SeqCst);
            if number == 0 {
                let fresh = core.next_session.fetch_add(1, Ordering::Relaxed) + 1;
                number = match slot.compare_exchange(0, fresh, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(_) => fresh,
                    Err(taken) => taken,
                };
            }
            format!("session-{number}")
        }
    };
    core.scopes.scope(&key)
}

/// The harness's outcome as the front client reads it: the backend's result as it sent it
/// (within the result limit; its `_meta`, annotations and unknown fields kept), or a tool
/// error whose text is the status word and the detail (`"BUSY: …"`, `"BUDGET: …"`). The one
/// place a harness outcome becomes the front answer.
fn front_result(outcome: Outcome) -> CallToolResult {
    match outcome.mcp_result {
        Some(result) => *result,
        None => CallToolResult::error(outcome.model_text()),
    }
}
