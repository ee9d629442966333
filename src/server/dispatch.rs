//! Routing one request: its protocol era, its envelope's checks, and the work that answers
//! it (MCP's own methods here, tools in `tools.rs`, the user's methods from the catalog).

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::catalog::{CompletionRequest, Listing, ToolAccess, ToolEntry};
use super::conn::{Connection, Envelope, EraPolicy, TimeoutAnswer};
use super::context::{missing_capability, InputRound, Peer, RequestContext};
use super::state;
use super::stateless::{self, has_protocol_meta};
use super::tasks::{self, TaskSupport};
use super::tools;
use super::types::{HandlerError, LogLevel};
use crate::mcp::Era;
use crate::mcp::{methods, Implementation};
use crate::wire::{ErrorCode, ErrorObject, Request};

/// A request refused before any handler ran, with the HTTP status a stateless exchange
/// carries.
#[derive(Debug)]
pub(crate) struct Rejection {
    pub(crate) error: ErrorObject,
    pub(crate) status: u16,
}

impl Rejection {
    /// A refusal of the envelope: over 2026-07-28 HTTP a 404 (an unknown method) or a 400.
    fn new(code: ErrorCode, message: impl Into<String>, era: Era) -> Rejection {
        let error = ErrorObject::new(code, message);
        let status = match (era, code) {
            (Era::Handshake, _) => 200,
            (Era::Stateless, ErrorCode::METHOD_NOT_FOUND) => 404,
            (Era::Stateless, _) => 400,
        };
        Rejection { error, status }
    }

    /// A refusal of what the request asks (its params), answered with a 200 in either era.
    fn of_request(code: ErrorCode, message: impl Into<String>) -> Rejection {
        Rejection {
            error: ErrorObject::new(code, message),
            status: 200,
        }
    }
}

/// The message of a call refused for scopes its caller's token lacks.
pub(crate) fn insufficient_scope(scopes: &[String]) -> String {
    format!(
        "insufficient_scope: this tool needs the scope(s) {}; ask for a token that has them",
        scopes.join(" ")
    )
}

/// The work that answers a request, run inline or on a worker.
pub(crate) type Work = Box<dyn FnOnce(&RequestContext) -> Result<Value, HandlerError> + Send>;

/// A request checked and routed, ready to run.
pub(crate) struct Prepared {
    pub(crate) method: String,
    pub(crate) target: Option<String>,
    pub(crate) era: Era,
    /// The revision beside the era (see [`RequestContext::protocol_version`]).
    pub(crate) protocol_version: Option<String>,
    pub(crate) peer: Peer,
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) progress_token: Option<Value>,
    pub(crate) input: Option<InputRound>,
    pub(crate) work: Work,
    pub(crate) inline: bool,
    pub(crate) timeout: TimeoutAnswer,
    /// The client's capabilities when the request is a 2026-07-28 one.
    pub(crate) stateless: Option<Value>,
}

/// Where a request goes.
struct Route {
    work: Work,
    inline: bool,
    timeout: TimeoutAnswer,
    target: Option<String>,
}

pub(crate) fn prepare(
    conn: &Arc<Connection>,
    request: Request,
    envelope: &Envelope,
) -> Result<Prepared, Rejection> {
    let server = &conn.server;
    let Request { method, params, .. } = request;
    let era = match conn.policy {
        EraPolicy::Stateless => Era::Stateless,
        EraPolicy::Handshake => Era::Handshake,
        EraPolicy::Mixed
            if server.config.stateless
                && (has_protocol_meta(&params) || method == methods::SERVER_DISCOVER) =>
        {
            Era::Stateless
        }
        EraPolicy::Mixed => Era::Handshake,
    };
    let (protocol_version, peer, log_level) = if era == Era::Stateless {
        let meta = stateless::check_meta(server, &method, &params, envelope)?;
        if stateless::removed(&method) {
            return Err(Rejection::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "Method not found: {method} (the {} protocol has no such method)",
                    meta.version
                ),
                Era::Stateless,
            ));
        }
        let peer = Peer {
            capabilities: meta.capabilities,
            info: meta.client_info,
        };
        (Some(meta.version), peer, meta.log_level)
    } else {
        let handshake = conn.handshake.lock();
        (
            handshake.version.clone(),
            handshake.peer.clone(),
            handshake.log_level,
        )
    };
    let progress_token = params
        .as_ref()
        .and_then(|params| params.get("_meta"))
        .and_then(|meta| meta.get("progressToken"))
        .filter(|token| token.is_string() || token.is_i64() || token.is_u64())
        .cloned();
    let params = params.unwrap_or(Value::Null);
    let route = route(conn, &method, &params, era, &peer.capabilities)?;
    let input = if era == Era::Stateless
        && matches!(
            method.as_str(),
            methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ
        ) {
        input_round(
            server.config.keys(),
            &method,
            route.target.as_deref(),
            &params,
            conn.caller(),
        )?
    } else {
        None
    };
    let capabilities = (era == Era::Stateless).then(|| peer.capabilities.clone());
    Ok(Prepared {
        method,
        target: route.target,
        era,
        protocol_version,
        peer,
        log_level,
        progress_token,
        input,
        work: route.work,
        inline: route.inline,
        timeout: route.timeout,
        stateless: capabilities,
    })
}

/// Reads a retry's `inputResponses` and checks its `requestState`.
fn input_round(
    keys: &super::keys::StateKeys,
    method: &str,
    target: Option<&str>,
    params: &Value,
    caller: Option<&super::auth::Caller>,
) -> Result<Option<InputRound>, Rejection> {
    let responses = match params.get("inputResponses") {
        None => None,
        Some(Value::Object(responses)) => Some(responses.clone()),
        Some(_) => {
            return Err(Rejection {
                error: ErrorObject::new(
                    ErrorCode::INVALID_PARAMS,
                    "inputResponses must be an object of answers by key",
                ),
                status: 200,
            })
        }
    };
    let state = match params.get("requestState") {
        None | Some(Value::Null) => None,
        Some(Value::String(token)) => {
            match state::verify(keys, token, method, target.unwrap_or_default(), caller) {
                Ok(state) => Some(state),
                Err(refusal) => {
                    log::warn!(
                        target: super::LOG_TARGET,
                        "`{method}` refused: {}",
                        refusal.log_text()
                    );
                    return Err(Rejection {
                        error: ErrorObject::new(ErrorCode::INVALID_PARAMS, refusal.message()),
                        status: 200,
                    });
                }
            }
        }
        Some(_) => {
            return Err(Rejection {
                error: ErrorObject::new(ErrorCode::INVALID_PARAMS, "requestState must be a string"),
                status: 200,
            })
        }
    };
    if responses.is_none() && state.is_none() {
        return Ok(None);
    }
    Ok(Some(InputRound {
        responses: responses.unwrap_or_default(),
        state,
    }))
}

fn inline(work: Work, bound: std::time::Duration) -> Route {
    Route {
        work,
        inline: true,
        timeout: TimeoutAnswer::Rpc(bound),
        target: None,
    }
}

/// A string param; a missing or other one is -32602 (a 200 on the stateless protocol: it is
/// the request's own fault, not its envelope's).
fn string_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, Rejection> {
    params.get(key).and_then(Value::as_str).ok_or_else(|| {
        Rejection::of_request(
            ErrorCode::INVALID_PARAMS,
            format!("params.{key} must be a string"),
        )
    })
}

fn route(
    conn: &Arc<Connection>,
    method: &str,
    params: &Value,
    era: Era,
    capabilities: &Value,
) -> Result<Route, Rejection> {
    match held(conn, method, params, era, capabilities) {
        Some(route) => Ok(route),
        None => routed(conn, method, params, era, capabilities),
    }
}

/// A request the catalog cannot answer well while it settles ([`super::Server::set_settling`]):
/// a listing, or a call, read or get of something not served yet. It waits on a worker until
/// the catalog has settled (or its deadline), and is then routed as usual.
fn held(
    conn: &Arc<Connection>,
    method: &str,
    params: &Value,
    era: Era,
    capabilities: &Value,
) -> Option<Route> {
    let settled = {
        let catalog = conn.server.catalog.read();
        let settled = catalog.settling.clone()?;
        let named = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default();
        let waits = match method {
            methods::TOOLS_LIST
            | methods::RESOURCES_LIST
            | methods::RESOURCES_TEMPLATES_LIST
            | methods::PROMPTS_LIST => true,
            methods::TOOLS_CALL => catalog.tools.get(named("name")).is_none(),
            methods::PROMPTS_GET => catalog.prompts.get(named("name")).is_none(),
            methods::RESOURCES_READ => catalog.resources.get(named("uri")).is_none(),
            _ => false,
        };
        if !waits {
            return None;
        }
        settled
    };
    let now = std::time::Instant::now();
    if crate::sys::guard("the settling hook", || settled(now)) != Some(false) {
        return None;
    }
    let bound = conn.server.config.request_timeout;
    let timeout = if method == methods::TOOLS_CALL {
        TimeoutAnswer::Tool(bound)
    } else {
        TimeoutAnswer::Rpc(bound)
    };
    let target = ["name", "uri"]
        .iter()
        .find_map(|key| params.get(*key).and_then(Value::as_str))
        .map(str::to_owned);
    let (conn, method) = (Arc::clone(conn), method.to_owned());
    let (params, capabilities) = (params.clone(), capabilities.clone());
    Some(Route {
        work: Box::new(move |context| {
            settled(context.deadline());
            let route = routed(&conn, &method, &params, era, &capabilities)
                .map_err(|rejection| HandlerError::Rpc(rejection.error))?;
            (route.work)(context)
        }),
        inline: false,
        timeout,
        target,
    })
}

fn routed(
    conn: &Arc<Connection>,
    method: &str,
    params: &Value,
    era: Era,
    capabilities: &Value,
) -> Result<Route, Rejection> {
    let server = Arc::clone(&conn.server);
    let config = &server.config;
    let bound = config.request_timeout;
    let not_found = || {
        Rejection::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
            era,
        )
    };
    let catalog = server.catalog.read();
    let route = match method {
        methods::INITIALIZE if !config.handshake_versions.is_empty() => {
            let conn = Arc::clone(conn);
            let params = params.clone();
            inline(Box::new(move |_| Ok(initialize(&conn, &params))), bound)
        }
        methods::PING => inline(Box::new(|_| Ok(json!({}))), bound),
        methods::LOGGING_SET_LEVEL if config.logging => {
            let level = string_param(params, "level")?;
            let level = LogLevel::parse(level).ok_or_else(|| {
                Rejection::new(
                    ErrorCode::INVALID_PARAMS,
                    format!("unknown log level {level:?}"),
                    era,
                )
            })?;
            let conn = Arc::clone(conn);
            inline(
                Box::new(move |_| {
                    let mut handshake = conn.handshake.lock();
                    handshake.log_level = Some(level);
                    handshake.level_set = true;
                    Ok(json!({}))
                }),
                bound,
            )
        }
        super::subscriptions::LISTEN if era == Era::Stateless => {
            let server = Arc::clone(&server);
            let params = params.clone();
            Route {
                work: Box::new(move |context| {
                    super::subscriptions::listen(&server, context, &params)
                }),
                inline: true,
                // A subscription lives long; past this its client opens another.
                timeout: TimeoutAnswer::Rpc(std::time::Duration::from_secs(3600)),
                target: None,
            }
        }
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL
            if era == Era::Stateless =>
        {
            if !tasks::declares_extension(capabilities) {
                return Err(Rejection {
                    error: tasks::missing_extension(method),
                    status: 400,
                });
            }
            let server = Arc::clone(&server);
            let method = method.to_owned();
            let params = params.clone();
            match catalog.forwarded_tasks.clone() {
                // A proxy's backends' tasks: forwarded on a worker, the server's own answered
                // here.
                Some(forward) => Route {
                    work: Box::new(move |context| {
                        forward(context, &method, &params)
                            .unwrap_or_else(|| tasks::answer(&server, &method, &params))
                    }),
                    inline: false,
                    timeout: TimeoutAnswer::Rpc(bound),
                    target: None,
                },
                None => inline(
                    Box::new(move |_| tasks::answer(&server, &method, &params)),
                    bound,
                ),
            }
        }
        methods::SERVER_DISCOVER if era == Era::Stateless => {
            let server = Arc::clone(&server);
            inline(Box::new(move |_| Ok(stateless::discover(&server))), bound)
        }
        methods::TOOLS_LIST
        | methods::RESOURCES_LIST
        | methods::RESOURCES_TEMPLATES_LIST
        | methods::PROMPTS_LIST => {
            let (listing, key) = match method {
                methods::TOOLS_LIST => (Listing::Tools, "tools"),
                methods::RESOURCES_LIST => (Listing::Resources, "resources"),
                methods::RESOURCES_TEMPLATES_LIST => (Listing::Templates, "resourceTemplates"),
                _ => (Listing::Prompts, "prompts"),
            };
            let offered = match listing {
                Listing::Tools => catalog.offers_tools(),
                Listing::Resources | Listing::Templates => catalog.has_resources(),
                Listing::Prompts => catalog.offers_prompts(),
            };
            if !offered {
                return Err(not_found());
            }
            let offset = match params.get("cursor") {
                None | Some(Value::Null) => 0,
                Some(Value::String(cursor)) => state::read_cursor(cursor).ok_or_else(|| {
                    Rejection::of_request(ErrorCode::INVALID_PARAMS, "invalid cursor")
                })?,
                Some(_) => {
                    return Err(Rejection::of_request(
                        ErrorCode::INVALID_PARAMS,
                        "the cursor must be a string",
                    ))
                }
            };
            let (items, next) = match listing {
                Listing::Tools => catalog.page_tools_for(conn.caller(), offset, config.page_size),
                _ => catalog.page(listing, offset, config.page_size),
            };
            let mut result = Map::new();
            result.insert(key.into(), Value::Array(items));
            if let Some(next) = next {
                result.insert("nextCursor".into(), Value::from(state::cursor(next)));
            }
            let result = Value::Object(result);
            inline(Box::new(move |_| Ok(result)), bound)
        }
        methods::TOOLS_CALL => {
            let name = string_param(params, "name")?.to_owned();
            let entry = match catalog.access(&name, conn.caller()) {
                ToolAccess::Allowed => catalog.tools.get(&name).cloned(),
                ToolAccess::Hidden => None,
                // Over HTTP a single request is answered 403 with its challenge before it is
                // routed (`http::route`); this holds the line for every other way in.
                ToolAccess::NeedsScopes(scopes) => {
                    return Err(Rejection {
                        error: ErrorObject::new(
                            ErrorCode::INVALID_REQUEST,
                            insufficient_scope(&scopes),
                        ),
                        status: 403,
                    })
                }
            };
            let Some(entry) = entry else {
                // A tool error the model can read, as the official servers answer it.
                let text = match &catalog.unknown_tool {
                    Some(text) => crate::sys::guard("the unknown-tool text", || text(&name))
                        .unwrap_or_else(|| format!("Unknown tool: {name}")),
                    None => format!("Unknown tool: {name}"),
                };
                let result = crate::mcp::CallToolResult::error(text);
                return Ok(Route {
                    target: Some(name),
                    ..inline(Box::new(move |_| Ok(result.to_value())), bound)
                });
            };
            let arguments = match params.get("arguments") {
                None | Some(Value::Null) => json!({}),
                Some(arguments) => arguments.clone(),
            };
            match entry.task_support() {
                TaskSupport::Forbidden => {}
                _ if era == Era::Stateless && tasks::declares_extension(capabilities) => {
                    // Created on the reading thread, so the task exists before its id is sent;
                    // its handler runs on the pool.
                    let server = Arc::clone(&server);
                    return Ok(Route {
                        work: Box::new(move |context| {
                            tasks::create(&server, context, entry, arguments)
                        }),
                        inline: true,
                        timeout: TimeoutAnswer::Rpc(bound),
                        target: Some(name),
                    });
                }
                TaskSupport::Required => {
                    return Err(Rejection {
                        error: tasks::missing_extension(&format!("the tool {name:?}")),
                        status: if era == Era::Stateless { 400 } else { 200 },
                    });
                }
                _ => {}
            }
            tool_route(entry, name, arguments)
        }
        methods::RESOURCES_READ if catalog.has_resources() => {
            let uri = string_param(params, "uri")?.to_owned();
            let route_uri = uri.clone();
            let conn = Arc::clone(conn);
            Route {
                work: Box::new(move |context| tools::read_resource(&conn, context, &uri)),
                inline: false,
                timeout: TimeoutAnswer::Rpc(bound),
                target: Some(route_uri),
            }
        }
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE
            if catalog.has_resources() =>
        {
            let uri = string_param(params, "uri")?.to_owned();
            let subscribe = method == methods::RESOURCES_SUBSCRIBE;
            let conn = Arc::clone(conn);
            let hook = catalog.subscribe.clone();
            // A hook may block (a gateway asks its backend): it runs on a worker.
            let on_worker = hook.is_some();
            let work: Work = Box::new(move |context| {
                if let Some(hook) = &hook {
                    hook(context, &uri, subscribe)?;
                }
                let mut subscriptions = conn.subscriptions.lock();
                if subscribe {
                    subscriptions.insert(uri);
                } else {
                    subscriptions.remove(&uri);
                }
                Ok(json!({}))
            });
            Route {
                inline: !on_worker,
                ..inline(work, bound)
            }
        }
        methods::PROMPTS_GET => {
            let name = string_param(params, "name")?.to_owned();
            let Some(prompt) = catalog.prompts.get(&name).cloned() else {
                return Err(Rejection::of_request(
                    ErrorCode::INVALID_PARAMS,
                    format!("Unknown prompt: {name}"),
                ));
            };
            let arguments = match params.get("arguments") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(arguments)) => arguments.clone(),
                Some(_) => {
                    return Err(Rejection::of_request(
                        ErrorCode::INVALID_PARAMS,
                        "params.arguments must be an object",
                    ))
                }
            };
            let declared = prompt.prompt.arguments.iter().filter(|_| prompt.checked);
            for argument in declared {
                if argument.required && !arguments.contains_key(&argument.name) {
                    return Err(Rejection::of_request(
                        ErrorCode::INVALID_PARAMS,
                        format!("prompt {name:?} needs the argument {:?}", argument.name),
                    ));
                }
            }
            Route {
                work: Box::new(move |context| {
                    (prompt.handler)(context, &arguments).map(|result| result.to_value())
                }),
                inline: false,
                timeout: TimeoutAnswer::Rpc(bound),
                target: Some(name),
            }
        }
        methods::COMPLETION_COMPLETE if catalog.completion.is_some() => {
            let handler = catalog.completion.clone().ok_or_else(not_found)?;
            let argument = params.get("argument");
            let request = CompletionRequest {
                reference: params.get("ref").cloned().unwrap_or(Value::Null),
                argument: argument
                    .and_then(|a| a.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                value: argument
                    .and_then(|a| a.get("value"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                context: params.get("context").cloned(),
            };
            Route {
                work: Box::new(move |context| {
                    let values = handler(context, &request)?;
                    let total = values.len();
                    let shown: Vec<String> = values.into_iter().take(100).collect();
                    Ok(json!({"completion": {"values": shown, "total": total,
                                             "hasMore": total > 100}}))
                }),
                inline: false,
                timeout: TimeoutAnswer::Rpc(bound),
                target: None,
            }
        }
        other => {
            let Some(user) = catalog.methods.get(other).cloned() else {
                return Err(not_found());
            };
            let params = params.clone();
            let timeout = user.timeout.unwrap_or(bound);
            let inline = user.inline;
            Route {
                work: Box::new(move |context| (user.handler)(context, &params)),
                inline,
                timeout: TimeoutAnswer::Rpc(timeout),
                target: None,
            }
        }
    };
    Ok(route)
}

fn tool_route(entry: Arc<ToolEntry>, name: String, arguments: Value) -> Route {
    let inline = entry.inline();
    let timeout = TimeoutAnswer::Tool(entry.timeout());
    Route {
        work: Box::new(move |context| {
            for capability in entry.requires() {
                if !context.client_supports(capability) {
                    return Err(missing_capability(capability));
                }
            }
            tools::call(&entry, context, arguments)
        }),
        inline,
        timeout,
        target: Some(name),
    }
}

/// Answers `initialize`: the client's revision when this server speaks it, else its newest;
/// the client's capabilities and name are kept for the connection.
fn initialize(conn: &Connection, params: &Value) -> Value {
    let config = &conn.server.config;
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    let version = match requested {
        Some(asked) if config.handshake_versions.iter().any(|v| v == asked) => asked.to_owned(),
        _ => config
            .handshake_versions
            .iter()
            .max()
            .cloned()
            .unwrap_or_default(),
    };
    let info = params.get("clientInfo").and_then(|info| {
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
    {
        let mut handshake = conn.handshake.lock();
        handshake.version = Some(version.clone());
        handshake.peer = Peer {
            capabilities: params
                .get("capabilities")
                .filter(|caps| caps.is_object())
                .cloned()
                .unwrap_or_else(|| json!({})),
            info,
        };
    }
    let mut result = Map::new();
    result.insert("protocolVersion".into(), Value::from(version));
    result.insert(
        "capabilities".into(),
        conn.server.capabilities(Era::Handshake),
    );
    result.insert("serverInfo".into(), conn.server.server_info());
    if let Some(instructions) = &config.instructions {
        result.insert("instructions".into(), Value::from(instructions.clone()));
    }
    Value::Object(result)
}
