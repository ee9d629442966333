//! What handlers give back: tool results and their content blocks, resource contents, prompt
//! messages, the 2026-07-28 input rounds, log levels, and the errors a handler answers with.

use crate::harness::ToolFailure;
use std::fmt;

use serde_json::{json, Map, Value};

use crate::mcp::{methods, Content};
use crate::wire::{ErrorCode, ErrorObject};

/// -32000: every worker is busy; nothing was queued. Try again later.
pub const BUSY: ErrorCode = ErrorCode(-32000);
/// -32001: the handler did not answer within its bound; it was abandoned (it may still be
/// running: cancellation is not termination).
pub const REQUEST_TIMEOUT: ErrorCode = ErrorCode(-32001);
/// -32020 (2026-07-28): a routing header disagrees with the request body, or is missing.
pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
/// -32021 (2026-07-28): the request needs a client capability the client did not declare;
/// `data.requiredCapabilities` names it.
pub const MISSING_CAPABILITY: ErrorCode = ErrorCode(-32021);
/// -32022 (2026-07-28): the protocol version is not supported; `data.supported` lists the
/// ones that are.
pub const UNSUPPORTED_VERSION: ErrorCode = ErrorCode(-32022);

/// Why a handler did not produce its result: an error for the client, or (2026-07-28) the
/// input it needs first.
///
/// `?` works on [`ErrorObject`], [`InputRequired`] and [`crate::Error`] (a failed request
/// back to the client becomes -32603 with its message).
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerError {
    /// Answer with this JSON-RPC error.
    Rpc(ErrorObject),
    /// Answer with an `InputRequiredResult`: the client retries with the answers. Only
    /// `tools/call`, `prompts/get` and `resources/read` may ask for input, and only on the
    /// 2026-07-28 protocol; elsewhere it is answered with -32603.
    InputRequired(InputRequired),
}

impl HandlerError {
    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> HandlerError {
        HandlerError::Rpc(ErrorObject::new(code, message))
    }

    /// -32602, invalid params.
    pub fn invalid_params(message: impl Into<String>) -> HandlerError {
        HandlerError::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// -32603, an internal error.
    pub fn internal(message: impl Into<String>) -> HandlerError {
        HandlerError::new(ErrorCode::INTERNAL_ERROR, message)
    }

    /// The failure a served [`crate::harness::LocalTool`] returns to have this answered as
    /// it is (a JSON-RPC error, or an input round): an internal failure carrying it
    /// ([`ToolFailure::carried`]). Use it (`.map_err(HandlerError::into_failure)?`) rather
    /// than `?` alone, which makes any error an internal failure that carries nothing.
    pub fn into_failure(self) -> ToolFailure {
        ToolFailure::internal(self.to_string()).carrying(self)
    }
}

/// A served tool's input round ([`InputRequired`]) as its failure, answered as an
/// `InputRequiredResult`, so `?` works on it in a [`crate::harness::LocalTool`].
impl From<InputRequired> for ToolFailure {
    fn from(input: InputRequired) -> ToolFailure {
        HandlerError::InputRequired(input).into_failure()
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerError::Rpc(error) => write!(f, "{error}"),
            HandlerError::InputRequired(input) => {
                write!(f, "input required: {}", input.keys().join(", "))
            }
        }
    }
}

impl std::error::Error for HandlerError {}

impl From<ErrorObject> for HandlerError {
    fn from(error: ErrorObject) -> HandlerError {
        HandlerError::Rpc(error)
    }
}

impl From<InputRequired> for HandlerError {
    fn from(input: InputRequired) -> HandlerError {
        HandlerError::InputRequired(input)
    }
}

impl From<crate::Error> for HandlerError {
    fn from(error: crate::Error) -> HandlerError {
        match error {
            crate::Error::Rpc(object) => HandlerError::Rpc(*object),
            other => HandlerError::internal(other.to_string()),
        }
    }
}

/// The input a request needs before it can complete (2026-07-28's `InputRequiredResult`):
/// requests for the client to answer, by key, and an opaque state the client echoes back.
///
/// The state is signed by the server (HMAC-SHA-256 under a key made once per process) and
/// bound to the request's method and target, so a client cannot change it; the retry's
/// state is checked before the handler runs, and one that fails is an error.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputRequired {
    pub(crate) requests: Map<String, Value>,
    pub(crate) state: Option<Value>,
}

impl InputRequired {
    /// No requests yet.
    pub fn new() -> InputRequired {
        InputRequired::default()
    }

    /// Asks the user (`elicitation/create` with these params: `message`, `requestedSchema`).
    pub fn elicit(self, key: impl Into<String>, params: Value) -> InputRequired {
        self.request(key, methods::ELICITATION_CREATE, params)
    }

    /// Asks the client's model (`sampling/createMessage` with these params).
    pub fn sample(self, key: impl Into<String>, params: Value) -> InputRequired {
        self.request(key, methods::SAMPLING_CREATE_MESSAGE, params)
    }

    /// Asks for the client's roots (`roots/list`).
    pub fn list_roots(self, key: impl Into<String>) -> InputRequired {
        self.request(key, methods::ROOTS_LIST, json!({}))
    }

    /// Asks with any of the three methods above by name.
    pub fn request(mut self, key: impl Into<String>, method: &str, params: Value) -> InputRequired {
        let mut request = Map::new();
        request.insert("method".into(), Value::from(method));
        if !params.is_null() {
            request.insert("params".into(), params);
        }
        self.requests.insert(key.into(), Value::Object(request));
        self
    }

    /// The state the client echoes back with its answers (any JSON; signed by the server).
    /// Defaults to none.
    pub fn state(mut self, state: Value) -> InputRequired {
        self.state = Some(state);
        self
    }

    /// The keys asked for, in order.
    pub fn keys(&self) -> Vec<&str> {
        self.requests.keys().map(String::as_str).collect()
    }

    /// The client capability each request needs, by method.
    pub(crate) fn capabilities_needed(&self) -> Vec<&'static str> {
        let mut needed = Vec::new();
        for request in self.requests.values() {
            let capability = match request.get("method").and_then(Value::as_str) {
                Some(methods::ELICITATION_CREATE) => "elicitation",
                Some(methods::SAMPLING_CREATE_MESSAGE) => "sampling",
                Some(methods::ROOTS_LIST) => "roots",
                _ => "unknown",
            };
            if !needed.contains(&capability) {
                needed.push(capability);
            }
        }
        needed
    }
}

/// Builders for MCP content blocks (tool results, prompt messages), as the one
/// [`crate::mcp::Content`] type, and for resource contents.
pub mod content {
    use serde_json::{Map, Value};

    use crate::mcp::Content;

    /// A text block ([`Content::text`]).
    pub fn text(text: impl Into<String>) -> Content {
        Content::text(text)
    }

    /// An image block: base64 `data` and its MIME type ([`Content::image`]).
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Content {
        Content::image(data, mime_type)
    }

    /// An audio block: base64 `data` and its MIME type ([`Content::audio`]).
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Content {
        Content::audio(data, mime_type)
    }

    /// A link to a resource the client may read ([`Content::resource_link`]).
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Content {
        Content::resource_link(uri, name)
    }

    /// An embedded resource block holding these contents (see [`text_contents`] and
    /// [`blob_contents`]).
    pub fn resource(contents: Value) -> Content {
        let mut block = Map::new();
        block.insert("type".into(), Value::from("resource"));
        block.insert("resource".into(), contents);
        Content::from_value(Value::Object(block))
    }

    /// A resource's contents as text.
    pub fn text_contents(
        uri: impl Into<String>,
        mime_type: Option<&str>,
        text: impl Into<String>,
    ) -> Value {
        let mut object = Map::new();
        object.insert("uri".into(), Value::from(uri.into()));
        if let Some(mime) = mime_type {
            object.insert("mimeType".into(), Value::from(mime));
        }
        object.insert("text".into(), Value::from(text.into()));
        Value::Object(object)
    }

    /// A resource's contents as a base64 blob.
    pub fn blob_contents(
        uri: impl Into<String>,
        mime_type: Option<&str>,
        blob: impl Into<String>,
    ) -> Value {
        let mut object = Map::new();
        object.insert("uri".into(), Value::from(uri.into()));
        if let Some(mime) = mime_type {
            object.insert("mimeType".into(), Value::from(mime));
        }
        object.insert("blob".into(), Value::from(blob.into()));
        Value::Object(object)
    }
}

/// A prompt filled in: an optional description and its messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptResult {
    description: Option<String>,
    messages: Vec<Value>,
}

impl PromptResult {
    /// No messages yet.
    pub fn new() -> PromptResult {
        PromptResult::default()
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> PromptResult {
        self.description = Some(description.into());
        self
    }

    /// Adds a message with a role (`user` or `assistant`) and one content block.
    pub fn message(mut self, role: &str, content: Content) -> PromptResult {
        self.messages
            .push(json!({"role": role, "content": content.to_value()}));
        self
    }

    /// A result of these messages as they are (another server's, passed on by a proxy: each
    /// an object with a `role` and a `content` block).
    pub fn from_messages(description: Option<String>, messages: Vec<Value>) -> PromptResult {
        PromptResult {
            description,
            messages,
        }
    }

    /// Adds a user message of one text block.
    pub fn user_text(self, text: impl Into<String>) -> PromptResult {
        self.message("user", content::text(text))
    }

    /// The result as the wire carries it.
    pub fn to_value(&self) -> Value {
        let mut object = Map::new();
        if let Some(description) = &self.description {
            object.insert("description".into(), Value::from(description.clone()));
        }
        object.insert("messages".into(), Value::Array(self.messages.clone()));
        Value::Object(object)
    }
}

/// The syslog levels of MCP's log messages, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, lowest first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// Reads a level's wire name.
    pub fn parse(name: &str) -> Option<LogLevel> {
        LogLevel::ALL
            .into_iter()
            .find(|level| level.as_str() == name)
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_requests_name_their_methods_and_capabilities() {
        let input = InputRequired::new()
            .elicit("name", json!({"message": "Name?"}))
            .list_roots("roots")
            .state(json!({"round": 1}));
        assert_eq!(input.keys(), ["name", "roots"]);
        assert_eq!(input.capabilities_needed(), ["elicitation", "roots"]);
        assert_eq!(input.requests["roots"]["method"], "roots/list");
    }

    #[test]
    fn log_levels_are_ordered_and_named() {
        assert!(LogLevel::Debug < LogLevel::Warning);
        for level in LogLevel::ALL {
            assert_eq!(LogLevel::parse(level.as_str()), Some(level));
        }
        assert_eq!(LogLevel::parse("verbose"), None);
    }
}
