//! The attempt budget: how many executions a harness admits before it answers `BUDGET`.

use parking_lot::Mutex;

/// The attempt budget as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetState {
    /// Attempts the executor admitted so far.
    pub used: u32,
    /// The most attempts allowed.
    pub limit: u32,
}

impl BudgetState {
    /// Attempts left before `BUDGET`.
    pub fn remaining(&self) -> u32 {
        self.limit.saturating_sub(self.used)
    }
}

/// Why an attempt was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The budget is spent.
    Budget,
    /// The executor had no free worker.
    Busy,
}

/// The budget counts admissions only. The check and the admission happen under one lock, so
/// two racing calls can never both take the last attempt, and a `BUSY` answer never touches
/// the count.
#[derive(Debug)]
pub(crate) struct Budget {
    state: Mutex<BudgetState>,
}

impl Budget {
    pub(crate) fn new(limit: u32) -> Budget {
        Budget {
            state: Mutex::new(BudgetState { used: 0, limit }),
        }
    }

    pub(crate) fn state(&self) -> BudgetState {
        *self.state.lock()
    }

    /// Starts over with nothing used and a new limit.
    pub(crate) fn reset(&self, limit: u32) {
        *self.state.lock() = BudgetState { used: 0, limit };
    }

    /// Runs `admit` when budget is left, and counts the attempt when it admitted. `admit` must
    /// not block for long: it runs under the budget's lock.
    pub(crate) fn admit_with(&self, admit: impl FnOnce() -> bool) -> Result<(), Refusal> {
        let mut state = self.state.lock();
        if state.used >= state.limit {
            return Err(Refusal::Budget);
        }
        if admit() {
            state.used += 1;
            Ok(())
        } else {
            Err(Refusal::Busy)
        }
    }
}

/// Budgets by scope: one attempt budget per key the caller names (a conversation, a session,
/// an authenticated caller), each with the same limit and each kept as a [`Harness`]'s own
/// budget is (only admitted attempts count; the check and the admission under one lock).
///
/// Bounded: at most `max_scopes` keys are held; a new key past that forgets the scope used
/// least recently (which starts over if its key comes back). A [`BudgetScope`] handle keeps
/// counting into its budget while it is held, forgotten or not.
///
/// [`Harness`]: super::Harness
#[derive(Debug)]
pub struct BudgetScopes {
    limit: u32,
    max_scopes: usize,
    scopes: Mutex<Scopes>,
}

#[derive(Debug, Default)]
struct Scopes {
    /// Each key's budget and when it was last asked for.
    by_key: std::collections::HashMap<std::sync::Arc<str>, (std::sync::Arc<Budget>, u64)>,
    clock: u64,
}

impl BudgetScopes {
    /// Budgets of `limit` attempts per scope, at most `max_scopes` scopes held at once (at
    /// least 1).
    pub fn new(limit: u32, max_scopes: usize) -> BudgetScopes {
        BudgetScopes {
            limit,
            max_scopes: max_scopes.max(1),
            scopes: Mutex::new(Scopes::default()),
        }
    }

    /// The budget of `key`, made with nothing used when the key is new.
    pub fn scope(&self, key: &str) -> BudgetScope {
        let mut scopes = self.scopes.lock();
        scopes.clock += 1;
        let now = scopes.clock;
        let known = scopes
            .by_key
            .get_key_value(key)
            .map(|(key, (budget, _))| BudgetScope {
                key: std::sync::Arc::clone(key),
                budget: std::sync::Arc::clone(budget),
            });
        if let Some(known) = known {
            if let Some((_, used)) = scopes.by_key.get_mut(key) {
                *used = now;
            }
            return known;
        }
        if scopes.by_key.len() >= self.max_scopes {
            let oldest = scopes
                .by_key
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| std::sync::Arc::clone(key));
            if let Some(oldest) = oldest {
                scopes.by_key.remove(&oldest);
            }
        }
        let key: std::sync::Arc<str> = key.into();
        let budget = std::sync::Arc::new(Budget::new(self.limit));
        scopes.by_key.insert(
            std::sync::Arc::clone(&key),
            (std::sync::Arc::clone(&budget), now),
        );
        BudgetScope { key, budget }
    }

    /// How many scopes are held.
    pub fn len(&self) -> usize {
        self.scopes.lock().by_key.len()
    }

    /// True when no scope is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The limit of each scope.
    pub fn limit(&self) -> u32 {
        self.limit
    }
}

/// One scope's attempt budget, from [`BudgetScopes::scope`] (or [`super::Harness::scope`]):
/// calls made in it ([`super::CallSettings::budget`]) count here instead of the harness's own
/// budget. Cheap to clone; clones share the count.
#[derive(Debug, Clone)]
pub struct BudgetScope {
    key: std::sync::Arc<str>,
    pub(crate) budget: std::sync::Arc<Budget>,
}

impl BudgetScope {
    /// The key the scope was asked for by.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The budget as it stands.
    pub fn state(&self) -> BudgetState {
        self.budget.state()
    }

    /// Starts the scope over: nothing used, the given limit.
    pub fn reset(&self, limit: u32) {
        self.budget.reset(limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_admissions_count_and_a_spent_budget_admits_nothing() {
        let budget = Budget::new(2);
        assert_eq!(budget.admit_with(|| false), Err(Refusal::Busy));
        assert_eq!(budget.state().used, 0);
        assert_eq!(budget.admit_with(|| true), Ok(()));
        assert_eq!(budget.admit_with(|| true), Ok(()));
        let mut asked = false;
        assert_eq!(
            budget.admit_with(|| {
                asked = true;
                true
            }),
            Err(Refusal::Budget)
        );
        assert!(!asked, "the executor was asked after the budget was spent");
        assert_eq!(budget.state(), BudgetState { used: 2, limit: 2 });
        assert_eq!(budget.state().remaining(), 0);
        budget.reset(5);
        assert_eq!(budget.state().remaining(), 5);
    }

    #[test]
    fn scopes_count_apart_and_are_bounded_by_forgetting_the_least_recently_used() {
        let scopes = BudgetScopes::new(1, 2);
        let alice = scopes.scope("alice");
        assert_eq!(alice.budget.admit_with(|| true), Ok(()));
        assert_eq!(
            scopes.scope("alice").budget.admit_with(|| true),
            Err(Refusal::Budget)
        );
        assert_eq!(scopes.scope("bob").budget.admit_with(|| true), Ok(()));
        scopes.scope("alice");
        scopes.scope("carol");
        assert_eq!(scopes.len(), 2, "at most two scopes are held");
        assert_eq!(scopes.scope("alice").state().used, 1, "alice was kept");
        assert_eq!(scopes.scope("bob").state().used, 0, "bob was forgotten");
        assert_eq!(alice.key(), "alice");
    }
}
