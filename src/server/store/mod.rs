//! The state store: what must outlive one server instance, or be seen by every instance of a
//! server behind a load balancer.
//!
//! Three things go through it: the 2026-07-28 tasks (their status, input requests, answers
//! and results, each with its TTL, and the lease of the instance running one), budget counts
//! with a window (one count for a caller whichever instance it reaches), and events another
//! instance's streams must get (resource updates, the tasks an instance must resume or stop).
//!
//! [`MemoryStore`] is the default: one process, nothing shared, what a lone server always
//! did. The Redis store (feature `redis`, [`RedisStore`]) is the shared one. Keys given to a
//! store are relative: each store puts its own prefix in front.
//!
//! Every operation of a shared store has a deadline; a store that is down fails it with a
//! [`StoreError`] at once (never a hang), and the requests that need it are answered with that
//! error.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
pub(crate) mod resp;

#[cfg(feature = "redis")]
pub use redis::{RedisConfig, RedisStore};

/// A state store operation that failed: the store is unreachable, too slow, or refused it.
/// The text says which store and why, and never holds a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the state store failed: {0}")]
pub struct StoreError(pub String);

/// What a message delivered by [`StateStore::subscribe`] runs: quick, on the store's thread.
pub type Deliver = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// What must outlive one instance, or be seen by all of them. Keys are relative (each store
/// puts its own prefix in front); every value has a TTL, so nothing is kept forever.
///
/// Implementations must be safe to call from many threads at once, and every operation must
/// end within the store's own deadline.
pub trait StateStore: Send + Sync + 'static {
    /// True when other instances see what this store holds (a [`MemoryStore`] is false).
    fn shared(&self) -> bool;

    /// The value under `key`, if any (and not past its TTL).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store cannot answer within its deadline.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Sets `key` to `value` for `ttl`.
    ///
    /// # Errors
    ///
    /// As [`StateStore::get`], or for a value past the store's size bound.
    fn put(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StoreError>;

    /// Sets `key` to `value` for `ttl` only when it now holds `expected` (`None`: nothing);
    /// false, changing nothing, when it holds something else. Atomic.
    ///
    /// # Errors
    ///
    /// As [`StateStore::put`].
    fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
        ttl: Duration,
    ) -> Result<bool, StoreError>;

    /// Removes `key` (nothing when it is not there).
    ///
    /// # Errors
    ///
    /// As [`StateStore::get`].
    fn delete(&self, key: &str) -> Result<(), StoreError>;

    /// Counts one more under `key`, in a window of `window` begun by the first count (the
    /// count starts over once it has ended): the count now, and how long until it starts
    /// over. Atomic.
    ///
    /// # Errors
    ///
    /// As [`StateStore::get`].
    fn count(&self, key: &str, window: Duration) -> Result<(u64, Duration), StoreError>;

    /// Takes back one count of `key` (one that admitted nothing).
    ///
    /// # Errors
    ///
    /// As [`StateStore::get`].
    fn uncount(&self, key: &str) -> Result<(), StoreError>;

    /// Sends `message` to every subscriber of `channel`, on every instance (this one
    /// included); nothing is kept for a subscriber that is not connected.
    ///
    /// # Errors
    ///
    /// As [`StateStore::put`].
    fn publish(&self, channel: &str, message: &[u8]) -> Result<(), StoreError>;

    /// Runs `deliver` for every message published on `channel` from now on, for as long as
    /// the store lives (after a reconnection too; messages published while it was down are
    /// lost).
    ///
    /// # Errors
    ///
    /// When the store cannot take another subscription.
    fn subscribe(&self, channel: &str, deliver: Deliver) -> Result<(), StoreError>;
}

impl std::fmt::Debug for dyn StateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateStore")
            .field("shared", &self.shared())
            .finish_non_exhaustive()
    }
}

/// Opens the store a `--state` argument names: `memory`, or (feature `redis`)
/// `redis://HOST:PORT/DB` and `redis://:PASSWORD@HOST:PORT/DB` with [`RedisConfig`]'s
/// defaults.
///
/// # Errors
///
/// [`crate::Error::Config`] for another form (the password is never in the text).
pub fn open_state(spec: &str) -> crate::Result<Arc<dyn StateStore>> {
    if spec == "memory" {
        return Ok(Arc::new(MemoryStore::new()));
    }
    #[cfg(feature = "redis")]
    if spec.starts_with("redis://") {
        let config = RedisConfig::from_url(spec)?;
        return Ok(Arc::new(RedisStore::open(config)?));
    }
    let shown = spec.split('@').next_back().unwrap_or_default();
    Err(crate::Error::Config(format!(
        "unknown state store …{shown}: `memory`{}",
        if cfg!(feature = "redis") {
            " or redis://[:PASSWORD@]HOST:PORT[/DB]"
        } else {
            " (this build has no `redis` feature)"
        }
    )))
}

/// The channel of events every instance's clients may need.
const EVENTS: &str = "events";

/// The largest event read from [`EVENTS`]; a larger one is dropped.
const MAX_EVENT_BYTES: usize = 64 * 1024;

/// Publishes a notification for the other instances sharing the server's store (nothing
/// with a store of its own); a failure is logged, and this instance's clients have it
/// already.
pub(crate) fn publish_event(server: &super::Shared, method: &str, params: &serde_json::Value) {
    if !server.store.shared() {
        return;
    }
    let message = serde_json::json!({"from": server.instance, "method": method, "params": params});
    let bytes = message.to_string().into_bytes();
    if bytes.len() > MAX_EVENT_BYTES {
        log::warn!(target: super::LOG_TARGET, "{method} was not published: {} bytes, past {MAX_EVENT_BYTES}", bytes.len());
        return;
    }
    if let Err(error) = server.store.publish(EVENTS, &bytes) {
        log::warn!(target: super::LOG_TARGET, "{method} was not published to the other instances: {error}");
    }
}

/// Hears the events other instances publish, and tells this instance's clients.
pub(crate) fn listen_events(server: &Arc<super::Shared>) -> Result<(), StoreError> {
    let weak = Arc::downgrade(server);
    server.store.subscribe(
        EVENTS,
        Arc::new(move |message: &[u8]| {
            if message.len() > MAX_EVENT_BYTES {
                return;
            }
            let Some(server) = weak.upgrade() else { return };
            let Ok(event) = serde_json::from_slice::<serde_json::Value>(message) else {
                return;
            };
            if event["from"].as_str() == Some(server.instance.as_str()) {
                return;
            }
            if event["method"].as_str() == Some(crate::mcp::methods::RESOURCES_UPDATED) {
                if let Some(uri) = event["params"]["uri"].as_str() {
                    server.resource_updated(uri);
                }
            }
        }),
    )
}

/// One entry of a [`MemoryStore`].
struct Entry {
    value: Vec<u8>,
    until: Instant,
}

/// The store of one process: a map with TTLs. The default; nothing is shared.
///
/// Bounded: at most [`MemoryStore::max_entries`] keys (1,000,000 by default; a `put` of a new
/// key past it is refused); entries past their TTL are dropped as they are met and swept once
/// every 1,024 writes.
pub struct MemoryStore {
    entries: Mutex<MemoryEntries>,
    max_entries: usize,
    subscribers: Mutex<HashMap<String, Vec<Deliver>>>,
}

#[derive(Default)]
struct MemoryEntries {
    map: HashMap<String, Entry>,
    writes: u64,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("entries", &self.entries.lock().map.len())
            .finish_non_exhaustive()
    }
}

impl MemoryStore {
    /// An empty store holding at most 1,000,000 keys.
    pub fn new() -> MemoryStore {
        MemoryStore {
            entries: Mutex::new(MemoryEntries::default()),
            max_entries: 1_000_000,
            subscribers: Mutex::new(HashMap::new()),
        }
    }

    /// The most keys held at once (at least 1). Defaults to 1,000,000.
    pub fn max_entries(mut self, entries: usize) -> MemoryStore {
        self.max_entries = entries.max(1);
        self
    }

    fn write(
        &self,
        entries: &mut MemoryEntries,
        key: &str,
        value: Vec<u8>,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let now = Instant::now();
        entries.writes += 1;
        if entries.writes % 1024 == 0 {
            entries.map.retain(|_, entry| entry.until > now);
        }
        if !entries.map.contains_key(key) && entries.map.len() >= self.max_entries {
            entries.map.retain(|_, entry| entry.until > now);
            if entries.map.len() >= self.max_entries {
                return Err(StoreError(format!(
                    "the in-memory store holds {} keys, its limit",
                    self.max_entries
                )));
            }
        }
        entries.map.insert(
            key.to_owned(),
            Entry {
                value,
                until: now + ttl,
            },
        );
        Ok(())
    }
}

/// The live value of `key`, dropping it when past its TTL.
fn live<'a>(entries: &'a mut MemoryEntries, key: &str) -> Option<&'a mut Entry> {
    let now = Instant::now();
    if entries.map.get(key).is_some_and(|entry| entry.until <= now) {
        entries.map.remove(key);
    }
    entries.map.get_mut(key)
}

/// A count as a [`MemoryStore`] keeps it (eight bytes, little-endian); anything else is 0.
fn number(value: &[u8]) -> u64 {
    value.try_into().map(u64::from_le_bytes).unwrap_or_default()
}

impl StateStore for MemoryStore {
    fn shared(&self) -> bool {
        false
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(live(&mut self.entries.lock(), key).map(|entry| entry.value.clone()))
    }

    fn put(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StoreError> {
        let mut entries = self.entries.lock();
        self.write(&mut entries, key, value.to_vec(), ttl)
    }

    fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let mut entries = self.entries.lock();
        let now = live(&mut entries, key).map(|entry| entry.value.as_slice());
        if now != expected {
            return Ok(false);
        }
        self.write(&mut entries, key, value.to_vec(), ttl)?;
        Ok(true)
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.entries.lock().map.remove(key);
        Ok(())
    }

    fn count(&self, key: &str, window: Duration) -> Result<(u64, Duration), StoreError> {
        let mut entries = self.entries.lock();
        let now = Instant::now();
        if let Some(entry) = live(&mut entries, key) {
            let count = number(&entry.value) + 1;
            entry.value = count.to_le_bytes().to_vec();
            return Ok((count, entry.until.saturating_duration_since(now)));
        }
        self.write(&mut entries, key, 1u64.to_le_bytes().to_vec(), window)?;
        Ok((1, window))
    }

    fn uncount(&self, key: &str) -> Result<(), StoreError> {
        let mut entries = self.entries.lock();
        if let Some(entry) = live(&mut entries, key) {
            entry.value = number(&entry.value)
                .saturating_sub(1)
                .to_le_bytes()
                .to_vec();
        }
        Ok(())
    }

    fn publish(&self, channel: &str, message: &[u8]) -> Result<(), StoreError> {
        let subscribers = self
            .subscribers
            .lock()
            .get(channel)
            .cloned()
            .unwrap_or_default();
        for deliver in subscribers {
            deliver(message);
        }
        Ok(())
    }

    fn subscribe(&self, channel: &str, deliver: Deliver) -> Result<(), StoreError> {
        self.subscribers
            .lock()
            .entry(channel.to_owned())
            .or_default()
            .push(deliver);
        Ok(())
    }
}

/// A budget counter on a state store: what [`crate::harness::BudgetScopes::shared`] counts
/// with, so that one caller's count is one across every instance sharing the store.
pub struct StoreCounter {
    store: Arc<dyn StateStore>,
}

impl StoreCounter {
    /// Counts in `store`, under keys `budget:` and the SHA-256 of the scope's key.
    pub fn new(store: Arc<dyn StateStore>) -> StoreCounter {
        StoreCounter { store }
    }

    fn key(scope: &str) -> String {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(scope.as_bytes());
        let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        format!("budget:{hex}")
    }
}

impl crate::harness::SharedCounter for StoreCounter {
    fn count(&self, key: &str, window: Duration) -> Result<(u64, Duration), String> {
        self.store
            .count(&StoreCounter::key(key), window)
            .map_err(|error| error.to_string())
    }

    fn uncount(&self, key: &str) -> Result<(), String> {
        self.store
            .uncount(&StoreCounter::key(key))
            .map_err(|error| error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_store_keeps_values_until_their_ttl_and_swaps_atomically() {
        let store = MemoryStore::new().max_entries(2);
        store.put("a", b"1", Duration::from_secs(60)).unwrap();
        assert_eq!(store.get("a").unwrap().as_deref(), Some(&b"1"[..]));
        assert!(!store
            .swap("a", Some(b"2"), b"3", Duration::from_secs(60))
            .unwrap());
        assert!(store
            .swap("a", Some(b"1"), b"3", Duration::from_secs(60))
            .unwrap());
        assert!(store.swap("b", None, b"x", Duration::ZERO).unwrap());
        assert_eq!(store.get("b").unwrap(), None, "past its TTL");
        store.put("c", b"", Duration::from_secs(60)).unwrap();
        let error = store.put("d", b"", Duration::from_secs(60)).unwrap_err();
        assert!(error.to_string().contains("its limit"), "{error}");
        assert_eq!(
            store.count("n", Duration::from_secs(60)).unwrap_err(),
            error
        );
        store.delete("c").unwrap();
        assert_eq!(store.count("n", Duration::from_secs(60)).unwrap().0, 1);
        assert_eq!(store.count("n", Duration::from_secs(60)).unwrap().0, 2);
        store.uncount("n").unwrap();
        let (count, left) = store.count("n", Duration::from_secs(60)).unwrap();
        assert_eq!(count, 2);
        assert!(left <= Duration::from_secs(60));
    }

    #[test]
    fn the_memory_store_delivers_what_is_published() {
        let store = MemoryStore::new();
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&got);
        store
            .subscribe(
                "events",
                Arc::new(move |message: &[u8]| sink.lock().push(message.to_vec())),
            )
            .unwrap();
        store.publish("events", b"hello").unwrap();
        store.publish("other", b"not this").unwrap();
        assert_eq!(*got.lock(), vec![b"hello".to_vec()]);
    }

    #[test]
    fn an_unknown_state_is_refused_without_its_password() {
        let error = open_state("mysql://:secret@db:3306").unwrap_err();
        assert!(!error.to_string().contains("secret"), "{error}");
        assert!(open_state("memory").is_ok());
    }
}
