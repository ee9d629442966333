//! 2026-07-28 input rounds through the gateway, for a 2026-07-28 front client.
//!
//! A backend's `input_required` result (a `tools/call`, `prompts/get` or `resources/read`
//! that asks its client for input) is not answered by the gateway: its `inputRequests` go to
//! the front client as they came, and the backend's `requestState` rides inside the
//! gateway's own signed state (the front server signs it, bound to the method and the front
//! name, and checks it on the retry, so a client can neither change it nor move it to
//! another request). The retry's `inputResponses` and the backend's `requestState` go back
//! to the backend that asked, untouched. A handshake-era front client's calls are not
//! touched here: the backend's client answers the rounds with its handlers, which ask the
//! front client with ordinary requests (`backend.rs`).
//!
//! An input round and its retry are one call: the retry spends no budget, and every round's
//! audit lines carry one `call_id` (`round N`).

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Map, Value};

use crate::client::CallOptions;
use crate::mcp::{Era, McpClient, META_CLIENT_CAPABILITIES};
use crate::server::{HandlerError, InputRequired, RequestContext};
use crate::wire::{ErrorCode, ErrorObject};

/// The numbers of the calls that passed rounds (their audit `call_id`s).
static NEXT_ROUND_CALL: AtomicU64 = AtomicU64::new(1);

/// What a front request adds to the backend request that serves it.
pub(super) struct Round {
    /// The retry's fields for the backend: `inputResponses`, `requestState`.
    pub(super) fields: Map<String, Value>,
    /// The audit `call_id` of the call the rounds belong to.
    pub(super) call_id: String,
    /// The retry of a round the gateway passed on (counted with its first round).
    pub(super) continuing: bool,
}

/// The round of a front request for `server`: `None` for a handshake-era front client
/// (whose backends' rounds are answered by asking it), else the fields to add.
///
/// # Errors
///
/// -32602 when the retry's state was given for another server.
pub(super) fn round_of(
    context: &RequestContext,
    server: &str,
) -> Result<Option<Round>, HandlerError> {
    if context.era() != Era::Stateless {
        return Ok(None);
    }
    let mut fields = Map::new();
    // The backend asks for what the front client declared, which answers its rounds.
    fields.insert(
        "_meta".into(),
        json!({ META_CLIENT_CAPABILITIES: context.client_capabilities() }),
    );
    if let Some(responses) = context.input_responses() {
        fields.insert("inputResponses".into(), Value::Object(responses.clone()));
    }
    let Some(state) = context.request_state() else {
        let number = NEXT_ROUND_CALL.fetch_add(1, Ordering::Relaxed);
        return Ok(Some(Round {
            fields,
            call_id: format!("round {number}"),
            continuing: false,
        }));
    };
    // The gateway's own state, signed by the front server and checked before this runs.
    let (Some(owner), Some(call_id)) = (
        state.get("server").and_then(Value::as_str),
        state.get("call").and_then(Value::as_str),
    ) else {
        return Err(invalid("requestState is not one the gateway gave"));
    };
    if owner != server {
        return Err(invalid(
            "requestState was given for a request to another server; start the request again",
        ));
    }
    if let Some(backend_state) = state.get("state").filter(|state| !state.is_null()) {
        fields.insert("requestState".into(), backend_state.clone());
    }
    Ok(Some(Round {
        fields,
        call_id: call_id.to_owned(),
        continuing: true,
    }))
}

/// A backend's `input_required` result as the front client's input round: its requests as
/// they came, the backend's state inside the gateway's.
pub(super) fn passed_on(server: &str, round: &Round, result: &Value) -> Option<InputRequired> {
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return None;
    }
    let requests = match result.get("inputRequests") {
        Some(Value::Object(requests)) => requests.clone(),
        _ => Map::new(),
    };
    Some(InputRequired {
        requests,
        state: Some(json!({
            "server": server,
            "call": round.call_id,
            "state": result.get("requestState").cloned().unwrap_or(Value::Null),
        })),
    })
}

/// Sends a `prompts/get` or `resources/read` of a front request to its backend: for a
/// 2026-07-28 front client with the retry's fields added and the backend's input round
/// handed back ([`passed_on`]); otherwise as [`McpClient::request`] sends it.
pub(super) fn request(
    client: &McpClient,
    server: &str,
    method: &str,
    params: Value,
    options: CallOptions,
    context: &RequestContext,
) -> Result<Value, RoundError> {
    let round = round_of(context, server).map_err(RoundError::Front)?;
    let Some(round) = round else {
        return client
            .request(method, params, options)
            .map_err(RoundError::Backend);
    };
    let params = match params {
        Value::Object(mut object) => {
            crate::mcp::merge_params(&mut object, round.fields.clone());
            Value::Object(object)
        }
        other => other,
    };
    let result = client
        .request_passing(method, params, options)
        .map_err(RoundError::Backend)?;
    match passed_on(server, &round, &result) {
        Some(input) => Err(RoundError::Front(HandlerError::InputRequired(input))),
        None => Ok(result),
    }
}

/// Why [`request`] gave no result.
pub(super) enum RoundError {
    /// The backend's failure.
    Backend(crate::Error),
    /// The answer for the front client (an input round, a refused retry).
    Front(HandlerError),
}

fn invalid(message: &str) -> HandlerError {
    HandlerError::Rpc(ErrorObject::new(ErrorCode::INVALID_PARAMS, message))
}
