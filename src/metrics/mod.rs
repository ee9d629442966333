//! Metrics in the Prometheus text format (0.0.4), named as the OpenTelemetry-to-Prometheus
//! rules name the MCP semantic conventions' instruments.
//!
//! One [`Metrics`] recorder is shared by whatever records into it: a [`crate::server::Server`]
//! given one by [`crate::server::ServerConfig::metrics`] records every request it answers
//! (`mcp.server.operation.duration` as `mcp_server_operation_duration_seconds`), a
//! [`crate::harness::Harness`] given one by [`crate::harness::HarnessConfig::metrics`] counts
//! its calls by status word, its BUSY refusals and its retries, and reports the budget left.
//! [`Metrics::render`] writes them out; [`crate::server::HttpServer::bind_metrics`] serves
//! that text on a listener of its own.
//!
//! Label values are bounded by what records them: method names the server routes (anything
//! else is `_OTHER`), tool names from the catalog or the registry (an unknown one is left
//! out), status words and JSON-RPC error codes. Subjects, request ids and arguments are never
//! labels. As a last bound, a recorder keeps at most [`Metrics::max_series`] series (defaults
//! to 2,000); past it new series are not created and
//! `toolwire_metrics_series_dropped_total` counts what was dropped.
//!
//! The text format is written here rather than with `prometheus-client`: the exposition is a
//! few dozen lines, and that crate writes OpenMetrics (`# EOF`, `_total` rules of its own)
//! and brings a derive macro; the plain 0.0.4 text is what every Prometheus scrapes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

/// `mcp.server.operation.duration`: from a request received to its answer sent, at the
/// server. Labels: `mcp_method_name`, and when they apply `gen_ai_tool_name`, `error_type`.
pub const SERVER_OPERATION_DURATION: &str = "mcp_server_operation_duration_seconds";
/// Harness calls by their final status word. Labels: `status`, `gen_ai_tool_name` (when the
/// registry has the tool).
pub const HARNESS_CALLS: &str = "toolwire_harness_calls_total";
/// Attempts the harness's executor refused because no worker was free (BUSY). Labels:
/// `gen_ai_tool_name` (when the registry has the tool).
pub const HARNESS_BUSY: &str = "toolwire_harness_busy_total";
/// Retries the harness planned. Labels: `gen_ai_tool_name`.
pub const HARNESS_RETRIES: &str = "toolwire_harness_retries_total";
/// Attempts left in the harness's own budget (its window's, for a budget with one).
pub const HARNESS_BUDGET_REMAINING: &str = "toolwire_harness_budget_remaining";
/// Series a recorder refused to create past [`Metrics::max_series`].
pub const SERIES_DROPPED: &str = "toolwire_metrics_series_dropped_total";

/// The histogram buckets (upper bounds in seconds): the semantic conventions' advisory ones
/// for every MCP duration.
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The media type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The label value of a method name the server does not route, as the conventions' fallback.
pub const OTHER: &str = "_OTHER";

type Labels = Vec<(&'static str, String)>;
type GaugeFn = Box<dyn Fn() -> Option<f64> + Send + Sync>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

enum Sample {
    Counter(u64),
    Histogram {
        buckets: [u64; DURATION_BUCKETS.len()],
        sum: f64,
        count: u64,
    },
}

struct Family {
    help: &'static str,
    kind: Kind,
    series: BTreeMap<Labels, Sample>,
}

#[derive(Default)]
struct State {
    families: BTreeMap<&'static str, Family>,
    series: usize,
    dropped: u64,
}

struct Gauge {
    name: &'static str,
    help: &'static str,
    read: GaugeFn,
}

struct Inner {
    max_series: usize,
    state: Mutex<State>,
    gauges: Mutex<Vec<Gauge>>,
}

/// A recorder of counters and histograms, rendered as Prometheus text. Cloning shares it.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("max_series", &self.inner.max_series)
            .field("series", &self.inner.state.lock().series)
            .finish()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::with_max_series(2_000)
    }
}

impl Metrics {
    /// An empty recorder that keeps at most 2,000 series.
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// An empty recorder that keeps at most `max_series` series (at least 1; defaults to
    /// 2,000 with [`Metrics::new`]).
    pub fn with_max_series(max_series: usize) -> Metrics {
        Metrics {
            inner: Arc::new(Inner {
                max_series: max_series.max(1),
                state: Mutex::new(State::default()),
                gauges: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The most series this recorder keeps.
    pub fn max_series(&self) -> usize {
        self.inner.max_series
    }

    /// Records one answered request of a server: `method` as routed (or [`OTHER`]), the tool
    /// of a `tools/call` the catalog has, the `error.type` of a failed one (a JSON-RPC code
    /// as a string, `tool_error` for a result with `isError`).
    pub fn server_operation(
        &self,
        method: &str,
        tool: Option<&str>,
        error_type: Option<&str>,
        elapsed: Duration,
    ) {
        let mut labels: Labels = vec![("mcp_method_name", method.to_owned())];
        if let Some(error) = error_type {
            labels.push(("error_type", error.to_owned()));
        }
        if let Some(tool) = tool {
            labels.push(("gen_ai_tool_name", tool.to_owned()));
        }
        self.observe(
            SERVER_OPERATION_DURATION,
            "Duration of MCP requests as the server handled them (mcp.server.operation.duration).",
            labels,
            elapsed,
        );
    }

    /// Counts one finished harness call by its status word, with its tool when the registry
    /// has it.
    pub fn harness_call(&self, status: &str, tool: Option<&str>) {
        let mut labels: Labels = vec![("status", status.to_owned())];
        if let Some(tool) = tool {
            labels.push(("gen_ai_tool_name", tool.to_owned()));
        }
        self.count(
            HARNESS_CALLS,
            "Harness calls by their final status word.",
            labels,
        );
    }

    /// Counts one attempt refused BUSY (no worker free).
    pub fn harness_busy(&self, tool: Option<&str>) {
        let labels = tool
            .map(|tool| vec![("gen_ai_tool_name", tool.to_owned())])
            .unwrap_or_default();
        self.count(
            HARNESS_BUSY,
            "Attempts the harness refused BUSY: no worker was free.",
            labels,
        );
    }

    /// Counts one retry the harness planned.
    pub fn harness_retry(&self, tool: Option<&str>) {
        let labels = tool
            .map(|tool| vec![("gen_ai_tool_name", tool.to_owned())])
            .unwrap_or_default();
        self.count(HARNESS_RETRIES, "Retries the harness planned.", labels);
    }

    /// A gauge without labels whose value is read at every render; `None` leaves it out of
    /// that render (its source is gone). A second gauge of the same name replaces the first.
    pub fn gauge(
        &self,
        name: &'static str,
        help: &'static str,
        read: impl Fn() -> Option<f64> + Send + Sync + 'static,
    ) {
        let mut gauges = self.inner.gauges.lock();
        gauges.retain(|gauge| gauge.name != name);
        gauges.push(Gauge {
            name,
            help,
            read: Box::new(read),
        });
    }

    fn count(&self, name: &'static str, help: &'static str, labels: Labels) {
        self.record(name, help, Kind::Counter, labels, |sample| {
            if let Sample::Counter(count) = sample {
                *count += 1;
            }
        });
    }

    fn observe(&self, name: &'static str, help: &'static str, labels: Labels, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        self.record(name, help, Kind::Histogram, labels, |sample| {
            if let Sample::Histogram {
                buckets,
                sum,
                count,
            } = sample
            {
                for (bucket, bound) in buckets.iter_mut().zip(DURATION_BUCKETS) {
                    if seconds <= bound {
                        *bucket += 1;
                    }
                }
                *sum += seconds;
                *count += 1;
            }
        });
    }

    fn record(
        &self,
        name: &'static str,
        help: &'static str,
        kind: Kind,
        mut labels: Labels,
        update: impl FnOnce(&mut Sample),
    ) {
        labels.sort();
        let mut guard = self.inner.state.lock();
        let state = &mut *guard;
        let family = state.families.entry(name).or_insert_with(|| Family {
            help,
            kind,
            series: BTreeMap::new(),
        });
        if let Some(sample) = family.series.get_mut(&labels) {
            update(sample);
            return;
        }
        if state.series >= self.inner.max_series {
            state.dropped += 1;
            return;
        }
        let mut sample = match kind {
            Kind::Counter | Kind::Gauge => Sample::Counter(0),
            Kind::Histogram => Sample::Histogram {
                buckets: [0; DURATION_BUCKETS.len()],
                sum: 0.0,
                count: 0,
            },
        };
        update(&mut sample);
        family.series.insert(labels, sample);
        state.series += 1;
    }

    /// Every metric as Prometheus text (format 0.0.4, [`CONTENT_TYPE`]): `# HELP` and
    /// `# TYPE` once per metric, histograms as cumulative `_bucket{le}`, `_sum` and `_count`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        {
            let state = self.inner.state.lock();
            for (name, family) in &state.families {
                head(&mut out, name, family.help, family.kind);
                for (labels, sample) in &family.series {
                    match sample {
                        Sample::Counter(count) => {
                            line(&mut out, name, "", labels, None, &count.to_string());
                        }
                        Sample::Histogram {
                            buckets,
                            sum,
                            count,
                        } => {
                            for (bucket, bound) in buckets.iter().zip(DURATION_BUCKETS) {
                                let le = number(bound);
                                line(
                                    &mut out,
                                    name,
                                    "_bucket",
                                    labels,
                                    Some(&le),
                                    &bucket.to_string(),
                                );
                            }
                            let all = count.to_string();
                            line(&mut out, name, "_bucket", labels, Some("+Inf"), &all);
                            line(&mut out, name, "_sum", labels, None, &number(*sum));
                            line(&mut out, name, "_count", labels, None, &all);
                        }
                    }
                }
            }
            head(
                &mut out,
                SERIES_DROPPED,
                "Series not created because the recorder held its most.",
                Kind::Counter,
            );
            line(
                &mut out,
                SERIES_DROPPED,
                "",
                &[],
                None,
                &state.dropped.to_string(),
            );
        }
        for gauge in self.inner.gauges.lock().iter() {
            let read = crate::sys::guard("a metrics gauge", || (gauge.read)()).flatten();
            if let Some(value) = read {
                head(&mut out, gauge.name, gauge.help, Kind::Gauge);
                line(&mut out, gauge.name, "", &[], None, &number(value));
            }
        }
        out
    }
}

fn head(out: &mut String, name: &str, help: &str, kind: Kind) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {}", kind.word());
}

fn line(
    out: &mut String,
    name: &str,
    suffix: &str,
    labels: &[(&'static str, String)],
    le: Option<&str>,
    value: &str,
) {
    out.push_str(name);
    out.push_str(suffix);
    let pairs = labels
        .iter()
        .map(|(key, value)| (*key, value.as_str()))
        .chain(le.map(|le| ("le", le)));
    let mut first = true;
    for (key, value) in pairs {
        out.push(if first { '{' } else { ',' });
        first = false;
        out.push_str(key);
        out.push_str("=\"");
        escape(out, value);
        out.push('"');
    }
    if !first {
        out.push('}');
    }
    out.push(' ');
    out.push_str(value);
    out.push('\n');
}

/// A label value as the text format quotes it: `\`, `"` and newlines escaped.
fn escape(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A float as the text format writes it (Go's `ParseFloat` reads Rust's shortest form).
fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let mut out = String::new();
        escape(&mut out, "a\\b\"c\nd");
        assert_eq!(out, "a\\\\b\\\"c\\nd");
    }

    #[test]
    fn series_past_the_cap_are_dropped_and_counted() {
        let metrics = Metrics::with_max_series(2);
        metrics.harness_call("OK", Some("a"));
        metrics.harness_call("OK", Some("b"));
        metrics.harness_call("OK", Some("c"));
        metrics.harness_call("OK", Some("a"));
        let text = metrics.render();
        assert!(
            text.contains("toolwire_harness_calls_total{gen_ai_tool_name=\"a\",status=\"OK\"} 2\n")
        );
        assert!(!text.contains("\"c\""));
        assert!(text.contains("toolwire_metrics_series_dropped_total 1\n"));
    }
}
