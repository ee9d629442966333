//! The 2026-07-28 protocol's envelope: each request's `_meta` read and checked in the order
//! the revision requires, results stamped (`resultType`, caching hints, the server's
//! identity), input rounds answered with a signed `requestState`, and errors given the HTTP
//! status a stateless exchange carries.

use serde_json::{json, Map, Value};

use super::auth::Caller;
use super::conn::Envelope;
use super::dispatch::Rejection;
use super::state;
use super::types::{
    HandlerError, InputRequired, LogLevel, HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION,
};
use super::Shared;
use crate::mcp::{
    headers, methods, Implementation, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
};
use crate::wire::{ErrorCode, ErrorObject, RequestId, Response};

/// The `_meta` key of the server's identity in 2026-07-28 results.
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// What a 2026-07-28 request said about itself in its `_meta`.
#[derive(Debug, Clone)]
pub(crate) struct StatelessMeta {
    pub(crate) version: String,
    pub(crate) capabilities: Value,
    pub(crate) client_info: Option<Implementation>,
    pub(crate) log_level: Option<LogLevel>,
}

/// True when the params carry a protocol version in `_meta`: a 2026-07-28 request.
pub(crate) fn has_protocol_meta(params: &Option<Value>) -> bool {
    params
        .as_ref()
        .and_then(|params| params.get("_meta"))
        .and_then(|meta| meta.get(META_PROTOCOL_VERSION))
        .is_some()
}

fn reject(code: ErrorCode, message: impl Into<String>) -> Rejection {
    Rejection {
        error: ErrorObject::new(code, message),
        status: 400,
    }
}

/// Reads and checks a 2026-07-28 request's envelope, in the revision's order: the version
/// header (HTTP), the required `_meta` keys, header against `_meta`, the version itself.
pub(crate) fn check_meta(
    server: &Shared,
    method: &str,
    params: &Option<Value>,
    envelope: &Envelope,
) -> Result<StatelessMeta, Rejection> {
    if envelope.http && envelope.protocol_header.is_none() {
        return Err(reject(
            HEADER_MISMATCH,
            "the MCP-Protocol-Version header is required",
        ));
    }
    let meta = params
        .as_ref()
        .and_then(|params| params.get("_meta"))
        .and_then(Value::as_object)
        .ok_or_else(|| {
            reject(
                ErrorCode::INVALID_PARAMS,
                "params._meta is required: it must carry the protocol version and the client capabilities",
            )
        })?;
    let version = match meta.get(META_PROTOCOL_VERSION) {
        Some(Value::String(version)) => version.clone(),
        Some(_) => {
            return Err(reject(
                ErrorCode::INVALID_PARAMS,
                format!("_meta[\"{META_PROTOCOL_VERSION}\"] must be a string"),
            ))
        }
        None => {
            return Err(reject(
                ErrorCode::INVALID_PARAMS,
                format!("_meta[\"{META_PROTOCOL_VERSION}\"] is required"),
            ))
        }
    };
    let capabilities = match meta.get(META_CLIENT_CAPABILITIES) {
        Some(capabilities @ Value::Object(_)) => capabilities.clone(),
        Some(_) => {
            return Err(reject(
                ErrorCode::INVALID_PARAMS,
                format!("_meta[\"{META_CLIENT_CAPABILITIES}\"] must be an object"),
            ))
        }
        None => {
            return Err(reject(
                ErrorCode::INVALID_PARAMS,
                format!("_meta[\"{META_CLIENT_CAPABILITIES}\"] is required"),
            ))
        }
    };
    if let Some(header) = &envelope.protocol_header {
        if header != &version {
            return Err(reject(
                HEADER_MISMATCH,
                format!(
                    "the MCP-Protocol-Version header ({header:?}) does not match the request's \
                     _meta protocol version ({version:?})"
                ),
            ));
        }
    }
    if envelope.http {
        check_routing_headers(method, params, envelope)?;
        if method == methods::TOOLS_CALL {
            check_param_headers(server, params, envelope)?;
        }
    }
    let supported = server.config.stateless_versions();
    if !supported.contains(&version.as_str()) {
        return Err(Rejection {
            error: ErrorObject::new(
                UNSUPPORTED_VERSION,
                format!("protocol version {version:?} is not supported"),
            )
            .with_data(json!({"supported": supported, "requested": version})),
            status: 400,
        });
    }
    let client_info = meta.get(META_CLIENT_INFO).and_then(|info| {
        Some(Implementation {
            name: info.get("name")?.as_str()?.to_owned(),
            version: info
                .get("version")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            title: info.get("title").and_then(Value::as_str).map(str::to_owned),
        })
    });
    let log_level = meta
        .get(META_LOG_LEVEL)
        .and_then(Value::as_str)
        .and_then(LogLevel::parse);
    Ok(StatelessMeta {
        version,
        capabilities,
        client_info,
        log_level,
    })
}

/// `Mcp-Method` must name the body's method and, for the methods that target something,
/// `Mcp-Name` its target (the values compared as sent, after the surrounding whitespace;
/// `=?base64?…?=` is decoded first): a proxy routes by them, so a body that says otherwise
/// is refused.
fn check_routing_headers(
    method: &str,
    params: &Option<Value>,
    envelope: &Envelope,
) -> Result<(), Rejection> {
    match envelope.method_header.as_deref() {
        None => {
            return Err(reject(HEADER_MISMATCH, "the Mcp-Method header is required"));
        }
        Some(header) if header != method => {
            return Err(reject(
                HEADER_MISMATCH,
                format!("the Mcp-Method header ({header:?}) does not match the request's method ({method:?})"),
            ))
        }
        Some(_) => {}
    }
    let Some(key) = methods::target_param(method) else {
        return Ok(());
    };
    let Some(target) = params
        .as_ref()
        .and_then(|params| params.get(key))
        .and_then(Value::as_str)
    else {
        return Ok(());
    };
    let header = envelope.name_header.as_deref().map(decode_header_value);
    match header {
        None => Err(reject(HEADER_MISMATCH, "the Mcp-Name header is required")),
        Some(Some(name)) if name == target => Ok(()),
        Some(_) => Err(reject(
            HEADER_MISMATCH,
            format!("the Mcp-Name header does not match the request's {key} ({target:?})"),
        )),
    }
}

/// SEP-2243: each parameter the called tool designates with `x-mcp-header` is mirrored in its
/// `Mcp-Param-{name}` header (`=?base64?…?=` decoded first), since an intermediary may have
/// routed by it. A header that is missing while the arguments hold the value, that does not
/// decode, or that says something else (or is sent for a value the arguments do not hold) is
/// refused with -32020. A value without both the prefix and the suffix is literal text. An
/// unknown tool is left to the call itself.
fn check_param_headers(
    server: &Shared,
    params: &Option<Value>,
    envelope: &Envelope,
) -> Result<(), Rejection> {
    let Some(params) = params else {
        return Ok(());
    };
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Ok(());
    };
    let designations = match server.catalog.read().tools.get(name) {
        Some(entry) => entry.param_headers(),
        None => return Ok(()),
    };
    if designations.is_empty() {
        return Ok(());
    }
    let arguments = params.get("arguments").unwrap_or(&Value::Null);
    let body = headers::values(&designations, arguments);
    for designation in designations.iter() {
        let header = format!("Mcp-Param-{}", designation.name);
        let at = designation.path.join(".");
        let lower = designation.name.to_ascii_lowercase();
        let sent = envelope
            .param_headers
            .iter()
            .find(|(name, _)| *name == lower)
            .map(|(_, value)| value.as_str());
        let expected = body
            .iter()
            .find(|(name, _)| *name == designation.name)
            .map(|(_, text)| text.as_str());
        match (sent, expected) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(reject(
                    HEADER_MISMATCH,
                    format!("the {header} header is required: the arguments hold `{at}`"),
                ))
            }
            (Some(sent), expected) => match decode_header_value(sent) {
                None => {
                    return Err(reject(
                        HEADER_MISMATCH,
                        format!("the {header} header is not valid base64 in =?base64?…?="),
                    ))
                }
                Some(decoded) if Some(decoded.as_str()) == expected => {}
                Some(_) => {
                    return Err(reject(
                        HEADER_MISMATCH,
                        format!("the {header} header does not match the argument `{at}`"),
                    ))
                }
            },
        }
    }
    Ok(())
}

/// A header value as sent, or decoded from `=?base64?…?=`; `None` for a bad encoding.
pub(crate) fn decode_header_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(super::state::decode_standard(encoded)?).ok(),
        None => Some(value.to_owned()),
    }
}

/// The methods the 2026-07-28 protocol removed; a request for one is -32601.
pub(crate) fn removed(method: &str) -> bool {
    matches!(
        method,
        methods::INITIALIZE
            | methods::PING
            | methods::LOGGING_SET_LEVEL
            | methods::RESOURCES_SUBSCRIBE
            | methods::RESOURCES_UNSUBSCRIBE
    )
}

/// The caching scope of a method's result, for the six the revision gives hints.
fn cache_scope(method: &str) -> Option<&'static str> {
    match method {
        methods::TOOLS_LIST
        | methods::PROMPTS_LIST
        | methods::RESOURCES_LIST
        | methods::RESOURCES_TEMPLATES_LIST
        | methods::SKILLS_LIST
        | methods::SKILLS_GET
        | methods::RESOURCES_DIRECTORY_READ => Some("public"),
        methods::RESOURCES_READ | methods::SERVER_DISCOVER => Some("private"),
        _ => None,
    }
}

fn server_meta(server: &Shared) -> Value {
    json!({META_SERVER_INFO: server.server_info()})
}

/// Stamps a complete 2026-07-28 result.
pub(crate) fn stamp(server: &Shared, method: &str, result: Value) -> Value {
    let Value::Object(mut object) = result else {
        return result;
    };
    object
        .entry("resultType")
        .or_insert_with(|| Value::from("complete"));
    if let Some(scope) = cache_scope(method) {
        let ttl = if method == methods::SERVER_DISCOVER {
            0
        } else {
            server.config.list_ttl.as_millis() as u64
        };
        object.entry("ttlMs").or_insert_with(|| Value::from(ttl));
        object
            .entry("cacheScope")
            .or_insert_with(|| Value::from(scope));
    }
    merge_meta(&mut object, server);
    Value::Object(object)
}

fn merge_meta(object: &mut Map<String, Value>, server: &Shared) {
    match object.get_mut("_meta") {
        Some(Value::Object(meta)) => {
            meta.entry(META_SERVER_INFO)
                .or_insert_with(|| server.server_info());
        }
        _ => {
            object.insert("_meta".into(), server_meta(server));
        }
    }
}

/// The HTTP status of a 2026-07-28 error: the envelope's errors are 400, an unknown method
/// 404, anything else (a handler's own error) travels in a 200.
pub(crate) fn status_of(code: ErrorCode) -> u16 {
    match code {
        ErrorCode::METHOD_NOT_FOUND => 404,
        HEADER_MISMATCH | MISSING_CAPABILITY | UNSUPPORTED_VERSION => 400,
        _ => 200,
    }
}

/// The methods that may answer with an `InputRequiredResult`.
fn may_ask_for_input(method: &str) -> bool {
    matches!(
        method,
        methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ
    )
}

/// The response to a request whose handler finished, and its HTTP status.
pub(crate) fn answer(
    server: &Shared,
    id: &RequestId,
    method: &str,
    target: Option<&str>,
    caller: Option<&Caller>,
    stateless: Option<&Value>,
    outcome: Result<Value, HandlerError>,
) -> (Response, u16) {
    let Some(capabilities) = stateless else {
        return match outcome {
            Ok(result) => (Response::ok(id.clone(), result), 200),
            Err(HandlerError::Rpc(error)) => (Response::error(Some(id.clone()), error), 200),
            Err(HandlerError::InputRequired(_)) => (
                Response::error(
                    Some(id.clone()),
                    ErrorObject::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!(
                            "`{method}` asked for input in a round, which only the {} protocol has",
                            crate::mcp::STATELESS_VERSION
                        ),
                    ),
                ),
                200,
            ),
        };
    };
    match outcome {
        Ok(result) => (Response::ok(id.clone(), stamp(server, method, result)), 200),
        Err(HandlerError::Rpc(error)) => {
            let status = status_of(error.code);
            (Response::error(Some(id.clone()), error), status)
        }
        Err(HandlerError::InputRequired(input)) => {
            match input_required(server, method, target, caller, capabilities, input) {
                Ok(result) => (Response::ok(id.clone(), result), 200),
                Err(error) => {
                    let status = status_of(error.code);
                    (Response::error(Some(id.clone()), error), status)
                }
            }
        }
    }
}

/// An `InputRequiredResult`: the requests, each for a capability the client declared, and
/// the handler's state signed.
fn input_required(
    server: &Shared,
    method: &str,
    target: Option<&str>,
    caller: Option<&Caller>,
    capabilities: &Value,
    input: InputRequired,
) -> Result<Value, ErrorObject> {
    if !may_ask_for_input(method) {
        return Err(ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            format!("`{method}` cannot ask for input; only tools/call, prompts/get and resources/read can"),
        ));
    }
    if input.requests.is_empty() && input.state.is_none() {
        return Err(ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            "the handler asked for input without saying for what",
        ));
    }
    for capability in input.capabilities_needed() {
        if capabilities.get(capability).is_none_or(Value::is_null) {
            return Err(ErrorObject::new(
                MISSING_CAPABILITY,
                format!(
                    "this request needs the client capability `{capability}`, which the client did not declare"
                ),
            )
            .with_data(json!({"requiredCapabilities": {capability: {}}})));
        }
    }
    let mut object = Map::new();
    object.insert("resultType".into(), Value::from("input_required"));
    if !input.requests.is_empty() {
        object.insert("inputRequests".into(), Value::Object(input.requests));
    }
    if let Some(state) = &input.state {
        let token = state::sign(
            server.config.keys(),
            method,
            target.unwrap_or_default(),
            caller,
            state,
            server.config.input_state_ttl,
        );
        object.insert("requestState".into(), Value::from(token));
    }
    merge_meta(&mut object, server);
    Ok(Value::Object(object))
}

/// The `server/discover` result, before stamping.
pub(crate) fn discover(server: &Shared) -> Value {
    let mut object = Map::new();
    object.insert(
        "supportedVersions".into(),
        json!(server.config.stateless_versions()),
    );
    object.insert(
        "capabilities".into(),
        server.capabilities(crate::mcp::Era::Stateless),
    );
    if let Some(instructions) = &server.config.instructions {
        object.insert("instructions".into(), Value::from(instructions.clone()));
    }
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_revision() {
        assert_eq!(status_of(ErrorCode::METHOD_NOT_FOUND), 404);
        assert_eq!(status_of(MISSING_CAPABILITY), 400);
        assert_eq!(status_of(ErrorCode::INVALID_PARAMS), 200);
    }

    #[test]
    fn only_requests_with_a_version_in_meta_are_stateless() {
        assert!(has_protocol_meta(&Some(
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}})
        )));
        assert!(!has_protocol_meta(&Some(
            json!({"_meta": {"progressToken": 1}})
        )));
        assert!(!has_protocol_meta(&None));
    }
}
