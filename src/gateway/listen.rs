//! A backend that speaks 2026-07-28 sends notifications only on a `subscriptions/listen`
//! request: the gateway holds one open to it, asking for the list changes it declares
//! (`listChanged` of its tools, resources, prompts) and for the updates of every URI of it
//! the front clients are subscribed to, and opens it again with the new set whenever that
//! set changes. Its `notifications/*/list_changed` and `notifications/resources/updated`
//! reach the backend's client's notification handler as a handshake-era backend's do: a
//! list change re-lists that kind (`lists.rs`), an update goes on to the subscribed front
//! clients.
//!
//! One thread per such backend, from when it joins (when it declares a list change) or while
//! any of its URIs is subscribed; it ends when there is nothing left to listen for, when the
//! gateway goes, or when the backend cannot be asked (its restart or the next change of the
//! set starts another). The join waits (at most [`ACK_WAIT`], 10 s, and the start timeout)
//! for the first listen's acknowledgement and lists the backend again after it, so a change
//! made while the listen was being opened is served. A listen opened again for a new set is acknowledged (at most
//! [`ACK_WAIT`]) before the old one is cancelled, so no change falls between them (one that
//! comes while both are open may be heard twice); a listen that ends by itself (the
//! backend's bound, its death) is opened again after [`REOPEN_PAUSE`] and the lists it
//! follows are listed again once it is acknowledged (its front clients may then be told of
//! a change that was none). Each listen is asked for at most [`LISTEN_BOUND`].

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::{Condvar, Mutex};
use serde_json::{json, Map, Value};

use super::backend::Backend;
use super::catalog::{PROMPTS, RESOURCES, TOOLS};
use super::{catalog, masked, Core, LOG_TARGET};
use crate::client::{CallHandle, CallOptions};

/// The method that opens a 2026-07-28 subscription.
const LISTEN: &str = "subscriptions/listen";
/// How long one listen request is asked to stay open (the servers' own bound is an hour);
/// it is opened again when it ends.
const LISTEN_BOUND: Duration = Duration::from_secs(3600);
/// The pause before a listen that ended by itself (or failed) is opened again.
const REOPEN_PAUSE: Duration = Duration::from_secs(1);
/// How long a listen opened again waits for its acknowledgement before the old one is
/// cancelled, and a joining backend's first listen before it is served.
pub(crate) const ACK_WAIT: Duration = Duration::from_secs(10);

/// The listening threads, by backend name: each is told when its set of URIs changed.
#[derive(Default)]
pub(crate) struct Listens {
    running: Mutex<HashMap<String, Sender<()>>>,
    /// Each backend's listens: read, opened and acknowledged.
    acknowledged: Mutex<HashMap<String, Acks>>,
    acknowledging: Condvar,
}

/// The counts of one backend's listens.
#[derive(Default, Clone, Copy)]
struct Acks {
    /// Acknowledgements the backend sent.
    sent: u64,
    /// Sets its thread read (under the threads' lock), each the number of its listen.
    read: u64,
    /// The number of the last listen acknowledged.
    listening: u64,
}

impl Listens {
    /// `backend` acknowledged a listen: it sends what that listen asked for from now on.
    pub(crate) fn acknowledged(&self, backend: &str) {
        self.update(backend, |acks| acks.sent += 1);
    }

    fn update(&self, backend: &str, change: impl FnOnce(&mut Acks)) -> Acks {
        let mut acknowledged = self.acknowledged.lock();
        let acks = acknowledged.entry(backend.to_owned()).or_default();
        change(acks);
        let now = *acks;
        drop(acknowledged);
        self.acknowledging.notify_all();
        now
    }

    fn acks(&self, backend: &str) -> Acks {
        self.acknowledged
            .lock()
            .get(backend)
            .copied()
            .unwrap_or_default()
    }

    /// Waits until `backend`'s counts pass `done`, or `until`.
    fn wait(&self, backend: &str, until: Instant, done: impl Fn(Acks) -> bool) -> bool {
        let mut acknowledged = self.acknowledged.lock();
        loop {
            if done(acknowledged.get(backend).copied().unwrap_or_default()) {
                return true;
            }
            if self
                .acknowledging
                .wait_until(&mut acknowledged, until)
                .timed_out()
            {
                return false;
            }
        }
    }
}

/// The lists a 2026-07-28 `backend` says it notifies changes of (none for a backend of the
/// handshake era, which notifies them on its session).
pub(crate) fn followed_lists(backend: &Backend) -> u8 {
    let Some(info) = backend
        .client()
        .and_then(|client| client.session_info().ok())
    else {
        return 0;
    };
    if info.era != crate::mcp::Era::Stateless {
        return 0;
    }
    [
        ("tools", TOOLS),
        ("resources", RESOURCES),
        ("prompts", PROMPTS),
    ]
    .into_iter()
    .filter(|(kind, _)| info.capabilities[*kind]["listChanged"] == Value::Bool(true))
    .fold(0, |kinds, (_, kind)| kinds | kind)
}

/// A joining 2026-07-28 backend that declares list changes: its listen is opened, and waited
/// for until `until`; true when the backend acknowledged it (its lists are then to be listed
/// again: a change before the acknowledgement was not heard).
pub(crate) fn join(core: &Arc<Core>, backend: &Arc<Backend>, until: Instant) -> bool {
    followed_lists(backend) != 0 && refresh(core, backend, Some(until))
}

/// The front clients' subscriptions to `backend`'s resources changed: its listen is opened
/// again with the new set (started when none runs, ended when there is nothing to listen
/// for). With `until`, waits (until then) for the backend to acknowledge the new listen, so
/// that a subscription answered is one the backend sends updates for; true when it did.
pub(crate) fn refresh(core: &Arc<Core>, backend: &Arc<Backend>, until: Option<Instant>) -> bool {
    let Some(before) = start_or_tell(core, backend) else {
        return false;
    };
    let Some(until) = until else {
        return false;
    };
    // A listen whose set was read after this change, acknowledged.
    let acknowledged = core
        .subscriptions
        .listens
        .wait(&backend.name, until, |acks| acks.listening > before);
    if !acknowledged {
        log::warn!(
            target: LOG_TARGET,
            "server {:?} did not acknowledge its subscriptions listen in time",
            backend.name
        );
    }
    acknowledged
}

/// What to ask of `backend`'s listen: its lists followed and its URIs subscribed; `None`
/// when there is nothing to listen for.
fn wanted(core: &Core, backend: &Backend) -> Option<(u8, Vec<String>)> {
    let (kinds, uris) = (
        followed_lists(backend),
        catalog::subscribed_by(core, backend),
    );
    (kinds != 0 || !uris.is_empty()).then_some((kinds, uris))
}

/// The params of a listen asking for `kinds`' list changes and `uris`' updates.
fn listen_params(kinds: u8, uris: Vec<String>) -> Value {
    let mut notifications = Map::new();
    for (key, kind) in [
        ("toolsListChanged", TOOLS),
        ("resourcesListChanged", RESOURCES),
        ("promptsListChanged", PROMPTS),
    ] {
        if kinds & kind != 0 {
            notifications.insert(key.into(), Value::Bool(true));
        }
    }
    if !uris.is_empty() {
        notifications.insert("resourceSubscriptions".into(), json!(uris));
    }
    json!({ "notifications": notifications })
}

/// Tells the backend's thread its set changed, or starts one; the number of the last set
/// read before the change, or `None` when there is nothing to listen for.
fn start_or_tell(core: &Arc<Core>, backend: &Arc<Backend>) -> Option<u64> {
    let mut running = core.subscriptions.listens.running.lock();
    let before = core.subscriptions.listens.acks(&backend.name).read;
    if let Some(changed) = running.get(&backend.name) {
        // A full channel already holds a change the thread has not seen.
        let _ = changed.try_send(());
        return Some(before);
    }
    wanted(core, backend)?;
    let (changed, seen) = bounded(1);
    let (weak, backend_weak) = (Arc::downgrade(core), Arc::downgrade(backend));
    let started = std::thread::Builder::new()
        .name(format!("toolwire-listen-{}", backend.name))
        .spawn(move || follow(&weak, &backend_weak, &seen));
    match started {
        Ok(_) => {
            running.insert(backend.name.clone(), changed);
            Some(before)
        }
        Err(error) => {
            log::warn!(
                target: LOG_TARGET,
                "no thread to follow the notifications of server {:?}: {error}",
                backend.name
            );
            None
        }
    }
}

/// How a listen came to be opened (again); each is waited for (at most [`ACK_WAIT`]) and
/// numbered as acknowledged once the backend acknowledges it.
#[derive(PartialEq)]
enum Opening {
    /// The first of the thread (a joining backend is listed again by the join).
    First,
    /// The set changed: the old listen (held) is cancelled once this one is acknowledged.
    Changed,
    /// The last ended by itself: the lists followed are listed again once acknowledged.
    Ended,
}

/// The listening thread of one backend.
fn follow(core: &Weak<Core>, backend: &Weak<Backend>, changed: &Receiver<()>) {
    let mut opening = Opening::First;
    // The listen before a change of the set, held until the new one is acknowledged.
    let mut previous: Option<CallHandle> = None;
    loop {
        let (Some(core), Some(backend)) = (core.upgrade(), backend.upgrade()) else {
            return;
        };
        let (kinds, uris, number, sent) = {
            // The set is read and numbered under the threads' lock, so a change is never sent
            // to a thread that has decided to end, and a listen numbered after a change asks
            // for it.
            let mut running = core.subscriptions.listens.running.lock();
            let Some((kinds, uris)) = wanted(&core, &backend) else {
                running.remove(&backend.name);
                return;
            };
            let acks = core
                .subscriptions
                .listens
                .update(&backend.name, |acks| acks.read += 1);
            (kinds, uris, acks.read, acks.sent)
        };
        let Some(client) = backend.client().cloned() else {
            return;
        };
        let options = CallOptions::new().timeout(LISTEN_BOUND);
        let mut handle = match client.start_request(LISTEN, listen_params(kinds, uris), options) {
            Ok(handle) => handle,
            Err(error) => {
                // Closed, or not to be started again now: the thread ends (a restart or the
                // next change of the set starts another).
                log::warn!(
                    target: LOG_TARGET,
                    "server {:?} could not be asked for its notifications: {}",
                    backend.name,
                    masked(&error)
                );
                core.subscriptions
                    .listens
                    .running
                    .lock()
                    .remove(&backend.name);
                return;
            }
        };
        // Its acknowledgement is the next the backend sends (this thread is its only
        // listener).
        let listens = &core.subscriptions.listens;
        let until = Instant::now() + ACK_WAIT;
        if listens.wait(&backend.name, until, |acks| acks.sent > sent) {
            listens.update(&backend.name, |acks| {
                acks.listening = acks.listening.max(number);
            });
            if opening == Opening::Ended && kinds != 0 {
                super::lists::relist_soon(&Arc::downgrade(&core), &backend, kinds);
            }
        }
        // The old listen is cancelled as its handle goes.
        drop((previous.take(), core, backend));
        let mut pause = true;
        match handle.wait_or(&[changed]) {
            // The set changed: the old listen is held until the new one is acknowledged.
            None => {
                pause = false;
                previous = Some(handle);
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => log::debug!(
                target: LOG_TARGET,
                "the subscriptions listen ended: {}",
                masked(&error)
            ),
        }
        if pause {
            opening = Opening::Ended;
            // Opened again after a pause, sooner when the set changes.
            let _ = changed.recv_timeout(REOPEN_PAUSE);
        } else {
            opening = Opening::Changed;
            while changed.try_recv().is_ok() {}
        }
    }
}
