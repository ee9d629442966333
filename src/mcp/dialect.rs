//! MCP's conventions above JSON-RPC, for the client: progress tokens in `_meta`,
//! `notifications/progress`, `notifications/cancelled`, and `ping`.

use serde_json::{json, Value};

use super::methods;
use crate::client::{Dialect, Progress};
use crate::error::{Error, Result};
use crate::wire::{self, ErrorObject, Notification, Request, RequestId};

/// MCP's dialect of JSON-RPC: a request asks for progress with `params._meta.progressToken`
/// (the request's id), reports come as `notifications/progress`, a request given up is
/// announced with `notifications/cancelled {requestId, reason}`, and `ping` is answered with
/// `{}` when no handler is set. [`crate::McpClient`] always uses it; give it to a plain
/// [`crate::Client`] that talks to an MCP peer directly.
#[derive(Debug, Clone, Copy, Default)]
pub struct McpDialect;

impl Dialect for McpDialect {
    fn name(&self) -> &'static str {
        "MCP"
    }

    fn attach_progress(&self, params: &mut Option<Value>, token: &RequestId) -> Result<()> {
        let object = params
            .get_or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| {
                Error::Config("progress needs params that are an object, not an array".into())
            })?;
        let meta = object.entry("_meta").or_insert_with(|| json!({}));
        let meta = meta
            .as_object_mut()
            .ok_or_else(|| Error::Config("params `_meta` must be an object".into()))?;
        meta.insert("progressToken".into(), token.to_value());
        Ok(())
    }

    fn read_progress(&self, notification: &Notification) -> Option<(RequestId, Progress)> {
        if notification.method != methods::PROGRESS {
            return None;
        }
        let params = wire::params_object(&notification.params)?;
        let token = RequestId::from_value(params.get("progressToken")?).ok()?;
        let progress = Progress {
            progress: params
                .get("progress")
                .and_then(Value::as_f64)
                .unwrap_or(0.0),
            total: params.get("total").and_then(Value::as_f64),
            message: params
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        Some((token, progress))
    }

    fn cancel_notice(&self, id: &RequestId, reason: &str) -> Option<Notification> {
        Some(Notification {
            method: methods::CANCELLED.into(),
            params: Some(json!({"requestId": id.to_value(), "reason": reason})),
        })
    }

    fn default_answer(&self, request: &Request) -> Option<std::result::Result<Value, ErrorObject>> {
        (request.method == methods::PING).then(|| Ok(json!({})))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_tokens_go_into_meta_and_come_back() {
        let mut params = Some(json!({"a": 1}));
        McpDialect
            .attach_progress(&mut params, &RequestId::Number(7))
            .unwrap();
        assert_eq!(params, Some(json!({"a": 1, "_meta": {"progressToken": 7}})));
        let mut array = Some(json!([1]));
        assert!(McpDialect
            .attach_progress(&mut array, &RequestId::Number(1))
            .is_err());
        let report = Notification {
            method: methods::PROGRESS.into(),
            params: Some(json!({"progressToken": "t", "progress": 2, "total": 4})),
        };
        let (token, progress) = McpDialect.read_progress(&report).unwrap();
        assert_eq!(token, RequestId::String("t".into()));
        assert_eq!(progress.total, Some(4.0));
        let other = Notification {
            method: "notifications/message".into(),
            params: None,
        };
        assert!(McpDialect.read_progress(&other).is_none());
    }
}
