//! Traces by the OpenTelemetry semantic conventions for MCP, with no async runtime.
//!
//! A [`Tracer`] starts [`Span`]s and hands each ended one to its [`SpanSink`]. The one
//! toolwire records into is the process's, [`tracer`]: set by [`install`] (the library's
//! configuration), or else made on first use from the standard environment variables
//! ([`OtlpConfig`] lists them; with feature `otel`): `OTEL_EXPORTER_OTLP_ENDPOINT` (with
//! `/v1/traces` appended), `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as given),
//! `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default, or `http/json`),
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_BSP_SCHEDULE_DELAY`. With none of
//! them set there is no tracer, and every instrumented place costs one atomic load.
//!
//! What records spans, when a tracer is there:
//! - the MCP client: one CLIENT span per request (`{mcp.method.name} {target}`, e.g.
//!   `tools/call add`), whose context goes to the server as `traceparent`/`tracestate` in
//!   `params._meta`, in both eras and over every transport;
//! - the MCP server: one SERVER span per request, the child of the context it finds in
//!   `params._meta` (a new trace without one);
//! - the harness: one INTERNAL `execute_tool {tool}` span per call, under the caller's
//!   context ([`crate::harness::CallSettings::trace_parent`]), parent of the client span of
//!   a remote tool's request.
//!
//! Attributes: `mcp.method.name`, `mcp.protocol.version`, `mcp.session.id` (handshake-era
//! HTTP sessions), `jsonrpc.request.id`, `gen_ai.tool.name`, `gen_ai.operation.name`
//! (`execute_tool`), `network.transport`, `error.type` (the JSON-RPC code; `tool_error` for a
//! result with `isError`; the harness's status word, e.g. `BUSY`, `BUDGET`, for its
//! refusals). Never arguments, results, or anything secret.
//!
//! The exporter ([`OtlpExporter`]) is a bounded queue (2,048 spans by default) drained by
//! one background thread that posts OTLP/HTTP batches with ureq; a span that finds the
//! queue full is dropped and counted, never waited for. What is queued is flushed when the
//! process exits (at most 5 s) and on [`flush`].

mod context;
#[cfg(feature = "otel")]
mod export;
pub mod otlp;
mod span;

use std::cell::RefCell;
use std::sync::OnceLock;
use std::time::Duration;

pub use context::SpanContext;
#[cfg(feature = "otel")]
pub use export::{config_from_env, OtlpConfig, OtlpExporter, Protocol};
pub use span::{
    AttributeValue, Span, SpanData, SpanKind, SpanSink, SpanStatus, Tracer, MAX_ATTRIBUTES,
    MAX_NAME_BYTES, MAX_VALUE_BYTES,
};

/// The `_meta` key of the W3C `traceparent` (unprefixed, by the MCP specification's
/// exception for trace context).
pub const TRACEPARENT: &str = "traceparent";
/// The `_meta` key of the W3C `tracestate`.
pub const TRACESTATE: &str = "tracestate";

/// The longest a flush at process exit waits for the collector.
pub const EXIT_FLUSH: Duration = Duration::from_secs(5);

static GLOBAL: OnceLock<Option<Tracer>> = OnceLock::new();

/// The process's tracer: the one [`install`]ed, else the one the environment configures
/// (made on the first call), else none.
#[inline]
pub fn tracer() -> Option<&'static Tracer> {
    GLOBAL.get_or_init(from_env).as_ref()
}

/// Makes `tracer` the process's, before anything records. Its queue is flushed at process
/// exit.
///
/// # Errors
///
/// `tracer` back when the process's tracer is already decided (installed, or made from the
/// environment by a span recorded earlier).
pub fn install(tracer: Tracer) -> Result<(), Tracer> {
    let mut offered = Some(tracer);
    GLOBAL.get_or_init(|| offered.take());
    match offered {
        None => {
            crate::sys::at_exit(flush_at_exit);
            Ok(())
        }
        Some(tracer) => Err(tracer),
    }
}

/// Sends what the process's tracer has queued, waiting at most `timeout`; true when all of it
/// went (or there is no tracer). The `toolwire` command calls it before it exits.
pub fn flush(timeout: Duration) -> bool {
    match GLOBAL.get() {
        Some(Some(tracer)) => tracer.flush(timeout),
        _ => true,
    }
}

extern "C" fn flush_at_exit() {
    flush(EXIT_FLUSH);
}

#[cfg(feature = "otel")]
fn from_env() -> Option<Tracer> {
    let config = config_from_env()?;
    match OtlpExporter::start(config) {
        Ok(exporter) => {
            crate::sys::at_exit(flush_at_exit);
            Some(Tracer::new(exporter))
        }
        Err(error) => {
            log::warn!("toolwire: no trace exporter: {error}");
            None
        }
    }
}

#[cfg(not(feature = "otel"))]
fn from_env() -> Option<Tracer> {
    if std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
        || std::env::var_os("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
    {
        log::warn!("toolwire: built without the `otel` feature: OTEL_* is ignored");
    }
    None
}

thread_local! {
    static CURRENT: RefCell<Option<SpanContext>> = const { RefCell::new(None) };
}

/// The context spans started on this thread are children of (set by [`enter`]), if any.
pub fn current() -> Option<SpanContext> {
    CURRENT.with(|current| current.borrow().clone())
}

/// Makes `context` the parent of what this thread records until the guard is dropped
/// (nested guards restore the outer context).
pub fn enter(context: Option<SpanContext>) -> Entered {
    let previous = CURRENT.with(|current| current.replace(context));
    Entered { previous }
}

/// The guard of [`enter`].
#[derive(Debug)]
pub struct Entered {
    previous: Option<SpanContext>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
    }
}

/// Reads the trace context in a request's `params._meta` (`traceparent` and `tracestate`),
/// strictly: anything malformed is no context.
pub fn from_meta(params: Option<&serde_json::Value>) -> Option<SpanContext> {
    let meta = params?.get("_meta")?;
    let parent = meta.get(TRACEPARENT)?.as_str()?;
    SpanContext::from_headers(parent, meta.get(TRACESTATE).and_then(|s| s.as_str()))
}

/// Writes `context` into `params._meta` as `traceparent` (and `tracestate`), replacing what
/// was there; params that are not an object (or absent) get one.
pub fn to_meta(params: &mut serde_json::Value, context: &SpanContext) {
    use serde_json::{Map, Value};
    if !params.is_object() {
        if !params.is_null() {
            return;
        }
        *params = Value::Object(Map::new());
    }
    let Some(object) = params.as_object_mut() else {
        return;
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(TRACEPARENT.into(), context.traceparent().into());
        match context.tracestate() {
            Some(state) => meta.insert(TRACESTATE.into(), state.into()),
            None => meta.remove(TRACESTATE),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn meta_carries_the_context_both_ways() {
        let context = SpanContext::from_headers(PARENT, Some("v=1")).unwrap();
        let mut params =
            json!({"name": "add", "_meta": {"progressToken": 3, "tracestate": "old=1"}});
        to_meta(&mut params, &context);
        assert_eq!(params["_meta"]["progressToken"], 3);
        assert_eq!(params["_meta"]["traceparent"], PARENT);
        assert_eq!(params["_meta"]["tracestate"], "v=1");
        assert_eq!(from_meta(Some(&params)), Some(context.clone()));
        // Absent params become an object; params that are not an object are left alone.
        let mut absent = serde_json::Value::Null;
        to_meta(&mut absent, &context);
        assert_eq!(absent["_meta"]["traceparent"], PARENT);
        let mut list = json!([1]);
        to_meta(&mut list, &context);
        assert_eq!(list, json!([1]));
        // Without a tracestate, a stale one is removed.
        let bare = SpanContext::from_headers(PARENT, None).unwrap();
        to_meta(&mut params, &bare);
        assert!(params["_meta"].get("tracestate").is_none());
    }

    #[test]
    fn hostile_meta_is_no_context() {
        for params in [
            json!(null),
            json!({"_meta": "x"}),
            json!({"_meta": {"traceparent": 7}}),
            json!({"_meta": {"traceparent": PARENT.to_uppercase()}}),
            json!({"_meta": {"traceparent": format!("{PARENT}{}", " ".repeat(1 << 16))}}),
            json!({"_meta": {"TRACEPARENT": PARENT}}),
        ] {
            assert_eq!(from_meta(Some(&params)), None, "{params}");
        }
        assert_eq!(from_meta(None), None);
        // A tracestate that is not a string is ignored, the parent kept.
        let params = json!({"_meta": {"traceparent": PARENT, "tracestate": {"a": 1}}});
        let context = from_meta(Some(&params)).unwrap();
        assert_eq!(context.tracestate(), None);
    }

    #[test]
    fn enter_nests_and_restores() {
        let outer = SpanContext::from_headers(PARENT, None).unwrap();
        assert_eq!(current(), None);
        {
            let _outer = enter(Some(outer.clone()));
            assert_eq!(current(), Some(outer.clone()));
            {
                let _inner = enter(None);
                assert_eq!(current(), None);
            }
            assert_eq!(current(), Some(outer));
        }
        assert_eq!(current(), None);
    }
}
