//! Telling a program that is not an MCP server from a server that failed: the stdio
//! transport is watched for lines that are not JSON-RPC, and a connection that fails before
//! the handshake ends says what the program printed instead.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use toolwire::jsonrpc::{IncomingFrame, Invalid, RequestId};
use toolwire::transport::{Connector, Inbound, Outgoing, Scrubber, Transport, TransportEvent};
use toolwire::{Closed, Result};

/// The most characters of a line kept.
const EXCERPT_CHARS: usize = 120;

/// What a program printed that was not JSON-RPC: how many lines, and the first.
#[derive(Default)]
pub struct Seen {
    /// Lines (frames) that were not JSON-RPC.
    pub lines: u64,
    first: Option<String>,
}

/// The record shared by the wrapped transports.
pub type Record = Arc<Mutex<Seen>>;

/// Wraps every transport `connector` makes, counting its non-JSON-RPC lines into `record`.
pub fn wrap(connector: Connector, record: Record) -> Connector {
    Box::new(move || {
        let inner = connector()?;
        Ok(Arc::new(Sniffed {
            inner,
            record: Arc::clone(&record),
        }) as Arc<dyn Transport>)
    })
}

/// The sentence for a failed connection: what the program printed, if anything.
pub fn describe(record: &Record, program: &str, timed_out: bool) -> String {
    let seen = record.lock();
    if timed_out && seen.first.is_none() {
        return format!(
            "`{program}` printed nothing on stdout and did not answer the MCP handshake in \
             time: is it an MCP server (one that reads JSON-RPC on stdin)? A slow one may \
             need a longer --connect-timeout"
        );
    }
    let printed = match &seen.first {
        Some(first) => format!(
            "; it printed {} line{} that {} not JSON-RPC, the first: {first:?}",
            seen.lines,
            if seen.lines == 1 { "" } else { "s" },
            if seen.lines == 1 { "is" } else { "are" }
        ),
        None => String::new(),
    };
    format!(
        "`{program}` does not seem to be an MCP server: an MCP server reads JSON-RPC on \
         stdin and answers `initialize`{printed} (if it needs arguments to serve MCP over \
         stdio, give them after `--`)"
    )
}

struct Sniffed {
    inner: Arc<dyn Transport>,
    record: Record,
}

impl Transport for Sniffed {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        self.inner.start(Arc::new(SniffedInbound {
            inbound,
            record: Arc::clone(&self.record),
            scrubber: self.inner.scrubber(),
        }))
    }

    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()> {
        self.inner.send(message, deadline)
    }

    fn request_abandoned(&self, id: &RequestId) -> bool {
        self.inner.request_abandoned(id)
    }

    fn close(&self) -> Result<()> {
        self.inner.close()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn scrubber(&self) -> Scrubber {
        self.inner.scrubber()
    }
}

struct SniffedInbound {
    inbound: Arc<dyn Inbound>,
    record: Record,
    /// The line is shown in an error: the connection's secrets are taken out first.
    scrubber: Scrubber,
}

impl Inbound for SniffedInbound {
    fn frame(&self, frame: std::result::Result<IncomingFrame, Invalid>, bytes: &[u8]) {
        if frame.is_err() {
            let mut seen = self.record.lock();
            seen.lines = seen.lines.saturating_add(1);
            if seen.first.is_none() {
                let text = self.scrubber.scrub(&String::from_utf8_lossy(bytes));
                seen.first = Some(text.trim_end().chars().take(EXCERPT_CHARS).collect());
            }
        }
        self.inbound.frame(frame, bytes);
    }

    fn request_failed(&self, id: &RequestId, error: toolwire::Error) {
        self.inbound.request_failed(id, error);
    }

    fn event(&self, event: TransportEvent) {
        self.inbound.event(event);
    }

    fn closed(&self, closed: Closed) {
        self.inbound.closed(closed);
    }
}
