//! The operating-system helpers every layer shares: named threads, joins that report a
//! thread's panic, a guard that keeps a user callback's panic off a library thread, and the
//! few calls std does not offer (process groups and signals; all the crate's `unsafe` is
//! here, one SAFETY comment per block).
#![allow(unsafe_code)]

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::Command;
use std::thread::{self, JoinHandle};

use crate::error::{Error, Result};

/// Spawns a named thread, mapping failure to [`Error::Io`].
pub(crate) fn spawn_named<F>(name: &str, body: F) -> Result<JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    thread::Builder::new()
        .name(name.to_owned())
        .spawn(body)
        .map_err(Error::Io)
}

/// Joins a library thread. A panic inside it is a bug of ours (user callbacks are guarded by
/// [`guard`]): it is logged at error with the thread's name instead of being discarded.
pub(crate) fn join_reporting(thread: JoinHandle<()>) {
    let name = thread.thread().name().unwrap_or("unnamed").to_owned();
    if let Err(panic) = thread.join() {
        log::error!(
            "toolwire: the library thread `{name}` panicked: {}",
            panic_message(&*panic)
        );
    }
}

/// Runs a user callback on a library thread. A panic is caught and logged at error naming
/// `what`, and `None` returned, so the thread goes on.
pub(crate) fn guard<T>(what: &str, body: impl FnOnce() -> T) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => Some(value),
        Err(panic) => {
            log::error!("toolwire: {what} panicked: {}", panic_message(&*panic));
            None
        }
    }
}

/// The text of a panic payload (`&str` or `String`), or a placeholder.
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// The signals `close()` escalates through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    Term,
    Kill,
}

/// Makes the child the leader of a new process group, so signals reach everything it starts.
#[cfg(unix)]
pub(crate) fn own_process_group(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
}

#[cfg(not(unix))]
pub(crate) fn own_process_group(_command: &mut Command) {}

/// Sends `signal` to the process group led by `pid`. Errors (the group is gone) are ignored.
#[cfg(unix)]
pub(crate) fn signal_group(pid: u32, signal: Signal) {
    let Ok(group) = libc::pid_t::try_from(pid) else {
        return;
    };
    let number = match signal {
        Signal::Term => libc::SIGTERM,
        Signal::Kill => libc::SIGKILL,
    };
    // SAFETY: killpg takes plain integers and has no memory effects; a stale group id only
    // yields ESRCH.
    unsafe {
        libc::killpg(group, number);
    }
}

#[cfg(not(unix))]
pub(crate) fn signal_group(_pid: u32, _signal: Signal) {}

/// True while any process of the group led by `pid` still exists (zombies included).
#[cfg(unix)]
pub(crate) fn group_alive(pid: u32) -> bool {
    let Ok(group) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks for existence and permission.
    unsafe { libc::killpg(group, 0) == 0 }
}

#[cfg(not(unix))]
pub(crate) fn group_alive(_pid: u32) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_catches_a_panic_and_returns_none() {
        assert_eq!(guard("a test callback", || 7), Some(7));
        let caught: Option<()> = guard("a test callback", || panic!("boom"));
        assert_eq!(caught, None);
    }

    #[test]
    fn panic_messages_of_both_payload_kinds() {
        let text = catch_unwind(|| panic!("static text")).unwrap_err();
        assert_eq!(panic_message(&*text), "static text");
        let formatted = catch_unwind(|| panic!("{} {}", "formatted", 1)).unwrap_err();
        assert_eq!(panic_message(&*formatted), "formatted 1");
    }
}
