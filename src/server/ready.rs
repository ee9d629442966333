//! Readiness, for a load balancer's checks (`/readyz` of the HTTP server): named checks that
//! each say whether a part the server needs is ready (a gateway's backends, a shared store).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use parking_lot::RwLock;

use super::Server;
use crate::error::{Error, Result};

/// The longest name of a readiness check, in characters.
pub const MAX_READINESS_NAME: usize = 32;
/// The most readiness checks a server holds.
pub const MAX_READINESS_CHECKS: usize = 16;

type ReadyFn = Arc<dyn Fn() -> bool + Send + Sync>;

/// The server's readiness checks.
#[derive(Default)]
pub(crate) struct Readiness {
    checks: RwLock<Vec<(String, ReadyFn)>>,
}

impl Readiness {
    /// The name of the first check that fails (a check that panics fails); `None` when every
    /// one passes.
    pub(crate) fn first_unready(&self) -> Option<String> {
        let checks = self.checks.read().clone();
        checks
            .into_iter()
            .find(|(_, ready)| !catch_unwind(AssertUnwindSafe(|| ready())).unwrap_or(false))
            .map(|(name, _)| name)
    }
}

impl Server {
    /// Adds a readiness check: the HTTP server's ready path (`/readyz`,
    /// [`super::HttpServerConfig::health_paths`]) answers 503 while `ready` says false (or
    /// panics), with `name` as the reason. `name` is all a caller learns: 1 to
    /// [`MAX_READINESS_NAME`] characters of `a-z 0-9 _ -`, such as `backends` or `store`.
    /// `ready` runs on the connection's thread for each check, so it must answer at once
    /// (read a flag, never wait on a peer). At most [`MAX_READINESS_CHECKS`]. Defaults to
    /// none: ready whenever it listens.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a name out of its rule, or one check too many.
    pub fn add_readiness_check(
        &self,
        name: &str,
        ready: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Result<()> {
        let allowed =
            |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-';
        if name.is_empty() || name.len() > MAX_READINESS_NAME || !name.chars().all(allowed) {
            return Err(Error::Config(format!(
                "a readiness check's name must be 1 to {MAX_READINESS_NAME} characters of \
                 a-z 0-9 _ -, not {name:?}"
            )));
        }
        let mut checks = self.shared.readiness.checks.write();
        if checks.len() >= MAX_READINESS_CHECKS {
            return Err(Error::Config(format!(
                "a server holds at most {MAX_READINESS_CHECKS} readiness checks"
            )));
        }
        checks.push((name.to_owned(), Arc::new(ready)));
        Ok(())
    }
}
