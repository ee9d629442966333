//! Ctrl-C. A SIGINT handler writes one byte to a self-pipe; a watcher thread reads it.
//!
//! - During a tool call the watcher hands the interrupt to the call (through the channel
//!   [`install`] returns), which cancels it, so the server is told, and then closes the server.
//! - At any other moment it closes the session, so the request in progress (a list, a ping)
//!   fails at once and the command exits with 130; while still connecting, with no session
//!   to close yet, it exits with 130 at once.
//! - A second Ctrl-C exits with 130 at once.
//!
//! `serve` also watches SIGHUP ([`hangups`]) and SIGTERM ([`terminations`]; without it SIGTERM
//! keeps its default, the process ends): the same handler writes the signal's number to the
//! same pipe, and the watcher passes each on through a channel of its own.

use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_channel::{bounded, Receiver, Sender};
use toolwire::McpClient;

use crate::transcript::Transcript;
use crate::Exit;

/// The write end of the self-pipe, for the signal handler.
static WRITE_FD: AtomicI32 = AtomicI32::new(-1);
/// True while a tool call waits in [`crate::call`], which then owns the interrupt.
static CALL_ACTIVE: AtomicBool = AtomicBool::new(false);
/// Set when an interrupt arrived outside a call.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// True in `shell`: an interrupt outside a call does not end the session.
static SHELL: AtomicBool = AtomicBool::new(false);
/// Interrupts since the last call began (or, in the shell, since the last one outside a call).
static SEEN: AtomicU32 = AtomicU32::new(0);
/// The session to close when an interrupt arrives outside a call.
static CLIENT: Mutex<Option<McpClient>> = Mutex::new(None);
/// Where a SIGHUP goes, once [`hangups`] asked for them.
static HANGUPS: Mutex<Option<Sender<()>>> = Mutex::new(None);
/// Where SIGTERM goes, once [`terminations`] asked for it.
static TERMINATIONS: Mutex<Option<Sender<()>>> = Mutex::new(None);

/// Installs the SIGINT handler and starts the watcher. The receiver yields one `()` per
/// Ctrl-C that arrives while [`call_active`] is set.
pub fn install(transcript: Option<Arc<Transcript>>) -> Receiver<()> {
    let (tx, rx) = bounded(1);
    match install_handler() {
        Ok(pipe) => {
            let spawned = std::thread::Builder::new()
                .name("toolwire-sigint".into())
                .spawn(move || watch(pipe, &tx, transcript.as_deref()));
            if let Err(error) = spawned {
                log::warn!("cannot watch for Ctrl-C: {error}");
            }
        }
        Err(error) => log::warn!("cannot install the Ctrl-C handler: {error}"),
    }
    rx
}

/// Marks whether a call owns the interrupt.
pub fn call_active(active: bool) {
    if active && SHELL.load(Ordering::SeqCst) {
        // In the shell each call has its own Ctrl-C; a second one still exits at once.
        SEEN.store(0, Ordering::SeqCst);
    }
    CALL_ACTIVE.store(active, Ordering::SeqCst);
}

/// Marks whether the shell runs: an interrupt outside a call is then the shell's (a hint
/// the first time, exiting the second time in a row).
pub fn shell_mode(on: bool) {
    SEEN.store(0, Ordering::SeqCst);
    SHELL.store(on, Ordering::SeqCst);
}

/// True in the shell (a cancelled call leaves the session open).
pub fn in_shell() -> bool {
    SHELL.load(Ordering::SeqCst)
}

/// Sets the session an interrupt outside a call closes.
pub fn hold_client(client: Option<McpClient>) {
    *CLIENT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = client;
}

/// Installs the SIGHUP handler (after [`install`]); the receiver yields one `()` per
/// SIGHUP (a full channel already holds one). Disconnected when it cannot be installed.
pub fn hangups() -> Receiver<()> {
    let (tx, rx) = bounded(1);
    if WRITE_FD.load(Ordering::SeqCst) < 0 {
        log::warn!("cannot watch for SIGHUP: the signal pipe is not open");
        return rx;
    }
    *HANGUPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(tx);
    #[cfg(unix)]
    if let Err(error) = handle(libc::SIGHUP) {
        log::warn!("cannot install the SIGHUP handler: {error}");
        HANGUPS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
    }
    rx
}

/// Catches SIGTERM from now on (after [`install`]): the receiver yields one `()` per SIGTERM
/// (a full channel already holds one; the command decides what it does: `serve --http`
/// drains and exits 0). Without the pipe, SIGTERM keeps its default.
pub fn terminations() -> Receiver<()> {
    let (tx, rx) = bounded(1);
    if WRITE_FD.load(Ordering::SeqCst) < 0 {
        log::warn!("cannot watch for SIGTERM: the signal pipe is not open");
        return rx;
    }
    *TERMINATIONS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(tx);
    #[cfg(unix)]
    if let Err(error) = handle(libc::SIGTERM) {
        log::warn!("cannot install the SIGTERM handler: {error}");
        TERMINATIONS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
    }
    rx
}

fn watch(mut pipe: File, tx: &Sender<()>, transcript: Option<&Transcript>) {
    let mut byte = [0u8; 1];
    loop {
        match pipe.read(&mut byte) {
            Ok(0) => return,
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => {
                log::warn!("the Ctrl-C watcher stopped: {error}");
                return;
            }
        }
        #[cfg(unix)]
        if i32::from(byte[0]) == libc::SIGHUP {
            if let Some(hangups) = HANGUPS
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .as_ref()
            {
                let _ = hangups.try_send(());
            }
            continue;
        }
        #[cfg(unix)]
        if i32::from(byte[0]) == libc::SIGTERM {
            if let Some(terminations) = TERMINATIONS
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .as_ref()
            {
                let _ = terminations.try_send(());
            }
            continue;
        }
        let seen = SEEN.fetch_add(1, Ordering::SeqCst) + 1;
        if seen > 1 {
            crate::progress::clear();
            errln!("toolwire: interrupted again; exiting now");
            leave(transcript);
        }
        if CALL_ACTIVE.load(Ordering::SeqCst) {
            // The call cancels itself and closes the server; a full channel already holds
            // an interrupt.
            let _ = tx.try_send(());
            continue;
        }
        if SHELL.load(Ordering::SeqCst) {
            errln!(
                "toolwire: Ctrl-C cancels a running call; `exit` or Ctrl-D leaves the shell \
                 (Ctrl-C again exits now)"
            );
            continue;
        }
        crate::progress::clear();
        INTERRUPTED.store(true, Ordering::SeqCst);
        let client = CLIENT
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        match client {
            // The main thread's request fails at once with the close, and it exits with 130
            // (see `interrupted`).
            Some(client) => {
                let _ = client.close();
            }
            // Still connecting: nothing to close yet; a server started over stdio sees its
            // stdin end when this process does.
            None => {
                errln!("toolwire: interrupted");
                leave(transcript);
            }
        }
    }
}

/// True once a Ctrl-C arrived outside a call (the session was closed for it).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

fn leave(transcript: Option<&Transcript>) -> ! {
    if let Some(transcript) = transcript {
        transcript.decision(
            "exit",
            serde_json::json!({"code": Exit::Interrupted as u8, "status": Exit::Interrupted.status()}),
        );
    }
    std::process::exit(Exit::Interrupted as i32)
}

#[cfg(unix)]
extern "C" fn on_signal(signal: libc::c_int) {
    let fd = WRITE_FD.load(Ordering::Relaxed);
    if fd < 0 {
        return;
    }
    #[allow(unsafe_code)]
    // SAFETY: only async-signal-safe work: write(2) of one byte from a live local to a
    // non-blocking pipe (a full pipe already holds a wake-up, so a failed write loses
    // nothing), with errno saved and restored around it so the interrupted code never sees
    // it change. `errno_location` returns this thread's errno, or null where it is unknown.
    unsafe {
        let errno = errno_location();
        let saved = if errno.is_null() { 0 } else { *errno };
        // The signal's number: the watcher tells SIGHUP and SIGTERM from SIGINT by it.
        let byte = signal as u8;
        let _ = libc::write(fd, std::ptr::addr_of!(byte).cast(), 1);
        if !errno.is_null() {
            *errno = saved;
        }
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
use libc::__errno_location as errno_location;

#[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
use libc::__error as errno_location;

#[cfg(all(
    unix,
    not(any(
        target_os = "linux",
        target_os = "android",
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd"
    ))
))]
unsafe fn errno_location() -> *mut libc::c_int {
    std::ptr::null_mut()
}

/// Creates the self-pipe and installs [`on_signal`] for SIGINT; returns the read end.
#[cfg(unix)]
fn install_handler() -> std::io::Result<File> {
    let mut fds = [0 as libc::c_int; 2];
    #[allow(unsafe_code)]
    // SAFETY: pipe writes two descriptors into the array we own; fcntl only changes the
    // flags of the two descriptors we just made; File takes sole ownership of the read end,
    // which nothing else uses.
    unsafe {
        if libc::pipe(fds.as_mut_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        for fd in fds {
            if libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        let flags = libc::fcntl(fds[1], libc::F_GETFL);
        if flags < 0 || libc::fcntl(fds[1], libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        WRITE_FD.store(fds[1], Ordering::SeqCst);
        let read_end = <File as std::os::fd::FromRawFd>::from_raw_fd(fds[0]);
        handle(libc::SIGINT)?;
        Ok(read_end)
    }
}

/// Installs [`on_signal`] for `signal` (the pipe is open).
#[cfg(unix)]
fn handle(signal: libc::c_int) -> std::io::Result<()> {
    #[allow(unsafe_code)]
    // SAFETY: sigaction gets a zeroed, then filled, struct that lives across the call, with a
    // handler that is an `extern "C" fn(c_int)` doing only async-signal-safe work (see
    // `on_signal`).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn install_handler() -> std::io::Result<File> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "Ctrl-C handling needs a Unix system",
    ))
}
