//! The operating-system helpers every layer shares: named threads, joins that report a
//! thread's panic, a guard that keeps a user callback's panic off a library thread, and the
//! few calls std does not offer (process groups and signals; all the crate's `unsafe` is
//! here, one SAFETY comment per block).
#![allow(unsafe_code)]

use std::any::Any;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::{Child, Command};
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

/// Blocks until the process `pid` (a child of ours) has exited, without reaping it, so the
/// exit status stays for `Child::try_wait`. Returns an error when there is no such child any
/// more (already reaped).
/// Runs `hook` when the process exits normally (`main` returns or `std::process::exit`), once
/// however often it is asked: the trace exporter's last flush.
#[cfg(unix)]
pub(crate) fn at_exit(hook: extern "C" fn()) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `atexit` only records a function pointer; `hook` is a plain `extern "C"`
        // function that takes no arguments, as `atexit` requires. A failure (the table is
        // full) leaves the flush to the caller.
        let _ = unsafe { libc::atexit(hook) };
    });
}

#[cfg(not(unix))]
pub(crate) fn at_exit(_hook: extern "C" fn()) {}

/// Whether a write of at most `PIPE_BUF` (4,096) bytes to `fd` would not block now (`poll`
/// with no wait says it has room); false when it cannot be asked. Never on other systems.
#[cfg(unix)]
pub(crate) fn writable_now(fd: i32) -> bool {
    let mut entry = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: poll reads and writes the one pollfd it is given, and waits for nothing.
    let ready = unsafe { libc::poll(&mut entry, 1, 0) };
    ready == 1
        && entry.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) == 0
        && entry.revents & libc::POLLOUT != 0
}

#[cfg(not(unix))]
pub(crate) fn writable_now(_fd: i32) -> bool {
    false
}

#[cfg(unix)]
pub(crate) fn wait_for_exit(pid: u32) -> io::Result<()> {
    let id = libc::id_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    loop {
        // SAFETY: `info` is a plain C struct that waitid fills; zeroed is a valid initial value,
        // and the pointer is valid for the call.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        if rc == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

#[cfg(not(unix))]
pub(crate) fn wait_for_exit(_pid: u32) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Makes the child receive SIGKILL when the thread that started it exits (Linux's
/// parent-death signal, set between fork and exec). The thread matters, not the process:
/// start such children with [`spawn_from_spawner`], whose thread lives as long as the
/// process, so a short-lived thread of the user's never takes its servers with it.
#[cfg(target_os = "linux")]
pub(crate) fn kill_on_parent_death(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid is async-signal-safe and has no memory effects.
    let parent = unsafe { libc::getpid() };
    // SAFETY: between fork and exec only async-signal-safe calls are allowed: prctl and
    // getppid are. The closure touches no heap and takes no lock.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then no signal would come.
            if libc::getppid() != parent {
                return Err(io::Error::other(
                    "the parent exited while the child started",
                ));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn kill_on_parent_death(_command: &mut Command) {}

/// Starts `command` on the process's spawner thread (`toolwire-spawner`), which lives as
/// long as the process: a parent-death signal is tied to the thread that forked, so children
/// started there outlive whichever user thread asked for them.
pub(crate) fn spawn_from_spawner(command: Command) -> io::Result<Child> {
    use std::sync::OnceLock;
    type Order = (Command, crossbeam_channel::Sender<io::Result<Child>>);
    static SPAWNER: OnceLock<Option<crossbeam_channel::Sender<Order>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = crossbeam_channel::unbounded::<Order>();
        thread::Builder::new()
            .name("toolwire-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .ok()
            .map(|_| tx)
    });
    let mut command = command;
    let Some(spawner) = spawner else {
        // No spawner thread could be started: spawn here (the signal then follows this
        // thread, as it would without the spawner).
        return command.spawn();
    };
    let (reply_tx, reply_rx) = crossbeam_channel::bounded(1);
    spawner
        .send((command, reply_tx))
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    reply_rx
        .recv()
        .map_err(|_| io::Error::other("the spawner thread is gone"))?
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

/// Waits until `socket` is readable (or writable, with `write`) or `wake` is readable, at
/// most `timeout`. A thread that owns a non-blocking socket (a WebSocket, whose one state
/// machine reads and writes) sleeps here, and another thread wakes it by writing a byte to
/// the other end of `wake`.
#[cfg(all(unix, feature = "websocket"))]
pub(crate) fn wait_socket(
    socket: std::os::fd::RawFd,
    write: bool,
    wake: std::os::fd::RawFd,
    timeout: std::time::Duration,
) -> io::Result<()> {
    let events = libc::POLLIN | if write { libc::POLLOUT } else { 0 };
    let mut fds = [
        libc::pollfd {
            fd: socket,
            events,
            revents: 0,
        },
        libc::pollfd {
            fd: wake,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    poll(&mut fds, timeout)
}

/// `poll(2)` on `fds` for at most `timeout` (a signal's interruption is a return, not an
/// error); what became ready is in their `revents`.
#[cfg(unix)]
fn poll(fds: &mut [libc::pollfd], timeout: std::time::Duration) -> io::Result<()> {
    let millis = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: `fds` is a valid slice of pollfd structs for the duration of the call, and its
    // length is passed with it; poll only writes their `revents`.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, millis) };
    if rc < 0 {
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    Ok(())
}

/// Puts our end of a pipe in non-blocking mode, so a write that would block returns
/// `WouldBlock` at once instead of waiting for the reader. The other end is a separate open
/// file description: the child's reads are untouched.
#[cfg(unix)]
pub(crate) fn set_nonblocking(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = fd.as_raw_fd();
    // SAFETY: `fd` is borrowed, so it is open for the duration of both calls; F_GETFL and
    // F_SETFL read and set the descriptor's status flags and touch no memory of ours.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Waits until `fd` can take a write (or its reader is gone, which the next write reports),
/// at most `timeout`. The caller keeps `fd` open meanwhile (it is the one thread that may
/// close it); a descriptor closed anyway makes poll report it invalid, touching no memory.
#[cfg(unix)]
pub(crate) fn wait_writable(
    fd: std::os::fd::RawFd,
    timeout: std::time::Duration,
) -> io::Result<()> {
    let mut fds = [libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    }];
    poll(&mut fds, timeout)
}

/// Non-blocking pipes need unix.
#[cfg(not(unix))]
pub(crate) fn set_nonblocking<T>(_pipe: T) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
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
