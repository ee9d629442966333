//! The owner's side of a task on a shared store: the lease that says its instance is alive
//! (renewed every third of [`ServerConfig::task_lease`](super::ServerConfig::task_lease) by
//! one thread while the instance runs tasks), and the pokes by which another instance that
//! answered `tasks/update` or `tasks/cancel` tells the owner to run the next round or stop.
//! A poke is an optimization: the lease's round looks at every task it renews anyway, so a
//! lost one costs at most a third of the lease.

use std::sync::{Arc, Weak};

use super::record::{self, lease_key, Status};
use super::{admit, finish, Owned};
use crate::server::context::InputRound;
use crate::server::Shared;

/// The channel on which instance `instance` hears about its tasks.
fn channel(instance: &str) -> String {
    format!("instance:{instance}")
}

/// Starts the lease thread unless it runs.
pub(in crate::server) fn start(server: &Arc<Shared>) {
    let mut leasing = server.tasks.leasing.lock();
    if *leasing {
        return;
    }
    let weak = Arc::downgrade(server);
    let every = server.config.task_lease / 3;
    let started = std::thread::Builder::new()
        .name("toolwire-task-lease".into())
        .spawn(move || renew(&weak, every));
    match started {
        Ok(_) => *leasing = true,
        Err(error) => {
            log::warn!(target: crate::server::LOG_TARGET, "the task lease thread did not start: {error}");
        }
    }
}

/// Renews the leases of the tasks this instance runs until there are none (or the server is
/// gone).
fn renew(weak: &Weak<Shared>, every: std::time::Duration) {
    loop {
        std::thread::sleep(every);
        let Some(server) = weak.upgrade() else { return };
        let running = server.tasks.running();
        if running.is_empty() {
            let mut leasing = server.tasks.leasing.lock();
            if server.tasks.running().is_empty() {
                *leasing = false;
                return;
            }
            continue;
        }
        for task in running {
            let unwritten = task.run.lock().unwritten.take();
            if let Some((run, outcome)) = unwritten {
                finish(&server, &task, run, outcome);
            }
            let renewed = server.store.put(
                &lease_key(&task.id),
                server.instance.as_bytes(),
                server.config.task_lease,
            );
            if let Err(error) = renewed {
                log::debug!(target: crate::server::LOG_TARGET, "the lease of task {} was not renewed: {error}", task.id);
            }
            check(&server, &task);
        }
    }
}

/// Brings a task this instance runs in line with its record: stops it when it was cancelled
/// (or failed elsewhere), runs its next round when its input came in.
pub(super) fn check(server: &Arc<Shared>, task: &Arc<Owned>) {
    let record = match record::load(server, &task.id) {
        Ok(record) => record,
        Err(error) => {
            log::debug!(target: crate::server::LOG_TARGET, "task {} was not read: {error:?}", task.id);
            return;
        }
    };
    let Some((_, record)) = record else {
        task.run.lock().done = true;
        task.call.cancel.cancel();
        return;
    };
    if record.status.is_terminal() {
        let timer = {
            let mut run = task.run.lock();
            run.done = true;
            run.timer.take()
        };
        if let Some(key) = timer {
            crate::timer::TimerWheel::global().cancel(key);
        }
        if record.status != Status::Completed {
            task.call.cancel.cancel();
        }
        return;
    }
    let started = task.run.lock().started;
    if record.status == Status::Working && record.run > started {
        let round = InputRound {
            responses: record.answers.clone(),
            state: record.state.clone(),
        };
        if !admit(server, task, record.run, Some(round)) {
            log::debug!(target: crate::server::LOG_TARGET, "task {}'s next round waits for a worker", task.id);
        }
    }
}

/// Tells the instance `owner` that task `id` changed: at once when it is this one, else
/// through the store (a poke lost is caught by the owner's next lease round).
pub(super) fn poke(server: &Arc<Shared>, id: &str, owner: &str) {
    if owner == server.instance {
        if let Some(task) = server.tasks.get(id) {
            check(server, &task);
        }
        return;
    }
    if let Err(error) = server.store.publish(&channel(owner), id.as_bytes()) {
        log::debug!(target: crate::server::LOG_TARGET, "task {id}'s owner was not told: {error}");
    }
}

/// Hears this instance's pokes (a shared store only).
pub(in crate::server) fn listen(server: &Arc<Shared>) -> Result<(), crate::server::StoreError> {
    let weak = Arc::downgrade(server);
    server.store.subscribe(
        &channel(&server.instance),
        Arc::new(move |message: &[u8]| {
            let Ok(id) = std::str::from_utf8(message) else {
                return;
            };
            if id.len() > 64 {
                return;
            }
            let Some(server) = weak.upgrade() else { return };
            if let Some(task) = server.tasks.get(id) {
                check(&server, &task);
            }
        }),
    )
}
