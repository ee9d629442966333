//! Resource subscriptions at a backend that speaks 2026-07-28, which has no
//! `resources/subscribe`: the gateway holds one `subscriptions/listen` request open to it,
//! naming every URI of it the front clients are subscribed to, and opens it again with the
//! new set whenever that set changes (the old one is cancelled). Its
//! `notifications/resources/updated` reach the backend's client's notification handler as a
//! handshake-era backend's do, and go on to the subscribed front clients.
//!
//! One thread per such backend while any of its URIs is subscribed (it ends with the last
//! unsubscription, when the gateway goes, or when the backend cannot be asked: its restart
//! or the next change of the set starts another); a listen that ends by itself (the
//! backend's bound, its death) is opened again after [`REOPEN_PAUSE`], each one asked for at
//! most [`LISTEN_BOUND`].

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::{Condvar, Mutex};
use serde_json::json;

use super::backend::Backend;
use super::{catalog, masked, Core, LOG_TARGET};
use crate::client::CallOptions;

/// The method that opens a 2026-07-28 subscription.
const LISTEN: &str = "subscriptions/listen";
/// How long one listen request is asked to stay open (the servers' own bound is an hour);
/// it is opened again when it ends.
const LISTEN_BOUND: Duration = Duration::from_secs(3600);
/// The pause before a listen that ended by itself (or failed) is opened again.
const REOPEN_PAUSE: Duration = Duration::from_secs(1);

/// The listening threads, by backend name: each is told when its set of URIs changed.
#[derive(Default)]
pub(crate) struct Listens {
    running: Mutex<HashMap<String, Sender<()>>>,
    /// How many listens each backend has acknowledged.
    acknowledged: Mutex<HashMap<String, u64>>,
    acknowledging: Condvar,
}

impl Listens {
    /// `backend` acknowledged a listen: it sends the updates of its URIs from now on.
    pub(crate) fn acknowledged(&self, backend: &str) {
        *self
            .acknowledged
            .lock()
            .entry(backend.to_owned())
            .or_insert(0) += 1;
        self.acknowledging.notify_all();
    }

    fn acknowledgements(&self, backend: &str) -> u64 {
        self.acknowledged.lock().get(backend).copied().unwrap_or(0)
    }

    /// Waits until `backend` has acknowledged more than `seen` listens, or `until`.
    fn wait_acknowledged(&self, backend: &str, seen: u64, until: Instant) -> bool {
        let mut acknowledged = self.acknowledged.lock();
        loop {
            if acknowledged.get(backend).copied().unwrap_or(0) > seen {
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

/// The front clients' subscriptions to `backend`'s resources changed: its listen is opened
/// again with the new set (started when none runs, ended when the set is empty). With
/// `until`, waits (until then) for the backend to acknowledge the new listen, so that a
/// subscription answered is one the backend sends updates for.
pub(crate) fn refresh(core: &Arc<Core>, backend: &Arc<Backend>, until: Option<Instant>) {
    let seen = core.subscriptions.listens.acknowledgements(&backend.name);
    if start_or_tell(core, backend) {
        if let Some(until) = until {
            if !core
                .subscriptions
                .listens
                .wait_acknowledged(&backend.name, seen, until)
            {
                log::warn!(
                    target: LOG_TARGET,
                    "server {:?} did not acknowledge the subscriptions in time",
                    backend.name
                );
            }
        }
    }
}

/// Tells the backend's thread its set changed, or starts one; false when there is nothing
/// to listen for.
fn start_or_tell(core: &Arc<Core>, backend: &Arc<Backend>) -> bool {
    let mut running = core.subscriptions.listens.running.lock();
    if let Some(changed) = running.get(&backend.name) {
        // A full channel already holds a change the thread has not seen.
        let _ = changed.try_send(());
        return true;
    }
    if catalog::subscribed_by(core, backend).is_empty() {
        return false;
    }
    let (changed, seen) = bounded(1);
    let (weak, backend_weak) = (Arc::downgrade(core), Arc::downgrade(backend));
    let started = std::thread::Builder::new()
        .name(format!("toolwire-listen-{}", backend.name))
        .spawn(move || follow(&weak, &backend_weak, &seen));
    match started {
        Ok(_) => {
            running.insert(backend.name.clone(), changed);
            true
        }
        Err(error) => {
            log::warn!(
                target: LOG_TARGET,
                "no thread to follow the subscriptions at server {:?}: {error}",
                backend.name
            );
            false
        }
    }
}

/// The listening thread of one backend.
fn follow(core: &Weak<Core>, backend: &Weak<Backend>, changed: &Receiver<()>) {
    loop {
        let (Some(core), Some(backend)) = (core.upgrade(), backend.upgrade()) else {
            return;
        };
        let uris = {
            // The set is read under the threads' lock, so a change is never sent to a
            // thread that has decided to end.
            let mut running = core.subscriptions.listens.running.lock();
            let uris = catalog::subscribed_by(&core, &backend);
            if uris.is_empty() {
                running.remove(&backend.name);
                return;
            }
            uris
        };
        let Some(client) = backend.client().cloned() else {
            return;
        };
        let params = json!({"notifications": {"resourceSubscriptions": uris}});
        let options = CallOptions::new().timeout(LISTEN_BOUND);
        let mut pause = true;
        match client.start_request(LISTEN, params, options) {
            Ok(mut handle) => {
                drop((core, backend));
                match handle.wait_or(&[changed]) {
                    // The set changed: the handle dropped cancels the old listen.
                    None => pause = false,
                    Some(Ok(_)) => {}
                    Some(Err(error)) => log::debug!(
                        target: LOG_TARGET,
                        "the subscriptions listen ended: {}",
                        masked(&error)
                    ),
                }
            }
            Err(error) => {
                // Closed, or not to be started again now: the thread ends (a restart or the
                // next change of the set starts another).
                log::warn!(
                    target: LOG_TARGET,
                    "server {:?} could not be asked for the subscriptions: {}",
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
        }
        if pause {
            // Opened again after a pause, sooner when the set changes.
            let _ = changed.recv_timeout(REOPEN_PAUSE);
        } else {
            while changed.try_recv().is_ok() {}
        }
    }
}
