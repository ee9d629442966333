//! Counters per backend and status, read over `toolwire/stats` and printed on exit.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use crate::harness::{AuditEvent, Status};

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

impl super::Core {
    /// What `toolwire/stats` answers: the counters, the clashes and the tools held.
    pub(super) fn stats_json(&self) -> Value {
        let backends = self.backends.read();
        let mut value = self.stats.to_json(|name| {
            let mut extra = Map::new();
            if let Some(backend) = backends.get(name) {
                extra.insert("tools".into(), json!(backend.served.lock().len()));
                extra.insert("in_flight".into(), json!(backend.in_flight()));
                extra.insert("limit".into(), json!(backend.limit()));
            }
            extra
        });
        drop(backends);
        value["calls"] = json!(self.harness.calls_numbered());
        value["held_rounds"] = json!(self.held.len());
        let mut clashes = self.names.to_json();
        for started in self.roster.report().started {
            for clash in started.clashes {
                let tool = clashes.iter().any(|known| {
                    known["name"] == clash.key.as_str() && known["server"] == started.name.as_str()
                });
                if !tool {
                    clashes.push(json!({"kind": "resource or prompt", "name": clash.key,
                                        "server": started.name, "served_by": clash.served_by}));
                }
            }
        }
        value["clashes"] = Value::Array(clashes);
        value["held"] = self.pins.held_json();
        value
    }

    /// The `UNKNOWN_TOOL` answer to a name the gateway does not serve (runs while the front
    /// server's catalog is read: it touches only the gateway's own state).
    pub(super) fn unknown_tool(&self, name: &str) -> String {
        let backend = self.denied.read().get(name).cloned().unwrap_or_default();
        self.stats.status(&backend, Status::UnknownTool);
        let number = self.next_call();
        let mut event = AuditEvent::new(number, crate::harness::AuditKind::Finished).detail(
            if backend.is_empty() {
                "no such tool".to_owned()
            } else {
                format!("denied by the policy for server {backend:?}")
            },
        );
        // The name is the client's: bounded, as a tool name is.
        event.tool = Some(name.chars().take(128).collect());
        event.status = Some(Status::UnknownTool);
        self.emit(event);
        if let Some(held) = self.pins.held_front(name) {
            return format!(
                "UNKNOWN_TOOL: {held}; nothing was run. Call one of the tools this gateway lists"
            );
        }
        let starting = self.roster.starting();
        let later = if starting.is_empty() {
            String::new()
        } else {
            // A one-shot client that calls without listing may be early, not wrong.
            format!(
                " (servers still starting, whose tools are listed when they are ready: {})",
                starting.join(", ")
            )
        };
        format!(
            "UNKNOWN_TOOL: this gateway serves no tool named {}; nothing was run. Call one of \
             the tools it lists{later}",
            crate::json::quote(name)
        )
    }
}
