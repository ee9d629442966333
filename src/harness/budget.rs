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
}
