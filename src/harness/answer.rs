//! The way back from a worker to its caller: a one-shot cell (an atomic state, the value, and
//! the waiting thread) instead of a channel.
//!
//! The caller checks the state for [`CALLER_SPIN`] first, yielding between checks (a local tool usually answers
//! within it, and the answer is then taken without any system call), then parks with its
//! deadline. Who settles the cell is decided once, by a compare-and-swap: the worker
//! answering, or the caller giving up at its deadline (or the worker's job dropped without an
//! answer). So a result that comes exactly at the deadline is either used or reported late,
//! never lost, and the caller never waits past its deadline for a worker.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::Thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long a caller keeps checking for the answer, yielding its CPU between checks, before
/// it parks. Measured (benches/harness.rs, BENCHMARKS.md): a local tool that does little
/// answers within it; a caller waiting longer sleeps and costs nothing until the worker wakes
/// it or its deadline passes.
pub(crate) const CALLER_SPIN: Duration = Duration::from_micros(50);

const WAITING: u8 = 0;
const ANSWERED: u8 = 1;
const ABANDONED: u8 = 2;
const DROPPED: u8 = 3;

struct Cell<T> {
    state: AtomicU8,
    value: Mutex<Option<T>>,
    /// The thread waiting, once it parks (the calls of one message are admitted on one
    /// thread and waited for on others, so it is known only then).
    waiter: Mutex<Option<Thread>>,
}

impl<T> Cell<T> {
    /// Settles the cell from the worker's side; true when this settled it.
    fn settle(&self, to: u8) -> bool {
        let settled = self
            .state
            .compare_exchange(WAITING, to, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if settled {
            // The waiter registers before it checks the state, so it is either registered
            // here or sees the new state itself.
            if let Some(waiter) = self.waiter.lock().as_ref() {
                waiter.unpark();
            }
        }
        settled
    }
}

/// The worker's end: answers once.
pub(crate) struct Answerer<T> {
    cell: Arc<Cell<T>>,
    done: bool,
}

/// The caller's end.
pub(crate) struct AnswerWait<T> {
    cell: Arc<Cell<T>>,
}

/// How a wait ended.
#[derive(Debug)]
pub(crate) enum Waited<T> {
    Answer(T),
    /// The deadline passed first; the cell is abandoned, and a later answer is refused.
    Abandoned,
    /// The worker's end was dropped without an answer.
    Dropped,
}

pub(crate) fn answer<T>() -> (Answerer<T>, AnswerWait<T>) {
    let cell = Arc::new(Cell {
        state: AtomicU8::new(WAITING),
        value: Mutex::new(None),
        waiter: Mutex::new(None),
    });
    (
        Answerer {
            cell: Arc::clone(&cell),
            done: false,
        },
        AnswerWait { cell },
    )
}

impl<T> Answerer<T> {
    /// Answers the caller, or gives the value back when the caller gave up first.
    pub(crate) fn answer(mut self, value: T) -> Result<(), T> {
        self.done = true;
        // The value goes in before the state says so, so a caller that sees ANSWERED finds
        // it; a caller that gave up first never looks, and it is taken back.
        *self.cell.value.lock() = Some(value);
        if self.cell.settle(ANSWERED) {
            Ok(())
        } else {
            let value = self.cell.value.lock().take();
            // Always Some: nobody else takes the value of an abandoned cell.
            value.map_or(Ok(()), Err)
        }
    }
}

impl<T> Drop for Answerer<T> {
    fn drop(&mut self) {
        if !self.done {
            self.cell.settle(DROPPED);
        }
    }
}

impl<T> AnswerWait<T> {
    /// Waits for the answer until `until`: spins for [`CALLER_SPIN`] (bounded by `until`),
    /// then parks. Returns at `until` at the latest (give or take the scheduler).
    pub(crate) fn wait_until(&self, until: Instant) -> Waited<T> {
        let cell = &*self.cell;
        // Spin by yielding, as the workers do (see `executor::WORKER_SPIN`): a busy-wait
        // would hold the core the worker needs on a machine with more threads than cores.
        let spin_until = (Instant::now() + CALLER_SPIN).min(until);
        while cell.state.load(Ordering::Acquire) == WAITING && Instant::now() < spin_until {
            std::thread::yield_now();
        }
        if cell.state.load(Ordering::Acquire) == WAITING {
            *cell.waiter.lock() = Some(std::thread::current());
            loop {
                if cell.state.load(Ordering::SeqCst) != WAITING {
                    break;
                }
                let now = Instant::now();
                if now >= until {
                    if cell
                        .state
                        .compare_exchange(WAITING, ABANDONED, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                    {
                        return Waited::Abandoned;
                    }
                    // The worker settled first.
                    break;
                }
                // Unparked when the worker settles; a spurious wake-up only checks again.
                std::thread::park_timeout(until - now);
            }
        }
        match cell.state.load(Ordering::SeqCst) {
            ANSWERED => match cell.value.lock().take() {
                Some(value) => Waited::Answer(value),
                // Taken by an earlier wait: this end waits once.
                None => Waited::Dropped,
            },
            ABANDONED => Waited::Abandoned,
            _ => Waited::Dropped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_before_the_wait_is_taken() {
        let (answerer, wait) = answer();
        answerer.answer(7).unwrap();
        assert!(matches!(
            wait.wait_until(Instant::now() + Duration::from_secs(60)),
            Waited::Answer(7)
        ));
    }

    #[test]
    fn a_caller_parked_past_its_spin_is_woken_by_the_answer() {
        let (answerer, wait) = answer();
        let (parked_tx, parked_rx) = crossbeam_channel::bounded(1);
        let worker = std::thread::spawn(move || {
            // Answers only once the caller is parked (registered as the waiter), so the
            // answer must wake it.
            parked_rx.recv().unwrap();
            answerer.answer("late but in time").unwrap();
        });
        let cell = Arc::clone(&wait.cell);
        let watcher = std::thread::spawn(move || loop {
            if cell.waiter.lock().is_some() {
                parked_tx.send(()).unwrap();
                return;
            }
            std::thread::yield_now();
        });
        // An hour: only the answer ends this wait.
        let waited = wait.wait_until(Instant::now() + Duration::from_secs(3600));
        assert!(matches!(waited, Waited::Answer("late but in time")));
        worker.join().unwrap();
        watcher.join().unwrap();
    }

    #[test]
    fn a_caller_leaves_at_its_deadline_and_the_late_answer_comes_back() {
        let (answerer, wait) = answer::<u32>();
        let deadline = Instant::now() + Duration::from_millis(20);
        assert!(matches!(wait.wait_until(deadline), Waited::Abandoned));
        assert!(Instant::now() >= deadline);
        assert_eq!(answerer.answer(3), Err(3));
    }

    #[test]
    fn a_dropped_answerer_ends_the_wait() {
        let (answerer, wait) = answer::<u32>();
        let dropper = std::thread::spawn(move || drop(answerer));
        let waited = wait.wait_until(Instant::now() + Duration::from_secs(3600));
        assert!(matches!(waited, Waited::Dropped));
        dropper.join().unwrap();
    }
}
