//! Serving a backend's lists (tools, resources, templates, prompts) through the front
//! server, and serving them again when the backend says they changed.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use super::backend::{Backend, Event, Events};
use super::catalog::{self, Listed, Served, SUBSCRIPTIONS, TOOLS};
use super::forward::{self, FrontTool};
use super::{masked, names, Clash, Core, StartedBackend, FRONT_GRACE, LOG_TARGET};
use crate::harness::{
    ImportedTool, LocalTool, ResultLimit, RetryPolicy, SkippedTool, ToolOptions, ToolTimeout,
    MAX_RESULT_CHARS,
};
use crate::mcp::Tool;
use crate::server::{CatalogChange, CatalogKind, Refused, RequestContext};

/// What a backend's notifications run: a list change re-lists that kind on a thread of its
/// own (never on the client's dispatch thread, which must go on reading); a resource update
/// goes to the front clients subscribed to it; a restart lists everything again and asks
/// the new process for the subscriptions.
pub(super) fn events(core: &Arc<Core>) -> Events {
    let weak: Weak<Core> = Arc::downgrade(core);
    Arc::new(
        move |backend: &Arc<Backend>, event: Event<'_>| match event {
            Event::ResourceUpdated(uri) => {
                if let Some(core) = weak.upgrade() {
                    core.server.notify_resource_updated(uri);
                }
            }
            Event::ListChanged(kinds) => relist_soon(&weak, backend, kinds),
            Event::Listening => {
                if let Some(core) = weak.upgrade() {
                    core.subscriptions.listens.acknowledged(&backend.name);
                }
            }
            // Its new process may offer other lists, and knows nothing of the subscriptions.
            Event::Restarted => {
                log::info!(
                    target: LOG_TARGET,
                    "server {:?} was started again: listing it again",
                    backend.name
                );
                relist_soon(&weak, backend, catalog::AFTER_RESTART);
            }
        },
    )
}

/// Lists the `kinds` of `backend` again on a thread of its own (one at a time per backend:
/// changes that come meanwhile are listed by the running one).
pub(super) fn relist_soon(weak: &Weak<Core>, backend: &Arc<Backend>, kinds: u8) {
    if backend.want_relist(kinds) {
        run_relister(weak, backend, 0);
    }
}

/// Its first lists are served: lists what changed meanwhile, if anything did (the start
/// held the backend's re-listing flag, so changes notified while it served waited).
pub(super) fn after_start(core: &Arc<Core>, backend: &Arc<Backend>) {
    let kinds = backend.take_pending();
    if kinds != 0 {
        run_relister(&Arc::downgrade(core), backend, kinds);
    }
}

/// The re-listing thread of a backend whose flag the caller holds: lists `first` (when not
/// 0), then the pending kinds until none are left.
fn run_relister(weak: &Weak<Core>, backend: &Arc<Backend>, first: u8) {
    let weak = weak.clone();
    let name = backend.name.clone();
    let flags = Arc::clone(backend);
    let backend = Arc::clone(backend);
    let spawned = std::thread::Builder::new()
        .name("toolwire-gateway-relist".into())
        .spawn(move || {
            let mut kinds = first;
            loop {
                if kinds != 0 {
                    let Some(core) = weak.upgrade() else { return };
                    relist(&core, &backend, kinds);
                }
                kinds = backend.take_pending();
                if kinds == 0 {
                    return;
                }
            }
        });
    if let Err(error) = spawned {
        log::warn!(target: LOG_TARGET, "cannot re-list server {name:?}: {error}");
        // Leave the flags as a later change can use them.
        while flags.take_pending() != 0 {}
    }
}

/// Lists `kinds` of a backend again and serves the new lists in place of the old, in one
/// change of the front server's catalog: its clients are told once per kind that changed.
fn relist(core: &Arc<Core>, backend: &Arc<Backend>, mut kinds: u8) {
    let Some(client) = backend.client() else {
        return;
    };
    // A backend kept out is listed in full: once its listing matches the policy's names,
    // all of it is served again.
    let kept_out = backend.kept_out.lock().is_some();
    if kept_out {
        kinds |= TOOLS | catalog::RESOURCES | catalog::PROMPTS;
    }
    let tools = if kinds & TOOLS != 0 {
        match catalog::list_tools(client) {
            Ok(tools) => Some(tools),
            Err(error) => {
                log::warn!(
                    target: LOG_TARGET,
                    "server {:?} changed its tools, but they cannot be listed: {}",
                    backend.name,
                    masked(&error)
                );
                None
            }
        }
    } else {
        None
    };
    let others = kinds & !(TOOLS | SUBSCRIPTIONS);
    let listed = if others != 0 {
        catalog::list(client, others)
    } else {
        Listed::default()
    };
    if kept_out {
        // Served in full, or still kept out (its lists' errors are logged there).
        if let Some(tools) = &tools {
            let joined = serve_started(core, backend, tools, &listed);
            core.roster.place(&backend.name, joined);
        }
        if kinds & SUBSCRIPTIONS != 0 {
            resubscribe(core, backend, client);
        }
        return;
    }
    for error in &listed.errors {
        log::warn!(
            target: LOG_TARGET,
            "server {:?} changed its lists, but {error}",
            backend.name
        );
    }
    let (served, outcome, mismatch) =
        serve(core, backend, tools.as_deref().map(Vec::as_slice), &listed);
    if let Some(why) = mismatch {
        core.roster.place(&backend.name, Err(why));
        return;
    }
    if let Some(served) = served {
        log::info!(
            target: LOG_TARGET,
            "server {:?} changed its tools: {} served now",
            backend.name,
            served.tools.len()
        );
    }
    if others != 0 {
        log::info!(
            target: LOG_TARGET,
            "server {:?} changed its lists: {} resources, {} templates, {} prompts served now",
            backend.name,
            outcome.resources.len(),
            outcome.templates.len(),
            outcome.prompts.len()
        );
    }
    if kinds & SUBSCRIPTIONS != 0 {
        resubscribe(core, backend, client);
    }
}

/// Asks a restarted backend for the front clients' subscriptions to its resources again.
fn resubscribe(core: &Arc<Core>, backend: &Arc<Backend>, client: &crate::mcp::McpClient) {
    if client
        .session_info()
        .is_ok_and(|info| info.era == crate::mcp::Era::Stateless)
    {
        // Its listen follows the restart by itself; nudged so it does at once.
        super::listen::refresh(core, backend, None);
        return;
    }
    for uri in catalog::subscribed_by(core, backend) {
        if let Err(error) = client.subscribe_resource(&uri) {
            log::warn!(
                target: LOG_TARGET,
                "server {:?} was started again, but it refused the subscription to {uri:?}: {}",
                backend.name,
                masked(&error)
            );
        }
    }
}

/// The tools of a backend served, and why the others are not.
pub(super) struct ServedTools {
    pub(super) tools: Vec<String>,
    /// The backend's own name of each of `tools`.
    remotes: Vec<String>,
    pub(super) skipped: Vec<SkippedTool>,
}

/// Records what a backend listed and checks the policy's names against it: why it is kept
/// out when they do not match (logged at `warn` when that is news), else `None` (logged when
/// it was kept out until now).
fn judge(
    core: &Core,
    backend: &Backend,
    tools: Option<&[Tool]>,
    listed: &Listed,
) -> Option<String> {
    let mut listing = backend.listing.lock();
    if let Some(tools) = tools {
        listing.0 = tools.iter().map(|tool| tool.name.clone()).collect();
    }
    if let Some(prompts) = &listed.prompts {
        listing.1 = prompts.iter().map(|prompt| prompt.name.clone()).collect();
    }
    let (tool_names, prompt_names) = (listing.0.clone(), listing.1.clone());
    drop(listing);
    let tool_names: Vec<&str> = tool_names.iter().map(String::as_str).collect();
    let prompt_names: Vec<&str> = prompt_names.iter().map(String::as_str).collect();
    let verdict = core
        .policy
        .check_listing(&backend.name, &tool_names, &prompt_names)
        .err()
        .map(|mismatch| mismatch.to_string());
    let mut kept_out = backend.kept_out.lock();
    match (&verdict, &*kept_out) {
        (Some(now), before) if before.as_ref() != Some(now) => log::warn!(
            target: LOG_TARGET,
            "server {:?} is kept out (none of its tools, prompts or resources are served) until \
             the policy's names match what it lists: {now}",
            backend.name
        ),
        (None, Some(_)) => log::warn!(
            target: LOG_TARGET,
            "server {:?} is served again: the policy's names match what it lists now",
            backend.name
        ),
        _ => {}
    }
    kept_out.clone_from(&verdict);
    verdict
}

/// Serves a backend's `tools` (when given) and what `listed` holds in place of those served
/// for it, as one change of the front server's catalog; when the policy's names do not match
/// its listing ([`judge`]), serves nothing of it instead, and returns why.
fn serve(
    core: &Arc<Core>,
    backend: &Arc<Backend>,
    tools: Option<&[Tool]>,
    listed: &Listed,
) -> (Option<ServedTools>, catalog::Outcome, Option<String>) {
    let mismatch = judge(core, backend, tools, listed);
    let nothing = Listed {
        resources: Some((Vec::new(), Vec::new())),
        prompts: Some(Vec::new()),
        errors: Vec::new(),
    };
    let (tools, listed) = match mismatch {
        Some(_) => (Some(&[][..]), &nothing),
        None => (tools, listed),
    };
    // One listing at a time decides who serves a front name (see `names`).
    let _order = core.names.serialize();
    let mut change = CatalogChange::new();
    let mut planned_tools = None;
    let mut owners = std::collections::HashMap::new();
    if let Some(tools) = tools {
        for front in backend.served.lock().iter() {
            change = change.remove_tool(front.clone());
        }
        // A pinned tool whose definition changed is held, not served (see `pinning`).
        let admitted = core.pins.admit(
            &backend.name,
            tools,
            |tool| core.policy.front_name(&backend.name, tool),
            |tool| core.policy.refusal(&backend.name, tool).is_some(),
        );
        owners.clone_from(&*core.owners.read());
        let (added, plan) = plan_tools(core, backend, &admitted, change);
        change = names::claim(core, backend, &plan.tools, added);
        planned_tools = Some(plan);
    }
    let mut planned = Served::default();
    let change = catalog::prepare(core, backend, listed, change, &mut planned);
    let refused = core.server.apply(change);
    let served_tools = planned_tools.map(|mut plan| {
        let mut kept = Vec::new();
        // Looked up by name: a listing whose every name another backend serves has as many
        // refusals as tools (a scan of them per tool was quadratic).
        let refused_tools: HashMap<&str, &Refused> = refused
            .iter()
            .filter(|item| item.kind == CatalogKind::Tool)
            .map(|item| (item.key.as_str(), item))
            .collect();
        let mut holders = names::Holders::default();
        for (front, remote) in plan.tools.drain(..).zip(plan.remotes.drain(..)) {
            match refused_tools.get(front.as_str()) {
                None => kept.push(front),
                Some(refusal) => {
                    if let Some(served_by) =
                        names::refused(core, backend, &front, owners.remove(&front), &mut holders)
                    {
                        plan.skipped.push(SkippedTool {
                            name: remote,
                            reason: format!(
                                "server {served_by:?}, earlier in the config's order, serves \
                                 the name {front:?}"
                            ),
                        });
                        continue;
                    }
                    log::info!(
                        target: LOG_TARGET,
                        "not serving tool {remote:?} of server {:?}: {}",
                        backend.name,
                        refusal.error
                    );
                    plan.skipped.push(SkippedTool {
                        name: remote,
                        reason: refusal.error.to_string(),
                    });
                }
            }
        }
        plan.tools = kept;
        backend.served.lock().clone_from(&plan.tools);
        // A name it served and no longer does goes to the next backend that lists it.
        for other in names::release(core, backend) {
            relist_soon(&Arc::downgrade(core), &other, TOOLS);
        }
        plan
    });
    let outcome = catalog::settle(core, backend, listed, planned, &refused);
    (served_tools, outcome, mismatch)
}

/// Serves all a backend listed (at start, when it joins late, or when it was kept out);
/// returns its part of the report, or why it is kept out.
pub(super) fn serve_started(
    core: &Arc<Core>,
    backend: &Arc<Backend>,
    tools: &[Tool],
    listed: &Listed,
) -> Result<StartedBackend, String> {
    for error in &listed.errors {
        log::warn!(target: LOG_TARGET, "server {:?}: {error}", backend.name);
    }
    let (served, outcome, mismatch) = serve(core, backend, Some(tools), listed);
    if let Some(why) = mismatch {
        return Err(why);
    }
    let ServedTools {
        tools: served,
        skipped,
        ..
    } = served.unwrap_or(ServedTools {
        tools: Vec::new(),
        remotes: Vec::new(),
        skipped: Vec::new(),
    });
    let mut clashes: Vec<Clash> = outcome
        .clashes
        .iter()
        .map(|key| Clash {
            key: key.clone(),
            served_by: first_owner(core, backend, key),
        })
        .collect();
    clashes.extend(core.names.of(&backend.name));
    Ok(StartedBackend {
        name: backend.name.clone(),
        tools: served,
        skipped,
        prompts: outcome.prompts,
        skipped_prompts: outcome.skipped_prompts,
        resources: outcome.resources,
        templates: outcome.templates,
        clashes,
        unlisted: listed.errors.clone(),
    })
}

/// The backend (other than `backend`) that serves `key`, for the report of a clash.
fn first_owner(core: &Core, backend: &Backend, key: &str) -> String {
    core.backends
        .read()
        .values()
        .filter(|other| other.name != backend.name)
        .find(|other| {
            let served = other.catalog.lock();
            served.resources.iter().any(|known| known == key)
                || served.templates.iter().any(|known| known == key)
                || served.prompts.iter().any(|(front, _)| front == key)
        })
        .map(|other| other.name.clone())
        .unwrap_or_default()
}

/// Adds to `change` a backend's tools as the policy says; returns the front names planned and
/// the tools skipped.
fn plan_tools(
    core: &Arc<Core>,
    backend: &Arc<Backend>,
    tools: &[Tool],
    mut change: CatalogChange,
) -> (CatalogChange, ServedTools) {
    let mut planned = Vec::new();
    let mut remotes = Vec::new();
    let mut skipped = Vec::new();
    let mut skip = |name: &str, reason: String| {
        log::info!(
            target: LOG_TARGET,
            "not serving tool {name:?} of server {:?}: {reason}",
            backend.name
        );
        skipped.push(SkippedTool {
            name: name.to_owned(),
            reason,
        });
    };
    for tool in tools {
        let front = core.policy.front_name(&backend.name, &tool.name);
        if let Some(reason) = core.policy.refusal(&backend.name, &tool.name) {
            core.denied.write().insert(front, backend.name.clone());
            skip(&tool.name, reason.to_owned());
            continue;
        }
        // A schema that cannot be read or is over a bound: not served, for that reason.
        let (input, output) = match (tool.input_schema(), tool.output_schema()) {
            (Ok(input), Ok(output)) => (input, output),
            (Err(error), _) | (_, Err(error)) => {
                let reason = tool.schema_problem().map(str::to_owned);
                skip(&tool.name, reason.unwrap_or_else(|| error.to_string()));
                continue;
            }
        };
        let resolved = core.policy.resolve(&backend.name, &tool.name);
        let hinted = tool.annotations.idempotent_hint == Some(true)
            || tool.annotations.read_only_hint == Some(true);
        let idempotent = resolved.idempotent.unwrap_or(hinted);
        let mut options = resolved.options.idempotent(idempotent);
        if idempotent {
            // A call that met its backend's death is sent once more (its client starts the
            // backend again for it).
            options = options.retry(RetryPolicy::resend_once());
        }
        let Some(client) = backend.client() else {
            skip(&tool.name, "its server is not connected".into());
            continue;
        };
        let imported = match ImportedTool::new(
            front.clone(),
            tool,
            client,
            options,
            Some(backend.admission.clone()),
        ) {
            Ok(imported) => imported,
            Err(error) => {
                skip(&tool.name, error.to_string());
                continue;
            }
        };
        core.owners
            .write()
            .insert(front.clone(), (backend.name.clone(), tool.name.clone()));
        let front_tool = Arc::new(FrontTool { imported });
        let handler_core = Arc::downgrade(core);
        let handler_backend = Arc::clone(backend);
        let handler_tool = Arc::clone(&front_tool);
        // The forwarded call holds the result to the policy's limit and checks the arguments
        // (the harness's checks, once): the served tool adds neither, only its outer bound.
        let front_options = ToolOptions::new()
            .timeout(ToolTimeout::Custom(
                options.timeout.duration() + FRONT_GRACE,
            ))
            .allow_large_integers(true)
            .result_limit(ResultLimit::new(
                MAX_RESULT_CHARS,
                ResultLimit::default().overflow,
            ));
        let mut served_tool = LocalTool::with_context(
            front.clone(),
            tool.description.clone().unwrap_or_default(),
            input,
            move |context, arguments| {
                let (Some(core), Some(context)) =
                    (handler_core.upgrade(), RequestContext::of(context))
                else {
                    return Ok(crate::mcp::CallToolResult::error("the gateway is closing"));
                };
                forward::call(&core, &handler_backend, &handler_tool, context, arguments)
                    .map_err(crate::server::HandlerError::into_failure)
            },
        )
        .check_schemas(false)
        .annotations(tool.annotations)
        .options(front_options);
        if let Some(title) = &tool.title {
            served_tool = served_tool.title(title.clone());
        }
        if let Some(output) = output {
            served_tool = served_tool.output_schema(output);
        }
        change = change.add_tool(served_tool);
        planned.push(front);
        remotes.push(tool.name.clone());
    }
    (
        change,
        ServedTools {
            tools: planned,
            remotes,
            skipped,
        },
    )
}
