//! The HTTP transport's threads: a counting gate, and a pool of reusable exchange threads.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};
use crate::sys::spawn_named;

/// A thread-count gate: bounded for POSTs in flight, unbounded for counting every thread.
pub(super) struct Gate {
    count: Mutex<usize>,
    changed: Condvar,
    limit: usize,
}

impl Gate {
    pub(super) fn new(limit: usize) -> Gate {
        Gate {
            count: Mutex::new(0),
            changed: Condvar::new(),
            limit: limit.max(1),
        }
    }

    /// Takes a place, waiting until `deadline` (not at all without one).
    pub(super) fn acquire(&self, deadline: Option<Instant>) -> bool {
        let mut count = self.count.lock();
        while *count >= self.limit {
            let Some(deadline) = deadline else {
                return false;
            };
            if self.changed.wait_until(&mut count, deadline).timed_out() && *count >= self.limit {
                return false;
            }
        }
        *count += 1;
        true
    }

    pub(super) fn release(&self) {
        *self.count.lock() -= 1;
        self.changed.notify_all();
    }

    /// Waits until no place is taken, or `deadline`. Returns true when idle.
    pub(super) fn wait_idle(&self, deadline: Instant) -> bool {
        let mut count = self.count.lock();
        while *count > 0 {
            if self.changed.wait_until(&mut count, deadline).timed_out() {
                return *count == 0;
            }
        }
        true
    }
}

/// Work for a pooled thread.
pub(super) type Job = Box<dyn FnOnce() + Send + 'static>;

/// Reusable threads for exchanges: starting a thread per POST put its creation and teardown
/// on every call's path (about a millisecond each on a busy 2-core machine). A job goes to an
/// idle thread when one is reserved for it, else to a new thread; idle threads end after
/// their idle time ([`super::HttpConfig::worker_idle`]) or when the transport closes.
pub(super) struct Workers {
    jobs: Mutex<Option<Sender<Job>>>,
    queue: Receiver<Job>,
    /// Threads waiting for a job and not yet reserved by a sender.
    idle: Arc<AtomicUsize>,
    /// Every pooled thread alive, busy or idle.
    alive: Arc<Gate>,
    /// The ids of the pooled threads alive, so `close()` can tell whether it runs on one.
    ids: Arc<Mutex<HashSet<ThreadId>>>,
    idle_time: Duration,
}

impl Workers {
    pub(super) fn new(idle_time: Duration) -> Workers {
        let (jobs, queue) = unbounded();
        Workers {
            jobs: Mutex::new(Some(jobs)),
            queue,
            idle: Arc::new(AtomicUsize::new(0)),
            alive: Arc::new(Gate::new(usize::MAX)),
            ids: Arc::new(Mutex::new(HashSet::new())),
            idle_time,
        }
    }

    /// Runs `job` on an idle thread, or on a new one.
    pub(super) fn run(&self, job: Job) -> Result<()> {
        let Some(jobs) = self.jobs.lock().clone() else {
            return Err(Error::closed_because("the HTTP transport is closed"));
        };
        // Reserve an idle thread: each reservation matches one job in the queue, so a queued
        // job never waits behind a long response stream.
        let mut idle = self.idle.load(Ordering::SeqCst);
        while idle > 0 {
            match self
                .idle
                .compare_exchange(idle, idle - 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    return jobs
                        .send(job)
                        .map_err(|_| Error::closed_because("the HTTP transport is closed"));
                }
                Err(now) => idle = now,
            }
        }
        let queue = self.queue.clone();
        let idle = Arc::clone(&self.idle);
        let alive = Arc::clone(&self.alive);
        let idle_time = self.idle_time;
        let ids = Arc::clone(&self.ids);
        alive.acquire(None);
        let thread_alive = Arc::clone(&alive);
        spawn_named("toolwire-http", move || {
            let me = std::thread::current().id();
            ids.lock().insert(me);
            job();
            Workers::idle_loop(&queue, &idle, idle_time);
            ids.lock().remove(&me);
            thread_alive.release();
        })
        .map(drop)
        .inspect_err(|_| alive.release())
    }

    /// True when the current thread is one of the pool's.
    pub(super) fn is_current(&self) -> bool {
        self.ids.lock().contains(&std::thread::current().id())
    }

    fn idle_loop(queue: &Receiver<Job>, idle: &AtomicUsize, idle_time: Duration) {
        loop {
            idle.fetch_add(1, Ordering::SeqCst);
            let job = loop {
                match queue.recv_timeout(idle_time) {
                    Ok(job) => break Some(job),
                    Err(RecvTimeoutError::Disconnected) => break None,
                    Err(RecvTimeoutError::Timeout) => {
                        // Leave only if no sender has reserved this thread meanwhile.
                        let current = idle.load(Ordering::SeqCst);
                        if current > 0
                            && idle
                                .compare_exchange(
                                    current,
                                    current - 1,
                                    Ordering::SeqCst,
                                    Ordering::SeqCst,
                                )
                                .is_ok()
                        {
                            return;
                        }
                    }
                }
            };
            match job {
                Some(job) => job(),
                None => return,
            }
        }
    }

    /// Takes no more jobs: idle threads end.
    pub(super) fn stop_taking(&self) {
        drop(self.jobs.lock().take());
    }

    /// Waits until every pooled thread has ended, or `deadline`.
    pub(super) fn wait_ended(&self, deadline: Instant) -> bool {
        self.alive.wait_idle(deadline)
    }
}
