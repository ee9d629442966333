//! The pending table: the client's requests in flight, keyed by their id.
//!
//! The client numbers its requests itself, one after another, so the table is a ring indexed
//! by `id - base` rather than a hash map: an insert appends at (or near) the back, a removal
//! leaves a hole, and holes at the front are dropped as `base` moves on. Requests issued
//! together sit side by side in memory, so thousands of them timing out (or being answered)
//! together are visited in order, not scattered across a hash table.
//!
//! Two things keep the ring's memory proportional to the requests in flight, whatever their
//! pattern: a long-running request at the front that holds back a mostly empty ring is moved to
//! a small side map, and so is anything that would leave a large gap. Ids the client never
//! inserts (a request whose params were refused after its id was taken) are just holes.

use std::collections::{HashMap, VecDeque};

use crate::wire::RequestId;

/// Extra slots the ring may hold beyond twice its live entries before the front is compacted.
const SLACK: usize = 64;

/// A gap this large between the ring's end and a new id moves the ring aside instead of
/// filling the gap with holes.
const MAX_GAP: usize = 4096;

/// Entries keyed by request id; see the module docs.
pub(super) struct PendingTable<T> {
    /// Entries for ids `base..base + ring.len()`; `None` where there is none.
    ring: VecDeque<Option<T>>,
    /// The id of `ring[0]`.
    base: i64,
    /// How many `Some` the ring holds.
    ring_live: usize,
    /// Entries that fell out of the ring's range: inserted behind `base`, or moved aside.
    overflow: HashMap<i64, T>,
}

impl<T> Default for PendingTable<T> {
    fn default() -> Self {
        PendingTable {
            ring: VecDeque::new(),
            base: 0,
            ring_live: 0,
            overflow: HashMap::new(),
        }
    }
}

impl<T> PendingTable<T> {
    /// Entries in the table.
    pub(super) fn len(&self) -> usize {
        self.ring_live + self.overflow.len()
    }

    /// The ring index of `id`, when it falls inside the ring.
    fn index(&self, id: i64) -> Option<usize> {
        let offset = id.checked_sub(self.base)?;
        let offset = usize::try_from(offset).ok()?;
        (offset < self.ring.len()).then_some(offset)
    }

    /// Adds an entry for `id`, which must not be in the table.
    pub(super) fn insert(&mut self, id: i64, value: T) {
        if self.ring.is_empty() {
            self.base = id;
        }
        let Some(offset) = id
            .checked_sub(self.base)
            .and_then(|offset| usize::try_from(offset).ok())
        else {
            // Behind the ring: an id taken earlier whose insert came late.
            let previous = self.overflow.insert(id, value);
            debug_assert!(previous.is_none(), "id {id} inserted twice");
            return;
        };
        if offset >= self.ring.len() + MAX_GAP {
            self.move_ring_aside();
            self.base = id;
            self.ring.push_back(Some(value));
            self.ring_live = 1;
            return;
        }
        if offset >= self.ring.len() {
            self.ring.resize_with(offset + 1, || None);
        }
        let slot = &mut self.ring[offset];
        debug_assert!(slot.is_none(), "id {id} inserted twice");
        if slot.replace(value).is_none() {
            self.ring_live += 1;
        }
    }

    /// The entry for `id`, if any.
    pub(super) fn get(&self, id: &RequestId) -> Option<&T> {
        let RequestId::Number(id) = *id else {
            return None;
        };
        // An id inside the ring's range may still sit in the side map: inserted behind an
        // earlier base that has since moved back with an emptied ring.
        match self.index(id).and_then(|index| self.ring[index].as_ref()) {
            Some(value) => Some(value),
            None => self.overflow.get(&id),
        }
    }

    /// The entry for `id`, to change in place.
    pub(super) fn get_mut(&mut self, id: &RequestId) -> Option<&mut T> {
        let RequestId::Number(id) = *id else {
            return None;
        };
        match self.index(id) {
            Some(index) if self.ring[index].is_some() => self.ring[index].as_mut(),
            _ => self.overflow.get_mut(&id),
        }
    }

    /// Takes the entry for `id` out of the table.
    pub(super) fn remove(&mut self, id: &RequestId) -> Option<T> {
        let RequestId::Number(id) = *id else {
            return None;
        };
        match self.index(id).and_then(|index| self.ring[index].take()) {
            Some(value) => {
                self.ring_live -= 1;
                self.compact();
                Some(value)
            }
            None if self.overflow.is_empty() => None,
            None => self.overflow.remove(&id),
        }
    }

    /// Takes every entry out, ring first (in id order), then the side map.
    pub(super) fn drain(&mut self) -> Vec<T> {
        let mut out: Vec<T> = self.ring.drain(..).flatten().collect();
        out.extend(self.overflow.drain().map(|(_, value)| value));
        self.ring_live = 0;
        out
    }

    /// Drops holes at the front; while the ring is mostly holes, moves its front entry aside.
    fn compact(&mut self) {
        loop {
            match self.ring.front() {
                Some(None) => {}
                Some(Some(_)) if self.ring.len() > 2 * self.ring_live + SLACK => {
                    if let Some(Some(value)) = self.ring.front_mut().map(Option::take) {
                        self.overflow.insert(self.base, value);
                        self.ring_live -= 1;
                    }
                }
                _ => break,
            }
            self.ring.pop_front();
            self.base += 1;
        }
        if self.ring.is_empty() && self.ring.capacity() > 4 * SLACK {
            // Give back what a burst grew, once it has drained.
            self.ring.shrink_to(SLACK);
        }
    }

    fn move_ring_aside(&mut self) {
        let base = self.base;
        for (offset, slot) in self.ring.drain(..).enumerate() {
            if let Some(value) = slot {
                self.overflow.insert(base + offset as i64, value);
            }
        }
        self.ring_live = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: i64) -> RequestId {
        RequestId::Number(n)
    }

    #[test]
    fn entries_are_found_by_id_and_removed_once() {
        let mut table = PendingTable::default();
        for n in 1..=100 {
            table.insert(n, n * 10);
        }
        assert_eq!(table.len(), 100);
        assert_eq!(table.get(&id(42)), Some(&420));
        assert_eq!(table.get(&RequestId::String("42".into())), None);
        assert_eq!(table.remove(&id(42)), Some(420));
        assert_eq!(table.remove(&id(42)), None);
        assert_eq!(table.remove(&id(0)), None);
        assert_eq!(table.remove(&id(101)), None);
        assert_eq!(table.remove(&id(i64::MIN)), None);
        assert_eq!(table.len(), 99);
        let mut rest = table.drain();
        rest.sort();
        assert_eq!(rest.len(), 99);
        assert!(!rest.contains(&420));
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn late_and_out_of_order_inserts_are_kept() {
        let mut table = PendingTable::default();
        table.insert(10, "ten");
        table.insert(12, "twelve");
        table.insert(11, "eleven");
        // Behind the ring's base: lands in the side map.
        table.insert(5, "five");
        assert_eq!(table.len(), 4);
        for (n, name) in [(5, "five"), (10, "ten"), (11, "eleven"), (12, "twelve")] {
            assert_eq!(table.remove(&id(n)), Some(name));
        }
        assert_eq!(table.len(), 0);

        // An id in the side map that the ring's range comes to cover again is still found.
        table.insert(20, "twenty");
        table.insert(17, "seventeen");
        assert_eq!(table.remove(&id(20)), Some("twenty"));
        table.insert(16, "sixteen");
        table.insert(18, "eighteen");
        assert_eq!(table.get(&id(17)), Some(&"seventeen"));
        assert_eq!(table.remove(&id(17)), Some("seventeen"));
        assert_eq!(table.remove(&id(16)), Some("sixteen"));
        assert_eq!(table.remove(&id(18)), Some("eighteen"));
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn a_long_running_entry_does_not_pin_a_growing_ring() {
        let mut table = PendingTable::default();
        table.insert(1, 1);
        // A million short requests pass while request 1 stays in flight.
        for n in 2..1_000_000 {
            table.insert(n, n);
            assert_eq!(table.remove(&id(n)), Some(n));
            assert!(
                table.ring.len() <= 2 * table.ring_live + SLACK + 1,
                "ring of {} for {} live",
                table.ring.len(),
                table.ring_live
            );
        }
        assert_eq!(table.len(), 1);
        assert_eq!(table.get(&id(1)), Some(&1));
        assert_eq!(table.remove(&id(1)), Some(1));
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn a_large_gap_moves_the_ring_aside_instead_of_filling_it() {
        let mut table = PendingTable::default();
        table.insert(1, 1);
        table.insert(2, 2);
        table.insert(1_000_000_000, 3);
        assert!(table.ring.len() <= 2);
        assert_eq!(table.remove(&id(2)), Some(2));
        assert_eq!(table.remove(&id(1_000_000_000)), Some(3));
        assert_eq!(table.remove(&id(1)), Some(1));
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn matches_a_hash_map_model_under_a_mixed_workload() {
        // A deterministic pseudo-random mix of inserts (in order, late, skipped) and removals
        // (hits, misses), checked against a HashMap after every step.
        let mut table = PendingTable::default();
        let mut model = std::collections::HashMap::new();
        let mut next = 1i64;
        let mut held_back = Vec::new();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            match state % 10 {
                0..=3 => {
                    table.insert(next, next);
                    model.insert(next, next);
                    next += 1;
                }
                4 => {
                    // Taken now, inserted later (another thread's registration).
                    held_back.push(next);
                    next += 1;
                }
                5 => {
                    // Taken and never inserted.
                    next += 1;
                }
                6 => {
                    if let Some(late) = held_back.pop() {
                        table.insert(late, late);
                        model.insert(late, late);
                    }
                }
                _ => {
                    let span = (next as u64).max(1);
                    let target = (state >> 20) % span;
                    let target = target as i64;
                    assert_eq!(table.remove(&id(target)), model.remove(&target));
                }
            }
            assert_eq!(table.len(), model.len());
            assert!(table.ring.len() <= 2 * table.ring_live + SLACK + MAX_GAP);
        }
        let mut left = table.drain();
        left.sort();
        let mut expected: Vec<i64> = model.into_values().collect();
        expected.sort();
        assert_eq!(left, expected);
    }
}
