//! Local tools: the code, its options, its failures, and the cancel flag it may honour.

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use serde_json::Value;

use super::context::ToolFunction;
use super::outcome::ResultLimit;
use super::retry::RetryPolicy;
use crate::error::{Error, Result};
use crate::mcp::{CallToolResult, TaskSupport, ToolAnnotations};

/// Set when a call's time bound has passed (or the harness is closing). A tool may check it
/// and stop early; nothing forces it to. Cheap to clone; clones share the flag.
///
/// A thread that waits for something else can wait on the flag too, without looking at it
/// over and over: [`CancelFlag::signal`] is a channel that fires when the flag is raised, for
/// `crossbeam_channel::select!`.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(Arc<CancelState>);

#[derive(Debug, Default)]
struct CancelState {
    raised: AtomicBool,
    /// Made when first asked for; its sender is dropped when the flag is raised, which every
    /// receiver sees at once.
    signal: Mutex<Option<(Sender<()>, Receiver<()>)>>,
}

impl CancelFlag {
    /// A flag that is not set.
    pub fn new() -> CancelFlag {
        CancelFlag::default()
    }

    /// True once the harness has given up on the call.
    pub fn is_cancelled(&self) -> bool {
        self.0.raised.load(Ordering::SeqCst)
    }

    /// Sets the flag, and fires its [`CancelFlag::signal`].
    pub fn cancel(&self) {
        if !self.0.raised.swap(true, Ordering::SeqCst) {
            // Dropping the sender disconnects every receiver: that is the signal.
            drop(self.0.signal.lock().take());
        }
    }

    /// A channel that never carries a message and is disconnected once the flag is raised
    /// (at once when it is raised already): a receive on it returns when the call is
    /// cancelled. Wait on it beside what the call waits for, with
    /// `crossbeam_channel::select!` (a `recv` on it then yields `Err`).
    pub fn signal(&self) -> Receiver<()> {
        let mut signal = self.0.signal.lock();
        if let Some((_, receiver)) = signal.as_ref() {
            return receiver.clone();
        }
        let (sender, receiver) = crossbeam_channel::bounded(0);
        // Read under the lock `cancel` takes after raising the flag: either the flag is seen
        // raised here, or `cancel` finds the sender stored and drops it.
        if !self.is_cancelled() {
            *signal = Some((sender, receiver.clone()));
        }
        receiver
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    Internal,
    Safe,
    Transport,
}

/// Why a tool failed. The model and the client never see an internal message: only a
/// [`ToolFailure::safe`] one reaches them; an internal one is kept for the operator (the log,
/// the transcript).
///
/// Any `std::error::Error` converts into an internal failure, so a handler can use `?`.
#[derive(Clone)]
pub struct ToolFailure {
    kind: FailureKind,
    message: String,
    /// Something for whoever runs the tool, never shown (see [`ToolFailure::carrying`]).
    carried: Option<Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for ToolFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolFailure")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("carried", &self.carried.is_some())
            .finish()
    }
}

/// Two failures are equal when their kind and message are (what they carry is not compared).
impl PartialEq for ToolFailure {
    fn eq(&self, other: &ToolFailure) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

impl Eq for ToolFailure {}

impl ToolFailure {
    /// A failure whose text stays internal: it goes to the log and the transcript, and the
    /// model reads a generic `TOOL_ERROR` detail instead.
    pub fn internal(message: impl Into<String>) -> ToolFailure {
        ToolFailure {
            kind: FailureKind::Internal,
            message: message.into(),
            carried: None,
        }
    }

    /// A failure whose text is written for the model (e.g. "no city named Atlantis"). It is
    /// the tool's answer, in the outcome's `result`.
    pub fn safe(message: impl Into<String>) -> ToolFailure {
        ToolFailure {
            kind: FailureKind::Safe,
            message: message.into(),
            carried: None,
        }
    }

    /// The tool could not reach what it wraps (a connection refused or reset). Retried when
    /// the tool is idempotent and has a [`RetryPolicy`]; the text stays internal.
    pub fn transport(message: impl Into<String>) -> ToolFailure {
        ToolFailure {
            kind: FailureKind::Transport,
            message: message.into(),
            carried: None,
        }
    }

    /// The message as given.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// True for [`ToolFailure::safe`].
    pub fn is_safe(&self) -> bool {
        self.kind == FailureKind::Safe
    }

    /// True for [`ToolFailure::transport`].
    pub fn is_transport(&self) -> bool {
        self.kind == FailureKind::Transport
    }

    /// The failure with `value` attached for whoever runs the tool, never shown to the model
    /// or the client: an MCP server's [`ToolContext`](super::ToolContext) puts the JSON-RPC
    /// answer of a request back to the client here (a 2026-07-28 input round, a capability
    /// the client lacks), so the server answers it as it would its own. A local harness
    /// ignores it.
    pub fn carrying(mut self, value: impl Any + Send + Sync) -> ToolFailure {
        self.carried = Some(Arc::new(value));
        self
    }

    /// What the failure carries, when it is a `T` ([`ToolFailure::carrying`]).
    pub fn carried<T: Any>(&self) -> Option<&T> {
        self.carried.as_deref()?.downcast_ref()
    }

    pub(crate) fn kind(&self) -> FailureKind {
        self.kind
    }
}

impl<E: std::error::Error> From<E> for ToolFailure {
    fn from(error: E) -> ToolFailure {
        ToolFailure::internal(error.to_string())
    }
}

/// The short form of a tool's code, for a tool that needs no more of its context than the
/// cancel flag: given the validated arguments, it returns a JSON result, `Ok(None)` when it
/// ran and found nothing (`NOT_FOUND`), or a failure ([`LocalTool::new`]). The full form is
/// [`super::ToolFunction`] ([`LocalTool::with_context`]).
pub type ToolHandler =
    Arc<dyn Fn(&Value, &CancelFlag) -> Result<Option<Value>, ToolFailure> + Send + Sync>;

/// A local tool's code, in either form.
#[derive(Clone)]
pub(crate) enum LocalCode {
    /// [`LocalTool::new`]: a JSON value (or nothing) from the arguments.
    Value(ToolHandler),
    /// [`LocalTool::with_context`]: the one handler signature.
    Context(ToolFunction),
}

/// How long the harness waits for a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolTimeout {
    /// 10 s.
    Fast,
    /// 60 s.
    #[default]
    Standard,
    /// 300 s.
    Long,
    /// An explicit bound, 1 ms to 1 hour.
    Custom(Duration),
}

impl ToolTimeout {
    /// The bound as a duration.
    pub fn duration(self) -> Duration {
        match self {
            ToolTimeout::Fast => Duration::from_secs(10),
            ToolTimeout::Standard => Duration::from_secs(60),
            ToolTimeout::Long => Duration::from_secs(300),
            ToolTimeout::Custom(bound) => bound,
        }
    }
}

/// The longest explicit bound a tool may have.
pub(crate) const MAX_BOUND: Duration = Duration::from_secs(3600);
/// The largest result limit a tool may have, in characters.
pub(crate) const MAX_RESULT_CHARS: usize = 16 * 1024 * 1024;

pub(crate) fn check_bound(what: &str, bound: Duration) -> Result<()> {
    if bound < Duration::from_millis(1) || bound > MAX_BOUND {
        return Err(Error::Config(format!(
            "{what} must be 1 ms to 1 hour, not {bound:?}"
        )));
    }
    Ok(())
}

/// Per-tool settings. `Default` is: the standard 60 s bound, not idempotent, no retry, the
/// default [`ResultLimit`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ToolOptions {
    pub(crate) timeout: ToolTimeout,
    pub(crate) idempotent: bool,
    pub(crate) retry: Option<RetryPolicy>,
    pub(crate) result_limit: ResultLimit,
    pub(crate) allow_large_integers: bool,
}

impl ToolOptions {
    /// The defaults.
    pub fn new() -> ToolOptions {
        ToolOptions::default()
    }

    /// How long a call waits for the tool. Defaults to [`ToolTimeout::Standard`] (60 s).
    pub fn timeout(mut self, timeout: ToolTimeout) -> Self {
        self.timeout = timeout;
        self
    }

    /// Calling twice with the same arguments has no further effect, so a retry is safe.
    /// Defaults to false. (An MCP tool is also idempotent when its annotations say
    /// `idempotentHint` or `readOnlyHint`, see [`crate::McpImport::trust_annotations`].)
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// The retry policy, used only when the tool is idempotent. Defaults to none: no automatic
    /// retry.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// The size policy for results. Defaults to [`ResultLimit::default`] (16,384 characters,
    /// truncated beyond).
    pub fn result_limit(mut self, limit: ResultLimit) -> Self {
        self.result_limit = limit;
        self
    }

    /// Let arguments carry integers beyond ±(2^53 − 1) ([`crate::harness::MAX_SAFE_INTEGER`]).
    /// By default such a call is `INVALID` with a repair message: many JSON readers
    /// (JavaScript's among them) cannot hold them exactly, so a tool written in one would
    /// silently get another number. Integers outside the 64-bit range are refused whatever
    /// this says. Defaults to false.
    pub fn allow_large_integers(mut self, allow: bool) -> Self {
        self.allow_large_integers = allow;
        self
    }

    pub(crate) fn check(&self) -> Result<()> {
        check_bound("a tool timeout", self.timeout.duration())?;
        if !(1..=MAX_RESULT_CHARS).contains(&self.result_limit.max_chars) {
            return Err(Error::Config(format!(
                "a result limit must be 1 to {MAX_RESULT_CHARS} characters, not {}",
                self.result_limit.max_chars
            )));
        }
        if let Some(policy) = &self.retry {
            policy.check().map_err(Error::Config)?;
        }
        Ok(())
    }
}

/// A tool whose code runs in this process: the one runnable tool type. Registered in a
/// [`super::ToolRegistry`] it runs in a local harness ([`super::Harness`]); the same value is
/// served by `toolwire::server` (`Server::add_tool`, or a whole registry with
/// `Server::add_registry`) with the same checks, options, result limit and failure wording.
/// An MCP server's tool is its counterpart ([`super::ImportedTool`]), and the listing entry
/// both are shown as is [`crate::mcp::Tool`].
///
/// Its code has the one handler signature ([`LocalTool::with_context`]: the request's
/// [`super::ToolContext`] and the arguments in, a [`CallToolResult`] or a [`ToolFailure`]
/// out), or the short form of [`LocalTool::new`] for code that needs only the arguments and
/// the cancel flag.
pub struct LocalTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: Value,
    pub(crate) handler: LocalCode,
    pub(crate) options: ToolOptions,
    pub(crate) served: Served,
}

/// A step a served, task-capable call runs in its own `tools/call` request before its task
/// is created ([`LocalTool::before_task`]): the request's context and the arguments as sent
/// in, the arguments the task's code gets out.
pub type BeforeTask =
    Arc<dyn Fn(&dyn super::ToolContext, &Value) -> Result<Value, ToolFailure> + Send + Sync>;

/// What a tool shows to MCP clients when its registry is served (`toolwire::server`), beyond
/// its name, description and input schema, and how a server runs it. A harness calling the
/// tool itself ignores it, except [`Served::unchecked`].
#[derive(Clone, Default)]
pub(crate) struct Served {
    pub(crate) title: Option<String>,
    pub(crate) annotations: ToolAnnotations,
    pub(crate) output_schema: Option<Value>,
    pub(crate) task: TaskSupport,
    /// Run on the thread that read the request ([`LocalTool::inline`]).
    pub(crate) inline: bool,
    /// Client capabilities a call needs ([`LocalTool::requires`]).
    pub(crate) requires: Vec<String>,
    /// [`LocalTool::before_task`].
    pub(crate) before_task: Option<BeforeTask>,
    /// True when the schemas are neither compiled nor checked ([`LocalTool::check_schemas`]).
    pub(crate) unchecked: bool,
}

impl fmt::Debug for Served {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Served")
            .field("title", &self.title)
            .field("task", &self.task)
            .field("inline", &self.inline)
            .field("requires", &self.requires)
            .field("before_task", &self.before_task.is_some())
            .field("unchecked", &self.unchecked)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for LocalTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalTool")
            .field("name", &self.name)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl LocalTool {
    /// A tool named `name` (it must follow [`crate::mcp::TOOL_NAME_RULE`], checked when it is
    /// registered), described for the model, with the JSON Schema of its arguments (an object
    /// schema, compiled once when registered) and its code in the short form
    /// ([`ToolHandler`]): the arguments and the cancel flag in, a JSON result out. Served, an
    /// object result is sent as `structuredContent` with its JSON as text, any other as text.
    /// [`LocalTool::with_context`] is the full form.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: impl Fn(&Value, &CancelFlag) -> Result<Option<Value>, ToolFailure>
            + Send
            + Sync
            + 'static,
    ) -> LocalTool {
        LocalTool {
            name: name.into(),
            description: description.into(),
            input_schema,
            handler: LocalCode::Value(Arc::new(handler)),
            options: ToolOptions::default(),
            served: Served::default(),
        }
    }

    /// A tool named `name` (it must follow [`crate::mcp::TOOL_NAME_RULE`]), described for the
    /// model, with the JSON Schema of its arguments (an object schema, compiled once when
    /// registered) and its code, with the one handler signature: the request's
    /// [`super::ToolContext`] (cancellation, progress, log messages, input requests to the
    /// client) and the checked arguments in, the MCP result out (its `structuredContent`
    /// checked against [`LocalTool::output_schema`] when served; held to the result limit in
    /// both places) or a [`ToolFailure`].
    ///
    /// In a local harness an `isError` result is `TOOL_ERROR` with its text for the model, a
    /// result with `structuredContent` is `OK` with that value, one of text blocks `OK` with
    /// the text, an empty one `NOT_FOUND`.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolwire::harness::{Harness, HarnessConfig, LocalTool, Status, ToolRegistry};
    /// use toolwire::CallToolResult;
    ///
    /// let tool = LocalTool::with_context(
    ///     "get_weather",
    ///     "The weather in a city.",
    ///     json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    ///     |context, args| {
    ///         context.report_progress(1.0, Some(1.0), Some("asked the sky"));
    ///         Ok(CallToolResult::structured(json!({"city": args["city"], "sky": "clear"})))
    ///     },
    /// );
    /// let mut registry = ToolRegistry::new();
    /// registry.register(tool)?;
    /// let harness = Harness::new(registry, HarnessConfig::default())?;
    /// let outcome = harness.call("get_weather", json!({"city": "Lima"}));
    /// assert_eq!(outcome.status, Status::Ok);
    /// assert_eq!(outcome.result, json!({"city": "Lima", "sky": "clear"}));
    /// harness.close();
    /// # Ok::<(), toolwire::Error>(())
    /// ```
    pub fn with_context(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: impl Fn(&dyn super::ToolContext, &Value) -> Result<CallToolResult, ToolFailure>
            + Send
            + Sync
            + 'static,
    ) -> LocalTool {
        LocalTool {
            name: name.into(),
            description: description.into(),
            input_schema,
            handler: LocalCode::Context(Arc::new(handler)),
            options: ToolOptions::default(),
            served: Served::default(),
        }
    }

    /// Sets the tool's options.
    pub fn options(mut self, options: ToolOptions) -> Self {
        self.options = options;
        self
    }

    /// A display title, shown to MCP clients when the registry is served. Defaults to none.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.served.title = Some(title.into());
        self
    }

    /// Behaviour hints for MCP clients when the registry is served. Defaults to none, except
    /// that an idempotent tool ([`ToolOptions::idempotent`]) is listed with
    /// `idempotentHint: true` unless this says otherwise.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.served.annotations = annotations;
        self
    }

    /// Whether a served call runs as a task of the 2026-07-28 tasks extension (see
    /// `toolwire::server`): answered at once with the task, the code run on the server's
    /// pool, an input request ([`super::ToolContext::request_input`]) answered with
    /// `tasks/update`. A local harness runs every call within the call, whatever this says.
    /// Defaults to [`TaskSupport::Forbidden`].
    pub fn task(mut self, support: TaskSupport) -> Self {
        self.served.task = support;
        self
    }

    /// The JSON Schema of the tool's result (an object schema), compiled when the tool is
    /// registered. When the registry is served, an object result is sent as
    /// `structuredContent` and checked against it first: a result that does not match is a
    /// tool error, never sent. Defaults to none.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.served.output_schema = Some(schema);
        self
    }

    /// Whether the schemas are compiled when the tool is registered and the arguments (and,
    /// served, the structured result) checked against them, with the integer bound. False
    /// lists the schemas as given and checks none of it, wherever the tool runs: for code
    /// that checks its arguments itself (a proxy, whose upstream server's schemas are its
    /// own), and a schema that would not compile does not keep the tool from being served.
    /// Defaults to true.
    pub fn check_schemas(mut self, check: bool) -> Self {
        self.served.unchecked = !check;
        self
    }

    /// Served, runs the code on the thread that read the request instead of the server's
    /// worker pool: for quick work that never blocks and makes no request back to the client
    /// (it holds up every later request of its connection while it runs). A local harness
    /// runs every call the same way, whatever this says. Defaults to false.
    pub fn inline(mut self, inline: bool) -> Self {
        self.served.inline = inline;
        self
    }

    /// Served, a client capability (`sampling`, `elicitation`, `roots`) the tool cannot run
    /// without: a call from a client that did not declare it is refused with the server's
    /// `MISSING_CAPABILITY` before the code runs. A local harness has no client and ignores
    /// it. Defaults to none.
    pub fn requires(mut self, capability: impl Into<String>) -> Self {
        self.served.requires.push(capability.into());
        self
    }

    /// Served, a step a task-capable call ([`LocalTool::task`]) runs in its own `tools/call`
    /// request before its task is created: it gets the arguments as sent (the input schema is
    /// checked when the code runs, on what this step returns) and returns the ones the task's
    /// code gets, and may ask for input in rounds first
    /// ([`super::ToolContext::request_input`] and `?`), so the task starts with what it
    /// needs. It runs on the thread that read the request: it must be quick. A failure that
    /// carries the server's answer ([`ToolFailure::carrying`]) is answered as such; any other
    /// is an internal error whose text only a [`ToolFailure::safe`] one shows. A local
    /// harness never runs it. Defaults to none.
    pub fn before_task(
        mut self,
        step: impl Fn(&dyn super::ToolContext, &Value) -> Result<Value, ToolFailure>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.served.before_task = Some(Arc::new(step));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_have_their_durations() {
        assert_eq!(ToolTimeout::Fast.duration(), Duration::from_secs(10));
        assert_eq!(ToolTimeout::default().duration(), Duration::from_secs(60));
        assert_eq!(ToolTimeout::Long.duration(), Duration::from_secs(300));
    }

    #[test]
    fn a_cancel_signal_fires_when_the_flag_is_raised_and_not_before() {
        let flag = CancelFlag::new();
        let early = flag.signal();
        assert!(matches!(
            early.try_recv(),
            Err(crossbeam_channel::TryRecvError::Empty)
        ));
        let clone = flag.clone();
        let waiter = std::thread::spawn(move || clone.signal().recv().is_err());
        flag.cancel();
        assert!(waiter.join().unwrap(), "the waiter woke with a message");
        assert!(
            early.recv().is_err(),
            "an early receiver is disconnected too"
        );
        assert!(
            flag.signal().recv().is_err(),
            "a late receiver fires at once"
        );
        assert!(flag.is_cancelled());
    }

    #[test]
    fn any_error_converts_to_an_internal_failure() {
        fn parse(text: &str) -> Result<Option<Value>, ToolFailure> {
            let value: Value = serde_json::from_str(text)?;
            Ok(Some(value))
        }
        let failure = parse("{").unwrap_err();
        assert!(!failure.is_safe() && !failure.is_transport());
        assert!(ToolFailure::safe("x").is_safe());
        assert!(ToolFailure::transport("x").is_transport());
    }
}
