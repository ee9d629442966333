//! The few operating-system calls std does not offer: process groups and signals.
#![allow(unsafe_code)]

use std::process::Command;

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
