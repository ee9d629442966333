//! Audit: every decision and wire message as an [`AuditEvent`], sent to the `log` facade
//! (target `toolwire::harness`), to an optional JSONL [`Transcript`], and to an optional
//! observer.
//!
//! Audit events are written for the operator, not the model: their `detail` holds what the
//! model never sees (a local tool's internal error text, a transport error, a timed-out
//! tool's late result summary). Keep transcripts where you keep logs.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::outcome::Status;

/// The log target of every harness event.
pub const HARNESS_LOG_TARGET: &str = "toolwire::harness";

/// The most characters of detail an event carries.
const MAX_DETAIL_CHARS: usize = 2_000;

/// What an [`AuditEvent`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AuditKind {
    /// A call arrived (`size`: its length in bytes).
    Received,
    /// The executor admitted an attempt (logged by the worker as it starts it).
    Admitted,
    /// The executor refused an attempt: no worker was free.
    Busy,
    /// A retry is planned after `duration` of back-off.
    Retry,
    /// A `tools/call` request went to an MCP server (`size`: the params in bytes).
    Request,
    /// An MCP server answered, or the wait for it ended (`status`: what the answer amounts
    /// to, `size`: the result in bytes, `duration`: the wait, `detail`: the error text, if
    /// any, including text the model never sees).
    Response,
    /// A local tool returned (`status`: what its return amounts to, `duration`: how long it
    /// ran, `size`: the result in bytes, `detail`: its failure text, if any, including
    /// internal text the model never sees).
    Returned,
    /// The work of a call the caller had given up on ended (`duration`: how long it ran);
    /// its worker is free again and its result was discarded.
    Late,
    /// The call's final decision (`status`, `duration` in all, `size`: the result text in
    /// bytes). Exactly one per call.
    Finished,
}

impl AuditKind {
    /// The lower-case word used in the log and the transcript.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditKind::Received => "received",
            AuditKind::Admitted => "admitted",
            AuditKind::Busy => "busy",
            AuditKind::Retry => "retry",
            AuditKind::Request => "request",
            AuditKind::Response => "response",
            AuditKind::Returned => "returned",
            AuditKind::Late => "late",
            AuditKind::Finished => "finished",
        }
    }

    const ALL: [AuditKind; 9] = [
        AuditKind::Received,
        AuditKind::Admitted,
        AuditKind::Busy,
        AuditKind::Retry,
        AuditKind::Request,
        AuditKind::Response,
        AuditKind::Returned,
        AuditKind::Late,
        AuditKind::Finished,
    ];
}

impl fmt::Display for AuditKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AuditKind {
    type Err = String;

    fn from_str(text: &str) -> Result<AuditKind, String> {
        AuditKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| format!("{text:?} is not an audit event kind"))
    }
}

/// One decision or wire message of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEvent {
    /// The harness's number for the call (from 1, per harness).
    pub call: u64,
    /// What happened.
    pub kind: AuditKind,
    /// The tool, once the call names one.
    pub tool: Option<String>,
    /// The LLM's id for the call (OpenAI / Anthropic), when it has one.
    pub call_id: Option<String>,
    /// The budget scope the call spent, when it spent one: a [`super::Conversation`]'s id, a
    /// gateway session's key. Scope keys are recorded, so they must not be secrets.
    pub scope: Option<String>,
    /// The status: for `finished` the call's, for `busy` BUSY, for `returned` and
    /// `response` what that attempt amounts to.
    pub status: Option<Status>,
    /// The attempt (from 1) for attempt events; 0 otherwise (for `finished`: the attempts
    /// admitted).
    pub attempt: u32,
    /// A duration, as described by the kind.
    pub duration: Option<Duration>,
    /// A size in bytes, as described by the kind.
    pub size: Option<usize>,
    /// Operator-facing text (at most 2,000 characters).
    pub detail: String,
}

impl AuditEvent {
    pub(crate) fn new(call: u64, kind: AuditKind) -> AuditEvent {
        AuditEvent {
            call,
            kind,
            tool: None,
            call_id: None,
            scope: None,
            status: None,
            attempt: 0,
            duration: None,
            size: None,
            detail: String::new(),
        }
    }

    pub(crate) fn detail(mut self, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        self.detail = if detail.chars().count() > MAX_DETAIL_CHARS {
            let mut cut: String = detail.chars().take(MAX_DETAIL_CHARS).collect();
            cut.push('…');
            cut
        } else {
            detail
        };
        self
    }

    /// The event as one JSON object (absent fields left out), the transcript's line format:
    /// `{"call", "event", "tool", "call_id", "scope", "status", "attempt", "duration_us",
    /// "size", "detail"}`.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("call".into(), json!(self.call));
        object.insert("event".into(), json!(self.kind.as_str()));
        if let Some(tool) = &self.tool {
            object.insert("tool".into(), json!(tool));
        }
        if let Some(call_id) = &self.call_id {
            object.insert("call_id".into(), json!(call_id));
        }
        if let Some(scope) = &self.scope {
            object.insert("scope".into(), json!(scope));
        }
        if let Some(status) = self.status {
            object.insert("status".into(), json!(status.as_str()));
        }
        object.insert("attempt".into(), json!(self.attempt));
        if let Some(duration) = self.duration {
            let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
            object.insert("duration_us".into(), json!(micros));
        }
        if let Some(size) = self.size {
            object.insert("size".into(), json!(size));
        }
        if !self.detail.is_empty() {
            object.insert("detail".into(), json!(self.detail));
        }
        Value::Object(object)
    }

    /// Reads an event back from [`AuditEvent::to_json`]'s format.
    ///
    /// # Errors
    ///
    /// What is missing or of the wrong type.
    pub fn from_json(value: &Value) -> Result<AuditEvent, String> {
        let object = value
            .as_object()
            .ok_or("an audit event must be an object")?;
        let text = |key: &str| -> Result<Option<String>, String> {
            match object.get(key) {
                None => Ok(None),
                Some(Value::String(text)) => Ok(Some(text.clone())),
                Some(_) => Err(format!("{key:?} must be a string")),
            }
        };
        let number = |key: &str| -> Result<Option<u64>, String> {
            match object.get(key) {
                None => Ok(None),
                Some(value) => value
                    .as_u64()
                    .map(Some)
                    .ok_or_else(|| format!("{key:?} must be a non-negative integer")),
            }
        };
        Ok(AuditEvent {
            call: number("call")?.ok_or("an audit event needs \"call\"")?,
            kind: text("event")?
                .ok_or("an audit event needs \"event\"")?
                .parse()?,
            tool: text("tool")?,
            call_id: text("call_id")?,
            scope: text("scope")?,
            status: text("status")?.map(|word| word.parse()).transpose()?,
            attempt: u32::try_from(number("attempt")?.unwrap_or(0))
                .map_err(|_| "\"attempt\" is too large")?,
            duration: number("duration_us")?.map(Duration::from_micros),
            size: number("size")?
                .map(usize::try_from)
                .transpose()
                .map_err(|_| "\"size\" is too large")?,
            detail: text("detail")?.unwrap_or_default(),
        })
    }

    pub(crate) fn level(&self) -> log::Level {
        level_of(self.kind, self.status)
    }
}

/// The log level of an event of this kind and status: what [`AuditEvent::level`] says.
pub(crate) fn level_of(kind: AuditKind, status: Option<Status>) -> log::Level {
    match (kind, status) {
        (AuditKind::Late, _) => log::Level::Warn,
        (
            AuditKind::Finished | AuditKind::Returned | AuditKind::Response,
            Some(Status::Timeout | Status::ToolError),
        ) => log::Level::Warn,
        (AuditKind::Finished | AuditKind::Busy | AuditKind::Retry, _) => log::Level::Info,
        _ => log::Level::Debug,
    }
}

impl fmt::Display for AuditEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "call={} event={}", self.call, self.kind)?;
        if let Some(tool) = &self.tool {
            write!(f, " tool={tool:?}")?;
        }
        if let Some(call_id) = &self.call_id {
            write!(f, " call_id={call_id:?}")?;
        }
        if let Some(scope) = &self.scope {
            write!(f, " scope={scope:?}")?;
        }
        if let Some(status) = self.status {
            write!(f, " status={status}")?;
        }
        write!(f, " attempt={}", self.attempt)?;
        if let Some(duration) = self.duration {
            write!(f, " duration={duration:?}")?;
        }
        if let Some(size) = self.size {
            write!(f, " size={size}")?;
        }
        if !self.detail.is_empty() {
            write!(f, " detail={:?}", self.detail)?;
        }
        Ok(())
    }
}

/// Receives every audit event as it happens, on the thread that makes it (a caller's or a
/// worker's). It must return quickly.
pub type AuditObserver = Arc<dyn Fn(&AuditEvent) + Send + Sync>;

/// Told the tool's name of each `tools/call` sent to an MCP server, as its `request` event
/// would be written: a count that reads no other field, so it makes no event (a gateway's
/// per-backend count of forwarded calls).
pub(crate) type RequestCounter = Arc<dyn Fn(Option<&str>) + Send + Sync>;

/// A JSONL transcript: one line per audit event, flushed as it is written, so it can be
/// read back (see [`Transcript::replay`]) while the harness runs or after a crash.
///
/// A write failure is logged once at warn and never fails a call.
pub struct Transcript {
    writer: Mutex<Box<dyn Write + Send>>,
    failed: AtomicBool,
}

impl fmt::Debug for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transcript")
            .field("failed", &self.failed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Transcript {
    /// Creates (or truncates) the file at `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be created.
    pub fn create(path: impl AsRef<Path>) -> io::Result<Transcript> {
        Ok(Transcript::from_writer(File::create(path)?))
    }

    /// Opens the file at `path` to append to it, creating it if needed.
    ///
    /// # Errors
    ///
    /// The file cannot be opened.
    pub fn append(path: impl AsRef<Path>) -> io::Result<Transcript> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Transcript::from_writer(file))
    }

    /// A transcript into any writer (each line is written whole, then flushed).
    pub fn from_writer(writer: impl Write + Send + 'static) -> Transcript {
        Transcript {
            writer: Mutex::new(Box::new(writer)),
            failed: AtomicBool::new(false),
        }
    }

    /// Writes one event as a line.
    pub fn write(&self, event: &AuditEvent) {
        let mut line = event.to_json().to_string();
        line.push('\n');
        let mut writer = self.writer.lock();
        let written = writer
            .write_all(line.as_bytes())
            .and_then(|()| writer.flush());
        if let Err(error) = written {
            if !self.failed.swap(true, Ordering::Relaxed) {
                log::warn!(target: HARNESS_LOG_TARGET, "cannot write the transcript: {error}");
            }
        }
    }

    /// Reads a transcript file back, one event per line (blank lines skipped).
    ///
    /// # Errors
    ///
    /// The file cannot be read, or a line is not an event (`InvalidData`, naming the line).
    pub fn replay(path: impl AsRef<Path>) -> io::Result<Vec<AuditEvent>> {
        let reader = BufReader::new(File::open(path)?);
        let mut events = Vec::new();
        for (index, line) in reader.lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let event = Transcript::parse_line(&line).map_err(|reason| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("transcript line {}: {reason}", index + 1),
                )
            })?;
            events.push(event);
        }
        Ok(events)
    }

    /// Reads one transcript line.
    ///
    /// # Errors
    ///
    /// The line is not JSON, or not an event.
    pub fn parse_line(line: &str) -> Result<AuditEvent, String> {
        let value: Value = serde_json::from_str(line).map_err(|error| error.to_string())?;
        AuditEvent::from_json(&value)
    }
}

/// Where events go: the log always, the transcript and the observer when set.
pub(crate) struct Audit {
    pub(crate) transcript: Option<Arc<Transcript>>,
    pub(crate) observer: Option<AuditObserver>,
    pub(crate) metrics: Option<crate::metrics::Metrics>,
    /// Counts the requests sent to MCP servers without their events.
    pub(crate) requests: Option<RequestCounter>,
}

impl Audit {
    /// False when nobody would see an event: no transcript, no observer, and the `log`
    /// facade off for the harness's target at every level an event has (`Warn` is the
    /// highest). The calls' hot path then skips building its events (their strings and the
    /// result's size, which takes writing the result out).
    pub(crate) fn wanted(&self) -> bool {
        self.transcript.is_some()
            || self.observer.is_some()
            || self.metrics.is_some()
            || log::log_enabled!(target: HARNESS_LOG_TARGET, log::Level::Warn)
    }

    /// Whether an event at `level` is seen by anyone who reads its every field: the
    /// transcript, the observer, or the log at that level. The metrics count only finished
    /// calls, refusals and retries: a remote attempt's request and response events, and their
    /// sizes (which take writing the arguments and the result out), are made only when this
    /// holds.
    pub(crate) fn sees(&self, level: log::Level) -> bool {
        self.transcript.is_some()
            || self.observer.is_some()
            || log::log_enabled!(target: HARNESS_LOG_TARGET, level)
    }

    pub(crate) fn emit(&self, event: AuditEvent) {
        log::log!(target: HARNESS_LOG_TARGET, event.level(), "{event}");
        if let Some(transcript) = &self.transcript {
            transcript.write(&event);
        }
        if let Some(observer) = &self.observer {
            observer(&event);
        }
        if let Some(metrics) = &self.metrics {
            record(metrics, &event);
        }
    }
}

/// Counts what the metrics keep of an event: finished calls by status, BUSY refusals,
/// retries. The tool is a label only once the call got past the registry: the name of an
/// `INVALID` or `UNKNOWN_TOOL` call is the model's, not the catalog's.
fn record(metrics: &crate::metrics::Metrics, event: &AuditEvent) {
    let known = !matches!(event.status, Some(Status::Invalid | Status::UnknownTool));
    let tool = event.tool.as_deref().filter(|_| known);
    match event.kind {
        AuditKind::Finished => {
            let status = event.status.map_or("_OTHER", Status::as_str);
            metrics.harness_call(status, tool);
        }
        AuditKind::Busy => metrics.harness_busy(tool),
        AuditKind::Retry => metrics.harness_retry(tool),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_through_their_line_format() {
        let mut event = AuditEvent::new(7, AuditKind::Finished).detail("done");
        event.tool = Some("echo".into());
        event.call_id = Some("call_1".into());
        event.scope = Some("conversation-1".into());
        event.status = Some(Status::ToolError);
        event.attempt = 2;
        event.duration = Some(Duration::from_micros(1500));
        event.size = Some(12);
        let line = event.to_json().to_string();
        assert_eq!(Transcript::parse_line(&line).unwrap(), event);
        let bare = AuditEvent::new(1, AuditKind::Received);
        assert_eq!(
            bare.to_json(),
            json!({"call": 1, "event": "received", "attempt": 0})
        );
        assert_eq!(
            Transcript::parse_line(&bare.to_json().to_string()).unwrap(),
            bare
        );
    }

    #[test]
    fn malformed_lines_are_refused() {
        assert!(Transcript::parse_line("{").is_err());
        assert!(Transcript::parse_line(r#"{"event":"finished"}"#).is_err());
        assert!(Transcript::parse_line(r#"{"call":1,"event":"exploded"}"#).is_err());
        assert!(Transcript::parse_line(r#"{"call":1,"event":"finished","status":"MEH"}"#).is_err());
    }

    #[test]
    fn details_are_bounded() {
        let event = AuditEvent::new(1, AuditKind::Late).detail("x".repeat(5000));
        assert_eq!(event.detail.chars().count(), MAX_DETAIL_CHARS + 1);
    }

    #[test]
    fn the_display_form_is_key_value() {
        let mut event = AuditEvent::new(3, AuditKind::Busy);
        event.tool = Some("slow".into());
        event.status = Some(Status::Busy);
        assert_eq!(
            event.to_string(),
            "call=3 event=busy tool=\"slow\" status=BUSY attempt=0"
        );
    }
}
