//! The attempt budget: how many executions a harness admits before it answers `BUDGET`, and
//! budgets by scope, each with an optional window after which it starts over.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The attempt budget as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetState {
    /// Attempts the executor admitted so far (in the current window, for a budget with one).
    pub used: u32,
    /// The most attempts allowed (per window, for a budget with one).
    pub limit: u32,
}

impl BudgetState {
    /// Attempts left before `BUDGET`.
    pub fn remaining(&self) -> u32 {
        self.limit.saturating_sub(self.used)
    }
}

/// Why an attempt was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The budget is spent.
    Budget,
    /// The executor had no free worker.
    Busy,
    /// The shared count could not be read (its store is down or too slow): nothing ran.
    Unavailable(String),
}

/// A count kept outside the process, so that several processes count one budget together
/// (see [`BudgetScopes::shared`]); the server's state stores are one
/// (`toolwire::server::StoreCounter`). Each call must end within the counter's own deadline.
pub trait SharedCounter: Send + Sync {
    /// Counts one more under `key`, in a window of `window` begun by the first count (the
    /// count starts over once it has ended): the count now and how long until it starts
    /// over. Atomic across every process sharing the counter.
    ///
    /// # Errors
    ///
    /// What went wrong, as a sentence (the counter is unreachable or too slow).
    fn count(&self, key: &str, window: Duration) -> Result<(u64, Duration), String>;

    /// Takes back one count of `key` (one that admitted nothing).
    ///
    /// # Errors
    ///
    /// As [`SharedCounter::count`].
    fn uncount(&self, key: &str) -> Result<(), String>;
}

/// The [`SharedCounter`] of a [`BudgetScopes`].
#[derive(Clone)]
struct Counter(Arc<dyn SharedCounter>);

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedCounter")
    }
}

/// A scope's count kept in a [`SharedCounter`] under its key.
#[derive(Clone)]
struct SharedCount {
    counter: Arc<dyn SharedCounter>,
    key: Arc<str>,
}

/// Where a windowed budget reads the time: [`Instant::now`], or a clock a test moves.
type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// A budget's window: its length and the clock it is measured on.
#[derive(Clone)]
struct Window {
    length: Duration,
    clock: Clock,
}

impl Window {
    fn now(&self) -> Instant {
        (self.clock)()
    }
}

/// A budget's count: the attempts admitted, and when the window they count in began (set by
/// the first attempt admitted in it).
#[derive(Debug)]
struct Count {
    used: u32,
    limit: u32,
    began: Option<Instant>,
}

/// The budget counts admissions only. The check and the admission happen under one lock, so
/// two racing calls can never both take the last attempt, and a `BUSY` answer never touches
/// the count.
///
/// With a window, the count starts over once the window that its first admitted attempt
/// began has ended (a fixed window per budget, begun by its caller's first call rather than
/// by the clock's minute): at most `limit` attempts in one window, so at most twice `limit`
/// in any span of one window's length.
pub(crate) struct Budget {
    count: Mutex<Count>,
    window: Option<Window>,
    /// Where the count is kept when it is shared with other processes (a windowed scope of
    /// [`BudgetScopes::shared`]); the local count then mirrors the last one read.
    shared: Option<SharedCount>,
}

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("count", &*self.count.lock())
            .field("window", &self.window.as_ref().map(|window| window.length))
            .finish()
    }
}

impl Budget {
    pub(crate) fn new(limit: u32) -> Budget {
        Budget::with(limit, None)
    }

    fn with(limit: u32, window: Option<Window>) -> Budget {
        Budget {
            count: Mutex::new(Count {
                used: 0,
                limit,
                began: None,
            }),
            window,
            shared: None,
        }
    }

    /// The count, started over first when its window has ended.
    fn current(&self) -> parking_lot::MutexGuard<'_, Count> {
        let mut count = self.count.lock();
        if let (Some(window), Some(began)) = (&self.window, count.began) {
            if window.now().saturating_duration_since(began) >= window.length {
                count.used = 0;
                count.began = None;
            }
        }
        count
    }

    pub(crate) fn state(&self) -> BudgetState {
        let count = self.current();
        BudgetState {
            used: count.used,
            limit: count.limit,
        }
    }

    /// Starts over with nothing used and a new limit.
    pub(crate) fn reset(&self, limit: u32) {
        *self.count.lock() = Count {
            used: 0,
            limit,
            began: None,
        };
    }

    /// Runs `admit` when budget is left, and counts the attempt when it admitted. `admit` must
    /// not block for long: it runs under the budget's lock.
    pub(crate) fn admit_with(&self, admit: impl FnOnce() -> bool) -> Result<(), Refusal> {
        if let (Some(shared), Some(window)) = (&self.shared, &self.window) {
            return self.admit_shared(shared, window, admit);
        }
        let mut count = self.current();
        if count.used >= count.limit {
            return Err(Refusal::Budget);
        }
        if admit() {
            if count.used == 0 {
                count.began = self.window.as_ref().map(Window::now);
            }
            count.used += 1;
            Ok(())
        } else {
            Err(Refusal::Busy)
        }
    }

    /// [`Budget::admit_with`] on a shared count: one atomic count in the counter, given back
    /// when `admit` admits nothing; the local count mirrors the shared one (with the window
    /// begun where the counter says it ends).
    fn admit_shared(
        &self,
        shared: &SharedCount,
        window: &Window,
        admit: impl FnOnce() -> bool,
    ) -> Result<(), Refusal> {
        let (used, left) = shared
            .counter
            .count(&shared.key, window.length)
            .map_err(Refusal::Unavailable)?;
        let mut count = self.count.lock();
        let now = window.now();
        count.began = now.checked_sub(window.length.saturating_sub(left));
        count.used = u32::try_from(used.saturating_sub(1)).unwrap_or(u32::MAX);
        if count.used >= count.limit {
            return Err(Refusal::Budget);
        }
        if admit() {
            count.used += 1;
            Ok(())
        } else {
            drop(count);
            if let Err(error) = shared.counter.uncount(&shared.key) {
                log::debug!("toolwire: a budget count could not be given back: {error}");
            }
            Err(Refusal::Busy)
        }
    }

    /// The window's length, for a budget with one.
    fn window(&self) -> Option<Duration> {
        self.window.as_ref().map(|window| window.length)
    }

    /// How long until the count starts over: `None` without a window or with nothing counted.
    fn resets_in(&self) -> Option<Duration> {
        let window = self.window.as_ref()?;
        let began = self.current().began?;
        Some(
            window
                .length
                .saturating_sub(window.now().saturating_duration_since(began)),
        )
    }

    /// What a `BUDGET` answer says about this budget: `"the attempt budget of 2 is spent"`,
    /// or with a window `"the attempt budget of 2 per 60 s is spent (it starts over in 12 s)"`.
    pub(crate) fn spent(&self) -> String {
        let limit = self.state().limit;
        match (self.window(), self.resets_in()) {
            (Some(window), Some(left)) => format!(
                "the attempt budget of {limit} per {} is spent (it starts over in {})",
                seconds(window),
                seconds(left)
            ),
            (Some(window), None) => {
                format!(
                    "the attempt budget of {limit} per {} is spent",
                    seconds(window)
                )
            }
            _ => format!("the attempt budget of {limit} is spent"),
        }
    }

    /// Whether dropping this budget forgets nothing: it counts nothing now and no handle
    /// (a call in progress) holds it besides its table's own.
    fn holds_nothing(self: &Arc<Self>) -> bool {
        Arc::strong_count(self) == 1 && self.current().used == 0
    }
}

/// A duration as a budget's answer says it: whole seconds rounded up (`"60 s"`, `"1 s"`), or
/// milliseconds under a second.
fn seconds(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        return format!("{} ms", duration.as_millis().max(1));
    }
    let whole = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    format!("{whole} s")
}

/// Budgets by scope: one attempt budget per key the caller names (a conversation, a session,
/// an authenticated caller, a peer address), each with the same limit and each kept as a
/// [`Harness`]'s own budget is (only admitted attempts count; the check and the admission
/// under one lock).
///
/// With a window ([`BudgetScopes::with_window`]) each scope's count starts over once the
/// window begun by the first attempt it counted has ended: at most `limit` attempts per
/// window, so at most twice `limit` in any span of one window's length. A key that comes
/// back within the window finds its count as it left it.
///
/// Bounded: at most `max_scopes` keys are held. When a new key finds them all taken, the
/// scopes that hold nothing (nothing counted in a running window, and no [`BudgetScope`]
/// handle out) are dropped first, which forgets nothing. When every scope still holds a
/// count:
///
/// * with a window, the new key is counted in one shared overflow scope
///   ([`BudgetScopes::OVERFLOW`], the same limit and window) until a window ends: no new key
///   can push out a count, so no caller can start its own budget over by naming many keys;
/// * without one (the keys are the application's own), the scope used least recently is
///   forgotten, and starts over if its key comes back.
///
/// A [`BudgetScope`] handle keeps counting into its budget while it is held, forgotten or
/// not.
///
/// [`Harness`]: super::Harness
#[derive(Debug)]
pub struct BudgetScopes {
    limit: u32,
    max_scopes: usize,
    window: Option<WindowSetting>,
    shared: Option<Counter>,
    scopes: Mutex<Scopes>,
}

/// The window of each scope of a [`BudgetScopes`].
#[derive(Clone)]
struct WindowSetting(Window);

impl std::fmt::Debug for WindowSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0.length)
    }
}

#[derive(Debug, Default)]
struct Scopes {
    /// Each key's budget and when it was last asked for.
    by_key: HashMap<Arc<str>, (Arc<Budget>, u64)>,
    /// Counts the requests for scopes, to order them by their last.
    tick: u64,
    /// The scope new keys share while every scope holds a count (windowed scopes only).
    overflow: Option<Arc<Budget>>,
}

impl BudgetScopes {
    /// The key of the scope new keys share while every scope of a windowed [`BudgetScopes`]
    /// holds a count (see [`BudgetScopes`]).
    pub const OVERFLOW: &'static str = "(overflow)";

    /// Budgets of `limit` attempts per scope for as long as a scope is held, at most
    /// `max_scopes` scopes held at once (at least 1).
    pub fn new(limit: u32, max_scopes: usize) -> BudgetScopes {
        BudgetScopes {
            limit,
            max_scopes: max_scopes.max(1),
            window: None,
            shared: None,
            scopes: Mutex::new(Scopes::default()),
        }
    }

    /// Budgets of `limit` attempts per scope per `window` (at least 1 ms), at most
    /// `max_scopes` scopes held at once (at least 1). A scope's window begins with the first
    /// attempt it counts and its count starts over once it has ended; see [`BudgetScopes`]
    /// for what happens when every scope is taken.
    pub fn with_window(limit: u32, window: Duration, max_scopes: usize) -> BudgetScopes {
        BudgetScopes {
            window: Some(WindowSetting(Window {
                length: window.max(Duration::from_millis(1)),
                clock: Arc::new(Instant::now),
            })),
            ..BudgetScopes::new(limit, max_scopes)
        }
    }

    /// Measures the windows on `clock` instead of [`Instant::now`]: for a test that moves
    /// time itself. Applies to the scopes made from here on; without a window it changes
    /// nothing.
    pub fn clock(mut self, clock: impl Fn() -> Instant + Send + Sync + 'static) -> Self {
        if let Some(WindowSetting(window)) = &mut self.window {
            window.clock = Arc::new(clock);
        }
        self
    }

    /// Keeps each windowed scope's count in `counter` instead of this process, so that every
    /// process sharing it counts one budget per key (several gateway instances behind a load
    /// balancer, with one Redis). A scope's count is then one atomic count in the counter,
    /// whose window is begun by its first count there; a count the counter cannot take (it is
    /// down or too slow) admits nothing and says why. Without a window it changes nothing.
    pub fn shared(mut self, counter: Arc<dyn SharedCounter>) -> Self {
        self.shared = Some(Counter(counter));
        self
    }

    fn budget_for(&self, key: &str) -> Arc<Budget> {
        let mut budget = Budget::with(
            self.limit,
            self.window.as_ref().map(|setting| setting.0.clone()),
        );
        if let (Some(counter), Some(_)) = (&self.shared, &self.window) {
            budget.shared = Some(SharedCount {
                counter: Arc::clone(&counter.0),
                key: Arc::from(key),
            });
        }
        Arc::new(budget)
    }

    /// The budget of `key`, made with nothing used when the key is new (or the shared
    /// overflow scope, as [`BudgetScopes`] says).
    pub fn scope(&self, key: &str) -> BudgetScope {
        let mut scopes = self.scopes.lock();
        scopes.tick += 1;
        let now = scopes.tick;
        let known = scopes
            .by_key
            .get_key_value(key)
            .map(|(key, (budget, _))| BudgetScope {
                key: Arc::clone(key),
                budget: Arc::clone(budget),
            });
        if let Some(known) = known {
            if let Some((_, used)) = scopes.by_key.get_mut(key) {
                *used = now;
            }
            return known;
        }
        if scopes.by_key.len() >= self.max_scopes {
            scopes
                .by_key
                .retain(|_, (budget, _)| !budget.holds_nothing());
        }
        if scopes.by_key.len() >= self.max_scopes {
            if self.window.is_some() {
                let overflow = match &scopes.overflow {
                    Some(overflow) => Arc::clone(overflow),
                    None => {
                        let overflow = self.budget_for(BudgetScopes::OVERFLOW);
                        scopes.overflow = Some(Arc::clone(&overflow));
                        overflow
                    }
                };
                return BudgetScope {
                    key: Arc::from(BudgetScopes::OVERFLOW),
                    budget: overflow,
                };
            }
            let oldest = scopes
                .by_key
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| Arc::clone(key));
            if let Some(oldest) = oldest {
                scopes.by_key.remove(&oldest);
            }
        }
        let key: Arc<str> = key.into();
        let budget = self.budget_for(&key);
        scopes
            .by_key
            .insert(Arc::clone(&key), (Arc::clone(&budget), now));
        BudgetScope { key, budget }
    }

    /// How many scopes are held (the overflow scope not counted).
    pub fn len(&self) -> usize {
        self.scopes.lock().by_key.len()
    }

    /// True when no scope is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The limit of each scope (per window, with one).
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// The window after which a scope's count starts over; `None` when counts last as long
    /// as their scopes.
    pub fn window(&self) -> Option<Duration> {
        self.window.as_ref().map(|setting| setting.0.length)
    }
}

/// One scope's attempt budget, from [`BudgetScopes::scope`] (or [`super::Harness::scope`]):
/// calls made in it ([`super::CallSettings::budget`]) count here instead of the harness's own
/// budget. Cheap to clone; clones share the count.
#[derive(Debug, Clone)]
pub struct BudgetScope {
    key: Arc<str>,
    pub(crate) budget: Arc<Budget>,
}

impl BudgetScope {
    /// The key the scope was asked for by ([`BudgetScopes::OVERFLOW`] for the shared
    /// overflow scope).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The budget as it stands (in the current window, for a scope with one).
    pub fn state(&self) -> BudgetState {
        self.budget.state()
    }

    /// How long until the scope's count starts over: `None` without a window, or while
    /// nothing is counted.
    pub fn resets_in(&self) -> Option<Duration> {
        self.budget.resets_in()
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
        assert_eq!(budget.spent(), "the attempt budget of 2 is spent");
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
        assert_eq!(scopes.window(), None);
        assert_eq!(alice.resets_in(), None);
    }

    /// A clock the test moves, and the time it started at.
    fn manual_clock() -> (
        Arc<Mutex<Instant>>,
        impl Fn() -> Instant + Send + Sync + 'static,
    ) {
        let now = Arc::new(Mutex::new(Instant::now()));
        let read = Arc::clone(&now);
        (now, move || *read.lock())
    }

    #[test]
    fn a_window_starts_the_count_over_once_it_has_ended_and_not_before() {
        let (now, clock) = manual_clock();
        let scopes = BudgetScopes::with_window(2, Duration::from_secs(60), 8).clock(clock);
        assert_eq!(scopes.window(), Some(Duration::from_secs(60)));
        let alice = scopes.scope("alice");
        assert_eq!(
            alice.resets_in(),
            None,
            "nothing counted, no window running"
        );
        // The window begins with the first attempt counted, not with the scope.
        *now.lock() += Duration::from_secs(30);
        assert_eq!(alice.budget.admit_with(|| true), Ok(()));
        *now.lock() += Duration::from_secs(10);
        assert_eq!(alice.budget.admit_with(|| true), Ok(()));
        assert_eq!(alice.budget.admit_with(|| true), Err(Refusal::Budget));
        assert_eq!(alice.resets_in(), Some(Duration::from_secs(50)));
        assert_eq!(
            alice.budget.spent(),
            "the attempt budget of 2 per 60 s is spent (it starts over in 50 s)"
        );
        // A moment before the window ends: still spent, for this handle and a new one.
        *now.lock() += Duration::from_millis(49_999);
        assert_eq!(
            scopes.scope("alice").budget.admit_with(|| true),
            Err(Refusal::Budget)
        );
        assert_eq!(alice.resets_in(), Some(Duration::from_millis(1)));
        *now.lock() += Duration::from_millis(1);
        assert_eq!(alice.state(), BudgetState { used: 0, limit: 2 });
        assert_eq!(alice.budget.admit_with(|| true), Ok(()));
        assert_eq!(alice.resets_in(), Some(Duration::from_secs(60)));
        // Another key's window is its own.
        let bob = scopes.scope("bob");
        assert_eq!(bob.state().used, 0);
    }

    #[test]
    fn new_keys_cannot_push_out_a_running_count_they_share_an_overflow_scope() {
        let (now, clock) = manual_clock();
        let scopes = BudgetScopes::with_window(1, Duration::from_secs(60), 2).clock(clock);
        assert_eq!(scopes.scope("mallory").budget.admit_with(|| true), Ok(()));
        assert_eq!(scopes.scope("alice").budget.admit_with(|| true), Ok(()));
        // Every scope holds a count: new keys, however many, share one overflow scope.
        let first = scopes.scope("mallory-2");
        assert_eq!(first.key(), BudgetScopes::OVERFLOW);
        assert_eq!(first.budget.admit_with(|| true), Ok(()));
        let second = scopes.scope("mallory-3");
        assert_eq!(second.key(), BudgetScopes::OVERFLOW);
        assert_eq!(second.budget.admit_with(|| true), Err(Refusal::Budget));
        assert_eq!(scopes.len(), 2);
        assert_eq!(
            scopes.scope("mallory").budget.admit_with(|| true),
            Err(Refusal::Budget),
            "naming new keys did not start mallory's count over"
        );
        // A scope whose window has ended holds nothing and makes room; one still held by a
        // call in progress (a handle out) is kept.
        let held = scopes.scope("alice");
        *now.lock() += Duration::from_secs(60);
        let carol = scopes.scope("carol");
        assert_eq!(carol.key(), "carol");
        assert_eq!(scopes.len(), 2);
        assert_eq!(scopes.scope("dave").key(), BudgetScopes::OVERFLOW);
        drop(held);
        drop(carol);
        assert_eq!(scopes.scope("dave").key(), "dave");
    }

    #[test]
    fn scopes_that_hold_nothing_make_room_without_a_window_too() {
        let scopes = BudgetScopes::new(1, 2);
        assert_eq!(scopes.scope("alice").budget.admit_with(|| true), Ok(()));
        scopes.scope("idle");
        // "alice" was asked for first, but "idle" holds nothing and goes.
        scopes.scope("bob");
        assert_eq!(scopes.scope("alice").state().used, 1);
        assert_eq!(scopes.len(), 2);
    }

    /// A counter kept in one map, as a shared store keeps it for every process; `down` makes
    /// it fail.
    #[derive(Default)]
    struct Counts {
        counts: Mutex<HashMap<String, u64>>,
        down: std::sync::atomic::AtomicBool,
    }

    impl SharedCounter for Counts {
        fn count(&self, key: &str, window: Duration) -> Result<(u64, Duration), String> {
            if self.down.load(std::sync::atomic::Ordering::SeqCst) {
                return Err("the store is down".into());
            }
            let mut counts = self.counts.lock();
            let count = counts.entry(key.to_owned()).or_default();
            *count += 1;
            Ok((*count, window))
        }

        fn uncount(&self, key: &str) -> Result<(), String> {
            if let Some(count) = self.counts.lock().get_mut(key) {
                *count -= 1;
            }
            Ok(())
        }
    }

    #[test]
    fn scopes_sharing_a_counter_count_one_budget_and_a_counter_that_is_down_admits_nothing() {
        let counts = Arc::new(Counts::default());
        let shared = || {
            BudgetScopes::with_window(2, Duration::from_secs(60), 8)
                .shared(Arc::clone(&counts) as Arc<dyn SharedCounter>)
        };
        // Two processes' scopes, one count per key.
        let (here, there) = (shared(), shared());
        assert_eq!(
            here.scope("alice").budget.admit_with(|| false),
            Err(Refusal::Busy)
        );
        assert_eq!(
            counts.counts.lock()["alice"],
            0,
            "a BUSY attempt was given back"
        );
        assert_eq!(here.scope("alice").budget.admit_with(|| true), Ok(()));
        assert_eq!(there.scope("alice").budget.admit_with(|| true), Ok(()));
        assert_eq!(
            here.scope("alice").budget.admit_with(|| true),
            Err(Refusal::Budget)
        );
        assert_eq!(there.scope("alice").state().used, 2);
        assert_eq!(there.scope("bob").budget.admit_with(|| true), Ok(()));
        counts.down.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut asked = false;
        assert_eq!(
            there.scope("bob").budget.admit_with(|| {
                asked = true;
                true
            }),
            Err(Refusal::Unavailable("the store is down".into()))
        );
        assert!(!asked, "an attempt was admitted without its count");
    }

    #[test]
    fn durations_are_said_as_set() {
        assert_eq!(seconds(Duration::from_secs(60)), "60 s");
        assert_eq!(seconds(Duration::from_millis(1_001)), "2 s");
        assert_eq!(seconds(Duration::from_millis(500)), "500 ms");
        assert_eq!(seconds(Duration::ZERO), "1 ms");
    }
}
