//! Front tool names two backends both give (under the policy's `namespace`, most often
//! `"{tool}"`): the first backend in the config's order serves the name, whenever the
//! backends join. A later backend that joined first gives the name up when the earlier one
//! joins (or lists it after a change); a backend that gave a name up, or was refused it,
//! serves it once the owner stops listing it (it is listed again then). Every clash is
//! logged at `warn` and in `toolwire/stats`'s `clashes`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use serde_json::{json, Value};

use super::backend::Backend;
use super::{Clash, Core, LOG_TARGET};
use crate::server::CatalogChange;

/// A front tool name one backend lists and another serves.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ToolClash {
    front: String,
    /// The backend that lists it and does not serve it.
    server: String,
    /// The backend that serves it (earlier in the config's order, or alone there first).
    served_by: String,
}

/// The tool clashes now, and the lock that serves one backend's listing at a time.
#[derive(Default)]
pub(crate) struct Names {
    order: Mutex<()>,
    clashes: Mutex<Vec<ToolClash>>,
}

impl Names {
    /// Held while a listing is served: who owns a name is decided by one listing at a time.
    pub(crate) fn serialize(&self) -> MutexGuard<'_, ()> {
        self.order.lock()
    }

    /// The tool clashes, as `toolwire/stats` lists them.
    pub(crate) fn to_json(&self) -> Vec<Value> {
        self.clashes
            .lock()
            .iter()
            .map(|clash| {
                json!({"kind": "tool", "name": clash.front, "server": clash.server,
                       "served_by": clash.served_by})
            })
            .collect()
    }

    /// The tool clashes of `server` (the names it lists and does not serve).
    pub(crate) fn of(&self, server: &str) -> Vec<Clash> {
        self.clashes
            .lock()
            .iter()
            .filter(|clash| clash.server == server)
            .map(|clash| Clash {
                key: clash.front.clone(),
                served_by: clash.served_by.clone(),
            })
            .collect()
    }
}

/// Before `backend`'s tools `planned` (front names) are served: takes each name a backend
/// later in the config's order serves from it (removed in the same `change`), and forgets
/// the clashes `backend` had as the one not serving (its listing decides them again).
pub(super) fn claim(
    core: &Arc<Core>,
    backend: &Arc<Backend>,
    planned: &[String],
    mut change: CatalogChange,
) -> CatalogChange {
    let rank = core.roster.rank(&backend.name);
    let backends: Vec<Arc<Backend>> = core.backends.read().values().cloned().collect();
    let mut clashes = core.names.clashes.lock();
    clashes.retain(|clash| clash.server != backend.name);
    // One pass over each later backend's served names, looked up in a set of the planned
    // ones: a name-by-name search was planned × served comparisons (two backends of 10,000
    // tools took twice as long to be ready as one).
    let planned: HashSet<&str> = planned.iter().map(String::as_str).collect();
    for other in &backends {
        if other.name == backend.name || core.roster.rank(&other.name) < rank {
            continue;
        }
        let mut taken = Vec::new();
        other.served.lock().retain(|name| {
            let clash = planned.contains(name.as_str());
            if clash {
                taken.push(name.clone());
            }
            !clash
        });
        for front in taken {
            log::warn!(
                target: LOG_TARGET,
                "the tool {front:?} of server {:?} is no longer served: server {:?}, earlier \
                 in the config's order, lists the same name and serves it",
                other.name,
                backend.name
            );
            change = change.remove_tool(front.clone());
            clashes.push(ToolClash {
                front: front.clone(),
                server: other.name.clone(),
                served_by: backend.name.clone(),
            });
            core.roster.lose_tool(
                &other.name,
                Clash {
                    key: front,
                    served_by: backend.name.clone(),
                },
            );
        }
    }
    change
}

/// Which backend serves each front name, besides the one being listed: built on the first
/// refusal of a listing, then looked up (one pass over every other backend's served names,
/// not one per refused name).
#[derive(Default)]
pub(super) struct Holders(Option<HashMap<String, String>>);

impl Holders {
    fn get(&mut self, core: &Core, backend: &Backend, front: &str) -> Option<String> {
        let index = self.0.get_or_insert_with(|| {
            let mut index = HashMap::new();
            for other in core.backends.read().values() {
                if other.name == backend.name {
                    continue;
                }
                for name in other.served.lock().iter() {
                    index
                        .entry(name.clone())
                        .or_insert_with(|| other.name.clone());
                }
            }
            index
        });
        index.get(front).cloned()
    }
}

/// A front name of `backend`'s the front server refused because another backend serves it:
/// logged at `warn` and recorded; `owner` (the name's owner before `backend`'s tools were
/// planned, for the counters) is set back. Returns the backend that serves it; `None` when none does (the name was refused for
/// another reason). `holders` is the listing's index of who serves what.
pub(super) fn refused(
    core: &Core,
    backend: &Backend,
    front: &str,
    owner: Option<(String, String)>,
    holders: &mut Holders,
) -> Option<String> {
    let served_by = holders.get(core, backend, front)?;
    if let Some(owner) = owner {
        core.owners.write().insert(front.to_owned(), owner);
    }
    log::warn!(
        target: LOG_TARGET,
        "the tool {front:?} of server {:?} is not served: server {served_by:?}, earlier in the \
         config's order, lists the same name and serves it",
        backend.name
    );
    // No record of `backend` is left to replace: `claim` dropped them when this listing
    // began, and one listing at a time decides names (a search per refused name was
    // quadratic when every name clashes).
    core.names.clashes.lock().push(ToolClash {
        front: front.to_owned(),
        server: backend.name.clone(),
        served_by: served_by.clone(),
    });
    Some(served_by)
}

/// After `backend`'s tools were served: the backends that gave up (or were refused) a name
/// `backend` served and serves no longer are listed again, so they serve it now.
pub(super) fn release(core: &Arc<Core>, backend: &Backend) -> Vec<Arc<Backend>> {
    let served = backend.served.lock().clone();
    let mut clashes = core.names.clashes.lock();
    let (freed, kept): (Vec<ToolClash>, Vec<ToolClash>) = clashes
        .drain(..)
        .partition(|clash| clash.served_by == backend.name && !served.contains(&clash.front));
    *clashes = kept;
    drop(clashes);
    let backends = core.backends.read();
    let mut again: Vec<Arc<Backend>> = Vec::new();
    for clash in freed {
        if let Some(other) = backends.get(&clash.server) {
            if !again.iter().any(|known| known.name == other.name) {
                again.push(Arc::clone(other));
            }
        }
    }
    again
}
