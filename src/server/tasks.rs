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

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// The work a task runs, once per round.
type TaskWork =
    Arc<dyn Fn(&RequestContext) -> std::result::Result<Value, HandlerError> + Send + Sync>;

struct TaskState {
    status: Status,
    updated: SystemTime,
    message: Option<String>,
    result: Option<Value>,
    error: Option<Value>,
    /// The input requests not answered yet, by key.
    asked: Map<String, Value>,
    /// Every answer given so far, by key: the next run gets them all.
    answers: Map<String, Value>,
    /// The state the handler gave with its last input requests.
    state: Option<Value>,
    /// Since when the task waits for input.
    parked: Option<Instant>,
    /// The current run; an outcome of an older one is dropped.
    run: u64,
    /// The current run's bound.
    timer: Option<TimerKey>,
}

struct Task {
    id: String,
    created: SystemTime,
    expires: Instant,
    ttl: Duration,
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
    state: Mutex<TaskState>,
}

/// The tasks a server holds.
#[derive(Default)]
pub(crate) struct Tasks {
    live: Mutex<HashMap<String, Arc<Task>>>,
}

impl Tasks {
    /// Drops the tasks past their TTL (a handler still running is told to stop) and fails
    /// those that waited for input past the bound.
    fn sweep(&self, config: &ServerConfig) {
        let now = Instant::now();
        let mut expired = Vec::new();
        {
            let mut live = self.live.lock();
            live.retain(|_, task| {
                if task.expires <= now {
                    expired.push(Arc::clone(task));
                    false
                } else {
                    true
                }
            });
            for task in live.values() {
                let mut state = task.state.lock();
                let waited = state
                    .parked
                    .is_some_and(|since| now.duration_since(since) >= config.task_input_timeout);
                if state.status == Status::InputRequired && waited {
                    state.asked.clear();
                    state.parked = None;
                    let text = format!(
                        "no answer to the task's input requests came within {:?}",
                        config.task_input_timeout
                    );
                    settle(&mut state, Status::Failed);
                    state.error =
                        Some(error_value(&ErrorObject::new(super::REQUEST_TIMEOUT, text)));
                }
            }
        }
        for task in expired {
            task.call.cancel.cancel();
            let timer = task.state.lock().timer.take();
            if let Some(key) = timer {
                TimerWheel::global().cancel(key);
            }
            log::debug!(target: super::LOG_TARGET, "task {} passed its TTL; dropped", task.id);
        }
    }

    fn find(
        &self,
        config: &ServerConfig,
        id: &str,
    ) -> std::result::Result<Arc<Task>, HandlerError> {
        self.sweep(config);
        self.live.lock().get(id).cloned().ok_or_else(|| {
            HandlerError::invalid_params(format!(
                "unknown task {id:?}: it never existed here, or it passed its TTL"
            ))
        })
    }

    /// How many tasks are held right now (finished ones until their TTL included).
    pub(crate) fn held(&self, config: &ServerConfig) -> usize {
        self.sweep(config);
        self.live.lock().len()
    }
}

/// Moves the task to `status` now, its run's bound no longer armed (on the process's wheel,
/// which is the server's).
fn settle(state: &mut TaskState, status: Status) {
    state.status = status;
    state.updated = SystemTime::now();
    if let Some(key) = state.timer.take() {
        TimerWheel::global().cancel(key);
    }
}

fn error_value(error: &ErrorObject) -> Value {
    serde_json::to_value(error)
        .unwrap_or_else(|_| json!({"code": error.code.0, "message": error.message}))
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
    server: &Shared,
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
    let now = SystemTime::now();
    let task = Arc::new(Task {
        id: id.clone(),
        created: now,
        expires: Instant::now() + config.task_ttl,
        ttl: config.task_ttl,
        call: Arc::new(Call::new(context.id().clone())),
        work,
        version,
        peer: context.peer.clone(),
        peer_address: context.peer_address,
        caller: context.caller.clone(),
        bound,
        state: Mutex::new(TaskState {
            status: Status::Working,
            updated: now,
            message: None,
            result: None,
            error: None,
            asked: Map::new(),
            answers: Map::new(),
            state: None,
            parked: None,
            run: 1,
            timer: None,
        }),
    });
    server.tasks.sweep(config);
    {
        let mut live = server.tasks.live.lock();
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
        live.insert(id.clone(), Arc::clone(&task));
    }
    if !admit(server, &task, 1, None) {
        server.tasks.live.lock().remove(&id);
        return Err(busy(server));
    }
    let state = task.state.lock();
    let mut created = describe(&task, &state, config);
    // A quick handler may be done already: the answer then carries its outcome as
    // `tasks/get` would, so a client that reads a terminal status finds it here too.
    inline_outcome(&mut created, &state);
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
fn admit(server: &Shared, task: &Arc<Task>, run: u64, round: Option<InputRound>) -> bool {
    let weak: Weak<Task> = Arc::downgrade(task);
    let bound = task.bound;
    let key = TimerWheel::global().schedule(
        Instant::now() + bound,
        Box::new(move || {
            if let Some(task) = weak.upgrade() {
                timed_out(&task, run, bound);
            }
        }),
    );
    task.state.lock().timer = Some(key);
    let job_task = Arc::clone(task);
    let max_result = server.config.max_task_result_bytes;
    let client_request_timeout = server.config.client_request_timeout;
    let admitted = server.pool.try_admit(Box::new(move |slot| {
        let context = job_task.context(round, client_request_timeout);
        let outcome = super::conn::guarded("tools/call", || (job_task.work)(&context));
        drop(context);
        finish(&job_task, run, outcome, max_result);
        drop(slot);
    }));
    if !admitted {
        let mut state = task.state.lock();
        if let Some(key) = state.timer.take() {
            TimerWheel::global().cancel(key);
        }
    }
    admitted
}

/// The run's bound passed: the task ends with a tool error saying so (as a call past its
/// bound does), and the handler is told to stop.
fn timed_out(task: &Task, run: u64, bound: Duration) {
    let mut state = task.state.lock();
    if state.run != run || state.status != Status::Working {
        return;
    }
    state.timer = None;
    settle(&mut state, Status::Completed);
    let text = format!(
        "the tool did not finish within {bound:?}; it was told to stop, and a late result is discarded"
    );
    state.result = Some(complete(CallToolResult::error(text).to_value()));
    drop(state);
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
/// (cancelled, past its bound, dropped).
fn finish(
    task: &Task,
    run: u64,
    outcome: std::result::Result<Value, HandlerError>,
    max_result: usize,
) {
    let mut state = task.state.lock();
    if state.run != run || state.status != Status::Working {
        log::debug!(
            target: super::LOG_TARGET,
            "task {} is {} already; the handler's late outcome is dropped",
            task.id,
            state.status.as_str()
        );
        return;
    }
    let failed = |state: &mut TaskState, error: ErrorObject| {
        settle(state, Status::Failed);
        state.error = Some(error_value(&error));
    };
    match outcome {
        Ok(result) => {
            let size = serde_json::to_vec(&result).map_or(usize::MAX, |bytes| bytes.len());
            if size > max_result {
                failed(
                    &mut state,
                    ErrorObject::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!("the task's result is {size} bytes, past the server's limit of {max_result}; it was not kept"),
                    ),
                );
            } else {
                settle(&mut state, Status::Completed);
                state.result = Some(complete(result));
            }
        }
        Err(HandlerError::Rpc(error)) => failed(&mut state, error),
        Err(HandlerError::InputRequired(input)) => {
            if input.requests.is_empty() {
                failed(
                    &mut state,
                    ErrorObject::new(
                        ErrorCode::INTERNAL_ERROR,
                        "the task's handler asked for input without saying for what",
                    ),
                );
                return;
            }
            for capability in input.capabilities_needed() {
                if task
                    .peer
                    .capabilities
                    .get(capability)
                    .is_none_or(Value::is_null)
                {
                    failed(
                        &mut state,
                        ErrorObject::new(
                            MISSING_CAPABILITY,
                            format!("the task needs the client capability `{capability}`, which its request did not declare"),
                        )
                        .with_data(json!({"requiredCapabilities": {capability: {}}})),
                    );
                    return;
                }
            }
            settle(&mut state, Status::InputRequired);
            // A key asked again is asked anew: its old answer goes.
            for key in input.requests.keys() {
                state.answers.remove(key);
            }
            state.asked = input.requests;
            state.state = input.state;
            state.parked = Some(Instant::now());
        }
    }
}

impl Task {
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

/// The task as `tasks/get` shows it (and, less its outcome, as it is created).
fn describe(task: &Task, state: &TaskState, config: &ServerConfig) -> Map<String, Value> {
    let mut object = Map::new();
    object.insert("taskId".into(), Value::from(task.id.clone()));
    object.insert("status".into(), Value::from(state.status.as_str()));
    if let Some(message) = &state.message {
        object.insert("statusMessage".into(), Value::from(message.clone()));
    }
    object.insert("createdAt".into(), Value::from(iso8601(task.created)));
    object.insert("lastUpdatedAt".into(), Value::from(iso8601(state.updated)));
    object.insert("ttlMs".into(), Value::from(task.ttl.as_millis() as u64));
    if !state.status.is_terminal() {
        let poll = config.task_poll_interval.as_millis().max(1) as u64;
        object.insert("pollIntervalMs".into(), Value::from(poll));
    }
    object
}

/// What a task's description inlines for its status: the result, the error, or the input
/// requests it waits on.
fn inline_outcome(object: &mut Map<String, Value>, state: &TaskState) {
    match state.status {
        Status::Completed => {
            object.insert("result".into(), state.result.clone().unwrap_or_default());
        }
        Status::Failed => {
            object.insert("error".into(), state.error.clone().unwrap_or_default());
        }
        Status::InputRequired => {
            object.insert("inputRequests".into(), Value::Object(state.asked.clone()));
        }
        Status::Working | Status::Cancelled => {}
    }
}

/// Answers `tasks/get`, `tasks/update` and `tasks/cancel` (the extension already checked).
pub(crate) fn answer(
    server: &Shared,
    method: &str,
    params: &Value,
) -> std::result::Result<Value, HandlerError> {
    let config = &server.config;
    let Some(id) = params.get("taskId").and_then(Value::as_str) else {
        return Err(HandlerError::invalid_params(
            "params.taskId must be a string",
        ));
    };
    let task = server.tasks.find(config, id)?;
    match method {
        methods::TASKS_GET => {
            let state = task.state.lock();
            let mut object = describe(&task, &state, config);
            inline_outcome(&mut object, &state);
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
            update(server, &task, responses)?;
            Ok(json!({}))
        }
        _ => {
            let mut state = task.state.lock();
            if !state.status.is_terminal() {
                settle(&mut state, Status::Cancelled);
                state.asked.clear();
                state.parked = None;
                drop(state);
                task.call.cancel.cancel();
            }
            Ok(json!({}))
        }
    }
}

/// Takes the answers to the task's open input requests; once none is open, the handler runs
/// again with every answer. A task not waiting for input takes nothing (the ack is the same).
fn update(
    server: &Shared,
    task: &Arc<Task>,
    responses: &Map<String, Value>,
) -> std::result::Result<(), HandlerError> {
    let (run, round) = {
        let mut state = task.state.lock();
        if state.status != Status::InputRequired {
            return Ok(());
        }
        for (key, answer) in responses {
            if state.asked.remove(key).is_some() {
                state.answers.insert(key.clone(), answer.clone());
            }
        }
        state.updated = SystemTime::now();
        if !state.asked.is_empty() {
            return Ok(());
        }
        state.status = Status::Working;
        state.parked = None;
        state.run += 1;
        let round = InputRound {
            responses: state.answers.clone(),
            state: state.state.clone(),
        };
        (state.run, round)
    };
    if admit(server, task, run, Some(round)) {
        return Ok(());
    }
    // No worker: the task goes on waiting, every answer kept; any later tasks/update starts it.
    let mut state = task.state.lock();
    if state.run == run && state.status == Status::Working {
        state.status = Status::InputRequired;
        state.parked = Some(Instant::now());
    }
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
