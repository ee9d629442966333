//! A hashed timer wheel on one named thread.
//!
//! Deadlines are hashed by their tick (1 ms by default) into a ring of slots. Entries live in
//! a slab; each slot is a doubly linked list threaded through the slab (head and tail per slot,
//! previous and next per entry), so schedule, cancel and reset are all O(1) and entries due
//! together fire in the order they were scheduled.
//!
//! The tick only picks the slot: every entry keeps its exact deadline and fires once that
//! instant has passed, not at the end of its tick, so the wheel adds no rounding of its own.
//! The thread sleeps on a condition variable until the start of the next tick whose slot is
//! not empty, then until the exact deadlines within it (at most one rotation ahead: 4.1 s by
//! default), or indefinitely when the wheel is empty, so an idle wheel costs nothing.
//!
//! Tasks run on the wheel's thread after its lock is released, one after another; they must be
//! short and must never block; a task that panics is caught and logged, and the wheel goes on.
//! The client's deadlines are not boxed tasks: each is a request id
//! beside a weak reference to its client, and ids due together for the same client are handed
//! over in batches, so thousands of calls timing out at once cost one lock per batch.

use std::sync::{Arc, OnceLock, Weak};
use std::thread::{self, JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// What runs when a deadline passes.
pub type TimerTask = Box<dyn FnOnce() + Send + 'static>;

/// Something that owns many deadlines and takes their expiry in batches: the client.
pub(crate) trait Expire: Send + Sync {
    /// The deadlines carrying these tokens passed, in the order they were due.
    fn expire(&self, tokens: &[u64]);
}

/// The most tokens handed to one [`Expire::expire`] call: bounds how long a batch holds the
/// receiver's locks and how long its first entry waits for the last.
const EXPIRE_BATCH: usize = 64;

/// Identifies one scheduled deadline, for [`TimerWheel::cancel`] and [`TimerWheel::reset`].
///
/// Keys are never confused with a later entry that reuses the same slab slot: each carries a
/// generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerKey {
    index: u32,
    generation: u32,
}

/// A shared handle to a timer wheel and its thread. Cloning is cheap and shares the wheel.
///
/// [`TimerWheel::global`] is the one every client uses unless given another. A wheel made with
/// [`TimerWheel::new`] stops its thread when the last handle is dropped.
#[derive(Clone)]
pub struct TimerWheel {
    owner: Arc<Owner>,
}

impl std::fmt::Debug for TimerWheel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerWheel")
            .field("pending", &self.len())
            .finish()
    }
}

struct Owner {
    core: Arc<Core>,
    thread: Mutex<Option<JoinHandle<()>>>,
    thread_id: ThreadId,
}

struct Core {
    state: Mutex<State>,
    wake: Condvar,
    tick_nanos: u64,
    origin: Instant,
}

/// No entry: the end of a slot's list.
const NIL: u32 = u32::MAX;

/// What an entry does when it fires.
enum Task {
    Boxed(TimerTask),
    Expiry(Weak<dyn Expire>, u64),
}

struct Entry {
    /// The exact deadline, in nanoseconds since the wheel's origin.
    deadline: u64,
    /// The tick whose slot holds the entry: the deadline's tick, or a later one for a deadline
    /// that was already past when scheduled.
    tick: u64,
    /// The neighbours in the slot's list (`NIL` at either end).
    prev: u32,
    next: u32,
    generation: u32,
    task: Option<Task>,
}

/// One slot: a list of entries, oldest first.
#[derive(Clone, Copy)]
struct Slot {
    head: u32,
    tail: u32,
}

const EMPTY_SLOT: Slot = Slot {
    head: NIL,
    tail: NIL,
};

struct State {
    slots: Vec<Slot>,
    slab: Vec<Option<Entry>>,
    generations: Vec<u32>,
    free: Vec<u32>,
    len: usize,
    /// Every tick before this one has been processed; this one may hold entries not yet due.
    current_tick: u64,
    /// When the thread plans to wake (nanoseconds since the origin); `u64::MAX` while it waits
    /// for work.
    planned_wake: u64,
    shutdown: bool,
}

impl State {
    fn slot_of(&self, tick: u64) -> usize {
        (tick as usize) & (self.slots.len() - 1)
    }

    fn entry(&self, index: u32) -> &Entry {
        self.slab[index as usize].as_ref().expect("live entry")
    }

    fn entry_mut(&mut self, index: u32) -> &mut Entry {
        self.slab[index as usize].as_mut().expect("live entry")
    }

    fn insert(&mut self, deadline: u64, tick: u64, task: Task) -> TimerKey {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                self.slab.push(None);
                self.generations.push(0);
                (self.slab.len() - 1) as u32
            }
        };
        let generation = self.generations[index as usize];
        self.slab[index as usize] = Some(Entry {
            deadline,
            tick,
            prev: NIL,
            next: NIL,
            generation,
            task: Some(task),
        });
        self.link(index, deadline, tick);
        self.len += 1;
        TimerKey { index, generation }
    }

    fn is_live(&self, key: TimerKey) -> bool {
        matches!(self.slab.get(key.index as usize), Some(Some(entry)) if entry.generation == key.generation)
    }

    /// Appends a live, unlinked entry to the tail of its tick's slot.
    fn link(&mut self, index: u32, deadline: u64, tick: u64) {
        let slot = self.slot_of(tick);
        let tail = self.slots[slot].tail;
        {
            let entry = self.entry_mut(index);
            entry.deadline = deadline;
            entry.tick = tick;
            entry.prev = tail;
            entry.next = NIL;
        }
        if tail == NIL {
            self.slots[slot].head = index;
        } else {
            self.entry_mut(tail).next = index;
        }
        self.slots[slot].tail = index;
    }

    /// Takes an entry out of its slot's list (O(1)) without freeing it.
    fn unlink(&mut self, index: u32) {
        let (tick, prev, next) = {
            let entry = self.entry(index);
            (entry.tick, entry.prev, entry.next)
        };
        let slot = self.slot_of(tick);
        if prev == NIL {
            debug_assert_eq!(self.slots[slot].head, index);
            self.slots[slot].head = next;
        } else {
            self.entry_mut(prev).next = next;
        }
        if next == NIL {
            debug_assert_eq!(self.slots[slot].tail, index);
            self.slots[slot].tail = prev;
        } else {
            self.entry_mut(next).prev = prev;
        }
    }

    fn free(&mut self, index: u32) -> Option<Task> {
        let entry = self.slab[index as usize].take()?;
        self.generations[index as usize] = self.generations[index as usize].wrapping_add(1);
        self.free.push(index);
        self.len -= 1;
        let mut entry = entry;
        entry.task.take()
    }

    /// Collects the tasks of every entry whose deadline is at or before `now` (nanoseconds),
    /// tick by tick and, within a slot, in the order they were scheduled.
    fn expire(&mut self, now: u64, tick_nanos: u64, due: &mut Vec<Task>) {
        let now_tick = now / tick_nanos;
        if now_tick < self.current_tick {
            return;
        }
        let n_slots = self.slots.len() as u64;
        let first = self.current_tick;
        // After a long stall every slot is visited once; entries further out stay put.
        let last = now_tick.min(first + n_slots - 1);
        for tick in first..=last {
            let slot = self.slot_of(tick);
            let mut index = self.slots[slot].head;
            while index != NIL {
                let (deadline, next) = {
                    let entry = self.entry(index);
                    (entry.deadline, entry.next)
                };
                if deadline <= now {
                    self.unlink(index);
                    if let Some(task) = self.free(index) {
                        due.push(task);
                    }
                }
                index = next;
            }
        }
        // The current tick stays open: it may hold deadlines later in the tick.
        self.current_tick = now_tick;
    }

    /// When the thread should wake next (nanoseconds): the earliest deadline left in the
    /// current tick, else the start of the next tick whose slot is not empty (a lower bound:
    /// the slot may hold only later rotations, and the exact deadlines are looked at once that
    /// tick is current), else the start of the next rotation. `None` when the wheel is empty.
    ///
    /// Only the current tick's slot is walked, so a burst of schedules that each wake the
    /// thread costs O(1) per wake while the deadlines are still ahead.
    fn next_wake(&self, tick_nanos: u64) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let current = self.current_tick;
        let mut index = self.slots[self.slot_of(current)].head;
        let mut earliest: Option<u64> = None;
        while index != NIL {
            let entry = self.entry(index);
            if entry.tick == current {
                earliest = Some(earliest.map_or(entry.deadline, |e| e.min(entry.deadline)));
            }
            index = entry.next;
        }
        if earliest.is_some() {
            return earliest;
        }
        let n_slots = self.slots.len() as u64;
        let next = (current + 1..current + n_slots)
            .find(|&tick| self.slots[self.slot_of(tick)].head != NIL)
            .unwrap_or(current + n_slots);
        Some(next.saturating_mul(tick_nanos))
    }
}

impl Core {
    /// Nanoseconds from the origin to `instant` (zero for instants before it).
    fn nanos_of(&self, instant: Instant) -> u64 {
        let since = instant.saturating_duration_since(self.origin);
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    }

    fn instant_of(&self, nanos: u64) -> Instant {
        self.origin + Duration::from_nanos(nanos)
    }

    /// The slot tick for a deadline: its own, or the current one if it is already past.
    fn tick_for(&self, state: &State, deadline: u64) -> u64 {
        (deadline / self.tick_nanos).max(state.current_tick)
    }

    fn insert(&self, deadline: Instant, task: Task) -> TimerKey {
        let deadline = self.nanos_of(deadline);
        let mut state = self.state.lock();
        let tick = self.tick_for(&state, deadline);
        let key = state.insert(deadline, tick, task);
        if deadline < state.planned_wake {
            state.planned_wake = deadline;
            self.wake.notify_one();
        }
        key
    }

    fn run(&self) {
        let mut due: Vec<Task> = Vec::new();
        let mut tokens: Vec<u64> = Vec::with_capacity(EXPIRE_BATCH);
        let mut state = self.state.lock();
        loop {
            if state.shutdown {
                return;
            }
            let now = self.nanos_of(Instant::now());
            state.expire(now, self.tick_nanos, &mut due);
            if !due.is_empty() {
                // The thread is awake until it looks again after the tasks, so a schedule in
                // the meantime needs no wake-up: a planned wake of 0 makes it skip the notify.
                state.planned_wake = 0;
                drop(state);
                run_due(&mut due, &mut tokens);
                state = self.state.lock();
                continue;
            }
            match state.next_wake(self.tick_nanos) {
                None => {
                    state.planned_wake = u64::MAX;
                    self.wake.wait(&mut state);
                }
                Some(at) => {
                    state.planned_wake = at;
                    let at = self.instant_of(at);
                    self.wake.wait_until(&mut state, at);
                }
            }
        }
    }
}

/// Runs the due tasks in order; consecutive expiries for the same receiver go over in batches
/// of at most [`EXPIRE_BATCH`], with one upgrade of its weak reference per batch.
fn run_due(due: &mut Vec<Task>, tokens: &mut Vec<u64>) {
    let mut tasks = due.drain(..).peekable();
    while let Some(task) = tasks.next() {
        match task {
            // A task that panics must not take the timer thread, and every later deadline of
            // the process, down with it.
            Task::Boxed(task) => {
                crate::sys::guard("a timer task", task);
            }
            Task::Expiry(target, token) => {
                tokens.clear();
                tokens.push(token);
                while tokens.len() < EXPIRE_BATCH {
                    match tasks.peek() {
                        Some(Task::Expiry(next, _)) if Weak::ptr_eq(next, &target) => {
                            if let Some(Task::Expiry(_, token)) = tasks.next() {
                                tokens.push(token);
                            }
                        }
                        _ => break,
                    }
                }
                if let Some(target) = target.upgrade() {
                    crate::sys::guard("a batch of expiries", || target.expire(tokens));
                }
            }
        }
    }
}

impl TimerWheel {
    /// A new wheel with a 1 ms tick and 4,096 slots, on its own thread named `toolwire-timer`.
    ///
    /// # Panics
    ///
    /// If the operating system refuses to start a thread.
    pub fn new() -> TimerWheel {
        TimerWheel::with_tick(Duration::from_millis(1), 4096)
    }

    /// A new wheel with the given tick and number of slots (rounded up to a power of two, at
    /// least 64). The tick only spreads deadlines over the slots: a deadline is never fired
    /// before it passes, and fires as soon as the thread wakes after it (the operating
    /// system's timer slack, about 50 µs on Linux, plus the tasks due before it).
    ///
    /// # Panics
    ///
    /// If `tick` is zero, or the operating system refuses to start a thread.
    pub fn with_tick(tick: Duration, slots: usize) -> TimerWheel {
        assert!(!tick.is_zero(), "the timer tick must not be zero");
        let slots = slots.max(64).next_power_of_two();
        let core = Arc::new(Core {
            state: Mutex::new(State {
                slots: vec![EMPTY_SLOT; slots],
                slab: Vec::new(),
                generations: Vec::new(),
                free: Vec::new(),
                len: 0,
                current_tick: 0,
                planned_wake: u64::MAX,
                shutdown: false,
            }),
            wake: Condvar::new(),
            tick_nanos: u64::try_from(tick.as_nanos()).unwrap_or(u64::MAX),
            origin: Instant::now(),
        });
        let thread_core = Arc::clone(&core);
        let thread = thread::Builder::new()
            .name("toolwire-timer".into())
            .spawn(move || thread_core.run())
            .expect("could not start the toolwire-timer thread");
        let thread_id = thread.thread().id();
        TimerWheel {
            owner: Arc::new(Owner {
                core,
                thread: Mutex::new(Some(thread)),
                thread_id,
            }),
        }
    }

    /// The process-wide wheel, started on first use and shared by every client that is not
    /// given another. Its thread lives as long as the process and sleeps while it has nothing
    /// to do.
    pub fn global() -> TimerWheel {
        static GLOBAL: OnceLock<TimerWheel> = OnceLock::new();
        GLOBAL.get_or_init(TimerWheel::new).clone()
    }

    /// Runs `task` on the wheel's thread once `deadline` has passed, unless cancelled first.
    pub fn schedule(&self, deadline: Instant, task: TimerTask) -> TimerKey {
        self.owner.core.insert(deadline, Task::Boxed(task))
    }

    /// Calls `target.expire` with `token` (batched with other tokens for the same target that
    /// are due together) once `deadline` has passed, unless cancelled first, and unless the
    /// target is gone by then.
    pub(crate) fn schedule_expiry(
        &self,
        deadline: Instant,
        target: Weak<dyn Expire>,
        token: u64,
    ) -> TimerKey {
        self.owner
            .core
            .insert(deadline, Task::Expiry(target, token))
    }

    /// Cancels a deadline. Returns false when it already fired or was cancelled. The task is
    /// dropped on the calling thread.
    pub fn cancel(&self, key: TimerKey) -> bool {
        let mut state = self.owner.core.state.lock();
        if !state.is_live(key) {
            return false;
        }
        state.unlink(key.index);
        let task = state.free(key.index);
        drop(state);
        drop(task);
        true
    }

    /// Moves a deadline. Returns false when it already fired or was cancelled.
    pub fn reset(&self, key: TimerKey, deadline: Instant) -> bool {
        let core = &self.owner.core;
        let deadline = core.nanos_of(deadline);
        let mut state = core.state.lock();
        if !state.is_live(key) {
            return false;
        }
        let tick = core.tick_for(&state, deadline);
        state.unlink(key.index);
        state.link(key.index, deadline, tick);
        if deadline < state.planned_wake {
            state.planned_wake = deadline;
            core.wake.notify_one();
        }
        true
    }

    /// How many deadlines are scheduled and not yet fired or cancelled.
    pub fn len(&self) -> usize {
        self.owner.core.state.lock().len
    }

    /// True when nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for TimerWheel {
    fn default() -> Self {
        TimerWheel::new()
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        {
            let mut state = self.core.state.lock();
            state.shutdown = true;
            self.core.wake.notify_one();
        }
        // A task that drops the last handle runs on the wheel's own thread: it must not join
        // itself. The thread sees `shutdown` and ends on its own.
        if thread::current().id() == self.thread_id {
            return;
        }
        if let Some(thread) = self.thread.lock().take() {
            crate::sys::join_reporting(thread);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::{bounded, unbounded};

    #[test]
    fn fires_no_earlier_than_the_deadline() {
        let wheel = TimerWheel::new();
        let (tx, rx) = bounded(1);
        let start = Instant::now();
        let deadline = start + Duration::from_millis(30);
        wheel.schedule(deadline, Box::new(move || tx.send(Instant::now()).unwrap()));
        let fired = rx.recv().unwrap();
        assert!(fired >= deadline);
        assert!(wheel.is_empty());
    }

    #[test]
    fn cancel_prevents_firing_and_reports_once() {
        let wheel = TimerWheel::new();
        let (tx, rx) = unbounded::<u32>();
        let tx2 = tx.clone();
        let key = wheel.schedule(
            Instant::now() + Duration::from_millis(5),
            Box::new(move || tx.send(1).unwrap()),
        );
        assert!(wheel.cancel(key));
        assert!(!wheel.cancel(key));
        // A later timer proves the wheel moved past the cancelled deadline.
        wheel.schedule(
            Instant::now() + Duration::from_millis(20),
            Box::new(move || tx2.send(2).unwrap()),
        );
        assert_eq!(rx.recv().unwrap(), 2);
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn reset_moves_a_deadline_later_and_earlier() {
        let wheel = TimerWheel::new();
        let (tx, rx) = unbounded::<&'static str>();
        let tx_b = tx.clone();
        let start = Instant::now();
        let late = wheel.schedule(
            start + Duration::from_secs(3600),
            Box::new(move || tx.send("a").unwrap()),
        );
        let early = wheel.schedule(
            start + Duration::from_millis(1),
            Box::new(move || tx_b.send("b").unwrap()),
        );
        assert!(wheel.reset(early, start + Duration::from_secs(3600)));
        let new_deadline = start + Duration::from_millis(40);
        assert!(wheel.reset(late, new_deadline));
        assert_eq!(rx.recv().unwrap(), "a");
        assert!(Instant::now() >= new_deadline);
        assert!(!wheel.reset(late, start));
        assert!(wheel.cancel(early));
    }

    #[test]
    fn deadlines_beyond_one_rotation_wait_their_rounds() {
        // 64 slots of 1 ms: a 150 ms deadline shares a slot with 22 ms and 86 ms.
        let wheel = TimerWheel::with_tick(Duration::from_millis(1), 64);
        let (tx, rx) = unbounded();
        let start = Instant::now();
        for ms in [150u64, 22, 86] {
            let tx = tx.clone();
            wheel.schedule(
                start + Duration::from_millis(ms),
                Box::new(move || tx.send((ms, Instant::now())).unwrap()),
            );
        }
        let mut order = Vec::new();
        for _ in 0..3 {
            let (ms, at) = rx.recv().unwrap();
            assert!(at >= start + Duration::from_millis(ms), "{ms} fired early");
            order.push(ms);
        }
        assert_eq!(order, vec![22, 86, 150]);
    }

    #[test]
    fn many_entries_cancelled_in_any_order_keep_the_lists_consistent() {
        let wheel = TimerWheel::with_tick(Duration::from_millis(1), 64);
        let far = Instant::now() + Duration::from_secs(3600);
        let keys: Vec<TimerKey> = (0..1000)
            .map(|_| wheel.schedule(far, Box::new(|| {})))
            .collect();
        // Cancel every other key, then the rest in reverse: each must be found exactly once.
        for key in keys.iter().step_by(2) {
            assert!(wheel.cancel(*key));
        }
        for key in keys.iter().skip(1).step_by(2).rev() {
            assert!(wheel.cancel(*key));
        }
        assert!(wheel.is_empty());
    }

    #[test]
    fn entries_due_together_fire_in_scheduling_order() {
        let wheel = TimerWheel::with_tick(Duration::from_millis(1), 64);
        let (tx, rx) = unbounded();
        // Same deadline for all, plus a later round sharing the slot; cancel and move some.
        let deadline = Instant::now() + Duration::from_millis(30);
        let keys: Vec<TimerKey> = (0..10u32)
            .map(|n| {
                let tx = tx.clone();
                wheel.schedule(deadline, Box::new(move || tx.send(n).unwrap()))
            })
            .collect();
        let tx_late = tx.clone();
        wheel.schedule(
            deadline + Duration::from_millis(64),
            Box::new(move || tx_late.send(99).unwrap()),
        );
        assert!(wheel.cancel(keys[0]));
        assert!(wheel.cancel(keys[5]));
        assert!(wheel.cancel(keys[9]));
        // A reset to the same deadline moves the entry to the back of its tick.
        assert!(wheel.reset(keys[2], deadline));
        let fired: Vec<u32> = (0..7).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(fired, vec![1, 3, 4, 6, 7, 8, 2]);
        assert_eq!(rx.recv().unwrap(), 99);
        assert!(wheel.is_empty());
    }

    #[test]
    fn the_tick_only_picks_a_slot_and_never_delays_a_deadline() {
        // One-hour ticks: a wheel that fired at the end of a deadline's tick would hold these
        // for up to an hour; each must fire after its own instant, in order.
        let wheel = TimerWheel::with_tick(Duration::from_secs(3600), 64);
        let (tx, rx) = unbounded();
        let start = Instant::now();
        for ms in [40u64, 10, 25] {
            let tx = tx.clone();
            wheel.schedule(
                start + Duration::from_millis(ms),
                Box::new(move || tx.send((ms, Instant::now())).unwrap()),
            );
        }
        let mut order = Vec::new();
        for _ in 0..3 {
            let (ms, at) = rx
                .recv_timeout(Duration::from_secs(60))
                .expect("fired within its tick");
            assert!(at >= start + Duration::from_millis(ms), "{ms} fired early");
            order.push(ms);
        }
        assert_eq!(order, vec![10, 25, 40]);
        assert!(wheel.is_empty());
    }

    #[test]
    fn a_past_deadline_fires_promptly() {
        let wheel = TimerWheel::new();
        let (tx, rx) = bounded(1);
        wheel.schedule(
            Instant::now() - Duration::from_secs(1),
            Box::new(move || tx.send(()).unwrap()),
        );
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
    }

    #[test]
    fn dropping_the_last_handle_joins_the_thread() {
        let wheel = TimerWheel::new();
        let weak = Arc::downgrade(&wheel.owner.core);
        drop(wheel);
        // The thread held the other strong reference; after the join it is gone.
        assert!(weak.upgrade().is_none());
    }
}
