//! The server's end of a stdio connection: frames read line by line from the process's stdin
//! (or any reader), and written to its stdout (or any writer) by a thread of their own from a
//! bounded queue, so a client that stops reading makes the server's answers wait, never its
//! reader.
//!
//! On the process's stdout a line sent from the reading thread (an inline answer) may skip the
//! queue: when nothing is queued or being written and the descriptor has room now (`poll`, no
//! wait), the reading thread writes it itself, under the writer's lock, which saves the writer
//! thread's wake-up (most of a sequential inline call's cost). It never waits for that lock or
//! for room: either is taken by the queue as before, so the reader never blocks on a client
//! that stops reading, and lines keep their order (a line is written directly only once every
//! queued line has been written). Answers from the worker pool always take the queue: written
//! directly by each worker they cost more CPU with many calls in flight (one `poll` and one
//! `write` each, where the writer joins the queued lines into one write) and saved nothing
//! measurable one at a time (BENCHMARKS.md, "Server").

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;

use crate::error::{Closed, Error, Result};
use crate::sys::{self, spawn_named};
use crate::transport::lines::{self, LineEvent};
use crate::transport::{Inbound, Outgoing, Transport, TransportEvent};

/// How many bytes of queued lines the writer joins into one write (a line longer than this is
/// written alone).
const WRITE_BATCH: usize = 64 * 1024;

/// The longest line written directly: a pipe with room takes a write of at most `PIPE_BUF`
/// bytes at once.
const DIRECT_MAX: usize = 4096;

/// The writing end, shared by the writer thread and the threads that write directly.
struct Out {
    writer: Mutex<Writer>,
    /// Lines handed to the queue and not yet written (counted before they enter it).
    queued: AtomicUsize,
    /// The descriptor behind `writer` that may be asked for room (the process's stdout);
    /// `None`: every line goes through the queue.
    fd: Option<i32>,
    /// A write failed: nothing more is written directly.
    broken: AtomicBool,
}

thread_local! {
    /// The `Out` (its address) whose reading thread this is; 0 on any other thread.
    static READER_OF: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Out {
    /// Writes `line` now when that cannot wait (see the module's documentation); gives it back
    /// when it must be queued.
    fn try_direct(&self, line: String) -> Result<Option<String>> {
        let Some(fd) = self.fd else {
            return Ok(Some(line));
        };
        if READER_OF.with(|of| of.get()) != self as *const Out as usize {
            return Ok(Some(line));
        }
        if line.len() > DIRECT_MAX || self.queued.load(Ordering::SeqCst) != 0 {
            return Ok(Some(line));
        }
        let Some(mut writer) = self.writer.try_lock() else {
            return Ok(Some(line));
        };
        // Under the lock the writer thread is not writing, so `queued` at 0 means every line
        // queued before this one is written.
        if self.queued.load(Ordering::SeqCst) != 0
            || self.broken.load(Ordering::SeqCst)
            || !sys::writable_now(fd)
        {
            return Ok(Some(line));
        }
        match writer
            .write_all(line.as_bytes())
            .and_then(|()| writer.flush())
        {
            Ok(()) => Ok(None),
            Err(error) => {
                self.broken.store(true, Ordering::SeqCst);
                log::debug!("toolwire: stdout closed ({error}); the server stops writing");
                Err(Error::closed_because("stdout is closed"))
            }
        }
    }
}

type Reader = Box<dyn Read + Send>;
type Writer = Box<dyn Write + Send>;

/// A [`Transport`] over a reader and a writer of newline-delimited JSON: the process's own
/// stdin and stdout for a stdio server ([`StdioServer::process`]), or a pipe or socket pair
/// in tests.
///
/// Threads: `toolwire-srv-in` reads (and ends at end of input, which closes the connection),
/// `toolwire-srv-out` writes. Reading blocks in the operating system: a reader that never
/// reaches its end keeps its thread until the process exits (stdin of a server process does
/// end when the client goes).
pub struct StdioServer {
    reader: Mutex<Option<Reader>>,
    writer: Mutex<Option<Writer>>,
    /// The descriptor of `writer` when it is the process's stdout.
    fd: Option<i32>,
    queue: Mutex<Option<(Sender<String>, Arc<Out>)>>,
    queue_size: usize,
    max_line_bytes: usize,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    writer_done: Mutex<Option<Receiver<()>>>,
    join_grace: Duration,
}

impl std::fmt::Debug for StdioServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioServer")
            .field("max_line_bytes", &self.max_line_bytes)
            .finish_non_exhaustive()
    }
}

impl StdioServer {
    /// The process's stdin and stdout. Writes go through `std::io::stdout()`, whole lines
    /// under its lock (the lines queued together in one write), so a handler that writes to
    /// stdout itself never splits a frame.
    pub fn process() -> StdioServer {
        StdioServer {
            fd: cfg!(unix).then_some(1),
            ..StdioServer::new(io::stdin(), io::stdout())
        }
    }

    /// Any reader and writer.
    pub fn new(
        reader: impl Read + Send + 'static,
        writer: impl Write + Send + 'static,
    ) -> StdioServer {
        StdioServer {
            reader: Mutex::new(Some(Box::new(reader))),
            writer: Mutex::new(Some(Box::new(writer))),
            fd: None,
            queue: Mutex::new(None),
            queue_size: 1024,
            max_line_bytes: 16 * 1024 * 1024,
            threads: Mutex::new(Vec::new()),
            writer_done: Mutex::new(None),
            join_grace: Duration::from_secs(1),
        }
    }

    /// The longest line read; a longer one is discarded while it is read. Defaults to 16 MiB.
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes.max(1);
        self
    }

    /// How many frames may wait for the writer. Defaults to 1,024.
    pub fn writer_queue(mut self, frames: usize) -> Self {
        self.queue_size = frames.max(1);
        self
    }
}

impl Transport for StdioServer {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        let (Some(reader), Some(writer)) = (self.reader.lock().take(), self.writer.lock().take())
        else {
            return Err(Error::Config(
                "the stdio server transport was already started".into(),
            ));
        };
        let (tx, rx) = bounded::<String>(self.queue_size);
        let (done_tx, done_rx) = bounded::<()>(0);
        let shared = Arc::new(Out {
            writer: Mutex::new(writer),
            queued: AtomicUsize::new(0),
            fd: self.fd,
            broken: AtomicBool::new(false),
        });
        let out = Arc::clone(&shared);
        let thread = spawn_named("toolwire-srv-out", move || {
            let _done = done_tx;
            // The lines queued while one is written go out together: one write and one flush
            // for all of them (up to WRITE_BATCH bytes), not one system call each.
            for mut batch in rx.iter() {
                let mut lines = 1;
                while batch.len() < WRITE_BATCH {
                    match rx.try_recv() {
                        Ok(line) => {
                            batch.push_str(&line);
                            lines += 1;
                        }
                        Err(_) => break,
                    }
                }
                let mut writer = out.writer.lock();
                let written = writer
                    .write_all(batch.as_bytes())
                    .and_then(|()| writer.flush());
                out.queued.fetch_sub(lines, Ordering::SeqCst);
                drop(writer);
                if let Err(error) = written {
                    out.broken.store(true, Ordering::SeqCst);
                    log::debug!("toolwire: stdout closed ({error}); the server stops writing");
                    return;
                }
            }
        })?;
        // The queue is in place before the first line is read: an inline answer to it is
        // sent from the reading thread at once.
        // The reading thread keeps its `Out`'s memory (not its writer, which closes when the
        // writer thread ends) so that no other `Out` takes its address meanwhile.
        let reader_out = Arc::downgrade(&shared);
        *self.queue.lock() = Some((tx, shared));
        *self.writer_done.lock() = Some(done_rx);
        let max = self.max_line_bytes;
        let input = spawn_named("toolwire-srv-in", move || {
            READER_OF.with(|of| of.set(reader_out.as_ptr() as usize));
            let ended = lines::read_lines(reader, max, |event| match event {
                LineEvent::Line(line) => crate::transport::deliver(&*inbound, line),
                LineEvent::Oversized(bytes) => {
                    inbound.event(TransportEvent::Oversized { bytes, limit: max })
                }
            });
            let reason = match ended {
                Ok(()) => "stdin reached end of file".to_owned(),
                Err(error) => format!("reading stdin failed: {error}"),
            };
            inbound.closed(Closed::new(reason));
        })?;
        let mut threads = self.threads.lock();
        threads.push(thread);
        threads.push(input);
        Ok(())
    }

    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()> {
        let Some((queue, out)) = self.queue.lock().clone() else {
            return Err(Error::closed_because(
                "the stdio server transport is closed",
            ));
        };
        let mut line = message.to_line();
        line.push('\n');
        let Some(line) = out.try_direct(line)? else {
            return Ok(());
        };
        out.queued.fetch_add(1, Ordering::SeqCst);
        let sent = crate::transport::enqueue(&queue, line, deadline, self.queue_size, || {
            Error::closed_because("stdout is closed")
        });
        if sent.is_err() {
            out.queued.fetch_sub(1, Ordering::SeqCst);
        }
        sent
    }

    fn close(&self) -> Result<()> {
        // Dropping the only long-lived sender lets the writer write what is queued and end.
        drop(self.queue.lock().take());
        if let Some(done) = self.writer_done.lock().take() {
            let _ = done.recv_timeout(self.join_grace);
        }
        let threads = std::mem::take(&mut *self.threads.lock());
        for thread in threads {
            if thread.is_finished() {
                sys::join_reporting(thread);
            }
            // The reader may be blocked in a read that only the end of input ends: it is left
            // to finish on its own (it holds nothing but its reader).
        }
        Ok(())
    }

    fn describe(&self) -> String {
        "stdio (server)".into()
    }
}
