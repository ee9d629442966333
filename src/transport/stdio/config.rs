//! How to start and bound a stdio server.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::StdioTransport;
use crate::mask::MaskedValues;
use crate::transport::{Connector, Transport};

/// The variables a child inherits by default; the same list the official SDKs use. Every
/// `OTEL_*` variable is passed on too (the OpenTelemetry configuration, so that a server
/// toolwire starts exports its traces where ours go), unless the entry sets its own
/// ([`StdioConfig::env`] wins).
pub const DEFAULT_INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// How to start and bound a stdio server. [`StdioConfig::new`] sets every bound to its
/// default; each knob has a setter that says its default. Its `Debug` shows the names of the
/// variables set, not their values (which are often tokens).
#[derive(Clone)]
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
    pub(crate) kill_on_parent_death: bool,
}

impl fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioConfig")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env", &MaskedValues(self.env.keys()))
            .field("inherit_env", &self.inherit_env)
            .field("max_line_bytes", &self.max_line_bytes)
            .field("stderr_tail_bytes", &self.stderr_tail_bytes)
            .field("writer_queue", &self.writer_queue)
            .field("stdin_close_grace", &self.stdin_close_grace)
            .field("terminate_grace", &self.terminate_grace)
            .field("exit_wait", &self.exit_wait)
            .field("thread_join_grace", &self.thread_join_grace)
            .field("kill_on_parent_death", &self.kill_on_parent_death)
            .finish()
    }
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
            kill_on_parent_death: true,
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
    /// A skipped response whose id is read on the way fails its call at once with
    /// [`crate::Error::Protocol`] naming the size and this limit.
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }

    /// How much of the end of stderr is kept for error messages. Defaults to 64 KiB. The
    /// values of the variables set with [`StdioConfig::env`] (six characters or longer) show
    /// as `***` in the tail and in the stderr lines logged at debug.
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
    /// stderr before failing pending calls; and when the child exits, how long to wait for the
    /// rest of its stdout (responses it wrote just before exiting) before failing them.
    /// Defaults to 500 ms.
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

    /// On Linux, the child receives SIGKILL when this process dies, even by SIGKILL or a
    /// crash, so no server outlives its host (its own children are not covered: they get
    /// end of input on stdin, which ends most servers). Defaults to true; no effect elsewhere.
    pub fn kill_on_parent_death(mut self, kill: bool) -> Self {
        self.kill_on_parent_death = kill;
        self
    }

    /// A connector that starts a new child from this config for every (re)connection.
    pub fn connector(self) -> Connector {
        Box::new(move || Ok(Arc::new(StdioTransport::spawn(self.clone())?) as Arc<dyn Transport>))
    }
}
