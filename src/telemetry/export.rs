//! The OTLP/HTTP trace exporter: a bounded queue that a span's end fills without waiting
//! (a full queue drops the span and counts it), drained by one background thread that sends
//! batches with ureq, every [`OtlpConfig::schedule_delay`] or as soon as a batch is full.

use std::io::Read as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};

use super::otlp::{encode_json, encode_protobuf, Resource};
use super::span::{SpanData, SpanSink};
use crate::error::{Error, Result};

/// How the export's body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// `http/protobuf`: `application/x-protobuf`. The default.
    #[default]
    HttpProtobuf,
    /// `http/json`: `application/json` in the OTLP JSON mapping.
    HttpJson,
}

/// Where and how spans are exported. Every bound is finite.
#[derive(Clone)]
pub struct OtlpConfig {
    pub(crate) endpoint: String,
    pub(crate) protocol: Protocol,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) service_name: String,
    pub(crate) schedule_delay: Duration,
    pub(crate) max_queue: usize,
    pub(crate) max_batch: usize,
    pub(crate) timeout: Duration,
}

impl std::fmt::Debug for OtlpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values are credentials: only their names are shown.
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|(k, _)| format!("{k}: ***"))
            .collect();
        f.debug_struct("OtlpConfig")
            .field("endpoint", &crate::mask::mask_url(&self.endpoint))
            .field("protocol", &self.protocol)
            .field("headers", &headers)
            .field("service_name", &self.service_name)
            .field("schedule_delay", &self.schedule_delay)
            .field("max_queue", &self.max_queue)
            .field("max_batch", &self.max_batch)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl OtlpConfig {
    /// Exports to `traces_url` (the whole URL, e.g. `http://localhost:4318/v1/traces`) as
    /// service `service_name`, with the defaults below.
    pub fn new(traces_url: impl Into<String>, service_name: impl Into<String>) -> OtlpConfig {
        OtlpConfig {
            endpoint: traces_url.into(),
            protocol: Protocol::HttpProtobuf,
            headers: Vec::new(),
            service_name: service_name.into(),
            schedule_delay: Duration::from_millis(5_000),
            max_queue: 2_048,
            max_batch: 512,
            timeout: Duration::from_secs(10),
        }
    }

    /// The body's encoding. Defaults to [`Protocol::HttpProtobuf`].
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// A header sent with every export (an API key: its value is never logged). Defaults to
    /// none.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The longest a span waits in the queue before its batch is sent, 1 ms to 60 s.
    /// Defaults to 5 s (`OTEL_BSP_SCHEDULE_DELAY`).
    pub fn schedule_delay(mut self, delay: Duration) -> Self {
        self.schedule_delay = delay;
        self
    }

    /// The most spans queued, 1 to 1,000,000; past it an ended span is dropped and counted.
    /// Defaults to 2,048 (`OTEL_BSP_MAX_QUEUE_SIZE`).
    pub fn max_queue(mut self, spans: usize) -> Self {
        self.max_queue = spans;
        self
    }

    /// The most spans in one export, 1 to the queue's size. Defaults to 512
    /// (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
    pub fn max_batch(mut self, spans: usize) -> Self {
        self.max_batch = spans;
        self
    }

    /// The bound of one export request, retries included, 1 ms to 60 s. Defaults to 10 s
    /// (`OTEL_EXPORTER_OTLP_TIMEOUT`).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn check(&self) -> Result<()> {
        let in_range = |d: Duration| d >= Duration::from_millis(1) && d <= Duration::from_secs(60);
        if !(self.endpoint.starts_with("http://") || self.endpoint.starts_with("https://")) {
            return Err(Error::Config(format!(
                "the OTLP endpoint {} is not an http:// or https:// URL",
                crate::mask::mask_url(&self.endpoint)
            )));
        }
        if !in_range(self.schedule_delay) || !in_range(self.timeout) {
            return Err(Error::Config(
                "the OTLP schedule delay and timeout are 1 ms to 60 s".into(),
            ));
        }
        if !(1..=1_000_000).contains(&self.max_queue)
            || !(1..=self.max_queue).contains(&self.max_batch)
        {
            return Err(Error::Config(
                "the OTLP queue is 1 to 1,000,000 spans, and a batch 1 to the queue's size".into(),
            ));
        }
        Ok(())
    }
}

/// What the caller side and the thread share.
struct Shared {
    dropped: AtomicU64,
    exported: AtomicU64,
    failed: AtomicU64,
    /// Flushes asked for and done, by number: std's lock and condition variable, which a
    /// flush at process exit can still wait on.
    flushes: Mutex<(u64, u64)>,
    flushed: Condvar,
}

enum Message {
    Span(Box<SpanData>),
    Flush,
}

/// The exporter: a [`SpanSink`] for [`super::Tracer::new`]. Dropping the last clone lets the
/// thread send what is queued and stop.
#[derive(Clone)]
pub struct OtlpExporter {
    sender: Sender<Message>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for OtlpExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpExporter")
            .field("dropped", &self.dropped())
            .field("exported", &self.exported())
            .finish_non_exhaustive()
    }
}

impl OtlpExporter {
    /// Starts the exporter's thread. A program that configures tracing itself rather than by
    /// the environment installs it before anything records:
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use toolwire::telemetry::{self, OtlpConfig, OtlpExporter, Protocol, Tracer};
    ///
    /// let config = OtlpConfig::new("http://127.0.0.1:4318/v1/traces", "my-agent")
    ///     .protocol(Protocol::HttpJson)
    ///     .header("x-api-key", "…")
    ///     .schedule_delay(Duration::from_secs(1));
    /// let tracer = Tracer::new(OtlpExporter::start(config)?);
    /// if telemetry::install(tracer).is_err() {
    ///     eprintln!("the process's tracer was already decided");
    /// }
    /// # Ok::<(), toolwire::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a setting out of its bounds; [`Error::Io`] when the thread
    /// cannot be started.
    pub fn start(config: OtlpConfig) -> Result<OtlpExporter> {
        config.check()?;
        let (sender, receiver) = crossbeam_channel::bounded(config.max_queue);
        let shared = Arc::new(Shared {
            dropped: AtomicU64::new(0),
            exported: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            flushes: Mutex::new((0, 0)),
            flushed: Condvar::new(),
        });
        let worker = Worker {
            agent: ureq::Agent::new_with_config(
                ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .max_redirects(0)
                    .user_agent(format!("toolwire/{}", env!("CARGO_PKG_VERSION")))
                    .timeout_global(Some(config.timeout))
                    .build(),
            ),
            resource: Resource {
                service_name: config.service_name.clone(),
            },
            config,
            shared: Arc::clone(&shared),
        };
        // Detached: it ends when every sender is gone, after sending what is queued.
        drop(crate::sys::spawn_named("toolwire-otlp", move || {
            worker.run(&receiver);
        })?);
        Ok(OtlpExporter { sender, shared })
    }

    /// Spans dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Spans the collector accepted.
    pub fn exported(&self) -> u64 {
        self.shared.exported.load(Ordering::Relaxed)
    }

    /// Spans whose export failed (refused, or unreachable after the retries).
    pub fn failed(&self) -> u64 {
        self.shared.failed.load(Ordering::Relaxed)
    }
}

impl SpanSink for OtlpExporter {
    fn export(&self, span: SpanData) {
        match self.sender.try_send(Message::Span(Box::new(span))) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn flush(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut flushes = self
            .shared
            .flushes
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        flushes.0 += 1;
        let wanted = flushes.0;
        // A full queue wakes the thread anyway; it looks at the flushes after every batch.
        let _ = self.sender.try_send(Message::Flush);
        while flushes.1 < wanted {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            flushes = match self.shared.flushed.wait_timeout(flushes, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        true
    }
}

struct Worker {
    agent: ureq::Agent,
    resource: Resource,
    config: OtlpConfig,
    shared: Arc<Shared>,
}

impl Worker {
    fn run(&self, receiver: &Receiver<Message>) {
        let mut batch: Vec<SpanData> = Vec::new();
        let mut due = Instant::now() + self.config.schedule_delay;
        loop {
            let wait = due.saturating_duration_since(Instant::now());
            match receiver.recv_timeout(wait) {
                Ok(Message::Span(span)) => {
                    batch.push(*span);
                    if batch.len() >= self.config.max_batch {
                        self.send(&mut batch);
                    }
                }
                Ok(Message::Flush) => {}
                Err(RecvTimeoutError::Timeout) => {
                    self.send(&mut batch);
                    due = Instant::now() + self.config.schedule_delay;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.send(&mut batch);
                    self.finish_flushes(receiver, &mut batch);
                    return;
                }
            }
            self.finish_flushes(receiver, &mut batch);
        }
    }

    /// When a flush was asked for: sends everything queued now, then says it is done.
    fn finish_flushes(&self, receiver: &Receiver<Message>, batch: &mut Vec<SpanData>) {
        let wanted = self
            .shared
            .flushes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0;
        let done = self
            .shared
            .flushes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1;
        if done >= wanted {
            return;
        }
        while let Ok(message) = receiver.try_recv() {
            if let Message::Span(span) = message {
                batch.push(*span);
                if batch.len() >= self.config.max_batch {
                    self.send(batch);
                }
            }
        }
        self.send(batch);
        let mut flushes = self
            .shared
            .flushes
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        flushes.1 = flushes.1.max(wanted);
        self.shared.flushed.notify_all();
    }

    /// Posts `batch` (emptying it), retrying 429, 502, 503 and 504 with a growing pause
    /// within the export's timeout.
    fn send(&self, batch: &mut Vec<SpanData>) {
        if batch.is_empty() {
            return;
        }
        let (body, content_type) = match self.config.protocol {
            Protocol::HttpProtobuf => (
                encode_protobuf(&self.resource, batch),
                "application/x-protobuf",
            ),
            Protocol::HttpJson => (encode_json(&self.resource, batch), "application/json"),
        };
        let count = batch.len() as u64;
        batch.clear();
        let deadline = Instant::now() + self.config.timeout;
        let mut pause = Duration::from_millis(100);
        let outcome = loop {
            let mut request = self
                .agent
                .post(&self.config.endpoint)
                .header("Content-Type", content_type);
            for (name, value) in &self.config.headers {
                request = request.header(name.as_str(), value.as_str());
            }
            let status = match request.send(&body[..]) {
                Ok(response) => {
                    let status = response.status().as_u16();
                    // Read (a bounded part of) the answer so the connection can be kept.
                    let mut sink = Vec::new();
                    let _ = response
                        .into_body()
                        .into_reader()
                        .take(64 * 1024)
                        .read_to_end(&mut sink);
                    Ok(status)
                }
                Err(error) => Err(error.to_string()),
            };
            let retry = matches!(status, Ok(429 | 502 | 503 | 504)) || status.is_err();
            if !retry || Instant::now() + pause >= deadline {
                break status;
            }
            std::thread::sleep(pause);
            pause *= 2;
        };
        match outcome {
            Ok(200..=299) => {
                self.shared.exported.fetch_add(count, Ordering::Relaxed);
            }
            other => {
                self.shared.failed.fetch_add(count, Ordering::Relaxed);
                let why = match other {
                    Ok(status) => format!("answered {status}"),
                    Err(error) => error,
                };
                log::warn!(
                    "toolwire: exporting {count} span(s) to {} failed: {why}",
                    crate::mask::mask_url(&self.config.endpoint)
                );
            }
        }
    }
}

/// The configuration the standard environment variables give, or `None` when they configure
/// no trace exporter: neither `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` nor
/// `OTEL_EXPORTER_OTLP_ENDPOINT` is set (and `OTEL_TRACES_EXPORTER` is not `otlp`), or
/// `OTEL_SDK_DISABLED` is `true`, or `OTEL_TRACES_EXPORTER` is `none`. An empty value counts
/// as unset. `grpc` is not supported: it is logged and no exporter is made.
pub fn config_from_env() -> Option<OtlpConfig> {
    config_from(|name| {
        std::env::var(name)
            .ok()
            .filter(|value| !value.trim().is_empty())
    })
}

pub(crate) fn config_from(var: impl Fn(&str) -> Option<String>) -> Option<OtlpConfig> {
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return None;
    }
    let exporter = var("OTEL_TRACES_EXPORTER").map(|v| v.trim().to_ascii_lowercase());
    if exporter
        .as_deref()
        .is_some_and(|v| !v.split(',').any(|e| e.trim() == "otlp"))
    {
        return None;
    }
    let endpoint = if let Some(url) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        let url = url.trim().to_owned();
        // Used as given; only an empty path becomes `/`.
        match url.split_once("://") {
            Some((_, rest)) if !rest.contains('/') => format!("{url}/"),
            _ => url,
        }
    } else if let Some(base) = var("OTEL_EXPORTER_OTLP_ENDPOINT") {
        let base = base.trim();
        let slash = if base.ends_with('/') { "" } else { "/" };
        format!("{base}{slash}v1/traces")
    } else if exporter.is_some() {
        "http://localhost:4318/v1/traces".to_owned()
    } else {
        return None;
    };
    let either = |signal: &str, general: &str| var(signal).or_else(|| var(general));
    let protocol = match either(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    )
    .as_deref()
    .map(str::trim)
    {
        None | Some("http/protobuf") => Protocol::HttpProtobuf,
        Some("http/json") => Protocol::HttpJson,
        Some(other) => {
            log::warn!(
                "toolwire: OTEL_EXPORTER_OTLP_PROTOCOL {other:?} is not supported \
                 (http/protobuf or http/json): no traces are exported"
            );
            return None;
        }
    };
    let service_name = var("OTEL_SERVICE_NAME")
        .map(|name| name.trim().to_owned())
        .or_else(|| {
            let attributes = var("OTEL_RESOURCE_ATTRIBUTES")?;
            let pairs = parse_pairs(&attributes)?;
            pairs
                .into_iter()
                .find(|(key, _)| key == "service.name")
                .map(|(_, value)| value)
        })
        .unwrap_or_else(|| {
            let program = std::env::current_exe()
                .ok()
                .and_then(|path| path.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_default();
            format!("unknown_service:{program}")
        });
    let mut config = OtlpConfig::new(endpoint, service_name).protocol(protocol);
    if let Some(headers) = either(
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_HEADERS",
    ) {
        match parse_pairs(&headers) {
            Some(pairs) => config.headers = pairs,
            // The value may hold a credential: never repeated.
            None => log::warn!("toolwire: OTEL_EXPORTER_OTLP_HEADERS is malformed; ignored"),
        }
    }
    let millis = |name: &str, default: u64, max: u64| {
        let value = var(name)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(default);
        Duration::from_millis(value.clamp(1, max))
    };
    config.schedule_delay = millis("OTEL_BSP_SCHEDULE_DELAY", 5_000, 60_000);
    config.timeout = millis(
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        var("OTEL_EXPORTER_OTLP_TIMEOUT")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(10_000),
        60_000,
    );
    let count = |name: &str, default: usize| {
        var(name)
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(default)
            .clamp(1, 1_000_000)
    };
    config.max_queue = count("OTEL_BSP_MAX_QUEUE_SIZE", 2_048);
    config.max_batch = count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512).min(config.max_queue);
    Some(config)
}

/// `k=v,k2=v2` with percent-encoded keys and values; `None` when a member is malformed.
fn parse_pairs(text: &str) -> Option<Vec<(String, String)>> {
    let mut pairs = Vec::new();
    for member in text.split(',') {
        if member.trim().is_empty() {
            continue;
        }
        let (key, value) = member.split_once('=')?;
        let key = percent_decode(key.trim())?;
        if key.is_empty() {
            return None;
        }
        pairs.push((key, percent_decode(value.trim())?));
    }
    Some(pairs)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = text.get(at + 1..at + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
#[path = "export_tests.rs"]
mod tests;
