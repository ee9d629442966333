//! An in-memory transport pair for tests: the test plays the peer, line by line.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, select, unbounded, Receiver, Sender};
use parking_lot::Mutex;

use super::{deliver, Inbound, Outgoing, Transport};
use crate::error::{Closed, Error, Result};
use crate::sys::spawn_named;
use crate::wire::{self, Frame, Message};

/// The client's end of an in-memory connection. Make one with [`MemoryTransport::pair`].
pub struct MemoryTransport {
    to_peer: Mutex<Option<Sender<String>>>,
    from_peer: Mutex<Option<Receiver<PeerItem>>>,
    stop: Mutex<Option<Sender<()>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    capacity: usize,
}

/// The test's end: reads what the client sent and writes what the "server" says.
pub struct MemoryPeer {
    from_client: Receiver<String>,
    to_client: Sender<PeerItem>,
}

enum PeerItem {
    Frame(Vec<u8>),
    Close(Closed),
}

impl MemoryTransport {
    /// A connected pair. The client-to-peer queue holds 1,024 frames; past that `send` waits
    /// until its deadline.
    pub fn pair() -> (MemoryTransport, MemoryPeer) {
        MemoryTransport::pair_with_capacity(1024)
    }

    /// A connected pair whose client-to-peer queue holds `capacity` frames (at least 1).
    pub fn pair_with_capacity(capacity: usize) -> (MemoryTransport, MemoryPeer) {
        let capacity = capacity.max(1);
        let (to_peer, from_client) = bounded(capacity);
        let (to_client, from_peer) = unbounded();
        (
            MemoryTransport {
                to_peer: Mutex::new(Some(to_peer)),
                from_peer: Mutex::new(Some(from_peer)),
                stop: Mutex::new(None),
                thread: Mutex::new(None),
                capacity,
            },
            MemoryPeer {
                from_client,
                to_client,
            },
        )
    }
}

impl Transport for MemoryTransport {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        let from_peer = self
            .from_peer
            .lock()
            .take()
            .ok_or_else(|| Error::Config("the memory transport was already started".into()))?;
        let (stop_tx, stop_rx) = bounded::<()>(0);
        let thread = spawn_named("toolwire-memory-reader", move || loop {
            select! {
                recv(from_peer) -> item => match item {
                    Ok(PeerItem::Frame(bytes)) => deliver(&*inbound, &bytes),
                    Ok(PeerItem::Close(closed)) => {
                        inbound.closed(closed);
                        return;
                    }
                    Err(_) => {
                        inbound.closed(Closed::new("the memory peer was dropped"));
                        return;
                    }
                },
                recv(stop_rx) -> _ => return,
            }
        })?;
        *self.stop.lock() = Some(stop_tx);
        *self.thread.lock() = Some(thread);
        Ok(())
    }

    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()> {
        self.send_borrowed(&message, deadline)
    }

    fn send_borrowed(&self, message: &Outgoing, deadline: Option<Instant>) -> Result<()> {
        let Some(tx) = self.to_peer.lock().clone() else {
            return Err(Error::closed_because("the memory transport is closed"));
        };
        super::enqueue(&tx, message.to_line(), deadline, self.capacity, || {
            Error::closed_because("the memory peer is gone")
        })
    }

    fn close(&self) -> Result<()> {
        drop(self.to_peer.lock().take());
        drop(self.stop.lock().take());
        if let Some(thread) = self.thread.lock().take() {
            if thread.thread().id() != std::thread::current().id() {
                crate::sys::join_reporting(thread);
            }
        }
        Ok(())
    }

    fn describe(&self) -> String {
        "in-memory transport".into()
    }
}

impl Drop for MemoryTransport {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl MemoryPeer {
    /// The next frame the client sent, waiting up to `timeout`; `None` on timeout or when the
    /// client side is closed.
    pub fn recv_line(&self, timeout: Duration) -> Option<String> {
        self.from_client.recv_timeout(timeout).ok()
    }

    /// The next frame the client sent, parsed; `None` on timeout or close.
    ///
    /// # Panics
    ///
    /// If the client sent something that is not a valid frame (a bug worth a loud test
    /// failure).
    pub fn recv(&self, timeout: Duration) -> Option<Frame> {
        let line = self.recv_line(timeout)?;
        Some(
            wire::parse_frame(line.as_bytes()).unwrap_or_else(|invalid| {
                panic!(
                    "the client sent an invalid frame {line:?}: {:?}",
                    invalid.error
                )
            }),
        )
    }

    /// The next single message the client sent; `None` on timeout or close.
    ///
    /// # Panics
    ///
    /// If the frame is invalid or a batch.
    pub fn recv_message(&self, timeout: Duration) -> Option<Message> {
        match self.recv(timeout)? {
            Frame::Single(message) => Some(message),
            Frame::Batch(_) => panic!("expected a single message, got a batch"),
        }
    }

    /// The channel of raw frames from the client, for `select!`.
    pub fn receiver(&self) -> &Receiver<String> {
        &self.from_client
    }

    /// Sends raw text to the client as one frame (it need not be valid JSON).
    pub fn send_line(&self, line: impl Into<String>) {
        self.send_bytes(line.into().into_bytes());
    }

    /// Sends raw bytes to the client as one frame (they need not be UTF-8 or JSON).
    pub fn send_bytes(&self, bytes: impl Into<Vec<u8>>) {
        let _ = self.to_client.send(PeerItem::Frame(bytes.into()));
    }

    /// Sends a message to the client.
    pub fn send(&self, message: &Message) {
        self.send_line(wire::to_line(message));
    }

    /// Ends the connection from the peer's side, as a dying server would.
    pub fn close(&self, closed: Closed) {
        let _ = self.to_client.send(PeerItem::Close(closed));
    }
}
