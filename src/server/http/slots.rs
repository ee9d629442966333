//! The connection slots: who holds one, from which address, and whether it is serving a
//! request or still waiting for one's head. Idle connections give their slot up first: when
//! the server is full, or an address is at its cap, the connection that has waited longest
//! for a request head (from the address holding the most slots) is closed to make room, so
//! sockets that send nothing cannot lock out a client that sends a request. Only connections
//! whose request heads are complete hold their slots against newcomers.

use std::collections::HashMap;
use std::net::{IpAddr, Shutdown, TcpStream};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

/// One open connection.
struct Slot {
    /// A handle on the socket, to close it when the slot is taken back.
    socket: TcpStream,
    peer: IpAddr,
    /// Since when it waits for a request head; `None` while it serves a request.
    waiting_since: Option<Instant>,
}

/// Why a connection was not admitted.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Every slot serves a request.
    Full(usize),
    /// Every slot of this address serves a request.
    AddressFull(usize),
}

/// The open connections and their bounds.
pub(crate) struct Slots {
    open: Mutex<HashMap<u64, Slot>>,
    /// Signalled when a slot is released (a drain waits for none left).
    released: Condvar,
    next: Mutex<u64>,
    max: usize,
    per_address: usize,
    exempt: Vec<IpAddr>,
}

/// An address as one peer: an IPv4 address mapped into IPv6 (a dual-stack listener) is that
/// IPv4 address.
pub(crate) fn canonical(address: IpAddr) -> IpAddr {
    address.to_canonical()
}

impl Slots {
    pub(crate) fn new(max: usize, per_address: usize, exempt: &[IpAddr]) -> Slots {
        Slots {
            open: Mutex::new(HashMap::new()),
            released: Condvar::new(),
            next: Mutex::new(0),
            max,
            per_address,
            exempt: exempt.iter().copied().map(canonical).collect(),
        }
    }

    /// Connections open right now.
    pub(crate) fn len(&self) -> usize {
        self.open.lock().len()
    }

    /// Gives `socket` (from `peer`) a slot, waiting for its first request head; closes an idle
    /// connection to make room when needed. Returns the slot's key.
    pub(crate) fn admit(&self, socket: &TcpStream, peer: IpAddr) -> Result<u64, Refusal> {
        let peer = canonical(peer);
        let handle = socket.try_clone().map_err(|_| Refusal::Full(self.max))?;
        let mut open = self.open.lock();
        if !self.exempt.contains(&peer) {
            let mine = open.values().filter(|slot| slot.peer == peer).count();
            if mine >= self.per_address {
                let victim = Self::idlest(&open, |slot| slot.peer == peer)
                    .ok_or(Refusal::AddressFull(self.per_address))?;
                Self::evict(&mut open, victim);
            }
        }
        if open.len() >= self.max {
            let victim = Self::idlest(&open, |_| true).ok_or(Refusal::Full(self.max))?;
            Self::evict(&mut open, victim);
        }
        let key = {
            let mut next = self.next.lock();
            *next += 1;
            *next
        };
        open.insert(
            key,
            Slot {
                socket: handle,
                peer,
                waiting_since: Some(Instant::now()),
            },
        );
        Ok(key)
    }

    /// The idle connection to close first among those `eligible`: from the address holding
    /// the most slots, the one that has waited longest (the one admitted first on a tie).
    fn idlest(open: &HashMap<u64, Slot>, eligible: impl Fn(&Slot) -> bool) -> Option<u64> {
        let mut held: HashMap<IpAddr, usize> = HashMap::new();
        for slot in open.values() {
            *held.entry(slot.peer).or_default() += 1;
        }
        open.iter()
            .filter(|(_, slot)| eligible(slot))
            .filter_map(|(key, slot)| Some((*key, slot.waiting_since?, held[&slot.peer])))
            .max_by(|a, b| a.2.cmp(&b.2).then(b.1.cmp(&a.1)).then(b.0.cmp(&a.0)))
            .map(|(key, _, _)| key)
    }

    fn evict(open: &mut HashMap<u64, Slot>, key: u64) {
        if let Some(slot) = open.remove(&key) {
            log::debug!(
                target: crate::server::LOG_TARGET,
                "closed an idle connection from {} to make room",
                slot.peer
            );
            let _ = slot.socket.shutdown(Shutdown::Both);
        }
    }

    /// The connection's request head is complete: it holds its slot while it is served.
    /// False when the slot was taken back meanwhile (the request must not be served: its
    /// socket is closed).
    pub(crate) fn serving(&self, key: u64) -> bool {
        match self.open.lock().get_mut(&key) {
            Some(slot) => {
                slot.waiting_since = None;
                true
            }
            None => false,
        }
    }

    /// The connection waits for its next request head (kept alive): it may be closed to
    /// make room.
    pub(crate) fn waiting(&self, key: u64) {
        if let Some(slot) = self.open.lock().get_mut(&key) {
            slot.waiting_since = Some(Instant::now());
        }
    }

    /// The connection ended (or was taken back already).
    pub(crate) fn release(&self, key: u64) {
        self.open.lock().remove(&key);
        self.released.notify_all();
    }

    /// Closes the connections waiting for a request head (a drain: only requests being
    /// served go on).
    pub(crate) fn close_idle(&self) {
        let mut open = self.open.lock();
        let idle: Vec<u64> = open
            .iter()
            .filter(|(_, slot)| slot.waiting_since.is_some())
            .map(|(key, _)| *key)
            .collect();
        for key in idle {
            Self::evict(&mut open, key);
        }
    }

    /// Waits until no connection is open, or `deadline`; returns how many are left.
    pub(crate) fn wait_empty(&self, deadline: Instant) -> usize {
        let mut open = self.open.lock();
        while !open.is_empty() {
            if self.released.wait_until(&mut open, deadline).timed_out() {
                break;
            }
        }
        open.len()
    }

    /// Closes every connection (the server stops).
    pub(crate) fn close_all(&self) {
        for (_, slot) in self.open.lock().drain() {
            let _ = slot.socket.shutdown(Shutdown::Both);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, TcpListener};

    fn pair(listener: &TcpListener) -> (TcpStream, TcpStream) {
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (client, server)
    }

    #[test]
    fn idle_slots_make_room_and_serving_ones_do_not() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let peer = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let slots = Slots::new(2, 2, &[]);
        let (_c1, s1) = pair(&listener);
        let (_c2, s2) = pair(&listener);
        let (_c3, s3) = pair(&listener);
        let first = slots.admit(&s1, peer).unwrap();
        let second = slots.admit(&s2, peer).unwrap();
        assert!(slots.serving(second));
        // Full: the idle first one gives its slot up.
        let third = slots.admit(&s3, peer).unwrap();
        assert_eq!(slots.len(), 2);
        assert!(!slots.serving(first), "the idle one was taken back");
        assert!(slots.serving(third));
        // Both serve: the next is refused, by the address cap first.
        let (_c4, s4) = pair(&listener);
        assert_eq!(slots.admit(&s4, peer), Err(Refusal::AddressFull(2)));
        let exempt = Slots::new(2, 1, &[peer]);
        let a = exempt.admit(&s1, peer).unwrap();
        let b = exempt.admit(&s2, peer).unwrap();
        assert!(exempt.serving(a) && exempt.serving(b));
        assert_eq!(exempt.admit(&s4, peer), Err(Refusal::Full(2)));
        slots.release(second);
        slots.waiting(third);
        assert_eq!(slots.len(), 1);
    }
}
