//! The server's end of a stdio connection: frames read line by line from the process's stdin
//! (or any reader), and written to its stdout (or any writer) by a thread of their own from a
//! bounded queue, so a client that stops reading makes the server's answers wait, never its
//! reader.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;

use crate::error::{Closed, Error, Result};
use crate::sys::{self, spawn_named};
use crate::transport::lines::{self, LineEvent};
use crate::transport::{Inbound, Outgoing, Transport, TransportEvent};

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
    queue: Mutex<Option<Sender<String>>>,
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
    /// The process's stdin and stdout. Writes go through `std::io::stdout()`, one whole line
    /// under its lock, so a handler that writes to stdout itself never splits a frame.
    pub fn process() -> StdioServer {
        StdioServer::new(io::stdin(), io::stdout())
    }

    /// Any reader and writer.
    pub fn new(
        reader: impl Read + Send + 'static,
        writer: impl Write + Send + 'static,
    ) -> StdioServer {
        StdioServer {
            reader: Mutex::new(Some(Box::new(reader))),
            writer: Mutex::new(Some(Box::new(writer))),
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
        let (Some(reader), Some(mut writer)) =
            (self.reader.lock().take(), self.writer.lock().take())
        else {
            return Err(Error::Config(
                "the stdio server transport was already started".into(),
            ));
        };
        let (tx, rx) = bounded::<String>(self.queue_size);
        let (done_tx, done_rx) = bounded::<()>(0);
        let out = spawn_named("toolwire-srv-out", move || {
            let _done = done_tx;
            for line in rx {
                if let Err(error) = writer
                    .write_all(line.as_bytes())
                    .and_then(|()| writer.flush())
                {
                    log::debug!("toolwire: stdout closed ({error}); the server stops writing");
                    return;
                }
            }
        })?;
        // The queue is in place before the first line is read: an inline answer to it is
        // sent from the reading thread at once.
        *self.queue.lock() = Some(tx);
        *self.writer_done.lock() = Some(done_rx);
        let max = self.max_line_bytes;
        let input = spawn_named("toolwire-srv-in", move || {
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
        threads.push(out);
        threads.push(input);
        Ok(())
    }

    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()> {
        let Some(queue) = self.queue.lock().clone() else {
            return Err(Error::closed_because(
                "the stdio server transport is closed",
            ));
        };
        let mut line = message.to_line();
        line.push('\n');
        crate::transport::enqueue(&queue, line, deadline, self.queue_size, || {
            Error::closed_because("stdout is closed")
        })
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
