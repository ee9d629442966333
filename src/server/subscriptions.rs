//! 2026-07-28's `subscriptions/listen`: a long-lived request whose stream carries the
//! notifications a client opted in to (list changes, resource updates), each tagged with the
//! subscription's id, after an acknowledgement that comes first. The request is deferred
//! (it holds no worker) and ends when the client cancels it or closes its stream, or when
//! its bound (an hour) passes.

use std::collections::BTreeSet;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::context::{Call, Link, RequestContext, Responder, WAITING};
use super::types::HandlerError;
use super::{Shared, LOG_TARGET};
use crate::wire::RequestId;

/// Opens a subscription.
pub(crate) const LISTEN: &str = "subscriptions/listen";
/// The first notification of a subscription.
pub(crate) const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// The `_meta` key tagging a subscription's notifications with its id.
pub(crate) const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// What a subscription receives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    resource_uris: BTreeSet<String>,
}

impl Filter {
    /// The client's `notifications` object, cut to what this server can send.
    fn read(requested: &Value, offers: (bool, bool, bool)) -> Filter {
        let flag = |key: &str| requested.get(key).and_then(Value::as_bool) == Some(true);
        let (tools, prompts, resources) = offers;
        Filter {
            tools: tools && flag("toolsListChanged"),
            prompts: prompts && flag("promptsListChanged"),
            resources: resources && flag("resourcesListChanged"),
            resource_uris: if resources {
                requested
                    .get("resourceSubscriptions")
                    .and_then(Value::as_array)
                    .map(|uris| {
                        uris.iter()
                            .filter_map(Value::as_str)
                            .take(1024)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default()
            } else {
                BTreeSet::new()
            },
        }
    }

    fn to_value(&self) -> Value {
        let mut object = Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if on {
                object.insert(key.into(), Value::Bool(true));
            }
        }
        if !self.resource_uris.is_empty() {
            object.insert("resourceSubscriptions".into(), json!(self.resource_uris));
        }
        Value::Object(object)
    }

    fn wants(&self, method: &str, params: &Value) -> bool {
        match method {
            "notifications/tools/list_changed" => self.tools,
            "notifications/prompts/list_changed" => self.prompts,
            "notifications/resources/list_changed" => self.resources,
            "notifications/resources/updated" => params
                .get("uri")
                .and_then(Value::as_str)
                .is_some_and(|uri| self.resource_uris.contains(uri)),
            _ => false,
        }
    }
}

/// One open subscription.
pub(crate) struct Listener {
    id: RequestId,
    filter: Filter,
    link: Arc<dyn Link>,
    call: Arc<Call>,
    /// Keeps the deferred request until the subscription ends.
    responder: Mutex<Option<Responder>>,
}

/// The subscriptions of a server.
#[derive(Default)]
pub(crate) struct Listeners {
    open: Mutex<Vec<Arc<Listener>>>,
}

impl Listeners {
    /// Sends a notification to every subscription that asked for it.
    pub(crate) fn broadcast(&self, method: &str, params: &Value) {
        let open: Vec<Arc<Listener>> = {
            let mut open = self.open.lock();
            open.retain(|listener| listener.call.state() == WAITING);
            open.clone()
        };
        for listener in open {
            if !listener.filter.wants(method, params) {
                continue;
            }
            let mut tagged = match params {
                Value::Object(object) => object.clone(),
                _ => Map::new(),
            };
            let meta = tagged
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert(META_SUBSCRIPTION_ID.into(), listener.id.to_value());
            }
            if let Err(error) =
                listener
                    .link
                    .notify(Some(&listener.id), method, Value::Object(tagged))
            {
                log::debug!(target: LOG_TARGET, "{method} was not sent to subscription {}: {error}", listener.id);
            }
        }
    }

    /// The subscription of `call` ended (cancelled, its stream closed, its connection gone).
    pub(crate) fn forget(&self, call: &Arc<Call>) {
        let ended: Vec<Arc<Listener>> = {
            let mut open = self.open.lock();
            let (ended, kept) = open
                .drain(..)
                .partition(|listener| Arc::ptr_eq(&listener.call, call));
            *open = kept;
            ended
        };
        for listener in ended {
            // The responder goes, and with it the connection it kept.
            drop(listener.responder.lock().take());
        }
    }
}

/// Answers `subscriptions/listen`: the acknowledgement first, then the subscription stays
/// open (deferred) for the notifications it asked for.
pub(crate) fn listen(
    server: &Arc<Shared>,
    context: &RequestContext,
    params: &Value,
) -> Result<Value, HandlerError> {
    let requested = params
        .get("notifications")
        .filter(|value| value.is_object())
        .ok_or_else(|| HandlerError::invalid_params("params.notifications must be an object"))?;
    let offers = {
        let catalog = server.catalog.read();
        (
            catalog.offers_tools(),
            catalog.offers_prompts(),
            catalog.has_resources(),
        )
    };
    let filter = Filter::read(requested, offers);
    let ack = json!({
        "notifications": filter.to_value(),
        "_meta": {META_SUBSCRIPTION_ID: context.id().to_value()},
    });
    context
        .notify(ACKNOWLEDGED, ack)
        .map_err(|error| HandlerError::internal(error.to_string()))?;
    let listener = Arc::new(Listener {
        id: context.id().clone(),
        filter,
        link: Arc::clone(&context.link),
        call: Arc::clone(&context.call),
        responder: Mutex::new(Some(context.defer())),
    });
    server.listeners.open.lock().push(listener);
    Ok(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_keeps_only_what_was_asked_and_is_offered() {
        let filter = Filter::read(
            &json!({"toolsListChanged": true, "promptsListChanged": true,
                    "resourceSubscriptions": ["test://a"]}),
            (true, false, true),
        );
        assert_eq!(
            filter.to_value(),
            json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]})
        );
        assert!(filter.wants("notifications/tools/list_changed", &Value::Null));
        assert!(!filter.wants("notifications/prompts/list_changed", &Value::Null));
        assert!(filter.wants(
            "notifications/resources/updated",
            &json!({"uri": "test://a"})
        ));
        assert!(!filter.wants(
            "notifications/resources/updated",
            &json!({"uri": "test://b"})
        ));
        assert!(!filter.wants("notifications/message", &Value::Null));
    }
}
