//! The server side of the 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`,
//! SEP-2663): a `tools/call` answered at once with a task, its handler run on the worker
//! pool, and `tasks/get`, `tasks/update` and `tasks/cancel` on it.
//!
//! A task belongs to the server, not to a connection: the 2026-07-28 protocol is stateless,
//! so the request that created a task is long answered when the task is polled, perhaps over
//! another connection. Its id (128 random bits) is all a client needs to reach it. What ends a
//! task's life is its TTL alone ([`ServerConfig::task_ttl`], counted from its creation): past
//! it the task is dropped (a handler still running is told to stop), and never before.
//!
//! A task's handler asks for input the way a 2026-07-28 handler always does
//! ([`RequestContext::elicit`] and its kin, or an [`InputRequired`]): the task then waits in
//! `input_required` with the requests in `inputRequests`, holding no worker; `tasks/update`
//! answers them (some or all; an answer for a key not asked is ignored), and once every one is
//! answered the handler runs again with all the answers the task has gathered (and the state
//! it gave, kept on the server). The handler must therefore be ready to run more than once, as
//! an input round's retry is. A task's handler answers by returning: it has no stream for
//! progress or log messages (they are dropped), no requests back to the client but its input
//! requests, and [`RequestContext::defer`] does not apply to it.
//!
//! Every bound is finite and in [`ServerConfig`]: the tasks a server holds at once (finished
//! ones too, until their TTL), each task's TTL, the size of a kept result, how long a task may
//! wait for input, and each run's bound (the tool's own
//! [`crate::harness::ToolOptions::timeout`]).
//! Expired tasks are swept out whenever a task is created or a `tasks/*` request arrives.
//!
//! A task's record lives in the server's state store ([`super::StateStore`], changed only by
//! compare-and-set); what only its process can hold (the handler, its cancel flag, the run's
//! timer) stays with the instance that created it, which runs every round. With a shared
//! store any instance answers `tasks/*` for it: `tasks/update` and `tasks/cancel` change the
//! record and tell the owner (`lease`), and a task whose owner stopped renewing its lease
//! ([`ServerConfig::task_lease`]) is failed by the first instance that reads it, never run
//! again.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod forwarded;
mod lease;
mod record;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::auth::Caller;
use super::catalog::ToolEntry;
use super::context::{missing_capability, Call, InputRound, Link, Peer, RequestContext};
use super::types::{HandlerError, BUSY, MISSING_CAPABILITY};
use super::{tools, ServerConfig, Shared};
use crate::error::Result;
use crate::mcp::CallToolResult;
use crate::mcp::Era;
use crate::mcp::{methods, TASKS_EXTENSION};
use crate::timer::{TimerKey, TimerWheel};
use crate::wire::{ErrorCode, ErrorObject, RequestId, Response};

/// Whether a tool runs as a task: the client's own [`crate::mcp::TaskSupport`], one type for
/// both ends. On this server, [`TaskSupport::Optional`] answers a call with a task when the
/// request's client capabilities declare the 2026-07-28 extension and runs it in its request
/// otherwise; [`TaskSupport::Required`] refuses a call whose request does not declare it
/// with [`MISSING_CAPABILITY`] before anything runs.
pub use crate::mcp::TaskSupport;

/// True when a request's client capabilities declare the tasks extension.
pub(crate) fn declares_extension(capabilities: &Value) -> bool {
    capabilities
        .get("extensions")
        .and_then(|extensions| extensions.get(TASKS_EXTENSION))
        .is_some_and(|value| !value.is_null())
}

/// -32021 naming the extension, as the revision's `requiredCapabilities` object.
pub(crate) fn missing_extension(what: &str) -> ErrorObject {
    ErrorObject::new(
        MISSING_CAPABILITY,
        format!("{what} needs the client capability extensions[\"{TASKS_EXTENSION}\"], which the request did not declare"),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
}

use record::{lease_key, now_ms, Record, Status};

/// The work a task runs, once per round.
type TaskWork =
    Arc<dyn Fn(&RequestContext) -> std::result::Result<Value, HandlerError> + Send + Sync>;

/// A task this instance created and runs: what only its process can hold (the handler, the
/// cancel flag, the creating request's peer and caller, the run's timer). Its status lives in
/// the state store.
pub(super) struct Owned {
    id: String,
    expires: Instant,
    /// The cancel flag every run of the handler sees, and the creating request's id.
    call: Arc<Call>,
    work: TaskWork,
    version: String,
    peer: Peer,
    /// The creating request's [`RequestContext::peer_address`].
    peer_address: Option<SocketAddr>,
    /// The creating request's [`RequestContext::caller`].
    caller: Option<Arc<Caller>>,
    bound: Duration,
    run: Mutex<Run>,
}

/// Where the owner's runs stand.
#[derive(Default)]
struct Run {
    /// The last run started here.
    started: u64,
    /// The current run's bound.
    timer: Option<TimerKey>,
    /// The task is terminal in the store (or gone): nothing more to renew or run.
    done: bool,
    /// An outcome the store did not take (it was down), written again by the lease.
    unwritten: Option<(u64, std::result::Result<Value, HandlerError>)>,
}

/// The tasks this instance runs.
#[derive(Default)]
pub(crate) struct Tasks {
    owned: Mutex<HashMap<String, Arc<Owned>>>,
    /// True while the lease thread runs (a shared store only).
    pub(super) leasing: Mutex<bool>,
}

impl Tasks {
    /// Drops the tasks past their TTL (a handler still running is told to stop).
    fn sweep(&self) {
        let now = Instant::now();
        let mut expired = Vec::new();
        self.owned.lock().retain(|_, task| {
            if task.expires <= now {
                expired.push(Arc::clone(task));
                false
            } else {
                true
            }
        });
        for task in expired {
            task.call.cancel.cancel();
            let timer = task.run.lock().timer.take();
            if let Some(key) = timer {
                TimerWheel::global().cancel(key);
            }
            log::debug!(target: super::LOG_TARGET, "task {} passed its TTL; dropped", task.id);
        }
    }

    fn get(&self, id: &str) -> Option<Arc<Owned>> {
        self.owned.lock().get(id).cloned()
    }

    /// The tasks still running here (for the lease).
    pub(super) fn running(&self) -> Vec<Arc<Owned>> {
        self.sweep();
        self.owned
            .lock()
            .values()
            .filter(|task| !task.run.lock().done)
            .cloned()
            .collect()
    }

    /// How many tasks this instance holds right now (finished ones until their TTL included).
    pub(crate) fn held(&self, _config: &ServerConfig) -> usize {
        self.sweep();
        self.owned.lock().len()
    }
}

/// Hears the pokes of other instances about the tasks this one runs (a shared store only).
pub(crate) fn listen(server: &Arc<Shared>) -> std::result::Result<(), super::StoreError> {
    lease::listen(server)
}

/// 128 random bits, in hex.
fn new_id() -> std::result::Result<String, HandlerError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| {
        HandlerError::internal(format!("no random source for a task id: {error}"))
    })?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// A failed [`crate::harness::LocalTool::before_task`] step as the request's answer: the
/// server's answer it carries (an input round, a missing capability), else an internal error
/// whose text only a safe failure shows.
fn step_error(failure: &crate::harness::ToolFailure) -> HandlerError {
    if let Some(error) = failure.carried::<HandlerError>() {
        return error.clone();
    }
    if failure.is_safe() {
        return HandlerError::internal(failure.message());
    }
    log::warn!(
        target: super::LOG_TARGET,
        "a tool's step before its task failed: {}",
        failure.message()
    );
    HandlerError::internal("the tool's step before its task failed; the details were logged")
}

/// Runs a task-capable tool's call as a task: the tool's capability checks, its
/// [`crate::harness::LocalTool::before_task`] step (which may ask for input in rounds), then
/// the task is stored, its first run admitted to the pool, and the `CreateTaskResult` returned.
pub(crate) fn create(
    server: &Arc<Shared>,
    context: &RequestContext,
    entry: Arc<ToolEntry>,
    arguments: Value,
) -> std::result::Result<Value, HandlerError> {
    for capability in entry.requires() {
        if !context.client_supports(capability) {
            return Err(missing_capability(capability));
        }
    }
    let arguments = match entry.before_task() {
        Some(before) => before(context, &arguments).map_err(|failure| step_error(&failure))?,
        None => arguments,
    };
    let config = &server.config;
    let version = match (context.era(), context.protocol_version()) {
        (Era::Stateless, Some(version)) => version.to_owned(),
        _ => crate::mcp::STATELESS_VERSION.to_owned(),
    };
    let bound = entry.timeout();
    let work: TaskWork = Arc::new(move |context| tools::call(&entry, context, arguments.clone()));
    let id = new_id()?;
    let now = now_ms();
    let record = Record {
        status: Status::Working,
        created: now,
        updated: now,
        ttl: u64::try_from(config.task_ttl.as_millis()).unwrap_or(u64::MAX),
        message: None,
        result: None,
        error: None,
        asked: Map::new(),
        answers: Map::new(),
        state: None,
        parked: None,
        run: 1,
        owner: server.instance.clone(),
    };
    let task = Arc::new(Owned {
        id: id.clone(),
        expires: Instant::now() + config.task_ttl,
        call: Arc::new(Call::new(context.id().clone())),
        work,
        version,
        peer: context.peer.clone(),
        peer_address: context.peer_address,
        caller: context.caller.clone(),
        bound,
        run: Mutex::new(Run::default()),
    });
    server.tasks.sweep();
    {
        let live = server.tasks.owned.lock();
        if live.len() >= config.max_tasks {
            return Err(HandlerError::new(
                BUSY,
                format!(
                    "the server holds {} tasks, its limit; each is kept until its TTL ({:?}). \
                     Try again later",
                    live.len(),
                    config.task_ttl
                ),
            ));
        }
    }
    record::create(server, &id, &record)?;
    // Held before the lease thread is started, so that a thread about to end for want of
    // tasks sees this one.
    server
        .tasks
        .owned
        .lock()
        .insert(id.clone(), Arc::clone(&task));
    if server.store.shared() {
        let leased = server.store.put(
            &lease_key(&id),
            server.instance.as_bytes(),
            config.task_lease,
        );
        if let Err(error) = leased {
            // Nothing ran: the record goes with its TTL, or now if the store answers.
            server.tasks.owned.lock().remove(&id);
            let _ = server.store.delete(&record::task_key(&id));
            return Err(record::store_failed(&error));
        }
        lease::start(server);
    }
    if !admit(server, &task, 1, None) {
        server.tasks.owned.lock().remove(&id);
        let _ = server.store.delete(&record::task_key(&id));
        return Err(busy(server));
    }
    // A quick handler may be done already: the answer then carries its outcome as
    // `tasks/get` would, so a client that reads a terminal status finds it here too.
    let now = match record::load(server, &id) {
        Ok(Some((_, now))) => now,
        _ => record,
    };
    let mut created = now.describe(&id, config);
    now.inline_outcome(&mut created);
    created.insert("resultType".into(), Value::from("task"));
    Ok(Value::Object(created))
}

fn busy(server: &Shared) -> HandlerError {
    HandlerError::new(
        BUSY,
        format!(
            "the server is busy: all {} workers are occupied; nothing was queued. Try again later",
            server.config.workers
        ),
    )
}

/// Hands run `run` of the task to the pool, with its bound armed; false when no worker is
/// free.
pub(super) fn admit(
    server: &Arc<Shared>,
    task: &Arc<Owned>,
    run: u64,
    round: Option<InputRound>,
) -> bool {
    {
        let mut state = task.run.lock();
        if state.started >= run {
            // Started already (by the update that answered its input, or by the lease).
            return true;
        }
        state.started = run;
    }
    let weak_task: Weak<Owned> = Arc::downgrade(task);
    let weak_server: Weak<Shared> = Arc::downgrade(server);
    let bound = task.bound;
    let key = TimerWheel::global().schedule(
        Instant::now() + bound,
        Box::new(move || {
            let (Some(task), Some(server)) = (weak_task.upgrade(), weak_server.upgrade()) else {
                return;
            };
            if !server.store.shared() {
                timed_out(&server, &task, run, bound);
                return;
            }
            // A shared store's round trip does not hold the timer's thread.
            let spawned = std::thread::Builder::new()
                .name("toolwire-task-bound".into())
                .spawn(move || timed_out(&server, &task, run, bound));
            if let Err(error) = spawned {
                log::warn!(target: super::LOG_TARGET, "a task's bound was not recorded: {error}");
            }
        }),
    );
    if let Some(old) = task.run.lock().timer.replace(key) {
        TimerWheel::global().cancel(old);
    }
    let job_task = Arc::clone(task);
    let job_server = Arc::clone(server);
    let client_request_timeout = server.config.client_request_timeout;
    let admitted = server.pool.try_admit(Box::new(move |slot| {
        let context = job_task.context(round, client_request_timeout);
        let outcome = super::conn::guarded("tools/call", || (job_task.work)(&context));
        drop(context);
        finish(&job_server, &job_task, run, outcome);
        drop(slot);
    }));
    if !admitted {
        let mut state = task.run.lock();
        state.started = run.saturating_sub(1);
        if let Some(key) = state.timer.take() {
            TimerWheel::global().cancel(key);
        }
    }
    admitted
}

/// The run's bound passed: the task ends with a tool error saying so (as a call past its
/// bound does), and the handler is told to stop.
fn timed_out(server: &Shared, task: &Owned, run: u64, bound: Duration) {
    let text = format!(
        "the tool did not finish within {bound:?}; it was told to stop, and a late result is discarded"
    );
    let written = record::modify(server, &task.id, |record| {
        if record.run != run || record.status != Status::Working {
            return false;
        }
        record.settle(Status::Completed);
        record.result = Some(complete(CallToolResult::error(text.clone()).to_value()));
        true
    });
    if let Err(error) = written {
        log::warn!(target: super::LOG_TARGET, "task {} passed its bound, which was not recorded: {error:?}", task.id);
    }
    task.run.lock().timer = None;
    task.call.cancel.cancel();
    log::warn!(target: super::LOG_TARGET, "task {} passed its bound of {bound:?}", task.id);
}

/// A result as the revision inlines it.
fn complete(result: Value) -> Value {
    match result {
        Value::Object(mut object) => {
            object
                .entry("resultType")
                .or_insert_with(|| Value::from("complete"));
            Value::Object(object)
        }
        other => other,
    }
}

/// A run ended: its outcome becomes the task's, unless the task moved on without it
/// (cancelled, past its bound, failed by another instance, dropped). An outcome the store
/// does not take now is kept for the lease to write again.
pub(super) fn finish(
    server: &Shared,
    task: &Owned,
    run: u64,
    outcome: std::result::Result<Value, HandlerError>,
) {
    let max_result = server.config.max_task_result_bytes;
    let written = record::modify(server, &task.id, |record| {
        if record.run != run || record.status != Status::Working {
            log::debug!(
                target: super::LOG_TARGET,
                "task {} is {} already; the handler's late outcome is dropped",
                task.id,
                record.status.as_str()
            );
            return false;
        }
        settle_outcome(record, task, &outcome, max_result);
        true
    });
    let mut state = task.run.lock();
    match written {
        Ok(Some(record)) => {
            if record.status.is_terminal() {
                state.done = true;
            }
            if record.status != Status::Working || record.run != run {
                if let Some(key) = state.timer.take() {
                    TimerWheel::global().cancel(key);
                }
            }
            state.unwritten = None;
        }
        Ok(None) => {
            state.done = true;
            state.unwritten = None;
        }
        Err(error) => {
            log::warn!(target: super::LOG_TARGET, "the outcome of task {} was not stored yet: {error:?}", task.id);
            state.unwritten = Some((run, outcome));
        }
    }
}

/// Writes a run's outcome into the task's record.
fn settle_outcome(
    record: &mut Record,
    task: &Owned,
    outcome: &std::result::Result<Value, HandlerError>,
    max_result: usize,
) {
    match outcome {
        Ok(result) => {
            let size = serde_json::to_vec(result).map_or(usize::MAX, |bytes| bytes.len());
            if size > max_result {
                record.fail(&ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("the task's result is {size} bytes, past the server's limit of {max_result}; it was not kept"),
                ));
            } else {
                record.settle(Status::Completed);
                record.result = Some(complete(result.clone()));
            }
        }
        Err(HandlerError::Rpc(error)) => record.fail(error),
        Err(HandlerError::InputRequired(input)) => {
            if input.requests.is_empty() {
                record.fail(&ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    "the task's handler asked for input without saying for what",
                ));
                return;
            }
            for capability in input.capabilities_needed() {
                if task
                    .peer
                    .capabilities
                    .get(capability)
                    .is_none_or(Value::is_null)
                {
                    record.fail(
                        &ErrorObject::new(
                            MISSING_CAPABILITY,
                            format!("the task needs the client capability `{capability}`, which its request did not declare"),
                        )
                        .with_data(json!({"requiredCapabilities": {capability: {}}})),
                    );
                    return;
                }
            }
            record.settle(Status::InputRequired);
            // A key asked again is asked anew: its old answer goes.
            for key in input.requests.keys() {
                record.answers.remove(key);
            }
            record.asked = input.requests.clone();
            record.state = input.state.clone();
            record.parked = Some(now_ms());
        }
    }
}

impl Owned {
    /// What one run of the handler gets: the creating request's capabilities and id, the
    /// task's cancel flag, the answers gathered so far, and no way to the client but the
    /// task's own input requests.
    fn context(
        &self,
        round: Option<InputRound>,
        client_request_timeout: Duration,
    ) -> RequestContext {
        RequestContext {
            call: Arc::clone(&self.call),
            method: methods::TOOLS_CALL.to_owned(),
            deadline: Instant::now() + self.bound,
            era: Era::Stateless,
            protocol_version: Some(self.version.clone()),
            peer: self.peer.clone(),
            log_level: None,
            progress: None,
            link: Arc::new(TaskLink),
            input: round,
            client_request_timeout,
            answer_cancelled: false,
            deferred: Mutex::new(None),
            connection_state: Arc::default(),
            peer_address: self.peer_address,
            caller: self.caller.clone(),
            trace: None,
        }
    }
}

/// A task's way out: none. Its requests for input travel in `tasks/get`; its notifications
/// have no stream to go on.
struct TaskLink;

impl Link for TaskLink {
    fn notify(&self, _related: Option<&RequestId>, method: &str, _params: Value) -> Result<()> {
        log::debug!(target: super::LOG_TARGET, "a task's {method} has no stream to go on; dropped");
        Ok(())
    }

    fn respond(&self, _response: Response, _status: u16) {}

    fn respond_batch(&self, _responses: Vec<Response>) {}
}

fn unknown(id: &str) -> HandlerError {
    HandlerError::invalid_params(format!(
        "unknown task {id:?}: it never existed here, or it passed its TTL"
    ))
}

/// Answers `tasks/get`, `tasks/update` and `tasks/cancel` (the extension already checked),
/// on whichever instance the request reached.
pub(crate) fn answer(
    server: &Arc<Shared>,
    method: &str,
    params: &Value,
) -> std::result::Result<Value, HandlerError> {
    let config = &server.config;
    let Some(id) = params.get("taskId").and_then(Value::as_str) else {
        return Err(HandlerError::invalid_params(
            "params.taskId must be a string",
        ));
    };
    server.tasks.sweep();
    let Some((_, stored)) = record::load(server, id)? else {
        return Err(unknown(id));
    };
    // A task another instance runs: that instance must still hold its lease.
    let lapsed = !stored.status.is_terminal()
        && server.store.shared()
        && stored.owner != server.instance
        && server
            .store
            .get(&lease_key(id))
            .map_err(|error| record::store_failed(&error))?
            .is_none();
    let record = record::modify(server, id, |record| record.overdue(config, lapsed))?
        .ok_or_else(|| unknown(id))?;
    match method {
        methods::TASKS_GET => {
            let mut object = record.describe(id, config);
            record.inline_outcome(&mut object);
            Ok(Value::Object(object))
        }
        methods::TASKS_UPDATE => {
            let responses = match params.get("inputResponses") {
                Some(Value::Object(responses)) => responses,
                _ => {
                    return Err(HandlerError::invalid_params(
                        "params.inputResponses must be an object of answers by key",
                    ))
                }
            };
            update(server, id, responses)?;
            Ok(json!({}))
        }
        _ => {
            let record = record::modify(server, id, |record| {
                if record.status.is_terminal() {
                    return false;
                }
                record.settle(Status::Cancelled);
                record.asked.clear();
                record.parked = None;
                true
            })?;
            if let Some(record) = record {
                lease::poke(server, id, &record.owner);
            }
            Ok(json!({}))
        }
    }
}

/// Takes the answers to the task's open input requests; once none is open, the handler runs
/// again with every answer (here when this instance owns the task, else on its owner, told
/// through the store). A task not waiting for input takes nothing (the ack is the same).
fn update(
    server: &Arc<Shared>,
    id: &str,
    responses: &Map<String, Value>,
) -> std::result::Result<(), HandlerError> {
    let mut resumed = false;
    let record = record::modify(server, id, |record| {
        resumed = false;
        if record.status != Status::InputRequired {
            return false;
        }
        for (key, answer) in responses {
            if record.asked.remove(key).is_some() {
                record.answers.insert(key.clone(), answer.clone());
            }
        }
        record.updated = now_ms();
        if record.asked.is_empty() {
            record.status = Status::Working;
            record.parked = None;
            record.run += 1;
            resumed = true;
        }
        true
    })?
    .ok_or_else(|| unknown(id))?;
    if !resumed {
        return Ok(());
    }
    let Some(task) = server
        .tasks
        .get(id)
        .filter(|_| record.owner == server.instance)
    else {
        lease::poke(server, id, &record.owner);
        return Ok(());
    };
    let round = InputRound {
        responses: record.answers.clone(),
        state: record.state.clone(),
    };
    if admit(server, &task, record.run, Some(round)) {
        return Ok(());
    }
    // No worker: the task goes on waiting, every answer kept; any later tasks/update starts it.
    let run = record.run;
    let _ = record::modify(server, id, |record| {
        if record.run != run || record.status != Status::Working {
            return false;
        }
        record.status = Status::InputRequired;
        record.parked = Some(now_ms());
        true
    });
    Err(busy(server))
}

/// `time` as ISO 8601 in UTC with milliseconds (`2026-07-28T12:34:56.789Z`).
pub(crate) fn iso8601(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let (year, month, day) = crate::civil::civil_from_days((seconds / 86_400) as i64);
    let of_day = seconds % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601_in_utc() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_millis(951_782_400_123 + 3_661_000);
        assert_eq!(iso8601(leap), "2000-02-29T01:01:01.123Z");
    }

    #[test]
    fn the_extension_is_read_from_the_capabilities() {
        assert!(declares_extension(
            &json!({"extensions": {TASKS_EXTENSION: {}}})
        ));
        assert!(!declares_extension(&json!({"extensions": {}})));
        assert!(!declares_extension(&json!({"sampling": {}})));
        let error = missing_extension("tasks/get");
        assert_eq!(error.code, MISSING_CAPABILITY);
        assert!(
            error.data.unwrap()["requiredCapabilities"]["extensions"][TASKS_EXTENSION].is_object()
        );
    }
}
