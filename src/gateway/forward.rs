//! One front call of a backend's tool, through the gateway's harness: a backend's tool is an
//! [`ImportedTool`] whose run is the forwarded call, so the checks (the arguments against the
//! backend's schema, the integer bound), the caller's budget scope, the backend's
//! admission handle (`BUSY`), the retries of an idempotent tool, the result limit (text,
//! blocks and `structuredContent` together) and the audit are the harness's
//! ([`crate::harness::Harness::call_imported`]). The gateway adds the front request's
//! cancellation, progress and deadline, and routes the backend's requests to the client
//! (for a 2026-07-28 front client, through bridged input rounds: [`super::bridge`]).

use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::Value;

use super::backend::Backend;
use super::{bridge, rounds, tasks, Core};
use crate::harness::{BudgetScope, BudgetScopes, CallSettings, ImportedTool, Outcome, Status};
use crate::mcp::CallToolResult;
use crate::server::{HandlerError, RequestContext, ToolAccess};

/// Lets the policy's `scopes` and `subjects` decide, per authenticated front caller, which
/// tools are listed to them and which they may call ([`crate::server::Server::set_tool_access`]);
/// a tool no backend owns (one added to the front server, or a name not served) answers to
/// the top level's keys only.
pub(super) fn decide_access(core: &Arc<Core>) {
    let weak = Arc::downgrade(core);
    core.server.set_tool_access(move |front, caller| {
        let Some(core) = weak.upgrade() else {
            return ToolAccess::Hidden;
        };
        let owner = core.owners.read().get(front).cloned();
        match owner {
            Some((backend, tool)) => core.policy.decide(&backend, &tool, Some(caller)),
            None => core.policy.decide_top(caller),
        }
    });
}

/// The number of a front connection without an address (stdio, in memory), kept in its
/// connection state (0 until its first call).
#[derive(Default)]
struct ConnectionNumber(AtomicU64);

/// Who a front call is counted against: the key of its budget scope. An authenticated
/// caller first (a token's subject, whatever address or connection it comes from), else the
/// network or connection it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Caller {
    /// The subject of the front request's access token (`sub`, or a static token's
    /// `subject`), with the issuer that vouched for it: every session, connection and address
    /// of that caller counts here, and callers behind one address count apart.
    Subject {
        issuer: Option<String>,
        subject: String,
    },
    /// A client over HTTP, by the network it calls from: an IPv4 address, or an IPv6
    /// address's /64 network (one host's usual share, so that rotating addresses inside it
    /// starts nothing over). Every session and request from there counts here.
    Network(IpAddr),
    /// A front connection without an address (the stdio connection, one in memory): both
    /// eras' requests on it.
    Connection(u64),
}

impl Caller {
    /// The caller of a call from `address`.
    fn at(address: IpAddr) -> Caller {
        Caller::Network(match address {
            IpAddr::V4(v4) => IpAddr::V4(v4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                // A dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d.
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let network = u128::from(v6) & !((1u128 << 64) - 1);
                    IpAddr::V6(Ipv6Addr::from(network))
                }
            },
        })
    }

    fn key(&self) -> String {
        match self {
            Caller::Network(IpAddr::V4(v4)) => format!("address {v4}"),
            Caller::Network(IpAddr::V6(v6)) => format!("network {v6}/64"),
            Caller::Connection(number) => format!("connection {number}"),
            Caller::Subject {
                issuer: Some(issuer),
                subject,
            } => format!("subject {subject:?} of {issuer}"),
            Caller::Subject {
                issuer: None,
                subject,
            } => format!("subject {subject:?}"),
        }
    }
}

/// A backend's tool as the gateway serves it: its imported tool, named with its front name.
pub(crate) struct FrontTool {
    pub(crate) imported: ImportedTool,
}

/// Runs one front call: its result, or (for a 2026-07-28 front client) the backend's input
/// round passed on ([`super::rounds`]), or its request bridged into one ([`super::bridge`]).
pub(crate) fn call(
    core: &Core,
    backend: &Arc<Backend>,
    tool: &FrontTool,
    context: &RequestContext,
    arguments: &Value,
) -> Result<CallToolResult, HandlerError> {
    let round = rounds::round_of(context, &backend.name)?;
    // The retry of a bridged round: the call is running already, held for this answer.
    if let (Some(round), Some(held)) = (&round, bridge::held_of(context)) {
        return bridge::resume(core, backend, tool, context, round, held);
    }
    let mut settings = CallSettings::new()
        .budget(caller_scope(core, context))
        .cancel(context.cancel_flag().clone())
        .deadline(context.deadline())
        .pass_rpc_errors();
    // The harness's `execute_tool` span, and under it the request to the backend, are
    // children of the front request's span.
    if let Some(parent) = context.trace_context() {
        settings = settings.trace_parent(parent.clone());
    }
    if let Some(round) = &round {
        settings = settings
            .call_id(round.call_id.clone())
            .pass_input_rounds(round.fields.clone());
        if round.continuing {
            settings = settings.continuing();
        }
    }
    // Progress goes back only when the front client asked for it (sent a token).
    if let Some(progress) = context.progress().cloned() {
        settings = settings.on_progress(move |done, total, message| {
            progress.report(done, total, message);
        });
    }
    // A handshake-era backend asks a 2026-07-28 front client through bridged rounds.
    if let Some(round) = round.as_ref().filter(|round| !round.continuing) {
        if bridge::bridges(backend) {
            let arguments = arguments.clone();
            return bridge::start(core, backend, tool, context, arguments, settings, round);
        }
    }
    // While it runs, the backend's requests to the client go to this call's front client.
    let entered = backend.enter(context.back_channel(), None);
    let outcome = core
        .harness
        .call_imported(&tool.imported, arguments.clone(), &settings);
    drop(entered);
    finish(core, backend, round.as_ref(), context, outcome)
}

/// The front answer of a call's outcome (the one place for both a call run here and a
/// bridged one): the backend's JSON-RPC error, its input round passed on, or its result, with
/// the stats counted.
pub(super) fn finish(
    core: &Core,
    backend: &Backend,
    round: Option<&rounds::Round>,
    context: &RequestContext,
    outcome: Outcome,
) -> Result<CallToolResult, HandlerError> {
    // A refusal by the harness (no result from the backend) is recorded by its status word,
    // though the front client reads it as a tool's error result.
    if outcome.mcp_result.is_none() && outcome.status != Status::Ok {
        context.set_trace_error_type(outcome.status.as_str());
    }
    // The backend's JSON-RPC error goes on as it came: code, message and data.
    if let Some(error) = outcome
        .mcp_result
        .as_ref()
        .and_then(|result| result.rpc_error())
    {
        core.stats.status(&backend.name, outcome.status);
        return Err(HandlerError::Rpc(error));
    }
    if let (Some(round), Some(result)) = (round, &outcome.mcp_result) {
        if let Some(input) = rounds::passed_on(&backend.name, round, &result.raw) {
            // Counted in the stats when the call ends, with its last round.
            return Err(HandlerError::InputRequired(input));
        }
        // A task the backend runs the call as: its id sealed for this front client.
        if let Some(task) = tasks::passed_on(core, &backend.name, context, result) {
            core.stats.status(&backend.name, outcome.status);
            return Ok(task);
        }
    }
    if outcome.status == Status::Timeout && context.is_cancelled() {
        core.stats.cancelled(&backend.name);
    } else {
        core.stats.status(&backend.name, outcome.status);
    }
    Ok(front_result(outcome))
}

// Shared state (issue 25).
impl super::GatewayConfig {
    /// The state store several gateway instances share (such as a
    /// [`crate::server::RedisStore`]): each caller's budget is then one count in it, whichever
    /// instance the caller reaches ([Budgets](super#budgets)), and the front server's tasks
    /// and events go through it ([`crate::server::ServerConfig::state_store`]). A call that
    /// finds the store down is answered `BUSY` saying so, with nothing sent. Defaults to
    /// none: budgets are this process's.
    pub fn state_store(mut self, store: Arc<dyn crate::server::StateStore>) -> Self {
        self.state_store = Some(store);
        self
    }
}

/// The front callers' budgets: the policy's limit and window per caller, counted in the
/// shared store when there is one.
pub(crate) fn caller_scopes(
    policy: &super::Policy,
    store: Option<&Arc<dyn crate::server::StateStore>>,
) -> BudgetScopes {
    let scopes = BudgetScopes::with_window(
        policy.caller_budget(),
        policy.window(),
        super::MAX_CALLER_BUDGETS,
    );
    match store.filter(|store| store.shared()) {
        Some(store) => scopes.shared(Arc::new(crate::server::StoreCounter::new(Arc::clone(
            store,
        )))),
        None => scopes,
    }
}

/// The budget scope of the front request's caller.
fn caller_scope(core: &Core, context: &RequestContext) -> BudgetScope {
    core.scopes.scope(&caller(core, context).key())
}

/// Who the front request is counted against: its authenticated subject when it has one;
/// else over HTTP the network it came from (for a
/// handshake-era session, the one that opened it), so that no new session or connection
/// starts a count over; else its connection, numbered on its first call.
fn caller(core: &Core, context: &RequestContext) -> Caller {
    if let Some(caller) = context.caller() {
        return Caller::Subject {
            issuer: caller.issuer().map(str::to_owned),
            subject: caller.subject().to_owned(),
        };
    }
    if let Some(address) = context.peer_address() {
        return Caller::at(address.ip());
    }
    let connection = context.connection_state().get::<ConnectionNumber>();
    let slot = &connection.0;
    let mut number = slot.load(Ordering::SeqCst);
    if number == 0 {
        let fresh = core.next_connection.fetch_add(1, Ordering::Relaxed) + 1;
        number = match slot.compare_exchange(0, fresh, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => fresh,
            Err(taken) => taken,
        };
    }
    Caller::Connection(number)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_are_keyed_by_ipv4_address_and_ipv6_network() {
        let at = |text: &str| Caller::at(text.parse().unwrap());
        assert_eq!(at("192.0.2.7").key(), "address 192.0.2.7");
        assert_ne!(at("192.0.2.7"), at("192.0.2.8"));
        // An IPv4 client of a dual-stack listener is the same caller as over IPv4.
        assert_eq!(at("::ffff:192.0.2.7"), at("192.0.2.7"));
        // Addresses inside one /64 are one caller; the next /64 is another.
        assert_eq!(
            at("2001:db8:1:2::1"),
            at("2001:db8:1:2:ffff:ffff:ffff:ffff")
        );
        assert_eq!(at("2001:db8:1:2::1").key(), "network 2001:db8:1:2::/64");
        assert_ne!(at("2001:db8:1:2::1"), at("2001:db8:1:3::1"));
        assert_eq!(at("::1").key(), "network ::/64");
        assert_eq!(Caller::Connection(3).key(), "connection 3");
    }
}
