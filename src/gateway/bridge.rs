//! A handshake-era backend's requests to its client, bridged into 2026-07-28 input rounds.
//!
//! A 2026-07-28 front client cannot be sent a request: it is asked for input only with an
//! `input_required` result, and answers by sending its request again with `inputResponses`
//! and the `requestState`. A handshake-era backend asks with ordinary requests
//! (`sampling/createMessage`, `elicitation/create`, `roots/list`) during a call, and waits.
//! So, when a 2026-07-28 front client calls a tool of a handshake-era backend, the gateway
//! runs the call (the harness's one pipeline: checks, budget, admission, retries, audit) on a
//! thread of its own, and the front request waits for either of two events:
//!
//! * the call's outcome, answered as any call's ([`super::forward::finish`]);
//! * a request of the backend: the front request is answered with an input round whose
//!   `inputRequests` hold the backend's request (its method and params as it sent them,
//!   under a key such as `elicitation-1`) and whose `requestState` is the gateway's own
//!   (signed by the front server, bound to the caller, the method and the tool) naming a
//!   *held* call. The backend's request stays open, and so does its call.
//!
//! The retry finds the held call, gives the answer under that key to the waiting backend
//! request as it came (a sampling result, an elicitation's `action` and `content`, the
//! roots), and waits again: for the outcome, or for the backend's next request, which is the
//! next round. A round and its retries are one call: one budget unit, one audit `call_id`.
//!
//! The backend's progress and log messages during the call go to the front request that is
//! waiting on it *now*: the first request until it is answered, then the retry the call was
//! resumed by, until that is answered. Progress goes only when that request asked for it (sent
//! a progress token; the backend is always asked for progress, since a later retry may want
//! it), and log messages at its log level, as for any call. Between a round and its retry no
//! front request waits, so what the backend sends then has nowhere to go: it is dropped, with
//! a debug line (target `toolwire::gateway`).
//!
//! Bounds:
//!
//! * A held backend request waits at most [`GatewayConfig::bridge_round_timeout`] (defaults
//!   to 60 s), and never past the call's own bound (the tool's timeout and the first front
//!   request's deadline). When it passes, the backend's request is answered with an error,
//!   the call is cancelled (the backend is told), and the held call is dropped; a retry that
//!   comes later is refused (-32602) with the advice to start the call again.
//! * At most [`GatewayConfig::max_bridged_rounds`] calls are held at once (defaults to
//!   1,024). Past that the backend's request is answered with an error, its call is
//!   cancelled, and the front request gets a `BUSY` tool error saying so.
//! * A cancelled front request cancels the call and answers the backend's request with an
//!   error; [`super::Gateway::close`] drops every held call the same way.
//!
//! What is not bridged: a backend request outside a tool call (during `prompts/get`,
//! `resources/read`, or none at all) has no front request to answer with a round, and is
//! declined as before; and since a handshake-era request does not say which call it belongs
//! to, a backend with several calls in flight (a held call counts until it ends) cannot have
//! its requests routed, and they are declined ([`super::backend`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{never, select, unbounded, Receiver, Sender};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::backend::Backend;
use super::forward::{finish, FrontTool};
use super::rounds::Round;
use super::{Core, GatewayConfig};
use crate::harness::{CallSettings, CancelFlag, Outcome, Status};
use crate::mcp::{methods, Era};
use crate::server::{
    BackChannel, CallToolResult, HandlerError, InputRequired, LogLevel, ProgressReporter,
    RequestContext,
};
use crate::wire::{ErrorCode, ErrorObject};

/// [`GatewayConfig::bridge_round_timeout`]'s default.
const ROUND_TIMEOUT: Duration = Duration::from_secs(60);
/// [`GatewayConfig::max_bridged_rounds`]'s default.
const MAX_HELD: usize = 1024;
/// [`GatewayConfig::max_bridged_rounds`]'s bound.
const MAX_HELD_BOUND: usize = 65_536;

/// The bounds of bridged rounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    round_timeout: Duration,
    max_held: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            round_timeout: ROUND_TIMEOUT,
            max_held: MAX_HELD,
        }
    }
}

impl Bounds {
    /// Checks them against their documented ranges.
    pub(crate) fn check(&self) -> crate::Result<()> {
        crate::harness::check_bound("the gateway's bridge round timeout", self.round_timeout)?;
        if !(1..=MAX_HELD_BOUND).contains(&self.max_held) {
            return Err(crate::Error::Config(format!(
                "the gateway's bridged rounds must be 1 to {MAX_HELD_BOUND}, not {}",
                self.max_held
            )));
        }
        Ok(())
    }
}

impl GatewayConfig {
    /// How long a handshake-era backend's request, bridged into an input round for a
    /// 2026-07-28 front client, waits for the client's retry (1 ms to 1 hour); never past the
    /// call's own bound. When it passes, the backend's request gets an error and the call is
    /// cancelled. Defaults to 60 s. See [Pass-through](super#pass-through).
    pub fn bridge_round_timeout(mut self, timeout: Duration) -> Self {
        self.bridge.round_timeout = timeout;
        self
    }

    /// The most calls held open at once for bridged input rounds (1 to 65,536); past it a
    /// backend's request is answered with an error and the front call gets `BUSY`. Defaults
    /// to 1,024.
    pub fn max_bridged_rounds(mut self, calls: usize) -> Self {
        self.bridge.max_held = calls;
        self
    }
}

/// What the thread of a bridged call tells the front request waiting on it.
enum Event {
    /// The call ended.
    Done(Box<Outcome>),
    /// The backend asks its client; the answer goes to `reply`.
    Ask {
        method: String,
        params: Value,
        reply: Sender<Result<Value, String>>,
    },
}

/// The front request a bridged call's progress and log messages go to: the one waiting on
/// the call now, if any.
struct Front {
    channel: BackChannel,
    /// When that request asked for progress.
    progress: Option<ProgressReporter>,
}

/// A bridged call's [`Front`], swapped as its front requests come and are answered.
type Current = Arc<Mutex<Option<Arc<Front>>>>;

/// A front request waiting on a bridged call: its [`Front`] is the call's current one until
/// this is dropped (when the request is answered).
struct Answering {
    current: Current,
    front: Arc<Front>,
}

impl Answering {
    fn start(current: &Current, context: &RequestContext) -> Answering {
        let front = Arc::new(Front {
            channel: context.back_channel(),
            progress: context.progress().cloned(),
        });
        *current.lock() = Some(Arc::clone(&front));
        Answering {
            current: Arc::clone(current),
            front,
        }
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        let mut current = self.current.lock();
        // Only its own: a later request's is not this one's to clear.
        if current
            .as_ref()
            .is_some_and(|front| Arc::ptr_eq(front, &self.front))
        {
            *current = None;
        }
    }
}

/// The front request waiting on a call now, or a debug line saying what was dropped.
fn waiting(current: &Current, what: &str) -> Option<Arc<Front>> {
    let front = current.lock().clone();
    if front.is_none() {
        log::debug!(
            target: super::LOG_TARGET,
            "a bridged call's {what} came between an input round and its retry: dropped"
        );
    }
    front
}

/// A bridged call between its front requests.
struct Call {
    number: u64,
    server: String,
    tool: String,
    cancel: CancelFlag,
    events: Receiver<Event>,
    rounds: u32,
    current: Current,
}

/// A held call: the call, the key of its round, and where its backend request's answer goes.
struct Entry {
    call: Call,
    key: String,
    reply: Sender<Result<Value, String>>,
}

/// The calls held between a round and its retry.
pub(crate) struct Held {
    bounds: Bounds,
    table: Mutex<HashMap<u64, Entry>>,
    next: AtomicU64,
    /// This process's mark in every state it gives, so that a state another instance (or an
    /// earlier run) gave finds nothing here.
    nonce: String,
}

impl Held {
    pub(crate) fn new(bounds: Bounds) -> Arc<Held> {
        let mut bytes = [0u8; 8];
        // Without randomness the clock's nanoseconds still tell runs apart.
        if getrandom::fill(&mut bytes).is_err() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.as_nanos());
            bytes = (now as u64).to_le_bytes();
        }
        Arc::new(Held {
            bounds,
            table: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            nonce: bytes.iter().map(|byte| format!("{byte:02x}")).collect(),
        })
    }

    /// How many calls are held now.
    pub(crate) fn len(&self) -> usize {
        self.table.lock().len()
    }

    /// Drops every held call: each is cancelled, and its backend request answered with an
    /// error (its reply's sender is dropped).
    pub(crate) fn clear(&self) {
        let entries: Vec<Entry> = self.table.lock().drain().map(|(_, entry)| entry).collect();
        for entry in entries {
            entry.call.cancel.cancel();
        }
    }

    fn remove(&self, number: u64) {
        let entry = self.table.lock().remove(&number);
        drop(entry);
    }
}

/// Where a bridged call's backend requests go: kept with the call among its backend's calls
/// in flight ([`Backend::enter`]).
pub(crate) struct Asker {
    number: u64,
    events: Sender<Event>,
    cancel: CancelFlag,
    deadline: Instant,
    round_timeout: Duration,
    /// Weak: a gateway dropped without closing drops its held calls, which answers this.
    held: Weak<Held>,
    current: Current,
}

impl Asker {
    /// Passes a log message of the backend on to the front request waiting on the call now
    /// (at its level), or drops it when none is.
    pub(crate) fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) {
        if let Some(front) = waiting(&self.current, "log message") {
            front.channel.log(level, logger, data);
        }
    }

    /// Asks the front client through an input round, and waits for the answer within the
    /// round timeout and the call's bound.
    pub(crate) fn ask(&self, method: &str, params: Value) -> Result<Value, String> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let asked = Event::Ask {
            method: method.to_owned(),
            params,
            reply,
        };
        if self.events.send(asked).is_err() {
            return Err(format!(
                "`{method}` cannot be bridged: the 2026-07-28 client's call has ended"
            ));
        }
        let timeout = self.round_timeout;
        let until = (Instant::now() + timeout).min(self.deadline);
        let cancelled = self.cancel.signal();
        let failed = select! {
            recv(answer) -> answer => match answer {
                Ok(answer) => return answer,
                Err(_) => format!(
                    "`{method}` was not answered: the gateway dropped its input round (the \
                     call was cancelled or the gateway is closing)"
                ),
            },
            recv(cancelled) -> _ => format!("`{method}` was not answered: the call was cancelled"),
            default(until.saturating_duration_since(Instant::now())) => format!(
                "`{method}` was not answered within the gateway's bound for an input round \
                 ({} s, or the call's own bound if sooner)",
                timeout.as_secs_f64()
            ),
        };
        // Raised before the entry is removed: a front request that holds the call after
        // this sees the flag and lets it go (see `hold`).
        self.cancel.cancel();
        if let Some(held) = self.held.upgrade() {
            held.remove(self.number);
        }
        Err(failed)
    }
}

/// True when a 2026-07-28 front client's call of this backend is to be bridged: the backend
/// speaks the handshake era, so it asks with requests, not rounds.
pub(super) fn bridges(backend: &Backend) -> bool {
    backend
        .client()
        .and_then(|client| client.session_info().ok())
        .is_some_and(|info| info.era == Era::Handshake)
}

/// Which held call and which of its rounds a retry answers.
pub(super) struct HeldRound {
    number: u64,
    round: u64,
    nonce: String,
}

/// The held round a retry's state names, if it names one.
pub(super) fn held_of(context: &RequestContext) -> Option<HeldRound> {
    let state = context.request_state()?;
    Some(HeldRound {
        number: state.get("held")?.as_u64()?,
        round: state.get("round")?.as_u64()?,
        nonce: state.get("nonce")?.as_str()?.to_owned(),
    })
}

/// Starts a bridged call: the harness runs it on a thread of its own, with `settings` (whose
/// cancellation becomes the call's own); the front request waits for its first event.
pub(super) fn start(
    core: &Core,
    backend: &Arc<Backend>,
    tool: &FrontTool,
    context: &RequestContext,
    arguments: Value,
    settings: CallSettings,
    round: &Round,
) -> Result<CallToolResult, HandlerError> {
    let number = core.held.next.fetch_add(1, Ordering::Relaxed);
    let cancel = CancelFlag::new();
    let settings = settings.cancel(cancel.clone());
    let (sender, events) = unbounded();
    let current = Current::default();
    let answering = Answering::start(&current, context);
    // Progress goes to the front request waiting now (this one's sink is replaced).
    let progressed = Arc::clone(&current);
    let settings = settings.on_progress(move |done, total, message| {
        let front = waiting(&progressed, "progress");
        if let Some(progress) = front.as_ref().and_then(|front| front.progress.as_ref()) {
            progress.report(done, total, message);
        }
    });
    let bound = tool.imported.options().timeout.duration();
    let asker = Asker {
        number,
        events: sender.clone(),
        cancel: cancel.clone(),
        deadline: context.deadline().min(Instant::now() + bound),
        round_timeout: core.held.bounds.round_timeout,
        held: Arc::downgrade(&core.held),
        current: Arc::clone(&current),
    };
    let front = context.back_channel();
    let (harness, owner, imported) = (
        core.harness.clone(),
        Arc::clone(backend),
        tool.imported.clone(),
    );
    std::thread::Builder::new()
        .name("toolwire-bridge".into())
        .spawn(move || {
            let entered = owner.enter(front, Some(asker));
            let outcome = harness.call_imported(&imported, arguments, &settings);
            drop(entered);
            // Nobody reads it when the held call was dropped meanwhile.
            let _ = sender.send(Event::Done(Box::new(outcome)));
        })
        .map_err(|error| {
            HandlerError::internal(format!("the gateway cannot start a thread: {error}"))
        })?;
    let call = Call {
        number,
        server: backend.name.clone(),
        tool: tool.imported.name().to_owned(),
        cancel,
        events,
        rounds: 0,
        current,
    };
    let answer = wait(core, backend, context, round, call);
    drop(answering);
    answer
}

/// The retry of a bridged round: the answer goes to the backend's waiting request, and the
/// front request waits for the call's next event.
pub(super) fn resume(
    core: &Core,
    backend: &Arc<Backend>,
    tool: &FrontTool,
    context: &RequestContext,
    round: &Round,
    held: HeldRound,
) -> Result<CallToolResult, HandlerError> {
    let number = held.number;
    let taken = {
        let mut table = core.held.table.lock();
        // A state of an earlier round of the same call finds the call at a later round.
        let current = table.get(&number).filter(|entry| {
            u64::from(entry.call.rounds) == held.round && held.nonce == core.held.nonce
        });
        match current.map(|entry| (context.input_response(&entry.key), &entry.key)) {
            // Without the answer, the round stays held for a retry that has it.
            Some((None, key)) => {
                return Err(invalid(format!(
                    "the retry carries no answer to the input request {key:?} (in \
                     inputResponses)"
                )))
            }
            Some((Some(answer), _)) => {
                let answer = answer.clone();
                table.remove(&number).map(|entry| (entry, answer))
            }
            None => None,
        }
    };
    let Some((entry, answer)) = taken else {
        return Err(invalid(format!(
            "the input round this retry answers is no longer held by the gateway (it was \
             answered already, or waited past its bound of {} s, or the gateway restarted); \
             call the tool again without requestState",
            core.held.bounds.round_timeout.as_secs_f64()
        )));
    };
    if entry.call.server != backend.name || entry.call.tool != tool.imported.name() {
        entry.call.cancel.cancel();
        return Err(invalid(
            "requestState was given for a call of another tool; call the tool again".into(),
        ));
    }
    // This request is the one waiting from before the backend has the answer: what the
    // backend sends after it comes here.
    let answering = Answering::start(&entry.call.current, context);
    if entry.reply.send(Ok(answer)).is_err() {
        entry.call.cancel.cancel();
        return Err(invalid(
            "the backend's request this retry answers is no longer waiting (it passed its \
             bound); call the tool again without requestState"
                .into(),
        ));
    }
    let answer = wait(core, backend, context, round, entry.call);
    drop(answering);
    answer
}

/// Waits for a bridged call's next event: its outcome (the front answer), or a backend
/// request (held, and passed on as an input round). A cancelled front request cancels the
/// call, whose outcome then comes soon.
fn wait(
    core: &Core,
    backend: &Arc<Backend>,
    context: &RequestContext,
    round: &Round,
    mut call: Call,
) -> Result<CallToolResult, HandlerError> {
    let mut front_cancelled = context.cancel_flag().signal();
    loop {
        let event = select! {
            recv(call.events) -> event => event,
            recv(front_cancelled) -> _ => {
                call.cancel.cancel();
                front_cancelled = never();
                continue;
            }
        };
        let (method, params, reply) = match event {
            Ok(Event::Done(outcome)) => {
                return finish(core, backend, Some(round), context, *outcome)
            }
            Ok(Event::Ask {
                method,
                params,
                reply,
            }) => (method, params, reply),
            Err(_) => {
                return Err(HandlerError::internal(
                    "the bridged call ended without an outcome",
                ))
            }
        };
        if call.cancel.is_cancelled() {
            // The reply dropped: the backend's request is answered with an error.
            continue;
        }
        call.rounds += 1;
        let key = format!("{}-{}", kind(&method), call.rounds);
        let mut request = Map::new();
        request.insert(key.clone(), json!({"method": method, "params": params}));
        let state = json!({
            "server": call.server,
            "call": round.call_id,
            "held": call.number,
            "round": call.rounds,
            "nonce": core.held.nonce,
        });
        if let Err(refused) = hold(&core.held, call, key, reply) {
            core.stats.status(&backend.name, refused.status);
            return Ok(CallToolResult::error(refused.text));
        }
        return Err(HandlerError::InputRequired(InputRequired {
            requests: request,
            state: Some(state),
        }));
    }
}

/// Why a round was not held: the front call's answer (a tool error) and its status.
struct Refused {
    status: Status,
    text: String,
}

/// Holds `call` until its retry, within the table's bound.
fn hold(
    held: &Held,
    call: Call,
    key: String,
    reply: Sender<Result<Value, String>>,
) -> Result<(), Refused> {
    let (number, cancel) = (call.number, call.cancel.clone());
    let mut table = held.table.lock();
    if table.len() >= held.bounds.max_held {
        drop(table);
        let max = held.bounds.max_held;
        let _ = reply.send(Err(format!(
            "the gateway holds {max} calls waiting for their clients' input already"
        )));
        cancel.cancel();
        return Err(Refused {
            status: Status::Busy,
            text: format!(
                "BUSY: the server asked for input, but the gateway holds {max} calls waiting \
                 for input already (its bound); the call was cancelled, try again later"
            ),
        });
    }
    table.insert(number, Entry { call, key, reply });
    drop(table);
    // The backend's request gave up meanwhile: it raised the flag before it removed the
    // entry, which may have been before this insert.
    if cancel.is_cancelled() {
        held.remove(number);
        return Err(Refused {
            status: Status::Timeout,
            text: "TIMEOUT: the server's request for input passed its bound before it could \
                   be passed on; the call was cancelled"
                .into(),
        });
    }
    Ok(())
}

/// The key prefix of a request's round.
fn kind(method: &str) -> &'static str {
    match method {
        methods::ELICITATION_CREATE => "elicitation",
        methods::SAMPLING_CREATE_MESSAGE => "sampling",
        methods::ROOTS_LIST => "roots",
        _ => "input",
    }
}

fn invalid(message: String) -> HandlerError {
    HandlerError::Rpc(ErrorObject::new(ErrorCode::INVALID_PARAMS, message))
}
