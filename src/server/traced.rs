//! The server's side of [`crate::telemetry`]: a SERVER span for each request, the child of
//! the trace context the client put in `params._meta` (a new trace without one), ended when
//! the answer is sent, whoever sends it (the handler, a refusal, the deadline). Made only
//! when the process has a tracer.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

use super::context::Link;
use super::Shared;
use crate::client::CallHandle;
use crate::error::Result;
use crate::mcp::traced;
use crate::telemetry::{self, Span, SpanContext, SpanKind};
use crate::wire::{RequestId, Response};

/// A request's span while it is answered: its context (the parent of what the handler
/// records), and the `error.type` a handler may name for a refusal of its own.
pub(crate) struct Trace {
    context: SpanContext,
    span: Mutex<Option<Span>>,
    error_type: Mutex<Option<String>>,
}

impl Trace {
    pub(crate) fn context(&self) -> &SpanContext {
        &self.context
    }

    /// Sets an attribute of the span, while it is open.
    pub(crate) fn set(&self, key: &'static str, value: String) {
        if let Some(span) = self.span.lock().as_mut() {
            span.set(key, value);
        }
    }

    /// Names the `error.type` the span ends with, whatever the answer looks like (a refusal
    /// the client sees as a tool's error result, e.g. `BUSY`).
    pub(crate) fn set_error_type(&self, error_type: &str) {
        *self.error_type.lock() = Some(error_type.to_owned());
    }

    fn finish(&self, response: &Response) {
        let Some(mut span) = self.span.lock().take() else {
            return;
        };
        if let Some(error_type) = self.error_type.lock().take() {
            span.fail(error_type, "refused");
            return;
        }
        match &response.payload {
            Ok(result) => traced::finish(&mut span, Ok(result)),
            Err(error) => {
                let code = error.code.0.to_string();
                span.set(traced::STATUS_CODE, code.clone());
                span.fail(code, error.message.clone());
            }
        }
    }
}

/// A link that ends the request's span with its answer, then passes everything on.
struct Traced {
    inner: Arc<dyn Link>,
    trace: Arc<Trace>,
}

/// Opens the span of a request (`method`, with `params` and `id`) and wraps `link` to end it;
/// `link` itself and no span when the process has no tracer. The method is the span's name
/// only when the server routes it (else `_OTHER`), and the tool only when the catalog has
/// it: names a client made up are not recorded.
pub(crate) fn wrap(
    server: &Arc<Shared>,
    method: &str,
    params: Option<&Value>,
    id: &RequestId,
    link: Arc<dyn Link>,
) -> (Arc<dyn Link>, Option<Arc<Trace>>) {
    let Some(tracer) = telemetry::tracer() else {
        return (link, None);
    };
    let method = super::metered::bounded_method(server, method);
    let tool = traced::target(&method, params).filter(|name| {
        method != crate::mcp::methods::TOOLS_CALL || server.catalog.read().tools.get(name).is_some()
    });
    let parent = telemetry::from_meta(params);
    let mut span = traced::start(
        tracer,
        SpanKind::Server,
        &method,
        tool.as_deref(),
        parent.as_ref(),
    );
    span.set(traced::REQUEST_ID, traced::request_id(id));
    let trace = Arc::new(Trace {
        context: span.context().clone(),
        span: Mutex::new(Some(span)),
        error_type: Mutex::new(None),
    });
    let link = Arc::new(Traced {
        inner: link,
        trace: Arc::clone(&trace),
    });
    (link, Some(trace))
}

impl Link for Traced {
    fn notify(&self, related: Option<&RequestId>, method: &str, params: Value) -> Result<()> {
        self.inner.notify(related, method, params)
    }

    fn request(
        &self,
        related: &RequestId,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Option<Result<CallHandle>> {
        self.inner.request(related, method, params, timeout)
    }

    fn respond(&self, response: Response, status: u16) {
        self.trace.finish(&response);
        self.inner.respond(response, status);
    }

    fn respond_batch(&self, responses: Vec<Response>) {
        self.inner.respond_batch(responses);
    }
}
