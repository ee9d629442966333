//! The server's end of an in-memory connection, for tests and examples: a client over a
//! [`MemoryTransport`] talks to a [`super::Server`] over the [`MemoryPeer`] of the same pair.

use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{bounded, select, Sender};
use parking_lot::Mutex;

use crate::error::{Closed, Error, Result};
use crate::sys::{self, spawn_named};
use crate::transport::{deliver, Inbound, MemoryPeer, Outgoing, Transport};

#[allow(unused_imports)]
use crate::transport::MemoryTransport;

/// A [`Transport`] over the peer end of [`MemoryTransport::pair`]: what the client sends is
/// read by a thread of its own (`toolwire-srv-memory`); the connection ends when the client's
/// transport closes.
pub struct PeerTransport {
    peer: Arc<MemoryPeer>,
    stop: Mutex<Option<Sender<()>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for PeerTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerTransport").finish_non_exhaustive()
    }
}

impl PeerTransport {
    /// Serves over `peer`.
    pub fn new(peer: MemoryPeer) -> PeerTransport {
        PeerTransport {
            peer: Arc::new(peer),
            stop: Mutex::new(None),
            thread: Mutex::new(None),
        }
    }
}

impl Transport for PeerTransport {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        if self.thread.lock().is_some() {
            return Err(Error::Config(
                "the peer transport was already started".into(),
            ));
        }
        let (stop_tx, stop_rx) = bounded::<()>(0);
        let peer = Arc::clone(&self.peer);
        let thread = spawn_named("toolwire-srv-memory", move || loop {
            select! {
                recv(peer.receiver()) -> line => match line {
                    Ok(line) => deliver(&*inbound, line.as_bytes()),
                    Err(_) => {
                        inbound.closed(Closed::new("the client's memory transport closed"));
                        return;
                    }
                },
                recv(stop_rx) -> _ => {
                    inbound.closed(Closed::new("closed by the server"));
                    return;
                }
            }
        })?;
        *self.stop.lock() = Some(stop_tx);
        *self.thread.lock() = Some(thread);
        Ok(())
    }

    fn send(&self, message: Outgoing, _deadline: Option<Instant>) -> Result<()> {
        // The client's inbound queue is unbounded: this never waits.
        self.peer.send_line(message.to_line());
        Ok(())
    }

    fn close(&self) -> Result<()> {
        drop(self.stop.lock().take());
        self.peer
            .close(Closed::new("the server closed the connection"));
        if let Some(thread) = self.thread.lock().take() {
            if thread.thread().id() != std::thread::current().id() {
                sys::join_reporting(thread);
            }
        }
        Ok(())
    }

    fn describe(&self) -> String {
        "in-memory transport (server)".into()
    }
}
