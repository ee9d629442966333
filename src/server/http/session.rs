//! Handshake-era sessions (`Mcp-Session-Id`): each is a connection of the server over a
//! transport whose frames travel on HTTP response streams. A request's answer, progress, log
//! messages and the server's requests made while answering it go on that request's POST
//! stream; everything else on the session's GET stream. Every event is also kept in a
//! bounded replay buffer, so a client whose stream broke can resume it with `Last-Event-ID`.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::Sender;
use parking_lot::Mutex;

use super::stream::StreamItem;
use crate::error::{Error, Result};
use crate::server::auth::Caller;
use crate::server::ServerConnection;
use crate::transport::{Inbound, OutFrame, Outgoing, Transport};
use crate::wire::{IncomingFrame, Invalid, Message, RequestId};

/// One stream of a session.
struct StreamState {
    /// The next event's sequence number (the priming event is 0).
    next_seq: u64,
    /// Where its events go while a client reads it.
    sink: Option<Sender<StreamItem>>,
    /// Answers still to come (POST streams); the stream ends with the last.
    awaiting: usize,
    standalone: bool,
}

/// The streams of a session and what they sent lately.
struct Streams {
    next_stream: u64,
    by_request: HashMap<RequestId, u64>,
    streams: HashMap<u64, StreamState>,
    standalone: Option<u64>,
    replay: VecDeque<(u64, u64, Arc<str>, bool)>,
    replay_bytes: usize,
}

/// A session's transport: frames the session's connection sends are routed to streams.
pub(crate) struct SessionTransport {
    inbound: Mutex<Option<Arc<dyn Inbound>>>,
    streams: Mutex<Streams>,
    replay_events: usize,
    replay_bytes: usize,
    closed: Mutex<bool>,
}

/// What resuming a stream found.
pub(crate) struct Resumed {
    /// The events after the one given, in order: (id, data, last).
    pub(crate) events: Vec<(String, Arc<str>, bool)>,
    /// The stream is still open: more events will come to the new sink.
    pub(crate) live: bool,
}

impl SessionTransport {
    pub(crate) fn new(replay_events: usize, replay_bytes: usize) -> SessionTransport {
        SessionTransport {
            inbound: Mutex::new(None),
            streams: Mutex::new(Streams {
                next_stream: 1,
                by_request: HashMap::new(),
                streams: HashMap::new(),
                standalone: None,
                replay: VecDeque::new(),
                replay_bytes: 0,
            }),
            replay_events,
            replay_bytes,
            closed: Mutex::new(false),
        }
    }

    /// Hands a POST's frame to the session's connection.
    pub(crate) fn deliver(&self, frame: std::result::Result<IncomingFrame, Invalid>, bytes: &[u8]) {
        let inbound = self.inbound.lock().clone();
        if let Some(inbound) = inbound {
            inbound.frame(frame, bytes);
        }
    }

    /// Opens the stream of a POST whose requests are `ids`; returns its id.
    pub(crate) fn open_stream(&self, ids: &[RequestId], sink: Sender<StreamItem>) -> u64 {
        let mut streams = self.streams.lock();
        let stream = streams.next_stream;
        streams.next_stream += 1;
        for id in ids {
            streams.by_request.insert(id.clone(), stream);
        }
        streams.streams.insert(
            stream,
            StreamState {
                next_seq: 1,
                sink: Some(sink),
                awaiting: ids.len(),
                standalone: false,
            },
        );
        stream
    }

    /// Opens the standalone (GET) stream; `None` while one is being read.
    pub(crate) fn open_standalone(&self, sink: Sender<StreamItem>) -> Option<u64> {
        let mut streams = self.streams.lock();
        if let Some(open) = streams.standalone {
            if streams
                .streams
                .get(&open)
                .is_some_and(|state| state.sink.is_some())
            {
                return None;
            }
        }
        let stream = streams.next_stream;
        streams.next_stream += 1;
        streams.streams.insert(
            stream,
            StreamState {
                next_seq: 1,
                sink: Some(sink),
                awaiting: 0,
                standalone: true,
            },
        );
        streams.standalone = Some(stream);
        Some(stream)
    }

    /// Drops the events of `stream` from the replay buffer: it was answered as JSON, so no
    /// client can ask for them again.
    pub(crate) fn forget(&self, stream: u64) {
        let mut streams = self.streams.lock();
        let mut freed = 0;
        streams.replay.retain(|(known, _, data, _)| {
            let keep = *known != stream;
            if !keep {
                freed += data.len();
            }
            keep
        });
        streams.replay_bytes -= freed;
    }

    /// The client stopped reading a stream: its events go on into the replay buffer only.
    pub(crate) fn detach(&self, stream: u64) {
        let mut streams = self.streams.lock();
        if let Some(state) = streams.streams.get_mut(&stream) {
            state.sink = None;
        }
        if streams.standalone == Some(stream) {
            streams.standalone = None;
            streams.streams.remove(&stream);
        }
    }

    /// Resumes `stream` after event `seq`: what the buffer holds past it, and whether the
    /// stream is still open (then `sink` takes its next events).
    pub(crate) fn resume(&self, stream: u64, seq: u64, sink: Sender<StreamItem>) -> Resumed {
        let mut streams = self.streams.lock();
        let events = streams
            .replay
            .iter()
            .filter(|(known, at, _, _)| *known == stream && *at > seq)
            .map(|(_, at, data, last)| (format!("{stream}-{at}"), Arc::clone(data), *last))
            .collect();
        let live = match streams.streams.get_mut(&stream) {
            Some(state) => {
                state.sink = Some(sink);
                true
            }
            None => false,
        };
        if live
            && streams
                .streams
                .get(&stream)
                .is_some_and(|state| state.standalone)
        {
            streams.standalone = Some(stream);
        }
        Resumed { events, live }
    }

    fn remember(&self, streams: &mut Streams, stream: u64, seq: u64, data: &Arc<str>, last: bool) {
        streams.replay_bytes += data.len();
        streams
            .replay
            .push_back((stream, seq, Arc::clone(data), last));
        while streams.replay.len() > self.replay_events || streams.replay_bytes > self.replay_bytes
        {
            match streams.replay.pop_front() {
                Some((_, _, old, _)) => streams.replay_bytes -= old.len(),
                None => break,
            }
        }
    }

    /// Puts one event on `stream`.
    fn push(&self, streams: &mut Streams, stream: u64, data: String, answers: usize) {
        let Some(state) = streams.streams.get_mut(&stream) else {
            return;
        };
        let seq = state.next_seq;
        state.next_seq += 1;
        state.awaiting = state.awaiting.saturating_sub(answers);
        let last = answers > 0 && state.awaiting == 0 && !state.standalone;
        let data: Arc<str> = Arc::from(data);
        let sink = state.sink.clone();
        if last {
            streams.streams.remove(&stream);
        }
        self.remember(streams, stream, seq, &data, last);
        if let Some(sink) = sink {
            let item = StreamItem::Event {
                id: Some(format!("{stream}-{seq}")),
                data: data.to_string(),
                last,
                status: 200,
            };
            // Never waits under the session's lock: a reader that fell a whole queue behind
            // loses its live stream and resumes from the replay buffer.
            if sink.try_send(item).is_err() {
                if let Some(state) = streams.streams.get_mut(&stream) {
                    state.sink = None;
                }
            }
        }
    }
}

impl Transport for SessionTransport {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        *self.inbound.lock() = Some(inbound);
        Ok(())
    }

    fn send(&self, message: Outgoing, _deadline: Option<Instant>) -> Result<()> {
        if *self.closed.lock() {
            return Err(Error::closed_because("the session is closed"));
        }
        let data = message.to_line();
        let mut streams = self.streams.lock();
        let (stream, answers) = match &message.frame {
            OutFrame::Single(Message::Response(response)) => {
                match response
                    .id
                    .as_ref()
                    .and_then(|id| streams.by_request.remove(id))
                {
                    Some(stream) => (Some(stream), 1),
                    None => (None, 0),
                }
            }
            OutFrame::Batch(messages) => {
                let mut found = None;
                let mut answers = 0;
                for message in messages {
                    if let Message::Response(response) = message {
                        if let Some(stream) = response
                            .id
                            .as_ref()
                            .and_then(|id| streams.by_request.remove(id))
                        {
                            found = Some(stream);
                            answers += 1;
                        }
                    }
                }
                (found, answers)
            }
            OutFrame::Single(_) => {
                let related = message
                    .meta
                    .related
                    .as_ref()
                    .and_then(|id| streams.by_request.get(id).copied());
                (related.or(streams.standalone), 0)
            }
        };
        match stream {
            Some(stream) => {
                self.push(&mut streams, stream, data, answers);
                Ok(())
            }
            None => match &message.frame {
                OutFrame::Single(Message::Request(request)) => Err(Error::closed_because(format!(
                    "no stream of the session can carry `{}` (the client has no GET stream open)",
                    request.method
                ))),
                _ => {
                    log::debug!(
                        target: crate::server::LOG_TARGET,
                        "a {} with no stream to carry it was dropped",
                        message.describe()
                    );
                    Ok(())
                }
            },
        }
    }

    fn close(&self) -> Result<()> {
        *self.closed.lock() = true;
        let mut streams = self.streams.lock();
        for (_, state) in streams.streams.drain() {
            if let Some(sink) = state.sink {
                let _ = sink.try_send(StreamItem::End);
            }
        }
        streams.standalone = None;
        streams.by_request.clear();
        Ok(())
    }

    fn describe(&self) -> String {
        "Streamable HTTP session".into()
    }
}

/// One session.
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) transport: Arc<SessionTransport>,
    pub(crate) connection: ServerConnection,
    pub(crate) last_seen: Mutex<Instant>,
    /// Who opened it (with authorization): only they may use it; anyone else is told there
    /// is no such session.
    pub(crate) caller: Option<Arc<Caller>>,
}

impl Session {
    /// Whether `caller` is the one who opened it (same issuer and subject).
    pub(crate) fn belongs_to(&self, caller: Option<&Caller>) -> bool {
        match (&self.caller, caller) {
            (None, None) => true,
            (Some(owner), Some(caller)) => {
                owner.subject == caller.subject && owner.issuer == caller.issuer
            }
            _ => false,
        }
    }
}

/// A session's transport handle, shared with the connection.
pub(crate) struct SharedTransport(pub(crate) Arc<SessionTransport>);

impl Transport for SharedTransport {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        self.0.start(inbound)
    }
    fn send(&self, message: Outgoing, deadline: Option<Instant>) -> Result<()> {
        self.0.send(message, deadline)
    }
    fn close(&self) -> Result<()> {
        self.0.close()
    }
    fn describe(&self) -> String {
        self.0.describe()
    }
}

/// A new session id: 128 random bits as hex (visible ASCII, unguessable), after
/// `INSTANCE.` when the server has an instance id (a load balancer routes on it); `None`
/// without a random source (a guessable id would let anyone take a session over).
pub(crate) fn new_session_id(instance: Option<&str>) -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    let random: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Some(match instance {
        Some(instance) => format!("{instance}.{random}"),
        None => random,
    })
}

/// Ends the standalone (GET) stream of `transport`, if one is open: the server drains.
pub(crate) fn end_standalone(transport: &SessionTransport) {
    let mut streams = transport.streams.lock();
    if let Some(stream) = streams.standalone.take() {
        if let Some(state) = streams.streams.remove(&stream) {
            if let Some(sink) = state.sink {
                let _ = sink.try_send(StreamItem::End);
            }
        }
    }
}

/// Reads `STREAM-SEQ` from a `Last-Event-ID`.
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}
