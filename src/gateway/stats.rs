//! Counters per backend and status, read over `toolwire/stats` and printed on exit.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use crate::harness::Status;

/// What one backend's calls came to.
#[derive(Debug, Clone, Default)]
struct Counters {
    statuses: BTreeMap<Status, u64>,
    /// Calls sent to the backend (retries included).
    forwarded: u64,
    /// Calls the front client cancelled while the backend worked on them.
    cancelled: u64,
}

/// The gateway's counters. Names not served by any backend count under `""`.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    backends: Mutex<BTreeMap<String, Counters>>,
}

impl Stats {
    pub(crate) fn add_backend(&self, name: &str) {
        self.backends.lock().entry(name.to_owned()).or_default();
    }

    pub(crate) fn status(&self, backend: &str, status: Status) {
        *self
            .backends
            .lock()
            .entry(backend.to_owned())
            .or_default()
            .statuses
            .entry(status)
            .or_default() += 1;
    }

    pub(crate) fn forwarded(&self, backend: &str) {
        self.backends
            .lock()
            .entry(backend.to_owned())
            .or_default()
            .forwarded += 1;
    }

    pub(crate) fn cancelled(&self, backend: &str) {
        self.backends
            .lock()
            .entry(backend.to_owned())
            .or_default()
            .cancelled += 1;
    }

    /// `{"backends": {name: {"forwarded", "cancelled", "statuses": {WORD: n}}}, "unserved": {…}}`.
    pub(crate) fn to_json(&self, extra: impl Fn(&str) -> Map<String, Value>) -> Value {
        let backends = self.backends.lock();
        let mut out = Map::new();
        let mut unserved = json!({});
        for (name, counters) in backends.iter() {
            let statuses: Map<String, Value> = counters
                .statuses
                .iter()
                .map(|(status, count)| (status.as_str().to_owned(), json!(count)))
                .collect();
            if name.is_empty() {
                unserved = Value::Object(statuses);
                continue;
            }
            let mut entry = extra(name);
            entry.insert("forwarded".into(), json!(counters.forwarded));
            entry.insert("cancelled".into(), json!(counters.cancelled));
            entry.insert("statuses".into(), Value::Object(statuses));
            out.insert(name.clone(), Value::Object(entry));
        }
        json!({"backends": out, "unserved": unserved})
    }

    /// One line per backend: its name, calls forwarded, and each status seen.
    pub(crate) fn table(&self) -> String {
        let backends = self.backends.lock();
        let mut text = String::new();
        for (name, counters) in backends.iter() {
            let name = if name.is_empty() { "(no server)" } else { name };
            let _ = write!(
                text,
                "{name}: forwarded {}, cancelled {}",
                counters.forwarded, counters.cancelled
            );
            for (status, count) in &counters.statuses {
                let _ = write!(text, ", {status} {count}");
            }
            text.push('\n');
        }
        text
    }
}
