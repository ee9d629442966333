//! The harness: the layer that decides which tool calls may run at all. See [`Harness`].
//!
//! Files: `registry` (the allowlist), `tool` and `import` (local and MCP tools), `parse`
//! (size, strict JSON, names), `shapes` (LLM shapes in and out, one call or a whole
//! message), `export` (definitions per model API), `conversation` (a budget per
//! conversation), `run` (one call, end to end), `ran` (what an attempt produced), `batch` (the
//! calls of one message together), `executor` (admission), `budget`, `retry`, `outcome`,
//! `audit`.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

use crate::error::{Error, Result};

mod admission;
mod answer;
mod attempt;
mod audit;
mod batch;
mod budget;
mod checks;
mod context;
mod conversation;
pub(crate) mod executor;
mod export;
mod import;
mod imported;
mod outcome;
mod parse;
mod ran;
mod registry;
mod remote;
mod retry;
mod run;
mod shapes;
mod tool;
mod traced;

pub use admission::Admission;
pub use audit::{AuditEvent, AuditKind, AuditObserver, Transcript, HARNESS_LOG_TARGET};
pub use budget::{BudgetScope, BudgetScopes, BudgetState, SharedCounter};
pub use context::{ToolContext, ToolFunction};
pub use conversation::{Conversation, MAX_CONVERSATION_ID_CHARS};
pub use export::{LeftOutTool, ToolExport};
pub use import::{ImportReport, McpImport, Namespace, SkippedTool};
pub use imported::{CallSettings, ImportedTool, ProgressSink};
pub use outcome::{Outcome, Overflow, ResultLimit, Status};
pub use parse::{parse_strict, MAX_SAFE_INTEGER};
pub use registry::{ToolInfo, ToolRegistry};
pub use remote::{RemoteErrorText, RemoteTimeoutSlot};
pub use retry::{RetryPolicy, Sleeper, ThreadSleeper};
pub use shapes::{
    AnthropicEvents, CallShape, GeminiChunks, MessageReply, OpenAiDeltas, ResponsesEvents,
    ToolReply,
};
pub use tool::{
    BeforeTask, CancelFlag, LocalTool, ToolFailure, ToolHandler, ToolOptions, ToolTimeout,
};

#[cfg(feature = "server")]
pub(crate) use checks::check_call;
pub(crate) use checks::name_refusal;
#[cfg(feature = "server")]
pub(crate) use outcome::{limit_mcp_result, value_text};
#[cfg(feature = "server")]
pub(crate) use ran::{failure_ran, remote_error, run_function, run_local, Ran};
#[cfg(feature = "server")]
pub(crate) use registry::{Backend, OutputSchema, RegisteredTool};
pub(crate) use shapes::read_raw;
#[cfg(feature = "server")]
pub(crate) use tool::check_bound;
#[cfg(feature = "server")]
pub(crate) use tool::{LocalCode, MAX_RESULT_CHARS};

pub(crate) use audit::Audit;
use budget::Budget;
use executor::Executor;

/// The cancel flags of attempts in flight, so that `close()` can raise them all.
type CancelTable = Arc<Mutex<HashMap<u64, CancelFlag>>>;

/// Settings for a [`Harness`]. Every bound is finite; `Default` spells out each value, and
/// each knob has a setter that says its default.
#[derive(Clone)]
pub struct HarnessConfig {
    pub(crate) workers: usize,
    pub(crate) attempt_budget: u32,
    pub(crate) max_budget_scopes: usize,
    pub(crate) max_input_chars: usize,
    pub(crate) max_calls_per_message: usize,
    pub(crate) max_message_chars: usize,
    pub(crate) repair_schema_chars: usize,
    pub(crate) hand_off_grace: Duration,
    pub(crate) remote_grace: Duration,
    pub(crate) close_grace: Duration,
    pub(crate) sleeper: Arc<dyn Sleeper>,
    pub(crate) transcript: Option<Arc<Transcript>>,
    pub(crate) observer: Option<AuditObserver>,
    pub(crate) metrics: Option<crate::metrics::Metrics>,
    /// Told of each request to an MCP server (see [`audit::RequestCounter`]). Defaults to
    /// none.
    pub(crate) requests: Option<audit::RequestCounter>,
}

impl Default for HarnessConfig {
    fn default() -> Self {
        HarnessConfig {
            workers: 4,
            attempt_budget: 32,
            max_budget_scopes: 1024,
            max_input_chars: 65_536,
            max_calls_per_message: 64,
            max_message_chars: 4 * 1024 * 1024,
            repair_schema_chars: 4_000,
            hand_off_grace: Duration::from_secs(1),
            remote_grace: Duration::from_secs(2),
            close_grace: Duration::from_secs(2),
            sleeper: Arc::new(ThreadSleeper),
            transcript: None,
            observer: None,
            metrics: None,
            requests: None,
        }
    }
}

impl fmt::Debug for HarnessConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HarnessConfig")
            .field("workers", &self.workers)
            .field("attempt_budget", &self.attempt_budget)
            .field("max_budget_scopes", &self.max_budget_scopes)
            .field("max_input_chars", &self.max_input_chars)
            .field("max_calls_per_message", &self.max_calls_per_message)
            .field("max_message_chars", &self.max_message_chars)
            .field("repair_schema_chars", &self.repair_schema_chars)
            .field("hand_off_grace", &self.hand_off_grace)
            .field("remote_grace", &self.remote_grace)
            .field("close_grace", &self.close_grace)
            .field("transcript", &self.transcript.is_some())
            .field("observer", &self.observer.is_some())
            .field("metrics", &self.metrics.is_some())
            .finish_non_exhaustive()
    }
}

impl HarnessConfig {
    /// The longest raw call accepted, in characters.
    pub fn get_max_input_chars(&self) -> usize {
        self.max_input_chars
    }

    /// How many tool calls may run at once (1 to 1,024). Defaults to 4.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// The most attempts the executor admits over the harness's life (or until
    /// [`Harness::reset_budget`]). Defaults to 32.
    pub fn attempt_budget(mut self, budget: u32) -> Self {
        self.attempt_budget = budget;
        self
    }

    /// The most budget scopes [`Harness::scope`] holds at once (1 to 1 Mi); a new key past
    /// them drops the scopes that hold nothing, else forgets the scope used least recently
    /// (see [`BudgetScopes`]). Each scope's limit
    /// is [`HarnessConfig::attempt_budget`]. Defaults to 1,024.
    pub fn max_budget_scopes(mut self, scopes: usize) -> Self {
        self.max_budget_scopes = scopes;
        self
    }

    /// The longest raw call accepted, in characters, checked before parsing (1 to 16 Mi).
    /// Defaults to 65,536.
    pub fn max_input_chars(mut self, chars: usize) -> Self {
        self.max_input_chars = chars;
        self
    }

    /// The most tool calls of one message (or one [`Harness::handle_all`]) that are run; the
    /// calls past it are answered `INVALID` without running (1 to 1,024). Defaults to 64.
    pub fn max_calls_per_message(mut self, calls: usize) -> Self {
        self.max_calls_per_message = calls;
        self
    }

    /// The longest assistant message [`Harness::handle_message`] reads, in characters,
    /// checked before parsing (1 to 256 Mi); each call in it is also held to
    /// [`HarnessConfig::max_input_chars`]. Defaults to 4 Mi (4,194,304).
    pub fn max_message_chars(mut self, chars: usize) -> Self {
        self.max_message_chars = chars;
        self
    }

    /// The most characters of a tool's schema quoted in a repair message. Defaults to 4,000.
    pub fn repair_schema_chars(mut self, chars: usize) -> Self {
        self.repair_schema_chars = chars;
        self
    }

    /// How long an admitted call waits for the worker it reserved to come back to the
    /// hand-off (a worker that has just answered is a moment away); a safeguard, never a
    /// queue. At most 1 hour. Defaults to 1 s.
    pub fn hand_off_grace(mut self, grace: Duration) -> Self {
        self.hand_off_grace = grace;
        self
    }

    /// How long past a remote tool's bound the caller waits for the MCP client's own timeout
    /// (with [`RemoteTimeoutSlot::Release`]) before giving up by itself. At most 1 hour.
    /// Defaults to 2 s.
    pub fn remote_grace(mut self, grace: Duration) -> Self {
        self.remote_grace = grace;
        self
    }

    /// How long [`Harness::close`] waits for workers to finish their current calls. At most
    /// 1 hour. Defaults to 2 s.
    pub fn close_grace(mut self, grace: Duration) -> Self {
        self.close_grace = grace;
        self
    }

    /// Waits out retry back-off. Defaults to [`ThreadSleeper`].
    pub fn sleeper(mut self, sleeper: impl Sleeper + 'static) -> Self {
        self.sleeper = Arc::new(sleeper);
        self
    }

    /// Where audit events are written as JSON lines. Defaults to none.
    pub fn transcript(mut self, transcript: Transcript) -> Self {
        self.transcript = Some(Arc::new(transcript));
        self
    }

    /// Receives every audit event. Defaults to none.
    pub fn observer(mut self, observer: impl Fn(&AuditEvent) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// Counts calls by status word, BUSY refusals and retries into `metrics`, and reports the
    /// budget left there ([`crate::metrics`]). Defaults to none.
    pub fn metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    fn check(&self) -> Result<()> {
        let bad = |text: String| Err(Error::Config(text));
        if !(1..=1024).contains(&self.workers) {
            return bad(format!("workers must be 1 to 1024, not {}", self.workers));
        }
        if !(1..=1024 * 1024).contains(&self.max_budget_scopes) {
            return bad(format!(
                "max_budget_scopes must be 1 to 1 Mi, not {}",
                self.max_budget_scopes
            ));
        }
        if !(1..=16 * 1024 * 1024).contains(&self.max_input_chars) {
            return bad(format!(
                "max_input_chars must be 1 to 16 Mi, not {}",
                self.max_input_chars
            ));
        }
        if !(1..=1024).contains(&self.max_calls_per_message) {
            return bad(format!(
                "max_calls_per_message must be 1 to 1024, not {}",
                self.max_calls_per_message
            ));
        }
        if !(1..=256 * 1024 * 1024).contains(&self.max_message_chars) {
            return bad(format!(
                "max_message_chars must be 1 to 256 Mi, not {}",
                self.max_message_chars
            ));
        }
        let hour = Duration::from_secs(3600);
        for (name, value) in [
            ("hand_off_grace", self.hand_off_grace),
            ("remote_grace", self.remote_grace),
            ("close_grace", self.close_grace),
        ] {
            if value > hour {
                return bad(format!("{name} must be at most 1 hour, not {value:?}"));
            }
        }
        Ok(())
    }
}

/// The harness: a [`ToolRegistry`], the checks, an admission executor and an attempt budget.
///
/// A JSON object from a model can only *request* a tool. The application decides which
/// capabilities exist ([`ToolRegistry`]), which arguments are valid (strict JSON, the exact
/// shape, the name pattern, the tool's JSON Schema), how much work is allowed (N workers
/// behind a zero-capacity hand-off, an attempt budget) and what a timeout means. Every call
/// ends in one [`Outcome`] with one of eight [`Status`]es, and every decision is audited.
///
/// Cheap to clone; clones share everything (workers, budget, audit). `Send + Sync`: calls
/// may come from many threads at once. The parallel tool calls of one model turn are best
/// given together to [`Harness::handle_message`] (the assistant message as the API returned
/// it) or [`Harness::handle_all`] (its calls): they are admitted in their order and answered
/// in it. The registry is fixed for the harness's life.
///
/// # Shapes
///
/// A call arrives in a [`CallShape`] and its reply ([`ToolReply::message`]) leaves in the
/// same one:
///
/// | shape | a call | its reply |
/// |---|---|---|
/// | [`CallShape::OpenAi`] | `{"id", "type": "function", "function": {"name", "arguments": "<JSON text>"}}` (and a streamed call's `index`) | `{"role": "tool", "tool_call_id", "content"}` |
/// | [`CallShape::OpenAiResponses`] | `{"type": "function_call", "call_id", "name", "arguments": "<JSON text>"}` (and `id`, `status`, `async`, `caller`, `namespace`) | `{"type": "function_call_output", "call_id", "output"}` |
/// | [`CallShape::Anthropic`] | `{"type": "tool_use", "id", "name", "input"}` (and `caller`, `toolset_name`) | `{"type": "tool_result", "tool_use_id", "content", "is_error"}` |
/// | [`CallShape::Gemini`] | `{"functionCall": {"name", "args", "id"}}` (`args`, `id` and the part's `thoughtSignature` optional) | `{"functionResponse": {"name", "id", "response": {"output"} or {"error"}}}` |
/// | [`CallShape::Plain`] | `{"tool", "arguments"}` | `{"status", "result", "detail"}` |
///
/// The text of a reply is the result for `OK`, and otherwise starts with the status word and
/// the reason (`INVALID: …` with the repair message), as [`Outcome::model_text`] says. Any
/// other field in a call is `INVALID`, named; a Responses item that is not `completed` or
/// names a `namespace` is refused, since it would not run as written.
///
/// ```
/// use serde_json::json;
/// use toolwire::{CallShape, Harness, HarnessConfig, LocalTool, Status, ToolRegistry};
///
/// let mut registry = ToolRegistry::new();
/// registry.register(LocalTool::new(
///     "add",
///     "Adds two integers.",
///     json!({"type": "object", "required": ["a", "b"], "additionalProperties": false,
///            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
///     |args, _cancel| Ok(Some(json!(args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap()))),
/// ))?;
/// let harness = Harness::new(registry, HarnessConfig::default())?;
///
/// let call = r#"{"id":"call_1","type":"function",
///                "function":{"name":"add","arguments":"{\"a\":2,\"b\":3}"}}"#;
/// let reply = harness.handle(CallShape::OpenAi, call);
/// assert_eq!(reply.outcome.status, Status::Ok);
/// assert_eq!(
///     reply.message(),
///     json!({"role": "tool", "tool_call_id": "call_1", "content": "5"})
/// );
///
/// let twice = r#"{"tool":"add","arguments":{"a":1,"a":2,"b":3}}"#;
/// let reply = harness.handle(CallShape::Plain, twice);
/// assert_eq!(reply.outcome.status, Status::Invalid);
/// assert!(reply.outcome.detail.contains("duplicate key \"a\""));
/// assert_eq!(harness.budget().used, 1);
/// harness.close();
/// # Ok::<(), toolwire::Error>(())
/// ```
///
/// # The order of the checks
///
/// size (characters, before parsing) → strict JSON (no repeated key at any depth, nothing
/// after the value) → the exact fields of the shape → the registry: a name it does not
/// hold is `UNKNOWN_TOOL` with the list of tools when some model API or MCP accepts it
/// ([`crate::mcp::is_callable_name`]), `INVALID` otherwise → the arguments against the tool's schema (`INVALID` with a
/// repair message naming each field, what is wrong, and the schema) → the budget
/// (`BUDGET`) → admission (`BUSY`) → the run (`OK`, `NOT_FOUND`, `TOOL_ERROR`, `TIMEOUT`)
/// → the result limit. Nothing before admission runs any tool code, and nothing
/// interprets a name or an argument as a path: a name is only a registry key, arguments are
/// handed to the tool as data, and results go back to the model as JSON strings.
///
/// # Timeouts and the admission slot
///
/// A local tool runs on a worker; when its bound passes, the caller gets `TIMEOUT`, the
/// tool's [`CancelFlag`] is set, and the tool keeps its worker until it returns (cancelling
/// is not terminating), so the next call may be `BUSY`. Its late result is logged as a
/// `late` event and discarded. For MCP tools see [`RemoteTimeoutSlot`]: by default the request
/// is cancelled on the wire and the slot freed at once.
///
/// # Budget and retries
///
/// The attempt budget grows only when the executor admits an attempt: `INVALID`,
/// `UNKNOWN_TOOL` and `BUSY` cost nothing; `NOT_FOUND`, `TOOL_ERROR`, `TIMEOUT` and `OK` cost
/// one per admitted attempt. Nothing is retried unless the tool is idempotent and has a
/// [`RetryPolicy`].
///
/// A long-lived host gives each conversation (or task) its own budget with
/// [`Harness::conversation`]; a call may also spend a scope's budget ([`Harness::scope`],
/// [`CallSettings::budget`]): one per session or caller, each counted the same way.
///
/// # MCP tools held outside the registry
///
/// [`Harness::call_imported`] runs an [`ImportedTool`] (an MCP server's tool under a name of
/// the caller's, optionally behind an [`Admission`] handle of its server) through the same
/// steps, with its [`CallSettings`]: this is how the gateway serves its backends' tools.
///
/// # What the model sees
///
/// `TOOL_ERROR` never carries internal text: a local tool's failure reads as a generic
/// sentence unless the tool made it with [`ToolFailure::safe`]; transport failures and
/// JSON-RPC errors read as generic sentences; an MCP tool's own `isError` text is its answer
/// and is passed on (see [`RemoteErrorText`]). The hidden text goes to the log and the
/// transcript.
///
/// # Threads and shutdown
///
/// `workers` threads named `toolwire-harness-N`. [`Harness::close`] (or dropping the last
/// clone) stops admitting, raises every running call's cancel flag, and joins the workers
/// that finish within [`HarnessConfig::close_grace`]; a worker stuck in a tool that ignores
/// its flag is left behind with a warning. After close every call is `BUSY`.
#[derive(Clone)]
pub struct Harness {
    inner: Arc<Inner>,
}

impl fmt::Debug for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Harness")
            .field("registry", &self.inner.registry)
            .field("config", &self.inner.config)
            .field("budget", &self.inner.budget.state())
            .finish()
    }
}

pub(crate) struct Inner {
    registry: ToolRegistry,
    config: HarnessConfig,
    executor: Executor,
    budget: Budget,
    scopes: BudgetScopes,
    audit: Arc<Audit>,
    sleeper: Arc<dyn Sleeper>,
    next_call: AtomicU64,
    next_attempt: AtomicU64,
    cancels: CancelTable,
    closed: AtomicBool,
}

impl Inner {
    fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        for cancel in self.cancels.lock().values() {
            cancel.cancel();
        }
        self.executor.close(self.config.close_grace);
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if !self.closed.load(Ordering::SeqCst) {
            log::debug!(target: HARNESS_LOG_TARGET, "harness dropped without close(); closing it");
            self.close();
        }
    }
}

impl Harness {
    /// Starts the workers.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a setting out of its bounds, [`Error::Io`]
    /// when a worker thread cannot be started.
    pub fn new(registry: ToolRegistry, config: HarnessConfig) -> Result<Harness> {
        config.check()?;
        let executor = Executor::start(config.workers, config.hand_off_grace, config.close_grace)?;
        let audit = Arc::new(Audit {
            transcript: config.transcript.clone(),
            observer: config.observer.clone(),
            metrics: config.metrics.clone(),
            requests: config.requests.clone(),
        });
        let inner = Arc::new(Inner {
            registry,
            budget: Budget::new(config.attempt_budget),
            scopes: BudgetScopes::new(config.attempt_budget, config.max_budget_scopes),
            sleeper: Arc::clone(&config.sleeper),
            config,
            executor,
            audit,
            next_call: AtomicU64::new(0),
            next_attempt: AtomicU64::new(0),
            cancels: Arc::new(Mutex::new(HashMap::new())),
            closed: AtomicBool::new(false),
        });
        if let Some(metrics) = &inner.config.metrics {
            let weak = Arc::downgrade(&inner);
            metrics.gauge(
                crate::metrics::HARNESS_BUDGET_REMAINING,
                "Attempts left in the harness's own budget.",
                move || Some(f64::from(weak.upgrade()?.budget.state().remaining())),
            );
        }
        Ok(Harness { inner })
    }

    /// Takes one raw tool call in `shape` (the JSON text as the model produced it), runs
    /// every check, and runs the tool if they all pass. Never fails: every problem is an
    /// [`Outcome`]. Blocks at most the tool's bound (plus back-off when it retries).
    pub fn handle(&self, shape: CallShape, raw: &str) -> ToolReply {
        let mut reply = self.inner.handle(shape, raw);
        shapes::mark_custom(shape, &[raw], std::slice::from_mut(&mut reply));
        reply
    }

    /// [`Harness::handle`] for a call already parsed (e.g. by an SDK): it is written back to
    /// text and checked like raw text. A parsed value can no longer show a repeated key.
    pub fn handle_value(&self, shape: CallShape, call: &Value) -> ToolReply {
        self.handle(shape, &call.to_string())
    }

    /// Handles the several tool calls of one assistant message (parallel tool calls) as one,
    /// each raw call in `shape` as [`Harness::handle`] would, and returns one reply per call
    /// in the calls' order. Never fails.
    ///
    /// The calls are admitted in their order, at once: while workers are free each call takes
    /// one (and one unit of the attempt budget); a call that finds none is `BUSY`, never
    /// queued behind the others; a call past the spent budget is `BUDGET`. The admitted calls
    /// then run side by side, and the method returns when every call has its answer: at most
    /// the longest of their tools' bounds (plus back-off for a tool that retries). At most
    /// [`HarnessConfig::max_calls_per_message`] calls are run; the others are `INVALID`.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolwire::{CallShape, Harness, HarnessConfig, LocalTool, Status, ToolRegistry};
    ///
    /// let mut registry = ToolRegistry::new();
    /// registry.register(LocalTool::new(
    ///     "echo",
    ///     "Returns its text.",
    ///     json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    ///     |args, _cancel| Ok(Some(args["text"].clone())),
    /// ))?;
    /// let harness = Harness::new(registry, HarnessConfig::default().workers(2))?;
    /// let calls = [
    ///     r#"{"functionCall": {"id": "a", "name": "echo", "args": {"text": "one"}}}"#,
    ///     r#"{"functionCall": {"id": "b", "name": "echo", "args": {"text": 2}}}"#,
    /// ];
    /// let replies = harness.handle_all(CallShape::Gemini, &calls);
    /// assert_eq!(replies[0].outcome.status, Status::Ok);
    /// assert_eq!(replies[1].outcome.status, Status::Invalid); // the schema wants a string
    /// assert_eq!(
    ///     replies[0].message(),
    ///     json!({"functionResponse": {"name": "echo", "id": "a", "response": {"output": "one"}}})
    /// );
    /// harness.close();
    /// # Ok::<(), toolwire::Error>(())
    /// ```
    pub fn handle_all<S: AsRef<str>>(&self, shape: CallShape, calls: &[S]) -> Vec<ToolReply> {
        let calls: Vec<&str> = calls.iter().map(AsRef::as_ref).collect();
        let mut replies = self
            .inner
            .handle_all(shape, &calls, None, &CallSettings::new());
        shapes::mark_custom(shape, &calls, &mut replies);
        replies
    }

    /// [`Harness::handle_all`] within the caller's `deadline`: no attempt is started after
    /// it and none is waited for past it. A call still running then is `TIMEOUT` (its cancel
    /// flag raised; an MCP request with [`RemoteTimeoutSlot::Release`] is cancelled on the
    /// wire at the deadline); a call that could not start before it is `TIMEOUT` with nothing
    /// run and no budget spent; a retry whose back-off would end past it is not begun. Returns
    /// at the deadline at the latest, give or take the scheduler.
    pub fn handle_all_until<S: AsRef<str>>(
        &self,
        shape: CallShape,
        calls: &[S],
        deadline: Instant,
    ) -> Vec<ToolReply> {
        let calls: Vec<&str> = calls.iter().map(AsRef::as_ref).collect();
        let mut replies =
            self.inner
                .handle_all(shape, &calls, Some(deadline), &CallSettings::new());
        shapes::mark_custom(shape, &calls, &mut replies);
        replies
    }

    /// Handles every tool call of a whole assistant message in `shape`, as
    /// [`Harness::handle_all`] does, and returns the replies with the message(s) that carry
    /// them back ([`MessageReply::messages`]). The message is the one the provider's API
    /// returned, as JSON text:
    ///
    /// | shape | the message | its calls |
    /// |---|---|---|
    /// | [`CallShape::OpenAi`] | the whole `ChatCompletion` (its `choices[0].message` is read), the message, or its `tool_calls` | every entry of `tool_calls` |
    /// | [`CallShape::OpenAiResponses`] | the response (or its `output`) | the `function_call` and `custom_tool_call` items |
    /// | [`CallShape::Anthropic`] | the message (or its `content`) | the `tool_use` blocks |
    /// | [`CallShape::Gemini`] | the whole `GenerateContentResponse` (its `candidates[0].content` is read), the content, or its `parts` | the parts with a `functionCall` |
    /// | [`CallShape::Plain`] | an array of plain calls | every entry |
    ///
    /// The rest of the message (text, reasoning, other items, the other choices of an `n > 1`
    /// request) is passed over; a message with no calls gives no replies. A `custom` tool call
    /// is answered `INVALID` ([`ToolReply::custom`]): every tool here takes JSON arguments. Each call is read as strictly as a single call, so a broken
    /// call is `INVALID` (answered, addressed by its id when it can be read) and the others
    /// run.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolwire::{CallShape, Harness, HarnessConfig, LocalTool, Status, ToolRegistry};
    ///
    /// let mut registry = ToolRegistry::new();
    /// registry.register(LocalTool::new(
    ///     "add",
    ///     "Adds two integers.",
    ///     json!({"type": "object", "required": ["a", "b"],
    ///            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
    ///     |args, _cancel| Ok(Some(json!(args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap()))),
    /// ))?;
    /// let harness = Harness::new(registry, HarnessConfig::default())?;
    /// let message = r#"{"role": "assistant", "content": [
    ///     {"type": "text", "text": "Two sums at once."},
    ///     {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
    ///     {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {"a": 3}}]}"#;
    /// let reply = harness.handle_message(CallShape::Anthropic, message)?;
    /// assert_eq!(reply.replies[0].outcome.status, Status::Ok);
    /// assert_eq!(reply.replies[1].outcome.status, Status::Invalid);
    /// let answer = &reply.messages()[0]; // one user message with both results, in order
    /// assert_eq!(answer["role"], "user");
    /// assert_eq!(answer["content"][0],
    ///            json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "3",
    ///                   "is_error": false}));
    /// assert_eq!(answer["content"][1]["tool_use_id"], "toolu_2");
    /// harness.close();
    /// # Ok::<(), toolwire::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when the text is longer than
    /// [`HarnessConfig::max_message_chars`], is not JSON, or is not a message of the shape
    /// (the wrong role, a container of the wrong type, a container field given twice, an
    /// object with none of the fields of the table, whose reason names the path expected, a
    /// Chat Completions message with the deprecated `function_call`). The
    /// envelope comes from the provider's API rather than the model, so this is a fault in
    /// the caller's plumbing; nothing was run.
    pub fn handle_message(&self, shape: CallShape, message: &str) -> Result<MessageReply> {
        self.inner
            .handle_message(shape, message, None, &CallSettings::new())
    }

    /// [`Harness::handle_message`] within the caller's `deadline`, as
    /// [`Harness::handle_all_until`].
    ///
    /// # Errors
    ///
    /// As [`Harness::handle_message`].
    pub fn handle_message_until(
        &self,
        shape: CallShape,
        message: &str,
        deadline: Instant,
    ) -> Result<MessageReply> {
        self.inner
            .handle_message(shape, message, Some(deadline), &CallSettings::new())
    }

    /// Calls a tool by name with arguments, from Rust: the name, registry, schema, budget and
    /// admission checks apply as for a raw call.
    pub fn call(&self, name: &str, arguments: Value) -> Outcome {
        self.inner.call(name, arguments, &CallSettings::default())
    }

    /// [`Harness::call`] with the call's own settings: the budget scope it spends, the
    /// caller's cancellation and progress, its deadline.
    pub fn call_with(&self, name: &str, arguments: Value, settings: &CallSettings) -> Outcome {
        self.inner.call(name, arguments, settings)
    }

    /// [`Harness::call`] spending `scope`'s budget instead of the harness's own.
    pub fn call_in(&self, scope: &BudgetScope, name: &str, arguments: Value) -> Outcome {
        let settings = CallSettings::new().budget(scope.clone());
        self.inner.call(name, arguments, &settings)
    }

    /// The budget scope of `key` (a conversation, a session, an authenticated caller: any
    /// key the caller chooses), made with nothing used and the limit of
    /// [`HarnessConfig::attempt_budget`] when the key is new. At most
    /// [`HarnessConfig::max_budget_scopes`] scopes are held (see [`BudgetScopes`]).
    pub fn scope(&self, key: &str) -> BudgetScope {
        self.inner.scopes.scope(key)
    }

    /// The registry.
    pub fn registry(&self) -> &ToolRegistry {
        &self.inner.registry
    }

    /// The attempt budget as it stands.
    pub fn budget(&self) -> BudgetState {
        self.inner.budget.state()
    }

    /// Starts the budget over: nothing used, the given limit (e.g. for a new task).
    pub fn reset_budget(&self, limit: u32) {
        self.inner.budget.reset(limit);
    }

    /// How many workers are occupied right now, including by timed-out work that is still
    /// running.
    pub fn busy_workers(&self) -> usize {
        self.inner.executor.occupied()
    }

    /// Waits until no worker is occupied, at most `limit`; true when idle.
    pub fn wait_idle(&self, limit: Duration) -> bool {
        self.inner.executor.wait_idle(limit)
    }

    /// Numbers a call decided outside the harness (a proxy's answer to an unknown name, a
    /// resource read it forwards), so that the audit lines its owner writes for it and the
    /// harness's own share one sequence of call numbers.
    pub fn next_call_number(&self) -> u64 {
        self.inner.next_call.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// How many calls were numbered so far, by the harness and by
    /// [`Harness::next_call_number`].
    pub fn calls_numbered(&self) -> u64 {
        self.inner.next_call.load(Ordering::Relaxed)
    }

    /// Stops the harness (see the type's docs). Idempotent.
    pub fn close(&self) {
        self.inner.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_out_of_bounds_are_refused() {
        for config in [
            HarnessConfig::default().workers(0),
            HarnessConfig::default().workers(2000),
            HarnessConfig::default().max_input_chars(0),
            HarnessConfig::default().max_calls_per_message(0),
            HarnessConfig::default().max_message_chars(0),
            HarnessConfig::default().max_budget_scopes(0),
        ] {
            assert!(matches!(
                Harness::new(ToolRegistry::new(), config),
                Err(Error::Config(_))
            ));
        }
    }

    #[test]
    fn a_scope_spends_its_own_budget_and_not_the_harnesss() {
        let mut registry = ToolRegistry::new();
        registry
            .register(LocalTool::new(
                "echo",
                "Echoes.",
                serde_json::json!({"type": "object"}),
                |arguments, _| Ok(Some(arguments.clone())),
            ))
            .unwrap();
        let harness = Harness::new(registry, HarnessConfig::default().attempt_budget(1)).unwrap();
        let alice = harness.scope("alice");
        let call = |scope: &BudgetScope| harness.call_in(scope, "echo", serde_json::json!({}));
        assert_eq!(call(&alice).status, Status::Ok);
        assert_eq!(call(&alice).status, Status::Budget);
        assert_eq!(call(&harness.scope("bob")).status, Status::Ok);
        assert_eq!(
            harness.budget().used,
            0,
            "the harness's own budget was spent"
        );
        assert_eq!(
            harness.call("echo", serde_json::json!({})).status,
            Status::Ok
        );
        harness.close();
    }

    #[test]
    fn harness_is_send_sync_and_clone() {
        fn assert_traits<T: Send + Sync + Clone>() {}
        assert_traits::<Harness>();
        assert_traits::<ToolRegistry>();
    }
}
