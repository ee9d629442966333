//! The server's side of [`crate::metrics`]: a request's answer, whoever gives it (its handler,
//! a refusal, its deadline), is timed from the request's arrival by a link that wraps the
//! connection's own, made only when the server has a recorder.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

use super::context::Link;
use super::Shared;
use crate::client::CallHandle;
use crate::error::Result;
use crate::mcp::methods;
use crate::metrics::{Metrics, OTHER};
use crate::wire::{RequestId, Response};

/// The MCP requests a server may route: with the catalog's own methods, the only values the
/// `mcp_method_name` label takes besides `_OTHER`.
const REQUESTS: [&str; 21] = [
    methods::INITIALIZE,
    methods::SERVER_DISCOVER,
    methods::PING,
    methods::TOOLS_LIST,
    methods::TOOLS_CALL,
    methods::RESOURCES_LIST,
    methods::RESOURCES_TEMPLATES_LIST,
    methods::RESOURCES_READ,
    methods::RESOURCES_SUBSCRIBE,
    methods::RESOURCES_UNSUBSCRIBE,
    methods::RESOURCES_DIRECTORY_READ,
    methods::PROMPTS_LIST,
    methods::PROMPTS_GET,
    methods::COMPLETION_COMPLETE,
    methods::LOGGING_SET_LEVEL,
    methods::TASKS_GET,
    methods::TASKS_RESULT,
    methods::TASKS_CANCEL,
    methods::TASKS_LIST,
    methods::SKILLS_LIST,
    methods::SKILLS_GET,
];

/// `method` when the server routes it (a request of [`REQUESTS`] or of the catalog), else
/// `_OTHER`: the bounded name metrics and spans record.
pub(crate) fn bounded_method(server: &Shared, method: &str) -> String {
    let catalog = server.catalog.read();
    if REQUESTS.contains(&method) || catalog.methods.contains_key(method) {
        method.to_owned()
    } else {
        OTHER.to_owned()
    }
}

/// What is known of a request when it arrives, its method label already bounded.
struct Measure {
    metrics: Metrics,
    method: String,
    /// The tool a `tools/call` names, as the client wrote it: a label only if the catalog
    /// has it when the answer is recorded (a gateway's backend may join while its call waits).
    named: Option<String>,
    server: Weak<Shared>,
    started: Instant,
}

/// A link that records the request's answer, once, then passes everything on.
struct Metered {
    inner: Arc<dyn Link>,
    measure: Mutex<Option<Measure>>,
}

/// Wraps `link` so the answer to `method` (with `params`) is recorded, when `server` has a
/// recorder; otherwise `link` itself.
pub(crate) fn wrap(
    server: &Arc<Shared>,
    method: &str,
    params: Option<&Value>,
    link: Arc<dyn Link>,
) -> Arc<dyn Link> {
    let Some(metrics) = &server.config.metrics else {
        return link;
    };
    let method = bounded_method(server, method);
    let named = (method == methods::TOOLS_CALL)
        .then(|| params?.get("name")?.as_str())
        .flatten()
        .map(str::to_owned);
    Arc::new(Metered {
        inner: link,
        measure: Mutex::new(Some(Measure {
            metrics: metrics.clone(),
            method,
            named,
            server: Arc::downgrade(server),
            started: Instant::now(),
        })),
    })
}

/// The conventions' `error.type` of an answer: the JSON-RPC code as a string, `tool_error`
/// for a result with `isError`, none for a success.
fn error_type(response: &Response) -> Option<String> {
    match &response.payload {
        Err(error) => Some(error.code.0.to_string()),
        Ok(result) if result.get("isError").and_then(Value::as_bool) == Some(true) => {
            Some("tool_error".to_owned())
        }
        Ok(_) => None,
    }
}

impl Link for Metered {
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
        if let Some(measure) = self.measure.lock().take() {
            // Only a tool the catalog has names a series: a name a client made up is not a
            // label.
            let tool = measure.named.as_deref().filter(|name| {
                measure
                    .server
                    .upgrade()
                    .is_some_and(|server| server.catalog.read().tools.get(name).is_some())
            });
            measure.metrics.server_operation(
                &measure.method,
                tool,
                error_type(&response).as_deref(),
                measure.started.elapsed(),
            );
        }
        self.inner.respond(response, status);
    }

    fn respond_batch(&self, responses: Vec<Response>) {
        self.inner.respond_batch(responses);
    }
}
