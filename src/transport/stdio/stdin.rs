//! The child's stdin, written by the callers themselves.
//!
//! A frame that fits in the pipe is written by the thread that sends it, with one
//! non-blocking write under this lock: no hand-off to another thread, no context switch per
//! call. Only what would block goes to the `toolwire-stdin` thread: the rest of a frame the
//! pipe took in part, and every frame behind it (frames keep their order: while anything
//! waits for the writer thread, a sender queues behind it instead of writing). The queue is
//! bounded by [`super::StdioConfig::writer_queue`]; a sender finding it full waits for room
//! until its deadline and no longer, so a child that stops reading can never hold a caller
//! past its deadline, and no caller ever blocks in a write.
//!
//! Only the writer thread closes the pipe (when the queue is empty after a close, on a broken
//! pipe, or when abandoned), so it may wait in poll(2) on the descriptor without the lock.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::process::ChildStdin;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::sys;

/// How long the writer thread waits in poll(2) before it looks at the queue's state again (a
/// close that abandons what is queued). Waiting is only ever for a child that is not reading.
const POLL_TICK: Duration = Duration::from_millis(20);

/// Why a frame was not taken.
#[derive(Debug)]
pub(super) enum Refused {
    /// The queue stayed full until the deadline (or at once, without one).
    Full,
    /// The pipe is closed or broken.
    Closed,
}

pub(super) struct Stdin {
    state: Mutex<State>,
    /// Frames were queued for the writer thread, or the pipe is closing.
    queued: Condvar,
    /// The writer thread made room in the queue, or the pipe is gone.
    room: Condvar,
    /// Frames the queue holds at most (the one the pipe took in part included).
    capacity: usize,
    /// The pipe's descriptor, for the writer thread's poll.
    fd: RawFd,
}

struct State {
    /// `None` once the writer thread has closed it.
    pipe: Option<ChildStdin>,
    /// Frames (newline included) waiting for the writer thread, in order.
    queue: VecDeque<Vec<u8>>,
    /// Bytes of the queue's first frame already in the pipe.
    written: usize,
    /// No more frames are taken; the writer thread writes what is queued, then closes.
    closing: bool,
    /// What is queued is dropped: the writer thread closes the pipe at once.
    abandoned: bool,
    /// A write failed: the reader is gone.
    broken: bool,
}

impl Stdin {
    /// Takes the pipe and makes our end of it non-blocking.
    pub(super) fn new(pipe: ChildStdin, capacity: usize) -> io::Result<Stdin> {
        sys::set_nonblocking(pipe.as_fd())?;
        let fd = pipe.as_raw_fd();
        Ok(Stdin {
            state: Mutex::new(State {
                pipe: Some(pipe),
                queue: VecDeque::new(),
                written: 0,
                closing: false,
                abandoned: false,
                broken: false,
            }),
            queued: Condvar::new(),
            room: Condvar::new(),
            capacity: capacity.max(1),
            fd,
        })
    }

    /// Writes `frame` (a line with its newline) or queues it behind the frames already
    /// waiting; never blocks in a write. A full queue is waited on until `deadline` (`None`:
    /// not at all).
    pub(super) fn send(&self, frame: Vec<u8>, deadline: Option<Instant>) -> Result<(), Refused> {
        let mut state = self.state.lock();
        loop {
            if state.closing || state.broken || state.pipe.is_none() {
                return Err(Refused::Closed);
            }
            if state.queue.is_empty() {
                return self.write_now(&mut state, frame);
            }
            if state.queue.len() < self.capacity {
                state.queue.push_back(frame);
                self.queued.notify_one();
                return Ok(());
            }
            let Some(deadline) = deadline else {
                return Err(Refused::Full);
            };
            if self.room.wait_until(&mut state, deadline).timed_out()
                && state.queue.len() >= self.capacity
                && !state.closing
            {
                return Err(Refused::Full);
            }
        }
    }

    /// The queue is empty: one non-blocking write; what the pipe does not take is queued.
    fn write_now(&self, state: &mut MutexGuard<'_, State>, frame: Vec<u8>) -> Result<(), Refused> {
        let Some(pipe) = state.pipe.as_mut() else {
            return Err(Refused::Closed);
        };
        let mut done = 0;
        while done < frame.len() {
            match pipe.write(&frame[done..]) {
                Ok(0) => break,
                Ok(count) => done += count,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                Err(error) => {
                    log::debug!("toolwire: writing to the server's stdin failed: {error}");
                    state.broken = true;
                    self.queued.notify_one();
                    return Err(Refused::Closed);
                }
            }
        }
        if done < frame.len() {
            state.written = done;
            state.queue.push_back(frame);
            self.queued.notify_one();
        }
        Ok(())
    }

    /// No more frames: the writer thread writes what is queued, then closes the pipe (the
    /// child reads the end of its input).
    pub(super) fn close(&self) {
        let mut state = self.state.lock();
        state.closing = true;
        self.queued.notify_one();
        self.room.notify_all();
    }

    /// Drops whatever is still queued: the writer thread closes the pipe at once.
    pub(super) fn abandon(&self) {
        let mut state = self.state.lock();
        state.closing = true;
        state.abandoned = true;
        self.queued.notify_one();
        self.room.notify_all();
    }

    /// The `toolwire-stdin` thread: writes what callers could not, waiting for the child to
    /// read when the pipe is full, and closes the pipe when it is done.
    pub(super) fn write_loop(&self) {
        let mut state = self.state.lock();
        loop {
            if state.broken || state.abandoned {
                break;
            }
            if state.queue.is_empty() {
                if state.closing {
                    break;
                }
                self.queued.wait(&mut state);
                continue;
            }
            match self.write_queued(&mut state) {
                Ok(true) => {}
                Ok(false) => {
                    let fd = self.fd;
                    MutexGuard::unlocked(&mut state, || {
                        if let Err(error) = sys::wait_writable(fd, POLL_TICK) {
                            log::debug!("toolwire: waiting for the server's stdin: {error}");
                            std::thread::sleep(POLL_TICK);
                        }
                    });
                }
                Err(error) => {
                    log::debug!("toolwire: writing to the server's stdin failed: {error}");
                    state.broken = true;
                }
            }
        }
        // Closing the pipe is the child's end of input.
        state.pipe = None;
        state.queue.clear();
        self.room.notify_all();
    }

    /// Writes from the front of the queue until it is empty (true) or the pipe is full
    /// (false).
    fn write_queued(&self, state: &mut MutexGuard<'_, State>) -> io::Result<bool> {
        loop {
            let offset = state.written;
            let State { pipe, queue, .. } = &mut **state;
            let Some(front) = queue.front() else {
                return Ok(true);
            };
            let Some(pipe) = pipe.as_mut() else {
                return Err(io::ErrorKind::BrokenPipe.into());
            };
            match pipe.write(&front[offset..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(count) if offset + count == front.len() => {
                    queue.pop_front();
                    state.written = 0;
                    self.room.notify_all();
                }
                Ok(count) => state.written = offset + count,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(error) => return Err(error),
            }
        }
    }
}
