//! A sorted set of property names that answers "is this key one of them, and which" with
//! integer comparisons: each name is ordered by its length, then by its first eight bytes read
//! as one big-endian integer, and only a tie on both (two long names sharing a prefix) compares
//! the rest. `properties` and `required` look up every key of every object they check, and a
//! `memcmp` call per probe was most of their cost.

use std::cmp::Ordering;

/// The integer part of a name's order: its length and its first eight bytes.
#[inline]
fn head(name: &str) -> (usize, u64) {
    let bytes = name.as_bytes();
    let prefix = match bytes.first_chunk::<8>() {
        Some(chunk) => u64::from_be_bytes(*chunk),
        None => {
            // Shorter than eight bytes: the bytes high, zeros low, as a padded load would be.
            let mut prefix = 0u64;
            for (index, byte) in bytes.iter().enumerate() {
                prefix |= u64::from(*byte) << (56 - 8 * index);
            }
            prefix
        }
    };
    (bytes.len(), prefix)
}

/// The full order: `head`, then the bytes after the first eight.
fn compare(a_head: (usize, u64), a: &str, b_head: (usize, u64), b: &str) -> Ordering {
    a_head.cmp(&b_head).then_with(|| {
        if a.len() <= 8 {
            Ordering::Equal
        } else {
            a.as_bytes()[8..].cmp(&b.as_bytes()[8..])
        }
    })
}

/// Names without repeats, sorted for lookup; each keeps the position it was given at.
#[derive(Debug, Default)]
pub(crate) struct NameIndex {
    heads: Vec<(usize, u64)>,
    names: Vec<String>,
    positions: Vec<usize>,
}

impl NameIndex {
    /// Indexes `names` (the first of any repeats wins).
    pub(crate) fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> NameIndex {
        let mut entries: Vec<((usize, u64), &str, usize)> = names
            .into_iter()
            .enumerate()
            .map(|(position, name)| (head(name), name, position))
            .collect();
        entries.sort_by(|a, b| compare(a.0, a.1, b.0, b.1).then(a.2.cmp(&b.2)));
        entries.dedup_by(|later, earlier| later.1 == earlier.1);
        NameIndex {
            heads: entries.iter().map(|entry| entry.0).collect(),
            names: entries.iter().map(|entry| entry.1.to_owned()).collect(),
            positions: entries.iter().map(|entry| entry.2).collect(),
        }
    }

    /// The position given to `name` in [`NameIndex::new`], if it is one of the names.
    #[inline]
    pub(crate) fn find(&self, name: &str) -> Option<usize> {
        let name_head = head(name);
        let found = if self.heads.len() <= 8 {
            // A scan of a few integers beats a binary search's branches.
            self.heads.iter().position(|probe| *probe == name_head)
        } else {
            self.heads
                .binary_search_by(|probe| probe.cmp(&name_head))
                .ok()
        };
        found.and_then(|found| {
            // Heads are unique for names of up to eight bytes; longer ones may share one.
            if name.len() <= 8 {
                return Some(self.positions[found]);
            }
            let mut low = found;
            while low > 0 && self.heads[low - 1] == name_head {
                low -= 1;
            }
            (low..self.heads.len())
                .take_while(|&index| self.heads[index] == name_head)
                .find(|&index| self.names[index] == name)
                .map(|index| self.positions[index])
        })
    }

    /// How many names there are.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_by_position() {
        let names = [
            "owner",
            "repo",
            "title",
            "assignees",
            "assignee_ids",
            "assignee_logins",
            "",
            "owner",
            "é",
        ];
        let index = NameIndex::new(names.iter().copied());
        assert_eq!(index.len(), 8);
        for (position, name) in names.iter().enumerate().take(7) {
            assert_eq!(index.find(name), Some(position), "{name}");
        }
        assert_eq!(index.find("é"), Some(8));
        assert_eq!(index.find("owners"), None);
        assert_eq!(index.find("assignee_x"), None);
        assert_eq!(index.find("assignee_idz"), None);
        assert_eq!(NameIndex::new([]).find("a"), None);
    }
}
