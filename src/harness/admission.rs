//! An admission handle: a bound on the calls in flight through one door (one MCP server's
//! imported tools, say), refused `BUSY` at once past it, never queued.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};

/// An admission handle: at most `limit` calls of the tools it guards are in flight at once;
/// one more is `BUSY` at once, without running or queueing. Give one to the imported tools
/// of one MCP server ([`super::ImportedTool::new`]) to bound that server's calls apart from
/// the harness's workers: their attempts then run on the caller's thread, admitted by this
/// handle under the call's budget, as the executor admits a local tool's.
///
/// Cheap to clone; clones share the count.
#[derive(Debug, Clone)]
pub struct Admission(Arc<Door>);

#[derive(Debug)]
struct Door {
    name: String,
    limit: usize,
    in_flight: Mutex<usize>,
}

/// A place taken through an [`Admission`]; frees it when dropped.
#[derive(Debug)]
pub(crate) struct AdmissionGuard(Arc<Door>);

impl Drop for AdmissionGuard {
    fn drop(&mut self) {
        let mut in_flight = self.0.in_flight.lock();
        *in_flight = in_flight.saturating_sub(1);
    }
}

impl Admission {
    /// A handle named `name` (what a `BUSY` answer calls it, e.g. `the server "files"`) that
    /// admits at most `limit` calls at once (1 to 1,024).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a limit out of its bounds.
    pub fn new(name: impl Into<String>, limit: usize) -> Result<Admission> {
        if !(1..=1024).contains(&limit) {
            return Err(Error::Config(format!(
                "an admission limit must be 1 to 1024, not {limit}"
            )));
        }
        Ok(Admission(Arc::new(Door {
            name: name.into(),
            limit,
            in_flight: Mutex::new(0),
        })))
    }

    /// The name given.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The most calls in flight at once.
    pub fn limit(&self) -> usize {
        self.0.limit
    }

    /// How many calls are in flight now.
    pub fn in_flight(&self) -> usize {
        *self.0.in_flight.lock()
    }

    /// Takes a place, or `None` at the limit.
    pub(crate) fn try_enter(&self) -> Option<AdmissionGuard> {
        let mut in_flight = self.0.in_flight.lock();
        if *in_flight >= self.0.limit {
            return None;
        }
        *in_flight += 1;
        Some(AdmissionGuard(Arc::clone(&self.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_refuses_at_once_and_a_dropped_place_is_free_again() {
        let door = Admission::new("the server \"a\"", 2).unwrap();
        let one = door.try_enter().unwrap();
        let _two = door.try_enter().unwrap();
        assert!(door.try_enter().is_none());
        assert_eq!(door.in_flight(), 2);
        drop(one);
        assert!(door.try_enter().is_some());
        assert!(Admission::new("x", 0).is_err());
        assert!(Admission::new("x", 1025).is_err());
    }
}
