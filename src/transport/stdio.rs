//! The stdio transport: a child process speaking newline-delimited JSON.
//!
//! Three named threads per child: `toolwire-stdout` reads frames (with a line cap enforced while
//! reading), `toolwire-stdin` writes frames from a bounded queue, and `toolwire-stderr` drains
//! stderr into a tail buffer so the child can never block on a full pipe.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;

use super::lines::{read_lines, LineEvent};
use super::{deliver, Connector, Inbound, Outgoing, Transport, TransportEvent};
use crate::error::{Closed, Error, Result};
use crate::sys::{self, spawn_named};

/// The variables a child inherits by default; the same list the official SDKs use.
pub const DEFAULT_INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// How to start and bound a stdio server. [`StdioConfig::new`] sets every bound to its
/// default; each knob has a setter that says its default.
#[derive(Debug, Clone)]
pub struct StdioConfig {
    pub(crate) program: OsString,
    pub(crate) args: Vec<OsString>,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) env: BTreeMap<OsString, OsString>,
    pub(crate) inherit_env: bool,
    pub(crate) max_line_bytes: usize,
    pub(crate) stderr_tail_bytes: usize,
    pub(crate) writer_queue: usize,
    pub(crate) stdin_close_grace: Duration,
    pub(crate) terminate_grace: Duration,
    pub(crate) exit_wait: Duration,
    pub(crate) thread_join_grace: Duration,
}

impl StdioConfig {
    /// A config for `program` with every bound at its default. The program is run directly
    /// (never through a shell), looked up on `PATH` when it has no slash.
    pub fn new(program: impl Into<OsString>) -> StdioConfig {
        StdioConfig {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: BTreeMap::new(),
            inherit_env: false,
            max_line_bytes: 16 * 1024 * 1024,
            stderr_tail_bytes: 64 * 1024,
            writer_queue: 1024,
            stdin_close_grace: Duration::from_secs(2),
            terminate_grace: Duration::from_secs(2),
            exit_wait: Duration::from_millis(500),
            thread_join_grace: Duration::from_secs(1),
        }
    }

    /// The program (named like `std::process::Command`'s getters, beside the setters).
    pub fn get_program(&self) -> &OsString {
        &self.program
    }

    /// The arguments.
    pub fn get_args(&self) -> &[OsString] {
        &self.args
    }

    /// The variables set for the child on top of the inherited ones.
    pub fn get_envs(&self) -> &BTreeMap<OsString, OsString> {
        &self.env
    }

    /// The working directory, when one is set.
    pub fn get_current_dir(&self) -> Option<&std::path::Path> {
        self.cwd.as_deref()
    }

    /// Whether the child inherits our whole environment.
    pub fn get_inherit_env(&self) -> bool {
        self.inherit_env
    }

    /// The longest stdout line accepted.
    pub fn get_max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// How much of stderr's end is kept.
    pub fn get_stderr_tail_bytes(&self) -> usize {
        self.stderr_tail_bytes
    }

    /// How many frames may wait for the child to read them.
    pub fn get_writer_queue(&self) -> usize {
        self.writer_queue
    }

    /// The program and its arguments as one line, for display (lossy UTF-8, unquoted).
    pub fn command_line(&self) -> String {
        let mut text = self.program.to_string_lossy().into_owned();
        for arg in &self.args {
            text.push(' ');
            text.push_str(&arg.to_string_lossy());
        }
        text
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets a variable for the child, on top of the inherited ones. Defaults to none.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Sets the working directory. Defaults to ours.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Inherit our whole environment instead of only [`DEFAULT_INHERITED_ENV`]. Defaults to
    /// false.
    pub fn inherit_env(mut self, inherit: bool) -> Self {
        self.inherit_env = inherit;
        self
    }

    /// The longest line accepted from stdout; longer lines are discarded while read and
    /// reported. Defaults to 16 MiB.
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }

    /// How much of the end of stderr is kept for error messages. Defaults to 64 KiB.
    pub fn stderr_tail_bytes(mut self, bytes: usize) -> Self {
        self.stderr_tail_bytes = bytes;
        self
    }

    /// How many frames may wait for the child to read them; a sender waits past that until
    /// its deadline. Defaults to 1,024.
    pub fn writer_queue(mut self, frames: usize) -> Self {
        self.writer_queue = frames;
        self
    }

    /// How long `close()` waits after closing stdin before SIGTERM. Defaults to 2 s.
    pub fn stdin_close_grace(mut self, grace: Duration) -> Self {
        self.stdin_close_grace = grace;
        self
    }

    /// How long `close()` waits after SIGTERM before SIGKILL. Defaults to 2 s.
    pub fn terminate_grace(mut self, grace: Duration) -> Self {
        self.terminate_grace = grace;
        self
    }

    /// When stdout ends, how long to wait for the child's exit status and the rest of its
    /// stderr before failing pending calls. Defaults to 500 ms.
    pub fn exit_wait(mut self, wait: Duration) -> Self {
        self.exit_wait = wait;
        self
    }

    /// How long `close()` waits for the transport's threads after the child is gone; threads
    /// still held by a process outside the child's group (which keeps its pipes open) are left
    /// behind with a warning. Defaults to 1 s.
    pub fn thread_join_grace(mut self, grace: Duration) -> Self {
        self.thread_join_grace = grace;
        self
    }

    /// A connector that starts a new child from this config for every (re)connection.
    pub fn connector(self) -> Connector {
        Box::new(move || Ok(Arc::new(StdioTransport::spawn(self.clone())?) as Arc<dyn Transport>))
    }
}

/// A child process as a transport. Spawned by [`StdioTransport::spawn`].
pub struct StdioTransport {
    shared: Arc<Shared>,
}

struct Shared {
    config: StdioConfig,
    command_line: String,
    pid: u32,
    child: Mutex<Child>,
    exit_status: Mutex<Option<ExitStatus>>,
    writer_tx: Mutex<Option<Sender<String>>>,
    stdout: Mutex<Option<ChildStdout>>,
    tail: Arc<Mutex<Tail>>,
    stderr_done: Receiver<()>,
    /// Disconnected once every thread of ours has ended.
    threads_done: Receiver<()>,
    threads_done_tx: Mutex<Option<Sender<()>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    thread_ids: Mutex<Vec<ThreadId>>,
    closing: Mutex<bool>,
    close_reported: AtomicBool,
    inbound: Mutex<Option<Arc<dyn Inbound>>>,
}

impl StdioTransport {
    /// Starts the child with piped stdin, stdout and stderr, in its own process group, with
    /// the filtered environment; starts the stdin writer and stderr drain at once.
    ///
    /// # Errors
    ///
    /// [`Error::Spawn`] when the program cannot be started.
    pub fn spawn(config: StdioConfig) -> Result<StdioTransport> {
        let command_line = config.command_line();
        let mut command = Command::new(&config.program);
        command
            .args(&config.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cwd) = &config.cwd {
            command.current_dir(cwd);
        }
        if !config.inherit_env {
            command.env_clear();
            for name in DEFAULT_INHERITED_ENV {
                if let Some(value) = std::env::var_os(name) {
                    command.env(name, value);
                }
            }
        }
        command.envs(&config.env);
        sys::own_process_group(&mut command);
        let mut child = command.spawn().map_err(|source| Error::Spawn {
            command: command_line.clone(),
            source,
        })?;
        let pid = child.id();
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (writer_tx, writer_rx) = bounded::<String>(config.writer_queue.max(1));
        let (threads_done_tx, threads_done) = bounded::<()>(0);
        let (stderr_done_tx, stderr_done) = bounded::<()>(0);
        let tail = Arc::new(Mutex::new(Tail::new(config.stderr_tail_bytes)));
        let shared = Arc::new(Shared {
            command_line,
            pid,
            child: Mutex::new(child),
            exit_status: Mutex::new(None),
            writer_tx: Mutex::new(Some(writer_tx)),
            stdout: Mutex::new(Some(stdout)),
            tail: Arc::clone(&tail),
            stderr_done,
            threads_done,
            threads_done_tx: Mutex::new(Some(threads_done_tx.clone())),
            threads: Mutex::new(Vec::new()),
            thread_ids: Mutex::new(Vec::new()),
            closing: Mutex::new(false),
            close_reported: AtomicBool::new(false),
            inbound: Mutex::new(None),
            config,
        });
        let transport = StdioTransport { shared };
        let done = threads_done_tx.clone();
        let spawned = spawn_named("toolwire-stdin", move || {
            let _done = done;
            write_loop(stdin, writer_rx);
        })
        .and_then(|writer| {
            transport.shared.adopt(writer);
            let done = threads_done_tx;
            let label = transport.shared.command_line.clone();
            spawn_named("toolwire-stderr", move || {
                let _done = done;
                let _stderr_done = stderr_done_tx;
                drain_stderr(stderr, &tail, &label);
            })
        });
        match spawned {
            Ok(drain) => transport.shared.adopt(drain),
            Err(error) => {
                transport.shared.shut_down();
                return Err(error);
            }
        }
        log::debug!(
            "toolwire: started `{}` (pid {pid})",
            transport.shared.command_line
        );
        Ok(transport)
    }

    /// The child's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.shared.pid
    }

    /// The last bytes the child wrote to stderr, as lossy UTF-8.
    pub fn stderr_tail(&self) -> String {
        self.shared.tail.lock().text()
    }

    /// The child's exit status, once it has been reaped.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.shared.poll_exit()
    }
}

impl Transport for StdioTransport {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        let stdout = self
            .shared
            .stdout
            .lock()
            .take()
            .ok_or_else(|| Error::Config("the stdio transport was already started".into()))?;
        *self.shared.inbound.lock() = Some(Arc::clone(&inbound));
        let shared = Arc::clone(&self.shared);
        let done = self.shared.threads_done_tx.lock().clone();
        let reader = spawn_named("toolwire-stdout", move || {
            let _done = done;
            shared.read_loop(stdout, inbound);
        })?;
        self.shared.adopt(reader);
        Ok(())
    }

    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()> {
        let Some(tx) = self.shared.writer_tx.lock().clone() else {
            return Err(self.shared.closed_error("the server's stdin is closed"));
        };
        let capacity = self.shared.config.writer_queue;
        match deadline {
            Some(deadline) => tx
                .send_deadline(message.to_line(), deadline)
                .map_err(|error| {
                    if error.is_timeout() {
                        Error::Busy { limit: capacity }
                    } else {
                        self.shared.closed_error("the server's stdin is closed")
                    }
                }),
            None => tx.try_send(message.to_line()).map_err(|error| {
                if error.is_full() {
                    Error::Busy { limit: capacity }
                } else {
                    self.shared.closed_error("the server's stdin is closed")
                }
            }),
        }
    }

    fn close(&self) -> Result<()> {
        self.shared.shut_down();
        Ok(())
    }

    fn describe(&self) -> String {
        self.shared.command_line.clone()
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        if !*self.shared.closing.lock() {
            log::debug!(
                "toolwire: stdio transport for `{}` dropped without close(); closing it now",
                self.shared.command_line
            );
        }
        self.shared.shut_down();
    }
}

impl Shared {
    fn adopt(&self, thread: JoinHandle<()>) {
        self.thread_ids.lock().push(thread.thread().id());
        self.threads.lock().push(thread);
    }

    fn closed_error(&self, reason: &str) -> Error {
        Error::Closed(Box::new(Closed::with_exit(
            reason,
            self.poll_exit().map(|status| status.to_string()),
            self.tail.lock().text(),
        )))
    }

    /// Reaps the child if it has exited, without blocking.
    fn poll_exit(&self) -> Option<ExitStatus> {
        let mut status = self.exit_status.lock();
        if status.is_none() {
            if let Ok(Some(exited)) = self.child.lock().try_wait() {
                *status = Some(exited);
            }
        }
        *status
    }

    /// Polls for the child's exit until `deadline`.
    fn wait_exit_until(&self, deadline: Instant) -> Option<ExitStatus> {
        loop {
            if let Some(status) = self.poll_exit() {
                return Some(status);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(5)));
        }
    }

    fn read_loop(&self, stdout: ChildStdout, inbound: Arc<dyn Inbound>) {
        let limit = self.config.max_line_bytes;
        let result = read_lines(stdout, limit, |event| match event {
            LineEvent::Line(line) => deliver(&*inbound, line),
            LineEvent::Oversized(bytes) => {
                inbound.event(TransportEvent::Oversized { bytes, limit });
            }
        });
        let reason = match result {
            Ok(()) => "the server's stdout ended".to_owned(),
            Err(error) => format!("reading the server's stdout failed: {error}"),
        };
        // Nothing more can be answered: let the writer end and release stdin.
        drop(self.writer_tx.lock().take());
        // Give the child a moment to exit and stderr to drain, so the error says why.
        let deadline = Instant::now() + self.config.exit_wait;
        let _ = self.stderr_done.recv_deadline(deadline);
        let status = self.wait_exit_until(deadline);
        self.report_closed(&inbound, reason, status);
    }

    fn report_closed(
        &self,
        inbound: &Arc<dyn Inbound>,
        reason: String,
        status: Option<ExitStatus>,
    ) {
        if self.close_reported.swap(true, Ordering::SeqCst) {
            return;
        }
        inbound.closed(Closed::with_exit(
            reason,
            status.map(|status| status.to_string()),
            self.tail.lock().text(),
        ));
    }

    /// Ends the child and our threads: close stdin, wait, SIGTERM the group, wait, SIGKILL the
    /// group, reap. Idempotent: a second call waits for the first and returns.
    fn shut_down(&self) {
        let mut closing = self.closing.lock();
        if *closing {
            return;
        }
        *closing = true;
        drop(self.writer_tx.lock().take());
        drop(self.threads_done_tx.lock().take());
        let pid = self.pid;
        let mut status = self.wait_exit_until(Instant::now() + self.config.stdin_close_grace);
        if status.is_none() {
            log::debug!(
                "toolwire: `{}` still running after stdin closed; SIGTERM",
                self.command_line
            );
            sys::signal_group(pid, sys::Signal::Term);
            status = self.wait_exit_until(Instant::now() + self.config.terminate_grace);
        }
        let group_killed = status.is_none();
        if group_killed {
            log::warn!("toolwire: `{}` ignored SIGTERM; SIGKILL", self.command_line);
            sys::signal_group(pid, sys::Signal::Kill);
            // SIGKILL cannot be ignored; this wait reaps the child. The child lock is released
            // before `exit_status` is taken: `poll_exit` locks them in the other order.
            let reaped = self.child.lock().wait();
            match reaped {
                Ok(exited) => *self.exit_status.lock() = Some(exited),
                Err(error) => log::warn!("toolwire: could not reap pid {pid}: {error}"),
            }
        }
        // Members of the child's group that outlived it (e.g. a wrapper's children) would hold
        // our pipes open: they go too. After the group's SIGKILL only zombies can be left, which
        // `group_alive` counts until their new parent reaps them: waiting for those is useless.
        if !group_killed && sys::group_alive(pid) {
            sys::signal_group(pid, sys::Signal::Term);
            let deadline = Instant::now() + self.config.terminate_grace;
            while sys::group_alive(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if sys::group_alive(pid) {
                sys::signal_group(pid, sys::Signal::Kill);
            }
        }
        self.join_threads();
        let inbound = self.inbound.lock().take();
        if let Some(inbound) = inbound {
            self.report_closed(
                &inbound,
                "closed by the caller".into(),
                *self.exit_status.lock(),
            );
        }
    }

    fn join_threads(&self) {
        let current = std::thread::current().id();
        if self.thread_ids.lock().contains(&current) {
            // Closing from our own reader thread (a handler closed the client): the threads end
            // by themselves now that the child is gone.
            return;
        }
        let deadline = Instant::now() + self.config.thread_join_grace;
        match self.threads_done.recv_deadline(deadline) {
            Err(RecvTimeoutError::Disconnected) => {
                for thread in self.threads.lock().drain(..) {
                    sys::join_reporting(thread);
                }
            }
            _ => log::warn!(
                "toolwire: threads of `{}` did not end (a process outside its group holds its pipes?); leaving them",
                self.command_line
            ),
        }
    }
}

fn write_loop(stdin: ChildStdin, frames: Receiver<String>) {
    let mut stdin = io::BufWriter::with_capacity(64 * 1024, stdin);
    while let Ok(line) = frames.recv() {
        let mut result = stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"));
        // Write what is queued together, then flush once.
        while result.is_ok() {
            match frames.try_recv() {
                Ok(line) => {
                    result = stdin
                        .write_all(line.as_bytes())
                        .and_then(|()| stdin.write_all(b"\n"));
                }
                Err(_) => break,
            }
        }
        if let Err(error) = result.and_then(|()| stdin.flush()) {
            log::debug!("toolwire: writing to the server's stdin failed: {error}");
            return;
        }
    }
}

fn drain_stderr(mut stderr: ChildStderr, tail: &Mutex<Tail>, label: &str) {
    let mut buffer = vec![0u8; 8192];
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let count = match stderr.read(&mut buffer) {
            Ok(0) => break,
            Ok(count) => count,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buffer[..count];
        tail.lock().push(chunk);
        if log::log_enabled!(log::Level::Debug) {
            partial.extend_from_slice(chunk);
            while let Some(position) = partial.iter().position(|&byte| byte == b'\n') {
                let line: Vec<u8> = partial.drain(..=position).collect();
                log::debug!(
                    "[{label} stderr] {}",
                    String::from_utf8_lossy(&line).trim_end()
                );
            }
            // Bound the partial line kept for logging.
            if partial.len() > 4096 {
                partial.clear();
            }
        }
    }
}

/// The last `capacity` bytes written to it.
pub(crate) struct Tail {
    capacity: usize,
    bytes: Vec<u8>,
}

impl Tail {
    pub(crate) fn new(capacity: usize) -> Tail {
        Tail {
            capacity,
            bytes: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= self.capacity {
            self.bytes.clear();
            self.bytes
                .extend_from_slice(&chunk[chunk.len() - self.capacity..]);
            return;
        }
        self.bytes.extend_from_slice(chunk);
        // Trim only when twice the capacity: amortised O(1) per byte.
        if self.bytes.len() > 2 * self.capacity {
            let excess = self.bytes.len() - self.capacity;
            self.bytes.drain(..excess);
        }
    }

    pub(crate) fn text(&self) -> String {
        let start = self.bytes.len().saturating_sub(self.capacity);
        String::from_utf8_lossy(&self.bytes[start..]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::Tail;

    #[test]
    fn tail_keeps_the_last_bytes() {
        let mut tail = Tail::new(4);
        tail.push(b"ab");
        tail.push(b"cdef");
        assert_eq!(tail.text(), "cdef");
        for _ in 0..10 {
            tail.push(b"xy");
        }
        tail.push(b"z");
        assert_eq!(tail.text(), "yxyz");
        tail.push(b"0123456789");
        assert_eq!(tail.text(), "6789");
    }
}
