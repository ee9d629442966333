//! Spans: what one is made of ([`SpanData`]), the live one a caller holds ([`Span`], ended
//! on [`Span::end`] or drop), and where ended ones go ([`SpanSink`] behind a [`Tracer`]).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::context::SpanContext;

/// The most attributes a span keeps; past it they are counted in
/// [`SpanData::dropped_attributes`].
pub const MAX_ATTRIBUTES: usize = 32;
/// The longest attribute value (and status message) kept, in bytes; a longer one is cut at a
/// character boundary.
pub const MAX_VALUE_BYTES: usize = 1024;
/// The longest span name kept, in bytes.
pub const MAX_NAME_BYTES: usize = 256;

/// The span kinds toolwire records (OTLP numbers them 1, 2, 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// Work inside one process (the harness's `execute_tool`).
    Internal,
    /// The processing of a request that came in (an MCP server's).
    Server,
    /// A request sent out (an MCP client's).
    Client,
}

impl SpanKind {
    /// The OTLP enum value.
    pub fn otlp(self) -> u8 {
        match self {
            SpanKind::Internal => 1,
            SpanKind::Server => 2,
            SpanKind::Client => 3,
        }
    }
}

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    /// A string.
    Str(Cow<'static, str>),
    /// A signed integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
}

impl From<&'static str> for AttributeValue {
    fn from(value: &'static str) -> Self {
        AttributeValue::Str(Cow::Borrowed(value))
    }
}

impl From<String> for AttributeValue {
    fn from(value: String) -> Self {
        AttributeValue::Str(Cow::Owned(value))
    }
}

impl From<i64> for AttributeValue {
    fn from(value: i64) -> Self {
        AttributeValue::Int(value)
    }
}

impl From<bool> for AttributeValue {
    fn from(value: bool) -> Self {
        AttributeValue::Bool(value)
    }
}

/// A span's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SpanStatus {
    /// Nothing said (a success, by the conventions).
    #[default]
    Unset,
    /// Failed, with a description.
    Error(String),
}

/// An ended span, as a [`SpanSink`] receives it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SpanData {
    /// Its name (`tools/call add`, `execute_tool add`).
    pub name: Cow<'static, str>,
    /// Its kind.
    pub kind: SpanKind,
    /// Its own context (trace id, span id, flags, `tracestate`).
    pub context: SpanContext,
    /// Its parent's span id, when it has a parent.
    pub parent: Option<[u8; 8]>,
    /// Its start, in nanoseconds since the Unix epoch.
    pub start_unix_nanos: u64,
    /// Its end, in nanoseconds since the Unix epoch.
    pub end_unix_nanos: u64,
    /// Its attributes, at most [`MAX_ATTRIBUTES`].
    pub attributes: Vec<(&'static str, AttributeValue)>,
    /// Attributes past [`MAX_ATTRIBUTES`], not kept.
    pub dropped_attributes: u32,
    /// Its status.
    pub status: SpanStatus,
}

/// Where ended spans go: an exporter's queue, a test's list. `export` is called on the
/// thread that ends the span, so it must not block.
pub trait SpanSink: Send + Sync {
    /// Takes one ended span. Must return at once (queue it, or drop and count it).
    fn export(&self, span: SpanData);

    /// Sends what is queued, waiting at most `timeout`; true when everything went. Defaults
    /// to true at once (nothing queued).
    fn flush(&self, timeout: Duration) -> bool {
        let _ = timeout;
        true
    }
}

/// Starts spans and hands the ended ones to its sink. Cheap to clone.
#[derive(Clone)]
pub struct Tracer {
    sink: Arc<dyn SpanSink>,
}

impl fmt::Debug for Tracer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracer").finish_non_exhaustive()
    }
}

impl Tracer {
    /// A tracer whose ended spans go to `sink`.
    pub fn new(sink: impl SpanSink + 'static) -> Tracer {
        Tracer {
            sink: Arc::new(sink),
        }
    }

    /// Starts a span named `name` under `parent` (a new trace without one). Under an
    /// unsampled parent the span is not recorded (`parentbased_always_on`), but its context
    /// still travels.
    pub fn start(
        &self,
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        parent: Option<&SpanContext>,
    ) -> Span {
        let span_id = random_id::<8>();
        let (context, parent_id) = match parent {
            Some(parent) => (
                SpanContext {
                    trace_id: parent.trace_id,
                    span_id,
                    flags: parent.flags,
                    state: parent.state.clone(),
                },
                Some(parent.span_id),
            ),
            None => (
                SpanContext {
                    trace_id: random_id::<16>(),
                    span_id,
                    flags: 1,
                    state: None,
                },
                None,
            ),
        };
        let record = context.is_sampled().then(|| {
            let mut name = name.into();
            truncate(&mut name, MAX_NAME_BYTES);
            Box::new(Recording {
                sink: Arc::clone(&self.sink),
                began: Instant::now(),
                data: SpanData {
                    name,
                    kind,
                    context: context.clone(),
                    parent: parent_id,
                    start_unix_nanos: unix_nanos(SystemTime::now()),
                    end_unix_nanos: 0,
                    attributes: Vec::new(),
                    dropped_attributes: 0,
                    status: SpanStatus::Unset,
                },
            })
        });
        Span { context, record }
    }

    /// Sends what the sink has queued, waiting at most `timeout`; true when all of it went.
    pub fn flush(&self, timeout: Duration) -> bool {
        self.sink.flush(timeout)
    }
}

struct Recording {
    sink: Arc<dyn SpanSink>,
    began: Instant,
    data: SpanData,
}

/// A started span. Ended by [`Span::end`] or when dropped; its context is what a request it
/// makes carries as `traceparent`.
pub struct Span {
    context: SpanContext,
    record: Option<Box<Recording>>,
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Span")
            .field("context", &self.context)
            .field("name", &self.record.as_ref().map(|r| &r.data.name))
            .finish()
    }
}

impl Span {
    /// Its context, to carry to a peer or to parent a child span.
    pub fn context(&self) -> &SpanContext {
        &self.context
    }

    /// Whether it is recorded (its parent was sampled).
    pub fn is_recording(&self) -> bool {
        self.record.is_some()
    }

    /// Sets an attribute (replacing one of the same key). Values longer than
    /// [`MAX_VALUE_BYTES`] are cut; past [`MAX_ATTRIBUTES`] keys, new ones are counted and
    /// dropped.
    pub fn set(&mut self, key: &'static str, value: impl Into<AttributeValue>) {
        let Some(record) = &mut self.record else {
            return;
        };
        let mut value = value.into();
        if let AttributeValue::Str(text) = &mut value {
            truncate(text, MAX_VALUE_BYTES);
        }
        let attributes = &mut record.data.attributes;
        if let Some(slot) = attributes.iter_mut().find(|(name, _)| *name == key) {
            slot.1 = value;
        } else if attributes.len() < MAX_ATTRIBUTES {
            attributes.push((key, value));
        } else {
            record.data.dropped_attributes += 1;
        }
    }

    /// Renames it (a name learned after the start).
    pub fn rename(&mut self, name: impl Into<Cow<'static, str>>) {
        if let Some(record) = &mut self.record {
            let mut name = name.into();
            truncate(&mut name, MAX_NAME_BYTES);
            record.data.name = name;
        }
    }

    /// Marks it failed: `error.type` is set to `error_type` and the status is ERROR with
    /// `message` as its description.
    pub fn fail(&mut self, error_type: impl Into<AttributeValue>, message: impl Into<String>) {
        self.set("error.type", error_type);
        if let Some(record) = &mut self.record {
            let mut message = Cow::Owned(message.into());
            truncate(&mut message, MAX_VALUE_BYTES);
            record.data.status = SpanStatus::Error(message.into_owned());
        }
    }

    /// Ends it now.
    pub fn end(self) {}
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(record) = self.record.take() {
            let Recording {
                sink,
                began,
                mut data,
            } = *record;
            let elapsed = u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX);
            data.end_unix_nanos = data.start_unix_nanos.saturating_add(elapsed);
            sink.export(data);
        }
    }
}

fn unix_nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|since| u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Cuts `text` to at most `limit` bytes, at a character boundary.
fn truncate(text: &mut Cow<'static, str>, limit: usize) {
    if text.len() > limit {
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.to_mut().truncate(end);
    }
}

/// A random id that is not all zeros: the OS's random numbers where the build has them,
/// else std's per-process random hasher keys over a counter and the clock.
fn random_id<const N: usize>() -> [u8; N] {
    let mut id = [0u8; N];
    loop {
        fill_random(&mut id);
        if id != [0u8; N] {
            return id;
        }
    }
}

#[cfg(any(feature = "server", feature = "oauth", feature = "otel"))]
fn fill_random(bytes: &mut [u8]) {
    if getrandom::fill(bytes).is_err() {
        fill_hashed(bytes);
    }
}

#[cfg(not(any(feature = "server", feature = "oauth", feature = "otel")))]
fn fill_random(bytes: &mut [u8]) {
    fill_hashed(bytes);
}

fn fill_hashed(bytes: &mut [u8]) {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    for chunk in bytes.chunks_mut(8) {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_u64(unix_nanos(SystemTime::now()));
        let word = hasher.finish().to_le_bytes();
        chunk.copy_from_slice(&word[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[derive(Clone, Default)]
    struct Collect(Arc<Mutex<Vec<SpanData>>>);

    impl SpanSink for Collect {
        fn export(&self, span: SpanData) {
            self.0.lock().push(span);
        }
    }

    #[test]
    fn spans_nest_and_keep_their_bounds() {
        let sink = Collect::default();
        let tracer = Tracer::new(sink.clone());
        let mut root = tracer.start("tools/call add", SpanKind::Client, None);
        let child = tracer.start("child", SpanKind::Server, Some(root.context()));
        assert_eq!(child.context().trace_id, root.context().trace_id);
        assert_ne!(child.context().span_id, root.context().span_id);
        drop(child);
        for index in 0..MAX_ATTRIBUTES + 3 {
            let key: &'static str = Box::leak(format!("k{index}").into_boxed_str());
            root.set(key, "v");
        }
        root.set("k0", "é".repeat(MAX_VALUE_BYTES));
        root.fail("tool_error", "the tool said no");
        root.end();
        let spans = sink.0.lock();
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].parent, Some(spans[1].context.span_id));
        assert_eq!(spans[1].parent, None);
        assert_eq!(spans[1].attributes.len(), MAX_ATTRIBUTES);
        // k0 replaced in place; error.type was one past the bound too.
        assert_eq!(spans[1].dropped_attributes, 4);
        match &spans[1].attributes[0].1 {
            AttributeValue::Str(text) => assert_eq!(text.len(), MAX_VALUE_BYTES),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            spans[1].status,
            SpanStatus::Error("the tool said no".into())
        );
        assert!(spans[1].end_unix_nanos >= spans[1].start_unix_nanos);
    }

    #[test]
    fn an_unsampled_parent_is_passed_on_not_recorded() {
        let sink = Collect::default();
        let tracer = Tracer::new(sink.clone());
        let parent = SpanContext::from_headers(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
            None,
        )
        .unwrap();
        let span = tracer.start("x", SpanKind::Server, Some(&parent));
        assert!(!span.is_recording());
        assert!(span.context().traceparent().ends_with("-00"));
        drop(span);
        assert!(sink.0.lock().is_empty());
    }
}
