//! The stdio transport: a child process speaking newline-delimited JSON.
//!
//! Four named threads per child: `toolwire-stdout` reads frames (with a line cap enforced while
//! reading), `toolwire-stdin` writes the frames the pipe could not take at once (callers
//! write the others themselves, see `stdin.rs`), `toolwire-stderr` drains
//! stderr into a tail buffer so the child can never block on a full pipe, and `toolwire-wait`
//! watches the child itself: when it exits, pending calls fail at once with its exit status,
//! even if a process it started keeps its stdout open.
//!
//! On Linux each child gets SIGKILL when the host process dies, however it dies (its
//! parent-death signal, set between fork and exec; [`StdioConfig::kill_on_parent_death`]).
//! Linux sends that signal when the *thread* that started the child exits, so such children
//! are started from one spawner thread that lives as long as the process.

use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;

use super::lines::{read_lines_and_replies, LineEvent};
use super::{deliver, Inbound, Outgoing, Transport, TransportEvent};
use crate::error::{Closed, Error, Result};
use crate::sys::{self, spawn_named};

mod config;
mod pipes;
mod stdin;

pub use config::{StdioConfig, DEFAULT_INHERITED_ENV};

use pipes::{drain_stderr, Tail};
use stdin::{Refused, Stdin};

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
    stdin: Arc<Stdin>,
    stdout: Mutex<Option<ChildStdout>>,
    tail: Arc<Mutex<Tail>>,
    stderr_done: Receiver<()>,
    /// Disconnected when the stdout reader has ended (its sender is moved into it).
    stdout_done: Receiver<()>,
    stdout_done_tx: Mutex<Option<Sender<()>>>,
    /// The child exited before the transport was started while something else held its
    /// stdout: `start` reports the close.
    exited_unread: AtomicBool,
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
            for (name, value) in std::env::vars_os() {
                if name.to_str().is_some_and(|name| name.starts_with("OTEL_")) {
                    command.env(name, value);
                }
            }
        }
        command.envs(&config.env);
        sys::own_process_group(&mut command);
        let spawned = if config.kill_on_parent_death {
            sys::kill_on_parent_death(&mut command);
            sys::spawn_from_spawner(command)
        } else {
            command.spawn()
        };
        let mut child = spawned.map_err(|source| Error::Spawn {
            command: command_line.clone(),
            source,
        })?;
        let pid = child.id();
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let stdin = match Stdin::new(stdin, config.writer_queue) {
            Ok(stdin) => Arc::new(stdin),
            Err(error) => {
                // Never leave the child behind: it has no transport to close it.
                sys::signal_group(pid, sys::Signal::Kill);
                let _ = child.wait();
                return Err(Error::Io(error));
            }
        };
        let (threads_done_tx, threads_done) = bounded::<()>(0);
        let (stderr_done_tx, stderr_done) = bounded::<()>(0);
        let (stdout_done_tx, stdout_done) = bounded::<()>(0);
        // The values we set are often tokens; the server's stderr must not show them.
        let secrets = crate::mask::Scrubber::new(crate::mask::Secrets::new(
            "",
            config.env.values().filter_map(|value| value.to_str()),
        ));
        let tail = Arc::new(Mutex::new(Tail::new(config.stderr_tail_bytes, secrets)));
        let shared = Arc::new(Shared {
            command_line,
            pid,
            child: Mutex::new(child),
            exit_status: Mutex::new(None),
            stdin: Arc::clone(&stdin),
            stdout: Mutex::new(Some(stdout)),
            tail: Arc::clone(&tail),
            stderr_done,
            stdout_done,
            stdout_done_tx: Mutex::new(Some(stdout_done_tx)),
            exited_unread: AtomicBool::new(false),
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
            stdin.write_loop();
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
        let spawned = spawned.and_then(|drain| {
            transport.shared.adopt(drain);
            let shared = Arc::clone(&transport.shared);
            let done = transport.shared.threads_done_tx.lock().clone();
            spawn_named("toolwire-wait", move || {
                let _done = done;
                shared.watch_exit();
            })
        });
        match spawned {
            Ok(watcher) => transport.shared.adopt(watcher),
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
        let stdout_done = self.shared.stdout_done_tx.lock().take();
        let reader_inbound = Arc::clone(&inbound);
        let reader = spawn_named("toolwire-stdout", move || {
            let _done = done;
            let _stdout_done = stdout_done;
            shared.read_loop(stdout, reader_inbound);
        })?;
        self.shared.adopt(reader);
        if self.shared.exited_unread.load(Ordering::SeqCst) {
            self.shared.report_held_stdout(&inbound);
        }
        Ok(())
    }

    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()> {
        self.send_borrowed(&message, deadline)
    }

    fn send_borrowed(&self, message: &Outgoing, deadline: Option<Instant>) -> Result<()> {
        // Written on this thread when the pipe has room: see `stdin.rs`.
        match self.shared.stdin.send(message.to_line_bytes(), deadline) {
            Ok(()) => Ok(()),
            Err(Refused::Full) => Err(Error::Busy {
                limit: self.shared.config.writer_queue,
            }),
            Err(Refused::Closed) => {
                // The child is gone or going: give its stderr a moment to drain (within the
                // exit wait and the sender's deadline), so the error says why it ended.
                let mut wait = Instant::now() + self.shared.config.exit_wait;
                if let Some(deadline) = deadline {
                    wait = wait.min(deadline);
                }
                let _ = self.shared.stderr_done.recv_deadline(wait);
                Err(self.shared.closed_error("the server's stdin is closed"))
            }
        }
    }

    fn close(&self) -> Result<()> {
        self.shared.shut_down();
        Ok(())
    }

    fn describe(&self) -> String {
        self.shared.command_line.clone()
    }

    /// The values of the variables set for the child (its `env`, six characters or longer).
    fn scrubber(&self) -> crate::mask::Scrubber {
        self.shared.tail.lock().scrubber()
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
        let result = read_lines_and_replies(
            stdout,
            limit,
            |event| match event {
                LineEvent::Line(line) => deliver(&*inbound, line),
                LineEvent::Oversized(bytes) => {
                    inbound.event(TransportEvent::Oversized { bytes, limit });
                }
            },
            |id, bytes| {
                inbound.event(TransportEvent::OversizedResponse {
                    id,
                    bytes,
                    limit,
                    setting: "StdioConfig::max_line_bytes",
                });
            },
        );
        let reason = match result {
            Ok(()) => "the server's stdout ended".to_owned(),
            Err(error) => format!("reading the server's stdout failed: {error}"),
        };
        // Nothing more can be answered: let the writer end and release stdin.
        self.stdin.close();
        // Give the child a moment to exit and stderr to drain, so the error says why.
        let deadline = Instant::now() + self.config.exit_wait;
        let _ = self.stderr_done.recv_deadline(deadline);
        let status = self.wait_exit_until(deadline);
        self.report_closed(&inbound, reason, status);
    }

    /// Waits for the child to exit; then, if its stdout has not ended within `exit_wait` (a
    /// process it started holds it open), fails every pending call with its exit status.
    fn watch_exit(&self) {
        if sys::wait_for_exit(self.pid).is_err() {
            // Reaped already (by `close()`), or not ours to wait for: nothing to watch.
            return;
        }
        // Responses the child wrote just before exiting may still be in the pipe: the reader
        // gets them, and reports the close itself when it reaches the end.
        let deadline = Instant::now() + self.config.exit_wait;
        if let Err(RecvTimeoutError::Disconnected) = self.stdout_done.recv_deadline(deadline) {
            return;
        }
        // A close in progress holds `closing` while it waits for this thread: never block on it.
        match self.closing.try_lock() {
            Some(closing) if !*closing => {}
            _ => return,
        }
        match self.inbound.lock().clone() {
            Some(inbound) => self.report_held_stdout(&inbound),
            None => self.exited_unread.store(true, Ordering::SeqCst),
        }
    }

    fn report_held_stdout(&self, inbound: &Arc<dyn Inbound>) {
        let status = self.poll_exit();
        // Nothing more can be answered: let the writer end and release stdin.
        self.stdin.close();
        log::debug!(
            "toolwire: `{}` exited but its stdout is still open; failing its calls now",
            self.command_line
        );
        self.report_closed(
            inbound,
            "the server exited; its stdout is still held open by another process (one it started?)"
                .into(),
            status,
        );
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
        self.stdin.close();
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
        // The child is gone: what it never read is dropped, and a pipe still held open by a
        // process outside its group cannot keep the writer thread waiting on it.
        self.stdin.abandon();
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
