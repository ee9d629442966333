//! The JSONL transcript: one line per decision and per wire message.
//!
//! The harness's `Transcript` writes `AuditEvent`s, whose kinds describe the harness's own
//! decisions (admission, budget, retries) and whose detail is cut at 2,000 characters; the
//! command needs whole wire messages and its own decisions. So this writer keeps the
//! harness's field names where they mean the same (`event`, `tool`, `status`,
//! `duration_us`, `size`, `detail`) and adds:
//!
//! - `{"elapsed_us", "event": "send" | "recv", "message": {...}}` for every frame (a frame
//!   that is not JSON is kept as `"text"`);
//! - `{"elapsed_us", "event": "connect" | "connected" | "call" | "invalid" | "progress" |
//!   "cancel" | "result" | "error" | "exit", ...}` for decisions.
//!
//! Each line is written whole and flushed, so the file is complete even when Ctrl-C ends the
//! process.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use serde_json::{Map, Value};
use toolwire::jsonrpc::{IncomingFrame, Invalid, RequestId};
use toolwire::transport::{Connector, Inbound, Outgoing, Scrubber, Transport, TransportEvent};
use toolwire::{Closed, Result};

/// A JSONL file of decisions and wire messages.
pub struct Transcript {
    file: Mutex<File>,
    started: Instant,
    failed: AtomicBool,
}

impl Transcript {
    /// Creates (or truncates) the file.
    pub fn create(path: &Path) -> io::Result<Transcript> {
        Ok(Transcript {
            file: Mutex::new(File::create(path)?),
            started: Instant::now(),
            failed: AtomicBool::new(false),
        })
    }

    /// Writes a decision: `event` plus the fields of `fields` (an object).
    pub fn decision(&self, event: &str, fields: Value) {
        let mut line = self.head(event);
        if let Value::Object(fields) = fields {
            line.extend(fields);
        }
        self.write(line);
    }

    /// Writes one frame that went out (`send`) or came in (`recv`), with the connection's
    /// secrets masked (every string of the message, or the text of a frame that is not
    /// JSON).
    pub fn wire(&self, direction: &str, frame: &[u8], scrubber: &Scrubber) {
        let mut line = self.head(direction);
        match serde_json::from_slice::<Value>(frame) {
            Ok(mut message) => {
                scrubber.scrub_value(&mut message);
                line.insert("message".into(), message)
            }
            Err(_) => line.insert(
                "text".into(),
                Value::String(scrubber.scrub(&String::from_utf8_lossy(frame))),
            ),
        };
        self.write(line);
    }

    fn head(&self, event: &str) -> Map<String, Value> {
        let mut line = Map::new();
        // Stamped in `write`, under the file's lock, so lines written from several threads
        // (the caller, the reader, HTTP workers) keep their times in file order.
        line.insert("elapsed_us".into(), Value::Null);
        line.insert("event".into(), Value::from(event));
        line
    }

    fn write(&self, mut line: Map<String, Value>) {
        let mut file = self.file.lock();
        line.insert(
            "elapsed_us".into(),
            Value::from(crate::micros(self.started.elapsed())),
        );
        // No raw control character, so `cat` or `tail -f` of the file is safe too.
        let mut text = crate::terminal::json_line(&Value::Object(line));
        text.push('\n');
        let written = file.write_all(text.as_bytes()).and_then(|()| file.flush());
        if let Err(error) = written {
            if !self.failed.swap(true, Ordering::Relaxed) {
                log::warn!("cannot write the transcript: {error}");
            }
        }
    }
}

/// A transport seen through the transcript: every frame in and out is written to it, with
/// the connection's secrets masked ([`Transport::scrubber`]).
pub struct Tapped {
    inner: Arc<dyn Transport>,
    transcript: Arc<Transcript>,
    scrubber: Scrubber,
}

impl Tapped {
    /// Wraps every transport `connector` makes.
    pub fn wrap(connector: Connector, transcript: Arc<Transcript>) -> Connector {
        Box::new(move || {
            let inner = connector()?;
            Ok(Arc::new(Tapped {
                scrubber: inner.scrubber(),
                inner,
                transcript: Arc::clone(&transcript),
            }) as Arc<dyn Transport>)
        })
    }
}

impl Transport for Tapped {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        self.inner.start(Arc::new(TappedInbound {
            inbound,
            transcript: Arc::clone(&self.transcript),
            scrubber: self.scrubber.clone(),
        }))
    }

    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()> {
        self.transcript
            .wire("send", message.to_line().as_bytes(), &self.scrubber);
        let sent = self.inner.send(message, deadline);
        if let Err(error) = &sent {
            self.transcript.decision(
                "send_failed",
                serde_json::json!({"detail": self.scrubber.scrub(&error.to_string())}),
            );
        }
        sent
    }

    fn request_abandoned(&self, id: &RequestId) -> bool {
        let handled = self.inner.request_abandoned(id);
        if handled {
            // The transport tells the server itself (2026-07-28 over HTTP: the response
            // stream is closed), so no notifications/cancelled will follow.
            self.transcript.decision(
                "abandoned",
                serde_json::json!({"request_id": id.to_value(), "detail": "the transport closed the request's stream"}),
            );
        }
        handled
    }

    fn close(&self) -> Result<()> {
        self.inner.close()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn scrubber(&self) -> Scrubber {
        self.scrubber.clone()
    }
}

struct TappedInbound {
    inbound: Arc<dyn Inbound>,
    transcript: Arc<Transcript>,
    scrubber: Scrubber,
}

impl Inbound for TappedInbound {
    fn frame(&self, frame: std::result::Result<IncomingFrame, Invalid>, bytes: &[u8]) {
        self.transcript.wire("recv", bytes, &self.scrubber);
        self.inbound.frame(frame, bytes);
    }

    fn request_failed(&self, id: &RequestId, error: toolwire::Error) {
        self.transcript.decision(
            "request_failed",
            serde_json::json!({"id": id.to_value(), "detail": self.scrubber.scrub(&error.to_string())}),
        );
        self.inbound.request_failed(id, error);
    }

    fn event(&self, event: TransportEvent) {
        self.transcript.decision(
            "transport_event",
            serde_json::json!({"detail": self.scrubber.scrub(&format!("{event:?}"))}),
        );
        self.inbound.event(event);
    }

    fn closed(&self, closed: Closed) {
        self.transcript.decision(
            "closed",
            serde_json::json!({"detail": self.scrubber.scrub(&closed.reason),
                               "exit_status": closed.exit_status}),
        );
        self.inbound.closed(closed);
    }
}
