//! The backends' skills (the Skills extension, SEP-2640) through the gateway: their entries
//! keep their URIs and names, as resources do (the skill files are the backends' resources,
//! served by the resource pass-through); a skill URI two backends list is served from the
//! first in the config's order, and the clash is in the start report and the log.
//!
//! `skills/list` merges the backends' listings (each read in full, bounded by the backend
//! client's paging limits) and pages the result itself; `skills/get` and
//! `resources/directory/read` go to the backends in the config's order, and the first that
//! answers wins. Entries pass through as the backend sent them: the front client verifies
//! what it reads against them, and the gateway never alters a file.

use std::sync::{Arc, Weak};

use serde_json::{json, Map, Value};

use super::{Clash, Core, LOG_TARGET};
use crate::client::CallOptions;
use crate::mcp::{methods, McpClient, SKILLS_EXTENSION};
use crate::server::{HandlerError, Method};

/// The most entries of one front `skills/list` page.
const PAGE: usize = 50;

/// Declares the extension and serves its methods when a backend of `order` (those started,
/// in the config's order) declares it; returns the skill URIs two backends list, as clashes
/// of the later one (by its name).
pub(super) fn serve(core: &Arc<Core>, order: Vec<String>) -> crate::Result<Vec<(String, Clash)>> {
    let mut clashes = Vec::new();
    let mut directory_read = false;
    let mut any = false;
    let mut seen: Vec<(String, String)> = Vec::new();
    for (name, client) in clients(core, &order) {
        let Some(settings) = declared(&client) else {
            continue;
        };
        any = true;
        directory_read |= settings["directoryRead"] == Value::Bool(true);
        let entries = match list(&client) {
            Ok(entries) => entries,
            Err(error) => {
                log::warn!(target: LOG_TARGET, "server {name:?}: its skills cannot be listed: {error}");
                continue;
            }
        };
        for entry in entries {
            let Some(uri) = entry["uri"].as_str() else {
                continue;
            };
            if let Some((_, first)) = seen.iter().find(|(known, _)| known == uri) {
                log::warn!(
                    target: LOG_TARGET,
                    "the skill {uri} of server {name:?} is served from server {first:?} (first in the config's order)"
                );
                clashes.push((
                    name.clone(),
                    Clash {
                        key: uri.to_owned(),
                        served_by: first.clone(),
                    },
                ));
            } else {
                seen.push((uri.to_owned(), name.clone()));
            }
        }
    }
    if !any {
        return Ok(clashes);
    }
    let order = Arc::new(order);
    let weak = Arc::downgrade(core);
    let (list_order, list_core) = (order.clone(), weak.clone());
    core.server
        .add_method(Method::new(methods::SKILLS_LIST, move |_, params| {
            skills_list(&list_core, &list_order, params)
        }))?;
    let (get_order, get_core) = (order.clone(), weak.clone());
    core.server
        .add_method(Method::new(methods::SKILLS_GET, move |_, params| {
            first_answer(&get_core, &get_order, methods::SKILLS_GET, params, false)
        }))?;
    if directory_read {
        core.server.add_method(Method::new(
            methods::RESOURCES_DIRECTORY_READ,
            move |_, params| {
                first_answer(
                    &weak,
                    &order,
                    methods::RESOURCES_DIRECTORY_READ,
                    params,
                    true,
                )
            },
        ))?;
    }
    let settings = if directory_read {
        json!({"directoryRead": true})
    } else {
        json!({})
    };
    core.server.declare_extension(SKILLS_EXTENSION, settings);
    Ok(clashes)
}

/// The connected backends among `order`, in that order.
fn clients(core: &Core, order: &[String]) -> Vec<(String, McpClient)> {
    let backends = core.backends.read();
    order
        .iter()
        .filter_map(|name| {
            let client = backends.get(name)?.client()?.clone();
            Some((name.clone(), client))
        })
        .collect()
}

/// The backend's settings of the extension, when it declares it.
fn declared(client: &McpClient) -> Option<Value> {
    let info = client.session_info().ok()?;
    info.capabilities
        .get("extensions")?
        .get(SKILLS_EXTENSION)
        .cloned()
}

/// The backend's entries, as it sent them (each one a host could load).
fn list(client: &McpClient) -> crate::Result<Vec<Value>> {
    Ok(client
        .list_skills()?
        .into_iter()
        .map(|entry| entry.raw)
        .collect())
}

fn closing() -> HandlerError {
    HandlerError::internal("the gateway is closing")
}

fn skills_list(core: &Weak<Core>, order: &[String], params: &Value) -> Result<Value, HandlerError> {
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => cursor
            .strip_prefix("skills:")
            .and_then(|offset| offset.parse().ok())
            .ok_or_else(|| HandlerError::invalid_params("an unknown cursor"))?,
        Some(_) => return Err(HandlerError::invalid_params("`cursor` is not a string")),
    };
    let core = core.upgrade().ok_or_else(closing)?;
    let mut merged: Vec<Value> = Vec::new();
    for (name, client) in clients(&core, order) {
        if declared(&client).is_none() {
            continue;
        }
        match list(&client) {
            Ok(entries) => {
                for entry in entries {
                    if !merged.iter().any(|known| known["uri"] == entry["uri"]) {
                        merged.push(entry);
                    }
                }
            }
            Err(error) => log::debug!(
                target: LOG_TARGET,
                "server {name:?}: its skills cannot be listed: {error}"
            ),
        }
    }
    let total = merged.len();
    let end = (start + PAGE).min(total);
    let page: Vec<Value> = merged.drain(start.min(end)..end).collect();
    let mut result = json!({"skills": page});
    if end < total {
        result["nextCursor"] = Value::from(format!("skills:{end}"));
    }
    Ok(result)
}

/// Asks the backends declaring the extension (with `directoryRead` when `directory`) in the
/// config's order; the first answer is the front's. None answering is -32602.
fn first_answer(
    core: &Weak<Core>,
    order: &[String],
    method: &str,
    params: &Value,
    directory: bool,
) -> Result<Value, HandlerError> {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| HandlerError::invalid_params(format!("{method} needs a `uri`")))?;
    let core = core.upgrade().ok_or_else(closing)?;
    let mut forwarded = Map::new();
    forwarded.insert("uri".into(), Value::from(uri));
    if let Some(cursor) = params.get("cursor").filter(|cursor| !cursor.is_null()) {
        forwarded.insert("cursor".into(), cursor.clone());
    }
    for (_, client) in clients(&core, order) {
        let Some(settings) = declared(&client) else {
            continue;
        };
        if directory && settings["directoryRead"] != Value::Bool(true) {
            continue;
        }
        let answer = client.request(method, Value::Object(forwarded.clone()), CallOptions::new());
        if let Ok(Value::Object(mut result)) = answer {
            // The backend's envelope is its own; the front stamps its own.
            for key in ["_meta", "resultType", "ttlMs", "cacheScope"] {
                result.remove(key);
            }
            return Ok(Value::Object(result));
        }
    }
    Err(HandlerError::invalid_params(format!(
        "no server behind this gateway answers {method} for {uri}"
    )))
}
