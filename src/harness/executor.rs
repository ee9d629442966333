//! The admission executor: N named worker threads behind a zero-capacity hand-off
//! (`crossbeam_channel::bounded(0)`). A call is admitted only when a worker is free; otherwise
//! it is refused at once (`BUSY`), never queued.
//!
//! A bare `try_send` on a rendezvous channel has one blind spot: a worker that has just
//! answered a call is not yet back in `recv`, so the caller's very next call would be refused
//! although the worker is free. The executor therefore counts occupied workers itself: a job
//! holds its slot until the worker has finished it (the worker frees the slot *before* the
//! caller gets the answer), and a call is admitted only while the count is below N. An
//! admitted job is then handed over with `try_send`, or, in that blind spot, with a short
//! bounded `send_timeout` to the worker that is on its way back; either way nothing ever
//! waits in a queue.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::{Condvar, Mutex};

use super::audit::HARNESS_LOG_TARGET;

/// A unit of work; it receives its slot and should drop it as soon as its work is done.
pub(crate) type Job = Box<dyn FnOnce(SlotGuard) + Send>;

struct Slots {
    occupied: Mutex<usize>,
    freed: Condvar,
}

impl Slots {
    fn release(&self) {
        let mut occupied = self.occupied.lock();
        *occupied = occupied.saturating_sub(1);
        self.freed.notify_all();
    }
}

/// One occupied worker. Dropping it (also while unwinding) frees the worker's slot.
pub(crate) struct SlotGuard {
    slots: Arc<Slots>,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.slots.release();
    }
}

pub(crate) struct Executor {
    /// Whose workers these are, for logs ("harness", "server").
    owner: &'static str,
    hand_off: Mutex<Option<Sender<Job>>>,
    slots: Arc<Slots>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    exited: Receiver<()>,
    size: usize,
    hand_off_grace: Duration,
    /// How long a close from `Drop` waits for the workers.
    close_grace: Duration,
}

impl Executor {
    /// Starts `size` workers named `toolwire-harness-N`.
    pub(crate) fn start(
        size: usize,
        hand_off_grace: Duration,
        close_grace: Duration,
    ) -> std::io::Result<Executor> {
        Executor::start_named("harness", size, hand_off_grace, close_grace)
    }

    /// Starts `size` workers named `toolwire-{owner}-N` (the MCP server's pool is one).
    pub(crate) fn start_named(
        owner: &'static str,
        size: usize,
        hand_off_grace: Duration,
        close_grace: Duration,
    ) -> std::io::Result<Executor> {
        let (hand_off, jobs) = crossbeam_channel::bounded::<Job>(0);
        let (exit_tx, exited) = crossbeam_channel::unbounded();
        let slots = Arc::new(Slots {
            occupied: Mutex::new(0),
            freed: Condvar::new(),
        });
        let mut workers = Vec::with_capacity(size);
        for index in 0..size {
            let jobs = jobs.clone();
            let slots = Arc::clone(&slots);
            let exit_tx = exit_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("toolwire-{owner}-{index}"))
                .spawn(move || {
                    for job in jobs.iter() {
                        let slot = SlotGuard {
                            slots: Arc::clone(&slots),
                        };
                        // Jobs catch their tools' panics; this is the last line of defence,
                        // so that a worker is never lost.
                        if catch_unwind(AssertUnwindSafe(move || job(slot))).is_err() {
                            log::error!(target: HARNESS_LOG_TARGET, "a {owner} job panicked");
                        }
                    }
                    let _ = exit_tx.send(());
                });
            match spawned {
                Ok(handle) => workers.push(handle),
                Err(error) => {
                    // Dropping the sender ends the workers already started.
                    drop(hand_off);
                    return Err(error);
                }
            }
        }
        Ok(Executor {
            owner,
            hand_off: Mutex::new(Some(hand_off)),
            slots,
            workers: Mutex::new(workers),
            exited,
            size,
            hand_off_grace,
            close_grace,
        })
    }

    /// Hands `job` to a free worker, or returns false at once when none is free (or the
    /// executor is closed). Never queues.
    pub(crate) fn try_admit(&self, job: Job) -> bool {
        let Some(hand_off) = self.hand_off.lock().clone() else {
            return false;
        };
        {
            let mut occupied = self.slots.occupied.lock();
            if *occupied >= self.size {
                return false;
            }
            *occupied += 1;
        }
        let handed = match hand_off.try_send(job) {
            Ok(()) => true,
            // The reserved worker is between its last job and `recv`: wait for it, briefly.
            Err(TrySendError::Full(job)) => hand_off.send_timeout(job, self.hand_off_grace).is_ok(),
            Err(TrySendError::Disconnected(_)) => false,
        };
        if !handed {
            log::warn!(
                target: HARNESS_LOG_TARGET,
                "no worker took a job within {:?} although one was free; refusing it",
                self.hand_off_grace
            );
            self.slots.release();
        }
        handed
    }

    /// Workers occupied right now (by admitted work, including timed-out work still running).
    pub(crate) fn occupied(&self) -> usize {
        *self.slots.occupied.lock()
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Waits until no worker is occupied, at most `limit`. True when idle.
    pub(crate) fn wait_idle(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut occupied = self.slots.occupied.lock();
        while *occupied > 0 {
            if self
                .slots
                .freed
                .wait_until(&mut occupied, deadline)
                .timed_out()
            {
                return *occupied == 0;
            }
        }
        true
    }

    /// Stops admitting, lets the workers finish their current jobs, and joins those that end
    /// within `grace`. Workers still inside a tool after that are left behind (logged). Safe
    /// to call more than once.
    pub(crate) fn close(&self, grace: Duration) {
        // Dropping the only long-lived sender ends each worker's loop after its current job.
        drop(self.hand_off.lock().take());
        let workers = std::mem::take(&mut *self.workers.lock());
        if workers.is_empty() {
            return;
        }
        let deadline = Instant::now() + grace;
        let mut ended = 0;
        while ended < workers.len() && self.exited.recv_deadline(deadline).is_ok() {
            ended += 1;
        }
        let mut left = 0;
        for worker in workers {
            if worker.is_finished() {
                crate::sys::join_reporting(worker);
            } else {
                left += 1;
            }
        }
        if left > 0 {
            log::warn!(
                target: HARNESS_LOG_TARGET,
                "{left} {} worker(s) still inside a handler after {grace:?}; leaving them behind",
                self.owner
            );
        }
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        self.close(self.close_grace);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::bounded;

    #[test]
    fn a_full_executor_refuses_at_once_and_a_freed_worker_takes_the_next_job() {
        // An hour of hand-off grace: a refusal that waited for the busy worker at the hand-off
        // could only end when the worker came free, which the test allows only afterwards.
        let hour = Duration::from_secs(3600);
        let executor = Executor::start(1, hour, Duration::from_secs(2)).unwrap();
        let (release_tx, release_rx) = bounded::<()>(1);
        let (done_tx, done_rx) = bounded::<u32>(4);
        let done = done_tx.clone();
        assert!(executor.try_admit(Box::new(move |slot| {
            let _ = release_rx.recv();
            drop(slot);
            let _ = done.send(1);
        })));
        // The second job is offered on its own thread, so that a try_admit that waited fails
        // the test instead of hanging it: past the guard the worker is released (which lets a
        // waiting try_admit hand its job over and return) and the test fails.
        let hang_guard = Duration::from_secs(10);
        let refused = std::thread::scope(|scope| {
            let (admitted_tx, admitted_rx) = bounded::<bool>(1);
            let executor = &executor;
            scope.spawn(move || {
                let _ = admitted_tx.send(executor.try_admit(Box::new(|_| {})));
            });
            let admitted = admitted_rx.recv_timeout(hang_guard);
            if admitted.is_err() {
                let _ = release_tx.send(());
            }
            !admitted.expect("try_admit waited for the busy worker instead of refusing")
        });
        assert!(refused, "a job was admitted while the only worker was busy");
        // Refused while the first job still held the worker: it had not finished.
        assert!(done_rx.try_recv().is_err());
        assert_eq!(executor.occupied(), 1);
        release_tx.send(()).unwrap();
        assert_eq!(done_rx.recv().unwrap(), 1);
        // The slot was freed before the answer, so back-to-back jobs are never refused.
        for round in 0..200 {
            let done = done_tx.clone();
            assert!(
                executor.try_admit(Box::new(move |slot| {
                    drop(slot);
                    let _ = done.send(2);
                })),
                "round {round}"
            );
            assert_eq!(done_rx.recv().unwrap(), 2);
        }
        executor.close(Duration::from_secs(2));
        assert!(!executor.try_admit(Box::new(|_| {})));
    }

    #[test]
    fn a_panicking_job_frees_its_worker() {
        let executor = Executor::start(1, Duration::from_secs(1), Duration::from_secs(2)).unwrap();
        assert!(executor.try_admit(Box::new(|_| panic!("boom"))));
        assert!(executor.wait_idle(Duration::from_secs(5)));
        let (done_tx, done_rx) = bounded(1);
        assert!(executor.try_admit(Box::new(move |_| {
            let _ = done_tx.send(());
        })));
        done_rx.recv().unwrap();
    }
}
