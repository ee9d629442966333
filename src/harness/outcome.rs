//! The eight statuses, the outcome of one call, and the result size policy.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde_json::{json, Value};

use crate::mcp::CallToolResult;

/// How a call through the harness ended. Exactly one per call.
///
/// `Display` writes the upper-case word (`OK`, `TOOL_ERROR`, …) that the model and the
/// transcript see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// The call was refused before anything ran: too large, not strict JSON, the wrong shape,
    /// a name outside the pattern, or arguments that break the tool's schema.
    Invalid,
    /// The name is well formed but no such tool is registered.
    UnknownTool,
    /// Every worker was occupied; the call was not queued and nothing ran.
    Busy,
    /// The attempt budget is spent; nothing ran.
    Budget,
    /// The tool ran and produced no result: a local tool returned `Ok(None)`, or an MCP
    /// tool answered with no content blocks and no structured content. (A local `Ok(Some(null))`
    /// is an `OK` whose result is null.)
    NotFound,
    /// The tool did not answer within its time bound, or before the caller's deadline
    /// ([`crate::Harness::handle_all_until`]). It may still be running. (A call whose
    /// caller's deadline had passed before it could start is also `TIMEOUT`, with nothing run
    /// and [`Outcome::attempts`] 0.)
    Timeout,
    /// The tool ran and failed, could not be reached, or returned a result over its limit
    /// under [`Overflow::Reject`].
    ToolError,
    /// The tool ran and returned a result within the size limit. Not proof the task
    /// completed: only that the tool answered.
    Ok,
}

impl Status {
    /// Every status, in the order of the issue that defines them.
    pub const ALL: [Status; 8] = [
        Status::Invalid,
        Status::UnknownTool,
        Status::Busy,
        Status::Budget,
        Status::NotFound,
        Status::Timeout,
        Status::ToolError,
        Status::Ok,
    ];

    /// The upper-case word for this status, e.g. `"UNKNOWN_TOOL"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Invalid => "INVALID",
            Status::UnknownTool => "UNKNOWN_TOOL",
            Status::Busy => "BUSY",
            Status::Budget => "BUDGET",
            Status::NotFound => "NOT_FOUND",
            Status::Timeout => "TIMEOUT",
            Status::ToolError => "TOOL_ERROR",
            Status::Ok => "OK",
        }
    }

    /// True for the statuses of a call the executor admitted (`NOT_FOUND`, `TIMEOUT`,
    /// `TOOL_ERROR`, `OK`): only those consume the attempt budget ([`Outcome::attempts`] says
    /// how much; it is 0 for a `TIMEOUT` whose caller's deadline passed before it started).
    pub fn consumes_budget(self) -> bool {
        matches!(
            self,
            Status::NotFound | Status::Timeout | Status::ToolError | Status::Ok
        )
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = String;

    fn from_str(text: &str) -> Result<Status, String> {
        Status::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
            .ok_or_else(|| format!("{text:?} is not a harness status"))
    }
}

/// What one call through the harness produced: `{status, result, detail}` plus how many
/// attempts it took.
///
/// `detail` is written for the model (it goes into the tool-result message): it never holds
/// a local tool's internal error text, a transport error, or a stack trace. Those go to the
/// log and the transcript only.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// How the call ended.
    pub status: Status,
    /// The tool's result (`OK`), or the tool's own error answer (`TOOL_ERROR` from an MCP
    /// tool that set `isError`, or a local tool's safe message); `Value::Null` otherwise.
    /// Strings in it are data, never instructions or paths.
    pub result: Value,
    /// Why, in plain words for the model: the rejection reason with a repair hint, the
    /// truncation note, the sanitized failure. Empty for a plain `OK`.
    pub detail: String,
    /// How many attempts the executor admitted for this call, i.e. how much attempt budget it
    /// consumed (0 for `INVALID`, `UNKNOWN_TOOL`, `BUSY` and `BUDGET`).
    pub attempts: u32,
    /// The back-off delays taken between retries, in order (empty without retries).
    pub retry_delays: Vec<Duration>,
    /// For an MCP tool, the result its server sent, within the tool's result limit (see
    /// [`ResultLimit`]): content blocks, `structuredContent` and `_meta` as sent, to pass on
    /// to an MCP client as it is; a result over the limit is cut or refused here as in
    /// `result`. `None` for a local tool, a refusal before the tool ran, a failure without
    /// an answer, and an error text withheld ([`crate::harness::RemoteErrorText::Withhold`]).
    pub mcp_result: Option<Box<CallToolResult>>,
}

impl Outcome {
    pub(crate) fn new(status: Status, detail: impl Into<String>) -> Outcome {
        Outcome {
            status,
            result: Value::Null,
            detail: detail.into(),
            attempts: 0,
            retry_delays: Vec::new(),
            mcp_result: None,
        }
    }

    /// True when the status is `OK`.
    pub fn is_ok(&self) -> bool {
        self.status == Status::Ok
    }

    /// The outcome as `{"status": "OK", "result": …, "detail": "…"}`, the message for the
    /// plain call shape.
    pub fn to_json(&self) -> Value {
        json!({
            "status": self.status.as_str(),
            "result": self.result,
            "detail": self.detail,
        })
    }

    /// The text the model reads in a tool-result message.
    ///
    /// For `OK` it is the result itself (a string result as is, anything else as compact
    /// JSON). For every other status it starts with the status word and the detail, e.g.
    /// `"INVALID: …"`, followed by the tool's own error answer on the next line when there is
    /// one.
    pub fn model_text(&self) -> String {
        if self.status == Status::Ok {
            return value_text(&self.result);
        }
        let mut text = format!("{}: {}", self.status, self.detail);
        if !self.result.is_null() {
            text.push('\n');
            text.push_str(&value_text(&self.result));
        }
        text
    }
}

/// A string as itself, anything else as compact JSON.
pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The length of [`value_text`], without making it: a string's own length, or the compact
/// JSON's (see [`json_len`]).
pub(crate) fn value_len(value: &Value) -> usize {
    match value {
        Value::String(text) => text.len(),
        other => json_len(other),
    }
}

/// The length in bytes of a value's compact JSON (`value.to_string().len()`), counted as the
/// text is produced rather than kept: an audit event's size needs no copy of the result.
pub(crate) fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // A `Value` always serializes, and the counter never fails a write.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// What happens to a result longer than its [`ResultLimit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// The result is cut to the limit and ends with an explicit marker naming the full
    /// length; the status stays `OK` and the detail says it was truncated.
    #[default]
    Truncate,
    /// The call ends with `TOOL_ERROR` and no result.
    Reject,
}

/// The size policy for a tool's results, in characters of the text the model would read
/// (a string result as is, anything else as compact JSON).
///
/// An MCP tool's result is measured whole: the characters of its text blocks, the compact
/// JSON of its other blocks and of its `structuredContent`, together. Over the limit, a
/// result whose tool declares an `outputSchema` is answered as a tool error (`isError`, no
/// `structuredContent`) saying the result was over the limit, whatever the [`Overflow`]
/// policy: a cut result could not carry the structured content that schema promises, and
/// clients refuse a result without it. Any other result is cut (its text, with the marker;
/// other blocks and structured content go) or refused as the policy says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultLimit {
    pub(crate) max_chars: usize,
    pub(crate) overflow: Overflow,
}

impl Default for ResultLimit {
    fn default() -> Self {
        ResultLimit {
            max_chars: 16_384,
            overflow: Overflow::Truncate,
        }
    }
}

impl ResultLimit {
    /// A limit of `max_chars` characters (1 to 16 Mi; the default is 16,384) with the given
    /// overflow policy (the default is [`Overflow::Truncate`]).
    pub fn new(max_chars: usize, overflow: Overflow) -> ResultLimit {
        ResultLimit {
            max_chars,
            overflow,
        }
    }

    /// Applies the limit to a result. `Ok` holds the (possibly truncated) result and a note
    /// for the detail; `Err` holds the rejection detail.
    pub(crate) fn apply(&self, result: Value) -> Result<(Value, Option<String>), String> {
        let text = match &result {
            Value::String(text) => std::borrow::Cow::Borrowed(text.as_str()),
            other => std::borrow::Cow::Owned(other.to_string()),
        };
        // Count no further than one past the limit: a huge result costs no more than a long one.
        let counted = text.chars().take(self.max_chars.saturating_add(1)).count();
        if counted <= self.max_chars {
            return Ok((result, None));
        }
        let full = text.chars().count();
        match self.overflow {
            Overflow::Reject => Err(format!(
                "the result is {full} characters long, over this tool's limit of {} \
                 characters; nothing of it is returned",
                self.max_chars
            )),
            Overflow::Truncate => {
                let mut cut: String = text.chars().take(self.max_chars).collect();
                cut.push_str(&truncation_marker(self.max_chars, full));
                let note = format!(
                    "the result was truncated to {} of its {full} characters",
                    self.max_chars
                );
                Ok((Value::String(cut), Some(note)))
            }
        }
    }
}

/// What the result limit made of an MCP tool's result.
#[derive(Debug)]
pub(crate) enum Limited {
    /// Within the limit: as sent.
    Within(CallToolResult),
    /// Cut: one text block ending with the marker (what the model reads is `text`).
    Cut {
        result: CallToolResult,
        text: String,
        note: String,
    },
    /// Over the limit and not cut: a tool error saying so.
    Refused {
        result: CallToolResult,
        reason: String,
    },
}

#[cfg(feature = "server")]
impl Limited {
    /// The result to send, whatever the limit made of it.
    pub(crate) fn into_result(self) -> CallToolResult {
        match self {
            Limited::Within(result)
            | Limited::Cut { result, .. }
            | Limited::Refused { result, .. } => result,
        }
    }
}

/// Applies `limit` to an MCP tool's whole result (see [`ResultLimit`]); `declared` is true
/// when the tool declares an `outputSchema`.
pub(crate) fn limit_mcp_result(
    limit: &ResultLimit,
    result: CallToolResult,
    declared: bool,
) -> Limited {
    if measure(&result, Some(limit.max_chars.saturating_add(1))) <= limit.max_chars {
        return Limited::Within(result);
    }
    let text = result.text();
    if declared || limit.overflow == Overflow::Reject {
        let reason = format!(
            "the result is {} characters long (its text, content blocks and structured \
             content together), over this tool's limit of {} characters; nothing of it is \
             returned",
            measure(&result, None),
            limit.max_chars
        );
        return Limited::Refused {
            result: error_result(&format!("{}: {reason}", Status::ToolError)),
            reason,
        };
    }
    let full = text.chars().count();
    let mut cut: String = text.chars().take(limit.max_chars).collect();
    if full > limit.max_chars {
        cut.push_str(&truncation_marker(limit.max_chars, full));
    } else {
        // The text fits: what did not is the blocks and structured content that go.
        cut.push_str(&format!(
            "\n[truncated: the result's other content (over {} characters in all) is not shown]",
            limit.max_chars
        ));
    }
    let note = format!(
        "the result was truncated to {} characters of its text",
        limit.max_chars
    );
    let mut value = json!({"content": [{"type": "text", "text": cut}]});
    if result.is_error {
        value["isError"] = Value::Bool(true);
    }
    let result = CallToolResult::from_value(value)
        .unwrap_or_else(|_| error_result("the result was over the limit"));
    Limited::Cut {
        result,
        text: cut,
        note,
    }
}

/// The characters of an MCP result as the limit counts them: its text blocks' text, and the
/// compact JSON of its other blocks and of its structured content; counted no further than
/// `bound` when one is given.
fn measure(result: &CallToolResult, bound: Option<usize>) -> usize {
    let bound = bound.unwrap_or(usize::MAX);
    let mut measured = 0usize;
    // A result read from a server is measured as it came (its blocks' every field); one built
    // here (a served local tool's) has only its typed blocks.
    let blocks: Vec<std::borrow::Cow<'_, Value>> = match result.raw.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().map(std::borrow::Cow::Borrowed).collect(),
        _ => result
            .content
            .iter()
            .map(|block| std::borrow::Cow::Owned(block.to_value()))
            .collect(),
    };
    for block in &blocks {
        measured += match (block.get("type"), block.get("text")) {
            (Some(Value::String(kind)), Some(Value::String(text))) if kind == "text" => {
                text.chars().take(bound).count()
            }
            _ => block.to_string().chars().count(),
        };
        if measured >= bound {
            return measured;
        }
    }
    if let Some(structured) = &result.structured_content {
        measured += structured.to_string().chars().count();
    }
    measured
}

/// A tool error result whose text is `text`.
fn error_result(text: &str) -> CallToolResult {
    let value = json!({"content": [{"type": "text", "text": text}], "isError": true});
    match CallToolResult::from_value(value) {
        Ok(result) => result,
        Err(_) => unreachable!("a text block and isError make a valid tool result"),
    }
}

/// The marker that ends a truncated result.
pub(crate) fn truncation_marker(shown: usize, full: usize) -> String {
    format!("\n[truncated: showing {shown} of {full} characters]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_display_as_upper_case_words_and_parse_back() {
        let words: Vec<String> = Status::ALL.iter().map(Status::to_string).collect();
        assert_eq!(
            words,
            [
                "INVALID",
                "UNKNOWN_TOOL",
                "BUSY",
                "BUDGET",
                "NOT_FOUND",
                "TIMEOUT",
                "TOOL_ERROR",
                "OK"
            ]
        );
        for status in Status::ALL {
            assert_eq!(status.as_str().parse::<Status>(), Ok(status));
        }
        assert!("ok".parse::<Status>().is_err());
    }

    #[test]
    fn only_admitted_statuses_consume_budget() {
        let consuming: Vec<Status> = Status::ALL
            .into_iter()
            .filter(|status| status.consumes_budget())
            .collect();
        assert_eq!(
            consuming,
            [
                Status::NotFound,
                Status::Timeout,
                Status::ToolError,
                Status::Ok
            ]
        );
    }

    #[test]
    fn a_long_result_is_truncated_with_a_marker_naming_the_full_length() {
        let limit = ResultLimit::new(5, Overflow::Truncate);
        let (value, note) = limit.apply(json!("héllo world")).unwrap();
        assert_eq!(
            value,
            json!("héllo\n[truncated: showing 5 of 11 characters]")
        );
        assert!(note.unwrap().contains("5 of its 11"));
        let (value, note) = limit.apply(json!("short")).unwrap();
        assert_eq!((value, note), (json!("short"), None));
    }

    #[test]
    fn a_long_result_is_rejected_under_the_reject_policy() {
        let limit = ResultLimit::new(4, Overflow::Reject);
        let reason = limit.apply(json!({"a": 1})).unwrap_err();
        assert!(reason.contains("7 characters long"), "{reason}");
        assert!(limit.apply(json!([12])).is_ok());
    }

    fn mcp(value: Value) -> CallToolResult {
        CallToolResult::from_value(value).unwrap()
    }

    #[test]
    fn structured_content_counts_with_the_text_against_the_limit() {
        let limit = ResultLimit::new(20, Overflow::Truncate);
        let small = mcp(json!({"content": [{"type": "text", "text": "ok"}],
                               "structuredContent": {"a": 1}}));
        assert!(matches!(
            limit_mcp_result(&limit, small, true),
            Limited::Within(_)
        ));
        let big = json!({"content": [{"type": "text", "text": "short"}],
                         "structuredContent": {"data": "x".repeat(100)}});
        match limit_mcp_result(&limit, mcp(big.clone()), false) {
            Limited::Cut { result, text, .. } => {
                assert!(result.structured_content.is_none());
                assert!(text.starts_with("short\n[truncated"), "{text}");
                assert!(!result.is_error);
            }
            other => panic!("{other:?}"),
        }
        match limit_mcp_result(&limit, mcp(big), true) {
            Limited::Refused { result, reason } => {
                assert!(result.is_error && result.structured_content.is_none());
                assert!(
                    result.text().contains("over this tool's limit of 20"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        let long = mcp(json!({"content": [{"type": "text", "text": "y".repeat(50)}]}));
        match limit_mcp_result(&limit, long, false) {
            Limited::Cut { text, .. } => {
                assert_eq!(
                    text,
                    format!("{}{}", "y".repeat(20), truncation_marker(20, 50))
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn model_text_leads_with_the_status_except_for_ok() {
        let mut outcome = Outcome::new(Status::Ok, "");
        outcome.result = json!({"sum": 5});
        assert_eq!(outcome.model_text(), r#"{"sum":5}"#);
        outcome.result = json!("plain");
        assert_eq!(outcome.model_text(), "plain");
        let mut failed = Outcome::new(Status::ToolError, "the tool reported an error");
        assert_eq!(
            failed.model_text(),
            "TOOL_ERROR: the tool reported an error"
        );
        failed.result = json!("no such city");
        assert_eq!(
            failed.model_text(),
            "TOOL_ERROR: the tool reported an error\nno such city"
        );
    }
}
