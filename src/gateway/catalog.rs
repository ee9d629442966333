//! The backends' resources, resource templates and prompts, as the gateway serves them.
//!
//! Prompts are namespaced like tools ([`super::Policy::front_name`]) and filtered by the same
//! allow and deny lists; `prompts/get` goes to the owning backend under its own name, with
//! the arguments (the backend checks them). Resources keep their URIs (a URI is an address:
//! renamed, it would point nowhere): `resources/read` goes to the backend that listed the
//! URI, or whose template matched it. A URI (or template) two backends list is served from
//! the first in config order; the clash is logged and in the start report. Templates are
//! listed as their backends list them. Completion goes to the backend that owns the prompt
//! or template; `resources/subscribe` and `unsubscribe` go to the backend that owns the URI,
//! and its `notifications/resources/updated` come back to the subscribed front clients.
//! Each forwarded read, prompt get and completion is a `request` and a `response` line of
//! the transcript (its `tool` field: the method and what it names).

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Instant;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::backend::Backend;
use super::{masked, Core, LOG_TARGET};
use crate::client::CallOptions;
use crate::error::{Error, Result};
use crate::harness::{AuditEvent, AuditKind, SkippedTool, Status};
use crate::mcp::{methods, McpClient, Prompt, Resource, ResourceTemplate, Tool};
use crate::server::resources::{match_parts, parse_template};
use crate::server::{
    CatalogChange, CatalogKind, HandlerError, PromptResult, Refused, RequestContext, ServerPrompt,
    ServerResource, ServerResourceTemplate,
};
use crate::wire::{ErrorCode, ErrorObject};

/// The longest backend error message passed on to a front client, in characters.
const MAX_ERROR_CHARS: usize = 1_000;

/// The kinds of list a backend may change.
pub(crate) const TOOLS: u8 = 1;
/// Resources and resource templates.
pub(crate) const RESOURCES: u8 = 2;
/// Prompts.
pub(crate) const PROMPTS: u8 = 4;
/// Not a list: the front clients' subscriptions, asked of a restarted backend again.
pub(crate) const SUBSCRIPTIONS: u8 = 8;
/// What a restarted backend needs: every list, and its subscriptions.
pub(crate) const AFTER_RESTART: u8 = TOOLS | RESOURCES | PROMPTS | SUBSCRIPTIONS;

/// What the gateway serves of one backend besides its tools.
#[derive(Debug, Default)]
pub(crate) struct Served {
    /// Front name and the backend's own, for each prompt.
    pub(crate) prompts: Vec<(String, String)>,
    pub(crate) resources: Vec<String>,
    pub(crate) templates: Vec<String>,
}

/// A backend's resources, templates and prompts as listed (empty for a kind it does not
/// offer); `None` for a kind that could not be listed, with why in `errors`.
#[derive(Debug, Default)]
pub(crate) struct Listed {
    pub(crate) resources: Option<(Vec<Resource>, Vec<ResourceTemplate>)>,
    pub(crate) prompts: Option<Vec<Prompt>>,
    pub(crate) errors: Vec<String>,
}

/// A backend's tools, all pages (none when it does not offer tools: a server of resources
/// or prompts only is served too).
pub(crate) fn list_tools(client: &McpClient) -> Result<Arc<Vec<Tool>>> {
    if !client.session_info()?.has_capability("tools") {
        return Ok(Arc::new(Vec::new()));
    }
    client.list_tools()
}

/// Lists the `kinds` (of [`RESOURCES`], [`PROMPTS`]) a backend offers, all pages each, within
/// its client's list bounds.
pub(crate) fn list(client: &McpClient, kinds: u8) -> Listed {
    let capabilities = match client.session_info() {
        Ok(info) => info,
        Err(error) => {
            return Listed {
                errors: vec![masked(&error)],
                ..Listed::default()
            }
        }
    };
    let mut listed = Listed::default();
    if kinds & RESOURCES != 0 {
        listed.resources = if capabilities.has_capability("resources") {
            match client
                .list_resources()
                .and_then(|resources| Ok((resources, client.list_resource_templates()?)))
            {
                Ok(both) => Some(both),
                Err(error) => {
                    listed.errors.push(format!(
                        "its resources cannot be listed: {}",
                        masked(&error)
                    ));
                    None
                }
            }
        } else {
            Some((Vec::new(), Vec::new()))
        };
    }
    if kinds & PROMPTS != 0 {
        listed.prompts = if capabilities.has_capability("prompts") {
            match client.list_prompts() {
                Ok(prompts) => Some(prompts),
                Err(error) => {
                    listed
                        .errors
                        .push(format!("its prompts cannot be listed: {}", masked(&error)));
                    None
                }
            }
        } else {
            Some(Vec::new())
        };
    }
    listed
}

/// What serving a listing did.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) prompts: Vec<String>,
    pub(crate) resources: Vec<String>,
    pub(crate) templates: Vec<String>,
    pub(crate) skipped_prompts: Vec<SkippedTool>,
    /// URIs (or templates) another backend serves already.
    pub(crate) clashes: Vec<String>,
}

/// Adds to `change` what replaces the backend's served resources and prompts with `listed`
/// (only the kinds listed); `served` is updated when the change has been applied, with
/// [`settle`].
pub(crate) fn prepare(
    core: &Arc<Core>,
    backend: &Arc<Backend>,
    listed: &Listed,
    mut change: CatalogChange,
    planned: &mut Served,
) -> CatalogChange {
    let old = backend.catalog.lock();
    if let Some((resources, templates)) = &listed.resources {
        for uri in &old.resources {
            change = change.remove_resource(uri.clone());
        }
        for template in &old.templates {
            change = change.remove_template(template.clone());
        }
        for resource in resources {
            let reader = Arc::clone(backend);
            let weak = Arc::downgrade(core);
            change = change.add_resource(ServerResource::from_listing(
                resource.clone(),
                move |context, uri| read(&weak, &reader, context, uri),
            ));
            planned.resources.push(resource.uri.clone());
        }
        for template in templates {
            let reader = Arc::clone(backend);
            let weak = Arc::downgrade(core);
            change = change.add_template(ServerResourceTemplate::from_listing(
                template.clone(),
                move |context, uri, _variables| read(&weak, &reader, context, uri),
            ));
            planned.templates.push(template.uri_template.clone());
        }
    } else {
        planned.resources.clone_from(&old.resources);
        planned.templates.clone_from(&old.templates);
    }
    if let Some(prompts) = &listed.prompts {
        for (front, _) in &old.prompts {
            change = change.remove_prompt(front.clone());
        }
        for prompt in prompts {
            if core.policy.refusal(&backend.name, &prompt.name).is_some() {
                continue;
            }
            let front = core.policy.front_name(&backend.name, &prompt.name);
            let mut listing = prompt.clone();
            listing.name.clone_from(&front);
            let getter = Arc::clone(backend);
            let remote = prompt.name.clone();
            let weak = Arc::downgrade(core);
            let named = front.clone();
            change = change.add_prompt(
                ServerPrompt::from_listing(listing, move |context, arguments| {
                    let core = weak.upgrade().ok_or_else(closing)?;
                    get_prompt(&core, &getter, (&named, &remote), context, arguments)
                })
                // The backend answers for its own prompt's arguments.
                .check_arguments(false),
            );
            planned.prompts.push((front, prompt.name.clone()));
        }
    } else {
        planned.prompts.clone_from(&old.prompts);
    }
    change
}

/// Records what was served of `planned`, given the keys the front server refused; returns
/// what the report says.
pub(crate) fn settle(
    core: &Core,
    backend: &Backend,
    listed: &Listed,
    mut planned: Served,
    refused: &[Refused],
) -> Outcome {
    let mut outcome = Outcome::default();
    if let Some(prompts) = &listed.prompts {
        for prompt in prompts {
            if let Some(reason) = core.policy.refusal(&backend.name, &prompt.name) {
                log::info!(
                    target: LOG_TARGET,
                    "not serving prompt {:?} of server {:?}: {reason}",
                    prompt.name,
                    backend.name
                );
                outcome.skipped_prompts.push(SkippedTool {
                    name: prompt.name.clone(),
                    reason: reason.to_owned(),
                });
            }
        }
    }
    let mut keep = |of: CatalogKind, kind: &str, key: &String| {
        if !refused
            .iter()
            .any(|item| item.kind == of && &item.key == key)
        {
            return true;
        }
        log::warn!(
            target: LOG_TARGET,
            "the {kind} {key:?} of server {:?} is not served: another server (first in the \
             config's order) serves it",
            backend.name
        );
        outcome.clashes.push(key.clone());
        false
    };
    if listed.resources.is_some() {
        planned
            .resources
            .retain(|uri| keep(CatalogKind::Resource, "resource", uri));
        planned
            .templates
            .retain(|template| keep(CatalogKind::Template, "template", template));
    }
    if listed.prompts.is_some() {
        planned
            .prompts
            .retain(|(front, _)| keep(CatalogKind::Prompt, "prompt", front));
    }
    outcome.resources.clone_from(&planned.resources);
    outcome.templates.clone_from(&planned.templates);
    outcome.prompts = planned
        .prompts
        .iter()
        .map(|(front, _)| front.clone())
        .collect();
    *backend.catalog.lock() = planned;
    outcome
}

/// The time left of a front request, for the request forwarded on its behalf.
fn options(context: &RequestContext) -> CallOptions {
    let left = context.deadline().saturating_duration_since(Instant::now());
    CallOptions::new().timeout(left.max(std::time::Duration::from_millis(1)))
}

/// A backend's failure as a front client reads it: the backend's own JSON-RPC error as it
/// sent it (its message bounded), anything else in general words (the details are logged).
pub(crate) fn passed_on(backend: &Backend, method: &str, error: Error) -> HandlerError {
    match error {
        Error::Rpc(object) => {
            let mut object = *object;
            if object.message.chars().count() > MAX_ERROR_CHARS {
                object.message = object.message.chars().take(MAX_ERROR_CHARS).collect();
            }
            HandlerError::Rpc(object)
        }
        other => {
            log::warn!(
                target: LOG_TARGET,
                "{method} on server {:?} failed: {}",
                backend.name,
                masked(&other)
            );
            HandlerError::internal(format!(
                "the server {:?} could not answer {method}; the details were logged for the \
                 operator",
                backend.name
            ))
        }
    }
}

fn client<'a>(
    backend: &'a Backend,
    method: &str,
) -> std::result::Result<&'a McpClient, HandlerError> {
    backend.client().ok_or_else(|| {
        HandlerError::internal(format!(
            "the server {:?} is not connected, so {method} cannot be answered",
            backend.name
        ))
    })
}

fn closing() -> HandlerError {
    HandlerError::internal("the gateway is closing")
}

/// Sends `method` to `backend` for a front client, with its `request` and `response` lines in
/// the transcript (`what`: the prompt's front name or the URI it names).
fn forward(
    core: &Core,
    backend: &Backend,
    method: &str,
    what: &str,
    params: Value,
    context: &RequestContext,
) -> std::result::Result<Value, HandlerError> {
    let number = core.next_call();
    let named = Some(format!("{method} {what}"));
    let mut request = AuditEvent::new(number, AuditKind::Request).detail(format!(
        "{method} on server {}",
        crate::json::quote(&backend.name)
    ));
    request.tool.clone_from(&named);
    request.size = Some(params.to_string().len());
    core.emit(request);
    let started = Instant::now();
    let answered = client(backend, method)
        .map_err(|error| (Status::ToolError, error.to_string(), error))
        .and_then(|client| {
            super::rounds::request(
                client,
                &backend.name,
                method,
                params,
                options(context),
                context,
            )
            .map_err(|error| match error {
                super::rounds::RoundError::Backend(error) => {
                    let (status, said) = (error_status(&error), masked(&error));
                    (status, said, passed_on(backend, method, error))
                }
                super::rounds::RoundError::Front(answer) => {
                    (Status::Ok, answer.to_string(), answer)
                }
            })
        });
    let mut response = AuditEvent::new(number, AuditKind::Response);
    response.tool = named;
    response.duration = Some(started.elapsed());
    match answered {
        Ok(result) => {
            response.status = Some(Status::Ok);
            response.size = Some(result.to_string().len());
            core.emit(response);
            Ok(result)
        }
        Err((status, said, error)) => {
            response.status = Some(status);
            core.emit(response.detail(said));
            Err(error)
        }
    }
}

/// What a backend's failure to answer amounts to, in the harness's statuses.
fn error_status(error: &Error) -> Status {
    match error {
        Error::Timeout { .. } => Status::Timeout,
        Error::Rpc(object) if object.code == ErrorCode::RESOURCE_NOT_FOUND => Status::NotFound,
        _ => Status::ToolError,
    }
}

/// `resources/read`, forwarded.
fn read(
    core: &Weak<Core>,
    backend: &Backend,
    context: &RequestContext,
    uri: &str,
) -> std::result::Result<Vec<Value>, HandlerError> {
    let method = methods::RESOURCES_READ;
    let core = core.upgrade().ok_or_else(closing)?;
    let result = forward(&core, backend, method, uri, json!({"uri": uri}), context)?;
    match result.get("contents") {
        Some(Value::Array(contents)) => Ok(contents.clone()),
        _ => Err(HandlerError::internal(format!(
            "the server {:?} answered {method} without a contents array",
            backend.name
        ))),
    }
}

/// `prompts/get` of the front prompt `names.0`, forwarded under the backend's own name
/// `names.1`.
fn get_prompt(
    core: &Core,
    backend: &Backend,
    names: (&str, &str),
    context: &RequestContext,
    arguments: &Map<String, Value>,
) -> std::result::Result<PromptResult, HandlerError> {
    let method = methods::PROMPTS_GET;
    let mut params = json!({"name": names.1});
    if !arguments.is_empty() {
        params["arguments"] = Value::Object(arguments.clone());
    }
    let result = forward(core, backend, method, names.0, params, context)?;
    let Some(Value::Array(messages)) = result.get("messages") else {
        return Err(HandlerError::internal(format!(
            "the server {:?} answered {method} without a messages array",
            backend.name
        )));
    };
    Ok(PromptResult::from_messages(
        result
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        messages.clone(),
    ))
}

/// The backend that serves `uri`: the one that listed it, else the first whose template
/// matches it.
fn owner_of_uri(core: &Core, uri: &str) -> Option<Arc<Backend>> {
    let backends = core.backends.read();
    backends
        .values()
        .find(|backend| {
            backend
                .catalog
                .lock()
                .resources
                .iter()
                .any(|known| known == uri)
        })
        .or_else(|| {
            backends.values().find(|backend| {
                backend
                    .catalog
                    .lock()
                    .templates
                    .iter()
                    .any(|template| match_parts(&parse_template(template), uri).is_some())
            })
        })
        .cloned()
}

/// `completion/complete`, forwarded to the backend that owns the prompt or template (a
/// prompt's name becomes the backend's own).
pub(crate) fn complete(
    core: &Core,
    context: &RequestContext,
    request: &crate::server::CompletionRequest,
) -> std::result::Result<Vec<String>, HandlerError> {
    let mut reference = request.reference.clone();
    let kind = reference.get("type").and_then(Value::as_str).unwrap_or("");
    let backend = match kind {
        "ref/prompt" => {
            let front = reference.get("name").and_then(Value::as_str).unwrap_or("");
            let found = core.backends.read().values().find_map(|backend| {
                let remote = backend
                    .catalog
                    .lock()
                    .prompts
                    .iter()
                    .find(|(known, _)| known == front)
                    .map(|(_, remote)| remote.clone())?;
                Some((Arc::clone(backend), remote))
            });
            found.map(|(backend, remote)| {
                reference["name"] = Value::from(remote);
                backend
            })
        }
        "ref/resource" => {
            let uri = reference.get("uri").and_then(Value::as_str).unwrap_or("");
            let backends = core.backends.read();
            backends
                .values()
                .find(|backend| {
                    let served = backend.catalog.lock();
                    served.templates.iter().any(|known| known == uri)
                        || served.resources.iter().any(|known| known == uri)
                })
                .cloned()
        }
        _ => None,
    };
    let Some(backend) = backend else {
        return Err(HandlerError::invalid_params(format!(
            "this gateway serves no prompt or resource template {}",
            crate::json::quote(&request.reference.to_string())
        )));
    };
    let method = methods::COMPLETION_COMPLETE;
    let offers = backend
        .client()
        .and_then(|client| client.session_info().ok())
        .is_some_and(|info| info.has_capability("completions"));
    if !offers {
        return Ok(Vec::new());
    }
    let mut params = json!({
        "ref": reference,
        "argument": {"name": request.argument, "value": request.value},
    });
    if let Some(arguments) = &request.context {
        params["context"] = arguments.clone();
    }
    let what = request
        .reference
        .get("name")
        .or_else(|| request.reference.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let result = forward(core, &backend, method, what, params, context)?;
    Ok(crate::mcp::Completion::from_value(result)
        .map(|completion| completion.values)
        .unwrap_or_default())
}

/// Front subscriptions by URI: the backend is asked to subscribe on the first and to
/// unsubscribe after the last.
#[derive(Default)]
pub(crate) struct Subscriptions {
    counts: Mutex<BTreeMap<String, usize>>,
    /// The `subscriptions/listen` held open to each 2026-07-28 backend.
    pub(crate) listens: super::listen::Listens,
}

/// `resources/subscribe` (or `unsubscribe`), passed on to the backend that owns the URI.
pub(crate) fn subscribe(
    core: &Arc<Core>,
    context: &RequestContext,
    uri: &str,
    on: bool,
) -> std::result::Result<(), HandlerError> {
    let Some(backend) = owner_of_uri(core, uri) else {
        return Err(HandlerError::Rpc(
            ErrorObject::new(
                ErrorCode::RESOURCE_NOT_FOUND,
                format!("Resource not found: {uri}"),
            )
            .with_data(json!({"uri": uri})),
        ));
    };
    let method = if on {
        methods::RESOURCES_SUBSCRIBE
    } else {
        methods::RESOURCES_UNSUBSCRIBE
    };
    let client = client(&backend, method)?;
    let offers = client
        .session_info()
        .ok()
        .is_some_and(|info| info.capabilities["resources"]["subscribe"] == Value::Bool(true));
    if !offers {
        return Err(HandlerError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "the server {:?}, which serves {uri}, does not offer resource subscriptions",
                backend.name
            ),
        ));
    }
    // A 2026-07-28 backend has no `resources/subscribe`: its subscriptions are one
    // `subscriptions/listen`, opened again with each new set of URIs.
    let listens = client
        .session_info()
        .is_ok_and(|info| info.era == crate::mcp::Era::Stateless);
    // The count is held while the backend is asked, so two front clients never race a
    // subscription and an unsubscription of the same URI.
    let mut counts = core.subscriptions.counts.lock();
    let count = counts.entry(uri.to_owned()).or_insert(0);
    let ask = if on { *count == 0 } else { *count == 1 };
    if ask && !listens {
        client
            .request(method, json!({"uri": uri}), options(context))
            .map_err(|error| passed_on(&backend, method, error))?;
    }
    if on {
        *count += 1;
    } else {
        *count = count.saturating_sub(1);
        if *count == 0 {
            counts.remove(uri);
        }
    }
    drop(counts);
    if ask && listens {
        // A subscription is answered once the backend listens for it (within the request's
        // deadline, at most the start timeout's default of 10 s).
        let until = context
            .deadline()
            .min(Instant::now() + std::time::Duration::from_secs(10));
        super::listen::refresh(core, &backend, on.then_some(until));
    }
    Ok(())
}

/// The URIs the front clients are subscribed to that `backend` serves.
pub(crate) fn subscribed_by(core: &Core, backend: &Backend) -> Vec<String> {
    let uris: Vec<String> = core.subscriptions.counts.lock().keys().cloned().collect();
    uris.into_iter()
        .filter(|uri| owner_of_uri(core, uri).is_some_and(|owner| std::ptr::eq(&*owner, backend)))
        .collect()
}

/// Declares the kinds the started backends offer (or, with `every`, every kind: backends
/// that join later may offer any), and passes subscriptions and completion on to them.
pub(super) fn serve_catalog(core: &Arc<Core>, every: bool) {
    let (mut resources, mut subscribe, mut prompts) = (every, every, every);
    let mut completions = every;
    for backend in core.backends.read().values() {
        let Some(info) = backend
            .client()
            .and_then(|client| client.session_info().ok())
        else {
            continue;
        };
        resources |= info.has_capability("resources");
        subscribe |= info.capabilities["resources"]["subscribe"] == Value::Bool(true);
        prompts |= info.has_capability("prompts");
        completions |= info.has_capability("completions");
    }
    core.server.declare(
        crate::server::Declared::new()
            .resources(resources)
            .resource_subscriptions(subscribe)
            .prompts(prompts),
    );
    if subscribe {
        let weak = Arc::downgrade(core);
        core.server
            .set_subscribe(move |context, uri, on| match weak.upgrade() {
                Some(core) => self::subscribe(&core, context, uri, on),
                None => Err(crate::server::HandlerError::internal(
                    "the gateway is closing",
                )),
            });
    }
    super::tasks::serve(core, every);
    if completions {
        let weak = Arc::downgrade(core);
        core.server
            .set_completion(move |context, request| match weak.upgrade() {
                Some(core) => complete(&core, context, request),
                None => Err(crate::server::HandlerError::internal(
                    "the gateway is closing",
                )),
            });
    }
}
