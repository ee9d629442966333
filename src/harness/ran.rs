//! What one admitted attempt produced ([`Ran`]), and how a tool's answer becomes one: a local
//! tool's return value or panic, an MCP tool's result or the MCP client's error. Internal text
//! (a panic message, a transport error, a JSON-RPC error) never reaches the model: it is kept
//! for the log and the transcript.

use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::Value;

use super::context::{ToolContext, ToolFunction};
use super::outcome::{value_len, value_text, Status};
use super::remote::RemoteErrorText;
use super::tool::{FailureKind, LocalCode, ToolFailure};
use crate::error::Error;
use crate::mcp::CallToolResult;

/// What the model reads for a failure whose real text stays internal.
pub(crate) const GENERIC_FAILURE: &str =
    "the tool failed; the details were logged for the operator and are not shown here";
/// What the model reads when the tool (or its server) could not be reached.
pub(crate) const GENERIC_TRANSPORT: &str =
    "the tool could not be reached (a transport failure); the \
                                 details were logged for the operator";

/// What one admitted attempt produced.
#[derive(Debug)]
pub(crate) enum Ran {
    Result(Value),
    NoResult,
    /// An MCP tool's 2026-07-28 input round (`resultType: input_required`) with this many
    /// requests, handed back for the caller to pass on ([`super::CallSettings::pass_input_rounds`]):
    /// not the call's end, which comes with the retry that answers it.
    InputRound(usize),
    /// The tool failed. `public` is for the model, `answer` the tool's own words for it (a
    /// safe message, an MCP `isError` text), `internal` for the operator only.
    Failed {
        public: String,
        answer: Value,
        internal: Option<String>,
    },
    /// The tool, or its server, could not be reached; retryable.
    Transport(String),
    /// No answer within the tool's bound, or (`caller_deadline`) before the deadline the
    /// caller set for the call, whichever came first.
    Timeout {
        caller_deadline: bool,
    },
}

impl Ran {
    /// For the operator: what the attempt produced, internal text included.
    pub(crate) fn summary(&self) -> String {
        match self {
            Ran::Result(value) => format!("a result of {} bytes", value_len(value)),
            Ran::NoResult => "no result".into(),
            Ran::InputRound(requests) => format!(
                "an input round of {requests} request(s), passed to the caller; the call goes \
                 on with its retry"
            ),
            Ran::Failed {
                internal: Some(internal),
                ..
            } => internal.clone(),
            Ran::Failed { answer, .. } => {
                format!("an error answer for the model: {}", value_text(answer))
            }
            Ran::Transport(reason) => reason.clone(),
            Ran::Timeout {
                caller_deadline: false,
            } => "no answer in time".into(),
            Ran::Timeout {
                caller_deadline: true,
            } => "no answer before the caller's deadline".into(),
        }
    }

    /// The status this attempt amounts to, before retries and the result limit.
    pub(crate) fn status(&self) -> Status {
        match self {
            Ran::Result(_) => Status::Ok,
            Ran::NoResult => Status::NotFound,
            // The leg went as it should: the caller passes the round on.
            Ran::InputRound(_) => Status::Ok,
            Ran::Failed { .. } | Ran::Transport(_) => Status::ToolError,
            Ran::Timeout { .. } => Status::Timeout,
        }
    }

    pub(crate) fn size(&self) -> Option<usize> {
        match self {
            Ran::Result(value) => Some(value_len(value)),
            _ => None,
        }
    }
}

/// Runs a local tool, in either form, turning its failures and panics into what the model may
/// see; a tool in the full form also gives its MCP result, to be passed on as it is.
pub(crate) fn run_local(
    code: &LocalCode,
    arguments: &Value,
    context: &dyn ToolContext,
) -> (Ran, Option<CallToolResult>) {
    match code {
        LocalCode::Value(handler) => {
            let cancel = context.cancel_flag();
            let ran = match catch_unwind(AssertUnwindSafe(|| handler(arguments, cancel))) {
                Ok(Ok(Some(value))) => Ran::Result(value),
                Ok(Ok(None)) => Ran::NoResult,
                Ok(Err(failure)) => failure_ran(&failure),
                Err(panic) => panicked(&*panic),
            };
            (ran, None)
        }
        LocalCode::Context(function) => match run_function(function, context, arguments) {
            Ok(result) => (remote_result(&result, RemoteErrorText::Pass), Some(result)),
            Err(failure) => (failure_ran(&failure), None),
        },
    }
}

/// Runs a tool's code in the full form, a panic caught as an internal failure.
pub(crate) fn run_function(
    function: &ToolFunction,
    context: &dyn ToolContext,
    arguments: &Value,
) -> Result<CallToolResult, ToolFailure> {
    match catch_unwind(AssertUnwindSafe(|| function(context, arguments))) {
        Ok(answer) => answer,
        Err(panic) => Err(ToolFailure::internal(format!(
            "panicked: {}",
            crate::sys::panic_message(&*panic)
        ))),
    }
}

/// What a tool's failure is for the model: a safe text as the tool's answer, an internal one
/// withheld (kept for the operator), a transport failure retryable.
pub(crate) fn failure_ran(failure: &ToolFailure) -> Ran {
    match failure.kind() {
        FailureKind::Safe => Ran::Failed {
            public: "the tool reported an error".into(),
            answer: Value::String(failure.message().to_owned()),
            internal: None,
        },
        FailureKind::Internal => Ran::Failed {
            public: GENERIC_FAILURE.into(),
            answer: Value::Null,
            internal: Some(format!("the tool failed: {}", failure.message())),
        },
        FailureKind::Transport => {
            Ran::Transport(format!("transport failure: {}", failure.message()))
        }
    }
}

fn panicked(panic: &(dyn std::any::Any + Send)) -> Ran {
    Ran::Failed {
        public: GENERIC_FAILURE.into(),
        answer: Value::Null,
        internal: Some(format!(
            "the tool panicked: {}",
            crate::sys::panic_message(panic)
        )),
    }
}

/// Maps an MCP tool result: `isError` is the tool's answer; an empty result is `NOT_FOUND`;
/// structured content is preferred to text, text to raw blocks.
pub(crate) fn remote_result(result: &CallToolResult, error_text: RemoteErrorText) -> Ran {
    if result.is_error {
        let text = if result.content.iter().all(|block| block.as_text().is_some()) {
            Value::String(result.text())
        } else {
            result.raw.get("content").cloned().unwrap_or(Value::Null)
        };
        return match error_text {
            RemoteErrorText::Pass => Ran::Failed {
                public: "the tool reported an error".into(),
                answer: text,
                internal: None,
            },
            RemoteErrorText::Withhold => Ran::Failed {
                public: GENERIC_FAILURE.into(),
                answer: Value::Null,
                internal: Some(format!("the tool reported an error: {}", value_text(&text))),
            },
        };
    }
    if result.raw.get("resultType").and_then(Value::as_str) == Some("input_required") {
        let requests = match result.raw.get("inputRequests") {
            Some(Value::Object(requests)) => requests.len(),
            _ => 0,
        };
        return Ran::InputRound(requests);
    }
    if let Some(structured) = &result.structured_content {
        return Ran::Result(structured.clone());
    }
    if result.content.is_empty() {
        return Ran::NoResult;
    }
    if result.content.iter().all(|block| block.as_text().is_some()) {
        return Ran::Result(Value::String(result.text()));
    }
    Ran::Result(result.raw.get("content").cloned().unwrap_or(Value::Null))
}

/// Maps an MCP client error: a timeout is `TIMEOUT`; a dead or overloaded connection is a
/// transport failure (retryable); anything else is a `TOOL_ERROR` whose text stays internal.
pub(crate) fn remote_error(error: Error) -> Ran {
    // The operator's text too is masked: an error may quote a URL with its credentials.
    let masked = |text: String| crate::mask::mask_urls_in(&text).into_owned();
    match error {
        Error::Timeout { .. } => Ran::Timeout {
            caller_deadline: false,
        },
        Error::Closed(_) | Error::Io(_) | Error::Busy { .. } | Error::Spawn { .. } => {
            Ran::Transport(masked(format!("transport failure: {error}")))
        }
        Error::Rpc(object) => Ran::Failed {
            public: format!(
                "the tool's server refused the call (JSON-RPC error {}); the details were \
                 logged for the operator",
                object.code.0
            ),
            answer: Value::Null,
            internal: Some(masked(format!(
                "the server answered with an error: {object}"
            ))),
        },
        Error::Schema(_) => Ran::Failed {
            public: "the tool's result does not match its declared output schema".into(),
            answer: Value::Null,
            internal: Some(masked(error.to_string())),
        },
        other => Ran::Failed {
            public: GENERIC_FAILURE.into(),
            answer: Value::Null,
            internal: Some(masked(other.to_string())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::context::LocalContext;
    use crate::harness::tool::{CancelFlag, ToolHandler};
    use serde_json::json;
    use std::sync::Arc;
    use std::time::Duration;

    fn tool_result(value: Value) -> CallToolResult {
        CallToolResult::from_value(value).unwrap()
    }

    #[test]
    fn remote_results_map_to_statuses() {
        let ok = remote_result(
            &tool_result(json!({"content": [{"type": "text", "text": "hi"}]})),
            RemoteErrorText::Pass,
        );
        assert!(matches!(ok, Ran::Result(Value::String(text)) if text == "hi"));
        let structured = remote_result(
            &tool_result(json!({"content": [], "structuredContent": {"sum": 3}})),
            RemoteErrorText::Pass,
        );
        assert!(matches!(structured, Ran::Result(value) if value == json!({"sum": 3})));
        let empty = remote_result(&tool_result(json!({"content": []})), RemoteErrorText::Pass);
        assert!(matches!(empty, Ran::NoResult));
        let image = remote_result(
            &tool_result(
                json!({"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
            ),
            RemoteErrorText::Pass,
        );
        assert!(matches!(image, Ran::Result(Value::Array(_))));
        let round = remote_result(
            &tool_result(
                json!({"content": [], "resultType": "input_required", "inputRequests": {
                "a": {"method": "roots/list"}, "b": {"method": "roots/list"}}}),
            ),
            RemoteErrorText::Pass,
        );
        assert!(matches!(round, Ran::InputRound(2)));
        assert_eq!(round.status(), Status::Ok);
    }

    #[test]
    fn remote_error_text_is_passed_or_withheld() {
        let failed = json!({"content": [{"type": "text", "text": "bad city"}], "isError": true});
        let passed = remote_result(&tool_result(failed.clone()), RemoteErrorText::Pass);
        assert!(
            matches!(&passed, Ran::Failed { answer: Value::String(text), .. } if text == "bad city")
        );
        let withheld = remote_result(&tool_result(failed), RemoteErrorText::Withhold);
        match withheld {
            Ran::Failed {
                public,
                answer,
                internal,
            } => {
                assert!(!public.contains("bad city"));
                assert!(answer.is_null());
                assert!(internal.unwrap().contains("bad city"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn client_errors_map_to_timeout_transport_or_a_sanitized_failure() {
        let timeout = Error::Timeout {
            method: "tools/call".into(),
            after: Duration::from_millis(5),
        };
        assert!(matches!(
            remote_error(timeout),
            Ran::Timeout {
                caller_deadline: false
            }
        ));
        let closed = Error::closed_because("the server's stdout ended");
        assert!(matches!(remote_error(closed), Ran::Transport(_)));
        let leaky = Error::Protocol("at https://user:hunter2@example.com/mcp".into());
        match remote_error(leaky) {
            Ran::Failed { internal, .. } => {
                assert!(
                    !internal.unwrap().contains("hunter2"),
                    "a URL password was kept"
                )
            }
            other => panic!("{other:?}"),
        }
        let protocol = Error::Protocol("secret internals".into());
        match remote_error(protocol) {
            Ran::Failed { public, .. } => assert!(!public.contains("secret")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn local_panics_and_internal_failures_are_sanitized() {
        let cancel = CancelFlag::new();
        let context = LocalContext {
            tool: "t",
            cancel: &cancel,
            progress: None,
        };
        let value: ToolHandler = Arc::new(|_, _| panic!("password=hunter2"));
        let function: ToolFunction = Arc::new(|_, _| panic!("password=hunter2"));
        let failing: ToolFunction = Arc::new(|_, _| Err(ToolFailure::internal("password=hunter2")));
        for code in [
            LocalCode::Value(value),
            LocalCode::Context(function),
            LocalCode::Context(failing),
        ] {
            match run_local(&code, &json!({}), &context) {
                (
                    Ran::Failed {
                        public, internal, ..
                    },
                    None,
                ) => {
                    assert!(!public.contains("hunter2"));
                    assert!(internal.unwrap().contains("hunter2"));
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
