//! The opt-in retry policy: exponential back-off with jitter, and the sleeper it waits with.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Waits out a back-off delay. The harness's default sleeps the thread; tests and
/// simulations can record the delays instead.
pub trait Sleeper: Send + Sync {
    /// Waits for `delay` (or pretends to).
    fn sleep(&self, delay: Duration);
}

/// The default [`Sleeper`]: `std::thread::sleep`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadSleeper;

impl Sleeper for ThreadSleeper {
    fn sleep(&self, delay: Duration) {
        std::thread::sleep(delay);
    }
}

/// When a failed attempt of an idempotent tool is tried again.
///
/// Retries are opt-in per tool and apply only to tools marked idempotent (explicitly, or for
/// MCP tools by the `idempotentHint` / `readOnlyHint` annotations); a policy on any other tool
/// is inert. Only transport failures (a local tool's [`crate::harness::ToolFailure::transport`], an MCP
/// server that is gone or unreachable) and `BUSY` are retried, and `TIMEOUT` only when
/// [`RetryPolicy::after_timeout`] says so. Every admitted attempt consumes attempt budget.
///
/// The delay before retry *n* (1-based) is `initial_delay × multiplier^(n-1)`, capped at
/// `max_delay`, minus a random share of up to `jitter` of it. With a jitter of at most 0.5
/// and a multiplier of at least 2, each delay is at least the one before until the cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) initial_delay: Duration,
    pub(crate) max_delay: Duration,
    pub(crate) multiplier: f64,
    pub(crate) jitter: f64,
    pub(crate) on_busy: bool,
    pub(crate) after_timeout: bool,
    pub(crate) seed: Option<u64>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(2),
            multiplier: 2.0,
            jitter: 0.25,
            on_busy: true,
            after_timeout: false,
            seed: None,
        }
    }
}

impl RetryPolicy {
    /// The default policy (3 attempts, 100 ms doubling to at most 2 s, 25 % jitter).
    pub fn new() -> RetryPolicy {
        RetryPolicy::default()
    }

    /// One more sending, at once, after a transport failure only (not after `BUSY` or a
    /// timeout): for an idempotent MCP tool whose server may die under a call, its client
    /// then starting it again by its restart policy for the second sending (the gateway's
    /// policy for an idempotent tool).
    pub fn resend_once() -> RetryPolicy {
        RetryPolicy::new()
            .max_attempts(2)
            .delays(Duration::ZERO, Duration::ZERO)
            .on_busy(false)
            .after_timeout(false)
    }

    /// The most attempts in all, the first included (1 to 10). Defaults to 3.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// The delay before the first retry, and the longest delay (at most 60 s). Default to
    /// 100 ms and 2 s.
    pub fn delays(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_delay = initial;
        self.max_delay = max;
        self
    }

    /// The growth factor between delays (1.0 to 10.0). Defaults to 2.0.
    pub fn multiplier(mut self, multiplier: f64) -> Self {
        self.multiplier = multiplier;
        self
    }

    /// The share of each delay that is random, 0.0 (none) to 0.5. Defaults to 0.25.
    pub fn jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// Retry when the executor answers `BUSY`. Defaults to true.
    pub fn on_busy(mut self, retry: bool) -> Self {
        self.on_busy = retry;
        self
    }

    /// Retry after `TIMEOUT` (the timed-out work may still be running). Defaults to false.
    pub fn after_timeout(mut self, retry: bool) -> Self {
        self.after_timeout = retry;
        self
    }

    /// A fixed seed for the jitter, for reproducible delays. Defaults to none (seeded from the
    /// clock and the call).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Checks the bounds, naming the first value out of them.
    pub(crate) fn check(&self) -> Result<(), String> {
        if !(1..=10).contains(&self.max_attempts) {
            return Err(format!(
                "retry max_attempts must be 1 to 10, not {}",
                self.max_attempts
            ));
        }
        if self.max_delay > Duration::from_secs(60) || self.initial_delay > self.max_delay {
            return Err(format!(
                "retry delays must satisfy initial ({:?}) <= max ({:?}) <= 60 s",
                self.initial_delay, self.max_delay
            ));
        }
        if !(1.0..=10.0).contains(&self.multiplier) {
            return Err(format!(
                "retry multiplier must be 1.0 to 10.0, not {}",
                self.multiplier
            ));
        }
        if !(0.0..=0.5).contains(&self.jitter) {
            return Err(format!(
                "retry jitter must be 0.0 to 0.5, not {}",
                self.jitter
            ));
        }
        Ok(())
    }

    /// The delay before retry `retry` (1-based), drawing the jitter from `rng`.
    pub(crate) fn delay(&self, retry: u32, rng: &mut SplitMix) -> Duration {
        let exponent = i32::try_from(retry.saturating_sub(1)).unwrap_or(i32::MAX);
        let base = (self.initial_delay.as_secs_f64() * self.multiplier.powi(exponent))
            .min(self.max_delay.as_secs_f64());
        let random_share = self.jitter * rng.next_unit();
        Duration::from_secs_f64(base * (1.0 - random_share))
    }

    /// A generator for one call's jitter.
    pub(crate) fn rng(&self, call: u64) -> SplitMix {
        let seed = self.seed.unwrap_or_else(|| {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_nanos() as u64);
            nanos ^ call.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        });
        SplitMix(seed)
    }
}

/// SplitMix64: a tiny, well-mixed generator, plenty for spreading retries apart (not for
/// anything secret).
#[derive(Debug, Clone)]
pub(crate) struct SplitMix(u64);

impl SplitMix {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in [0, 1).
    pub(crate) fn next_unit(&mut self) -> f64 {
        // The top 53 bits fill an f64 mantissa exactly.
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_until_the_cap_and_keep_within_the_jitter() {
        let policy = RetryPolicy::new()
            .max_attempts(10)
            .delays(Duration::from_millis(10), Duration::from_millis(200))
            .jitter(0.5)
            .seed(7);
        let mut rng = policy.rng(1);
        let delays: Vec<Duration> = (1..=6).map(|n| policy.delay(n, &mut rng)).collect();
        for pair in delays[..5].windows(2) {
            assert!(pair[0] <= pair[1], "{delays:?}");
        }
        let bases = [10u64, 20, 40, 80, 160, 200];
        for (delay, base) in delays.iter().zip(bases) {
            let base = Duration::from_millis(base);
            assert!(
                *delay <= base && *delay >= base / 2,
                "{delay:?} vs {base:?}"
            );
        }
    }

    #[test]
    fn a_seed_makes_the_jitter_reproducible() {
        let policy = RetryPolicy::new().seed(42);
        let first: Vec<Duration> = {
            let mut rng = policy.rng(1);
            (1..=3).map(|n| policy.delay(n, &mut rng)).collect()
        };
        let mut rng = policy.rng(99);
        let again: Vec<Duration> = (1..=3).map(|n| policy.delay(n, &mut rng)).collect();
        assert_eq!(first, again);
    }

    #[test]
    fn the_generator_spreads_over_the_unit_interval() {
        let mut rng = SplitMix(1);
        let samples: Vec<f64> = (0..1000).map(|_| rng.next_unit()).collect();
        assert!(samples.iter().all(|x| (0.0..1.0).contains(x)));
        let low = samples.iter().filter(|x| **x < 0.5).count();
        assert!((400..600).contains(&low), "{low}");
    }

    #[test]
    fn bounds_are_checked() {
        assert!(RetryPolicy::new().check().is_ok());
        assert!(RetryPolicy::new().max_attempts(0).check().is_err());
        assert!(RetryPolicy::new().max_attempts(11).check().is_err());
        assert!(RetryPolicy::new().jitter(0.6).check().is_err());
        assert!(RetryPolicy::new().multiplier(0.5).check().is_err());
        assert!(RetryPolicy::new()
            .delays(Duration::from_secs(2), Duration::from_secs(1))
            .check()
            .is_err());
        assert!(RetryPolicy::new()
            .delays(Duration::from_secs(1), Duration::from_secs(61))
            .check()
            .is_err());
    }
}
