//! The admission executor: N named worker threads, each with its own hand-off slot (an atomic
//! state and room for one job). A call is admitted only when a worker is free; otherwise it
//! is refused at once (`BUSY`), never queued.
//!
//! Why slots and not a channel: the cost of a local call through the harness was almost all
//! hand-off (a rendezvous channel, a futex wake-up of a sleeping worker, and another of the
//! sleeping caller: about 30 µs on a loaded 2-core machine, against 0.5 µs for the tool). A
//! worker that has just finished a job now keeps checking its own slot for [`WORKER_SPIN`]
//! (yielding its CPU between checks) before it parks, so a caller's next call (a few µs
//! later) is picked up without a wake-up; a caller that finds it parked unparks it (one
//! futex wake-up). The bound keeps an idle harness from using the CPU: past it, a worker
//! sleeps in `thread::park` and costs nothing. The answer comes back the same way
//! (`answer.rs`).
//!
//! Admission counts occupied workers itself: a job holds its count until its work is done
//! (the job drops its [`SlotGuard`] *before* the caller gets the answer), and a call is
//! admitted only while the count is below N. The admitted job is then put into the slot of
//! an idle worker. In one blind spot every free worker is still in the tail of its last job
//! (it has freed its count and answered, but not yet come back to its slot); the job then
//! waits for one to come back, at most `hand_off_grace`, and is refused past it. Either way
//! nothing ever waits in a queue behind a running tool.
//!
//! `try_admit` returns once the job is in the slot, not once the worker has taken it (the
//! rendezvous channel waited for that), so a call's bound, which counts from admission,
//! includes the moment a parked worker takes to wake: µs on a quiet machine, more on an
//! overloaded one. The caller still leaves at its bound or its deadline either way.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::audit::HARNESS_LOG_TARGET;

/// A unit of work; it receives its slot and should drop it as soon as its work is done.
pub(crate) type Job = Box<dyn FnOnce(SlotGuard) + Send>;

/// How long an idle worker keeps checking its slot, yielding its CPU between checks
/// (`thread::yield_now`), before it parks. Measured (benches/harness.rs, BENCHMARKS.md):
/// long enough to catch the next call of a caller that makes calls back to back (a few µs
/// apart) without a wake-up, short enough that a worker left idle is asleep within 50 µs.
pub(crate) const WORKER_SPIN: Duration = Duration::from_micros(50);

/// A worker's slot. `IDLE`: back at its slot, free to take a job. `CLAIMED`: a caller has
/// taken it and is putting the job in. `FULL`: the job is in. `RUNNING`: the worker has taken
/// the job (until it is back at its slot). `EXITED`: the worker has left after `close`.
const IDLE: u8 = 0;
const CLAIMED: u8 = 1;
const FULL: u8 = 2;
const RUNNING: u8 = 3;
const EXITED: u8 = 4;

struct Worker {
    state: AtomicU8,
    job: Mutex<Option<Job>>,
    /// Set once the thread exists, before the executor admits anything.
    thread: OnceLock<Thread>,
}

impl Worker {
    /// Puts `job` into this worker's slot, which the caller has claimed, and wakes the worker
    /// if it is parked (an `unpark` of a thread that is not parked is one atomic swap).
    fn give(&self, job: Job) {
        *self.job.lock() = Some(job);
        self.state.store(FULL, Ordering::SeqCst);
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }

    fn try_claim(&self) -> bool {
        self.state.load(Ordering::Relaxed) == IDLE
            && self
                .state
                .compare_exchange(IDLE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }
}

struct Shared {
    workers: Box<[Worker]>,
    /// Admitted jobs whose slot guard is not dropped yet (timed-out work still running
    /// included).
    occupied: AtomicUsize,
    closed: AtomicBool,
    /// Threads waiting on `changed` (for idleness, or for a worker back at its slot); the
    /// workers take the lock to notify only when there is one.
    waiters: AtomicUsize,
    lock: Mutex<()>,
    changed: Condvar,
}

impl Shared {
    fn release(&self) {
        self.occupied.fetch_sub(1, Ordering::SeqCst);
        self.notify();
    }

    /// Wakes the waiters, if any. Both sides use SeqCst: a waiter counts itself before it
    /// checks under the lock, and a notifier changes state before it reads the count, so
    /// either the waiter sees the change or the notifier sees the waiter.
    fn notify(&self) {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let _guard = self.lock.lock();
            self.changed.notify_all();
        }
    }

    /// Waits on `changed` until `done` holds or `deadline` passes; true when it held.
    fn wait_for(&self, deadline: Instant, mut done: impl FnMut() -> bool) -> bool {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.lock.lock();
        let held = loop {
            if done() {
                break true;
            }
            if self.changed.wait_until(&mut guard, deadline).timed_out() {
                break done();
            }
        };
        drop(guard);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        held
    }

    fn claim_idle(&self) -> Option<&Worker> {
        // Always from the first worker: the one that ran the last job is the one spinning, so
        // a caller making calls one after another keeps one warm worker and the others park.
        self.workers.iter().find(|worker| worker.try_claim())
    }

    /// Waits for the next job in `worker`'s slot: checks it (yielding) for a while, then parks. False when the
    /// executor closed while the slot was empty.
    fn next_job(&self, worker: &Worker) -> bool {
        // Some(true): a job is in; Some(false): closed and empty, the worker leaves; None:
        // wait on (empty, or CLAIMED: a caller is putting a job in and unparks us after).
        let ready = || match worker.state.load(Ordering::Acquire) {
            FULL => Some(true),
            IDLE if self.closed.load(Ordering::SeqCst) => worker
                .state
                .compare_exchange(IDLE, EXITED, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
                .then_some(false),
            _ => None,
        };
        // Spin by yielding: on a machine with more runnable threads than cores (a shared
        // 2-core VM measured 4-12), a busy-wait with `spin_loop` holds the core the caller
        // needs and made calls 5-10x slower than parking; a yield gives it up whenever
        // anything else is runnable and costs a short system call otherwise.
        let started = Instant::now();
        while started.elapsed() < WORKER_SPIN {
            if let Some(ready) = ready() {
                return ready;
            }
            std::thread::yield_now();
        }
        loop {
            if let Some(ready) = ready() {
                return ready;
            }
            // Unparked by `give` and by `close`; a spurious wake-up only checks again.
            std::thread::park();
        }
    }

    fn work(self: &Arc<Shared>, index: usize, owner: &'static str) {
        let worker = &self.workers[index];
        while self.next_job(worker) {
            let job = worker.job.lock().take();
            worker.state.store(RUNNING, Ordering::SeqCst);
            let slot = SlotGuard {
                shared: Arc::clone(self),
            };
            match job {
                // Jobs catch their tools' panics; this is the last line of defence, so that a
                // worker is never lost.
                Some(job) => {
                    if catch_unwind(AssertUnwindSafe(move || job(slot))).is_err() {
                        log::error!(target: HARNESS_LOG_TARGET, "a {owner} job panicked");
                    }
                }
                None => drop(slot),
            }
            worker.state.store(IDLE, Ordering::SeqCst);
            // A caller may be waiting for a worker back at its slot (the blind spot).
            self.notify();
        }
    }
}

/// One occupied worker. Dropping it (also while unwinding) frees the worker's count.
pub(crate) struct SlotGuard {
    shared: Arc<Shared>,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.shared.release();
    }
}

pub(crate) struct Executor {
    /// Whose workers these are, for logs ("harness", "server").
    owner: &'static str,
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    exited: crossbeam_channel::Receiver<()>,
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
        let shared = Arc::new(Shared {
            workers: (0..size)
                .map(|_| Worker {
                    state: AtomicU8::new(IDLE),
                    job: Mutex::new(None),
                    thread: OnceLock::new(),
                })
                .collect(),
            occupied: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            waiters: AtomicUsize::new(0),
            lock: Mutex::new(()),
            changed: Condvar::new(),
        });
        let (exit_tx, exited) = crossbeam_channel::unbounded();
        let mut threads = Vec::with_capacity(size);
        for index in 0..size {
            let worker_shared = Arc::clone(&shared);
            let exit_tx = exit_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("toolwire-{owner}-{index}"))
                .spawn(move || {
                    worker_shared.work(index, owner);
                    let _ = exit_tx.send(());
                });
            match spawned {
                Ok(handle) => {
                    let _ = shared.workers[index].thread.set(handle.thread().clone());
                    threads.push(handle);
                }
                Err(error) => {
                    // Ends the workers already started.
                    shared.closed.store(true, Ordering::SeqCst);
                    for handle in &threads {
                        handle.thread().unpark();
                    }
                    return Err(error);
                }
            }
        }
        Ok(Executor {
            owner,
            shared,
            threads: Mutex::new(threads),
            exited,
            size,
            hand_off_grace,
            close_grace,
        })
    }

    /// Hands `job` to a free worker, or returns false at once when none is free (or the
    /// executor is closed). Never queues.
    pub(crate) fn try_admit(&self, job: Job) -> bool {
        let shared = &self.shared;
        if shared.closed.load(Ordering::SeqCst) {
            return false;
        }
        let reserved = shared
            .occupied
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |occupied| {
                (occupied < self.size).then_some(occupied + 1)
            })
            .is_ok();
        if !reserved {
            return false;
        }
        if let Some(worker) = shared.claim_idle() {
            worker.give(job);
            return true;
        }
        // The blind spot: every free worker is in the tail of its last job. Wait for one to
        // come back to its slot, briefly.
        let mut claimed = None;
        shared.wait_for(Instant::now() + self.hand_off_grace, || {
            if shared.closed.load(Ordering::SeqCst) {
                return true;
            }
            claimed = shared.claim_idle();
            claimed.is_some()
        });
        if let Some(worker) = claimed {
            worker.give(job);
            return true;
        }
        if !shared.closed.load(Ordering::SeqCst) {
            log::warn!(
                target: HARNESS_LOG_TARGET,
                "no worker came back for a job within {:?} although one was free; refusing it",
                self.hand_off_grace
            );
        }
        shared.release();
        false
    }

    /// Workers occupied right now (by admitted work, including timed-out work still running).
    pub(crate) fn occupied(&self) -> usize {
        self.shared.occupied.load(Ordering::SeqCst)
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Waits until no worker is occupied, at most `limit`. True when idle.
    pub(crate) fn wait_idle(&self, limit: Duration) -> bool {
        let shared = &self.shared;
        shared.wait_for(Instant::now() + limit, || {
            shared.occupied.load(Ordering::SeqCst) == 0
        })
    }

    /// Stops admitting, lets the workers finish their current jobs, and joins those that end
    /// within `grace`. Workers still inside a tool after that are left behind (logged). Safe
    /// to call more than once.
    pub(crate) fn close(&self, grace: Duration) {
        self.shared.closed.store(true, Ordering::SeqCst);
        let threads = std::mem::take(&mut *self.threads.lock());
        if threads.is_empty() {
            return;
        }
        // Parked workers wake, see `closed` and leave; busy ones leave after their job.
        for thread in &threads {
            thread.thread().unpark();
        }
        // A caller waiting in the blind spot gives up.
        self.shared.notify();
        let deadline = Instant::now() + grace;
        let mut ended = 0;
        while ended < threads.len() && self.exited.recv_deadline(deadline).is_ok() {
            ended += 1;
        }
        let mut left = 0;
        for thread in threads {
            if thread.is_finished() {
                crate::sys::join_reporting(thread);
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
#[path = "executor_tests.rs"]
mod tests;
