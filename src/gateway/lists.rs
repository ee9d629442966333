//! Serving a backend's lists (tools, resources, templates, prompts) through the front
//! server, and serving them again when the backend says they changed.

use std::sync::{Arc, Weak};

use super::backend::{Backend, Event, Events};
use super::catalog::{self, Listed, Served, SUBSCRIPTIONS, TOOLS};
use super::forward::{self, FrontTool};
use super::{masked, Clash, Core, StartedBackend, FRONT_GRACE, LOG_TARGET};
use crate::harness::{SkippedTool, ToolSchema};
use crate::mcp::Tool;
use crate::server::{CatalogChange, ServerTool};

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
    if !backend.want_relist(kinds) {
        return;
    }
    let weak = weak.clone();
    let name = backend.name.clone();
    let flags = Arc::clone(backend);
    let backend = Arc::clone(backend);
    let spawned = std::thread::Builder::new()
        .name("toolwire-gateway-relist".into())
        .spawn(move || loop {
            let kinds = backend.take_pending();
            if kinds == 0 {
                return;
            }
            let Some(core) = weak.upgrade() else { return };
            relist(&core, &backend, kinds);
        });
    if let Err(error) = spawned {
        log::warn!(target: LOG_TARGET, "cannot re-list server {name:?}: {error}");
        // Leave the flags as a later change can use them.
        while flags.take_pending() != 0 {}
    }
}

/// Lists `kinds` of a backend again and serves the new lists in place of the old.
fn relist(core: &Arc<Core>, backend: &Arc<Backend>, kinds: u8) {
    let Some(client) = backend.client() else {
        return;
    };
    if kinds & TOOLS != 0 {
        match catalog::list_tools(client) {
            Ok(tools) => {
                let old: Vec<String> = std::mem::take(&mut *backend.served.lock());
                for name in &old {
                    core.server.remove_tool(name);
                }
                let (served, _, _) = serve_tools(core, backend, &tools);
                log::info!(
                    target: LOG_TARGET,
                    "server {:?} changed its tools: {} served now",
                    backend.name,
                    served.len()
                );
            }
            Err(error) => log::warn!(
                target: LOG_TARGET,
                "server {:?} changed its tools, but they cannot be listed: {}",
                backend.name,
                masked(&error)
            ),
        }
    }
    let others = kinds & !(TOOLS | SUBSCRIPTIONS);
    if others != 0 {
        let listed = catalog::list(client, others);
        for error in &listed.errors {
            log::warn!(
                target: LOG_TARGET,
                "server {:?} changed its lists, but {error}",
                backend.name
            );
        }
        let outcome = serve_listed(core, backend, &listed);
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
fn resubscribe(core: &Core, backend: &Backend, client: &crate::mcp::McpClient) {
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

/// Serves a backend's resources, templates and prompts in place of those served for it.
fn serve_listed(core: &Arc<Core>, backend: &Arc<Backend>, listed: &Listed) -> catalog::Outcome {
    let mut planned = Served::default();
    let change = catalog::prepare(core, backend, listed, CatalogChange::new(), &mut planned);
    let refused: Vec<String> = core
        .server
        .apply(change)
        .into_iter()
        .map(|refused| refused.key)
        .collect();
    catalog::settle(core, backend, listed, planned, &refused)
}

/// Serves what a backend listed at start; returns its part of the report.
pub(super) fn serve_started(
    core: &Arc<Core>,
    backend: &Arc<Backend>,
    tools: &[Tool],
    listed: &Listed,
) -> StartedBackend {
    let (served, skipped, mut missing) = serve_tools(core, backend, tools);
    let outcome = serve_listed(core, backend, listed);
    for error in &listed.errors {
        log::warn!(target: LOG_TARGET, "server {:?}: {error}", backend.name);
    }
    // An allow-list name is missing only when it is neither a tool nor a prompt.
    if let Some(prompts) = &listed.prompts {
        missing.retain(|name| !prompts.iter().any(|prompt| &prompt.name == name));
    }
    let clashes = outcome
        .clashes
        .iter()
        .map(|key| Clash {
            key: key.clone(),
            served_by: first_owner(core, backend, key),
        })
        .collect();
    StartedBackend {
        name: backend.name.clone(),
        tools: served,
        skipped,
        missing,
        prompts: outcome.prompts,
        skipped_prompts: outcome.skipped_prompts,
        resources: outcome.resources,
        templates: outcome.templates,
        clashes,
        unlisted: listed.errors.clone(),
    }
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

/// Serves a backend's tools as the policy says; returns the front names served, the tools
/// skipped, and allow-list names the backend does not offer.
pub(super) fn serve_tools(
    core: &Arc<Core>,
    backend: &Arc<Backend>,
    tools: &[Tool],
) -> (Vec<String>, Vec<SkippedTool>, Vec<String>) {
    let mut served = Vec::new();
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
        let schema = match ToolSchema::lazy(&front, tool.input_schema()) {
            Ok(schema) => schema,
            Err(error) => {
                skip(&tool.name, error.to_string());
                continue;
            }
        };
        let resolved = core.policy.resolve(&backend.name, &tool.name);
        let hinted = tool.annotations.idempotent_hint == Some(true)
            || tool.annotations.read_only_hint == Some(true);
        let front_tool = Arc::new(FrontTool {
            front: front.clone(),
            remote: tool.name.clone(),
            schema,
            options: resolved.options,
            idempotent: resolved.idempotent.unwrap_or(hinted),
        });
        let handler_core = Arc::downgrade(core);
        let handler_backend = Arc::clone(backend);
        let handler_tool = Arc::clone(&front_tool);
        let mut served_tool = ServerTool::new(
            front.clone(),
            tool.description.clone().unwrap_or_default(),
            tool.input_schema(),
            move |context, arguments| {
                let Some(core) = handler_core.upgrade() else {
                    return Ok(crate::server::ToolResult::error("the gateway is closing"));
                };
                Ok(forward::call(
                    &core,
                    &handler_backend,
                    &handler_tool,
                    context,
                    arguments,
                ))
            },
        )
        .unchecked()
        .annotations(tool.annotations)
        .timeout(front_tool.options.timeout.duration() + FRONT_GRACE);
        if let Some(title) = &tool.title {
            served_tool = served_tool.title(title.clone());
        }
        if let Some(output) = tool.output_schema() {
            served_tool = served_tool.output_schema(output);
        }
        match core.server.add_tool(served_tool) {
            Ok(()) => {
                backend.served.lock().push(front.clone());
                served.push(front);
            }
            Err(error) => skip(&tool.name, error.to_string()),
        }
    }
    let missing = core
        .policy
        .allowed(&backend.name)
        .map(|allow| {
            allow
                .iter()
                .filter(|wanted| !tools.iter().any(|tool| &tool.name == *wanted))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    (served, skipped, missing)
}
