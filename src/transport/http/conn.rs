//! Abortable HTTP exchanges on one shared ureq agent.
//!
//! Every exchange (a POST and its response stream, the GET stream, a resumption) runs on a
//! thread of ours under a [`Slot`]. The agent's connector wraps each connection it opens so
//! that, whenever the connection is used, it registers itself with the slot of the thread
//! using it. [`Slot::abort`] then shuts down exactly that connection's socket, which wakes a
//! read blocked in another thread at once. That is how a cancelled 2026-07-28 request closes
//! its response stream, and how `close()` stays bounded while streams are open, without
//! giving up connection reuse. A slot claims a pooled connection only when it uses it, and an
//! abort shuts a connection down only while the slot is still its owner, so aborting a
//! finished exchange can never hit a connection another exchange has since taken.

use std::cell::RefCell;
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, DefaultConnector, NextTimeout, ShutdownHandle, Transport,
};

thread_local! {
    /// The slot of the exchange running on this thread, if any.
    static CURRENT: RefCell<Option<Arc<Slot>>> = const { RefCell::new(None) };
}

static NEXT_SLOT: AtomicU64 = AtomicU64::new(1);

/// One exchange's handle for aborting it from another thread.
pub(in crate::transport) struct Slot {
    id: u64,
    aborted: AtomicBool,
    /// The connection this slot last used.
    conn: Mutex<Option<Arc<ConnTag>>>,
    /// Wakes interruptible sleeps on abort.
    sleeping: Mutex<()>,
    wake: Condvar,
}

impl fmt::Debug for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slot")
            .field("id", &self.id)
            .field("aborted", &self.is_aborted())
            .finish()
    }
}

impl Slot {
    pub(in crate::transport) fn new() -> Arc<Slot> {
        Arc::new(Slot {
            id: NEXT_SLOT.fetch_add(1, Ordering::Relaxed),
            aborted: AtomicBool::new(false),
            conn: Mutex::new(None),
            sleeping: Mutex::new(()),
            wake: Condvar::new(),
        })
    }

    pub(in crate::transport) fn id(&self) -> u64 {
        self.id
    }

    /// The exchange is over: a later abort must not touch the connection, which may be back
    /// in the pool.
    pub(in crate::transport) fn finish(&self) {
        self.conn.lock().take();
    }

    pub(in crate::transport) fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::SeqCst)
    }

    /// Stops the exchange: its socket is shut down (a blocked read returns at once), later
    /// I/O on this slot fails, and its sleeps end. Idempotent.
    pub(in crate::transport) fn abort(&self) {
        if self.aborted.swap(true, Ordering::SeqCst) {
            return;
        }
        let tag = self.conn.lock().take();
        if let Some(tag) = tag {
            let owner = tag.owner.lock();
            if *owner == self.id {
                tag.dead.store(true, Ordering::SeqCst);
                if let Some(handle) = tag.handle.as_ref().and_then(Weak::upgrade) {
                    handle.shutdown();
                }
            }
        }
        let _guard = self.sleeping.lock();
        self.wake.notify_all();
    }

    /// Sleeps for `duration` unless aborted first. Returns false when aborted.
    pub(in crate::transport) fn sleep(&self, duration: Duration) -> bool {
        let deadline = Instant::now() + duration;
        let mut guard = self.sleeping.lock();
        while !self.is_aborted() {
            if self.wake.wait_until(&mut guard, deadline).timed_out() {
                return !self.is_aborted();
            }
        }
        false
    }

    /// Runs `body` with this slot as the current thread's exchange.
    pub(in crate::transport) fn enter<T>(self: &Arc<Self>, body: impl FnOnce() -> T) -> T {
        let previous = CURRENT.with(|current| current.replace(Some(Arc::clone(self))));
        struct Restore(Option<Arc<Slot>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT.with(|current| *current.borrow_mut() = previous);
            }
        }
        let _restore = Restore(previous);
        body()
    }
}

/// What a connection shares with the slots that use it.
struct ConnTag {
    /// Shuts the underlying socket down (registered by ureq's TCP connector).
    handle: Option<Weak<dyn ShutdownHandle>>,
    /// The slot that used the connection last.
    owner: Mutex<u64>,
    /// Shut down by an abort: never reuse.
    dead: AtomicBool,
}

fn aborted_error() -> ureq::Error {
    ureq::Error::Io(io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "the exchange was aborted",
    ))
}

/// ureq's default connector chain, with every connection wrapped in a [`Tracked`].
#[derive(Debug, Default)]
pub(in crate::transport) struct AbortableConnector {
    inner: DefaultConnector,
}

impl Connector<()> for AbortableConnector {
    type Out = Tracked;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<()>,
    ) -> Result<Option<Tracked>, ureq::Error> {
        if current_aborted() {
            return Err(aborted_error());
        }
        let captured: Arc<Mutex<Option<Weak<dyn ShutdownHandle>>>> = Arc::new(Mutex::new(None));
        let forward = Arc::clone(&details.register_shutdown);
        let capture = Arc::clone(&captured);
        let wrapped = ConnectionDetails {
            uri: details.uri,
            addrs: details.addrs.clone(),
            config: details.config,
            request_level: details.request_level,
            resolver: details.resolver,
            now: details.now,
            timeout: details.timeout,
            current_time: Arc::clone(&details.current_time),
            run_connector: Arc::clone(&details.run_connector),
            register_shutdown: Arc::new(move |handle: Weak<dyn ShutdownHandle>| {
                *capture.lock() = Some(handle.clone());
                forward(handle)
            }),
        };
        let Some(inner) = self.inner.connect(&wrapped, chained)? else {
            return Ok(None);
        };
        let handle = captured.lock().take();
        let mut tracked = Tracked {
            inner,
            tag: Arc::new(ConnTag {
                handle,
                owner: Mutex::new(0),
                dead: AtomicBool::new(false),
            }),
            owner_seen: 0,
        };
        tracked.claim()?;
        Ok(Some(tracked))
    }
}

fn current_aborted() -> bool {
    CURRENT.with(|current| {
        current
            .borrow()
            .as_ref()
            .is_some_and(|slot| slot.is_aborted())
    })
}

/// A connection that registers with the slot of whichever thread uses it.
pub(in crate::transport) struct Tracked {
    inner: Box<dyn Transport>,
    tag: Arc<ConnTag>,
    /// The slot id this connection last registered with (saves a lock per read).
    owner_seen: u64,
}

impl fmt::Debug for Tracked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracked")
            .field("inner", &self.inner)
            .finish()
    }
}

impl Tracked {
    /// Registers with the current slot (when it changed) and fails once aborted.
    fn claim(&mut self) -> Result<(), ureq::Error> {
        if self.tag.dead.load(Ordering::SeqCst) {
            return Err(aborted_error());
        }
        CURRENT.with(|current| {
            let current = current.borrow();
            let Some(slot) = current.as_ref() else {
                return Ok(());
            };
            if slot.is_aborted() {
                return Err(aborted_error());
            }
            if self.owner_seen != slot.id {
                *self.tag.owner.lock() = slot.id;
                *slot.conn.lock() = Some(Arc::clone(&self.tag));
                self.owner_seen = slot.id;
                // An abort that raced the registration must still reach this socket.
                if slot.is_aborted() {
                    return Err(aborted_error());
                }
            }
            Ok(())
        })
    }
}

impl Transport for Tracked {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.claim()?;
        self.inner.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.claim()?;
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        !self.tag.dead.load(Ordering::SeqCst) && self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}
