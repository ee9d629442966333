//! A connection over any [`Transport`]: the crate's JSON-RPC [`Client`] carries it both ways
//! (the peer's requests come to the server through a request sink on the reader thread; the
//! server's own requests to the peer are ordinary calls with deadlines), and the connection
//! ends when the transport does.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;
use serde_json::Value;

use super::auth::Caller;
use super::conn::{Connection, Envelope, EraPolicy};
use super::context::Link;
use super::Shared;
use crate::client::{CallHandle, CallOptions, Client, ClientConfig, PeerRequests};
use crate::error::{Closed, Error, Result};
use crate::mcp::McpDialect;
use crate::transport::{FrameMeta, Inbound, Outgoing, Transport, TransportEvent};
use crate::wire::{IncomingFrame, Invalid, RequestId, Response};

/// The way out through the JSON-RPC client.
pub(crate) struct ClientLink {
    pub(crate) client: OnceLock<Client>,
}

impl ClientLink {
    fn client(&self) -> Result<&Client> {
        self.client
            .get()
            .ok_or_else(|| Error::closed_because("the connection is not open yet"))
    }
}

impl Link for ClientLink {
    fn notify(&self, related: Option<&RequestId>, method: &str, params: Value) -> Result<()> {
        let meta = FrameMeta {
            related: related.cloned(),
            ..FrameMeta::default()
        };
        self.client()?.notify_with(method, params, meta)
    }

    fn request(
        &self,
        related: &RequestId,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Option<Result<CallHandle>> {
        let client = match self.client() {
            Ok(client) => client,
            Err(error) => return Some(Err(error)),
        };
        let meta = FrameMeta {
            related: Some(related.clone()),
            ..FrameMeta::default()
        };
        let options = CallOptions::new().timeout(timeout).frame_meta(meta);
        Some(client.start(method, params, options))
    }

    fn respond(&self, response: Response, _status: u16) {
        match self.client() {
            Ok(client) => client.respond(response),
            Err(error) => log::debug!("toolwire: an answer was not sent: {error}"),
        }
    }

    fn respond_batch(&self, responses: Vec<Response>) {
        match self.client() {
            Ok(client) => client.respond_batch(responses),
            Err(error) => log::debug!("toolwire: a batch answer was not sent: {error}"),
        }
    }
}

/// Collects the answers to one batch and sends them as one array when the last arrives.
struct BatchLink {
    inner: Arc<dyn Link>,
    expected: usize,
    responses: Mutex<Vec<Response>>,
}

impl Link for BatchLink {
    fn notify(&self, related: Option<&RequestId>, method: &str, params: Value) -> Result<()> {
        self.inner.notify(related, method, params)
    }

    fn request(
        &self,
        related: &RequestId,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Option<Result<CallHandle>> {
        self.inner.request(related, method, params, timeout)
    }

    fn respond(&self, response: Response, _status: u16) {
        let complete = {
            let mut responses = self.responses.lock();
            responses.push(response);
            (responses.len() == self.expected).then(|| std::mem::take(&mut *responses))
        };
        if let Some(responses) = complete {
            self.inner.respond_batch(responses);
        }
    }

    fn respond_batch(&self, responses: Vec<Response>) {
        self.inner.respond_batch(responses);
    }
}

/// Runs a peer's batch: every request as usual, the answers sent together.
pub(crate) fn run_batch(
    conn: &Arc<Connection>,
    requests: Vec<crate::wire::Request>,
    errors: Vec<Response>,
) {
    if requests.is_empty() {
        conn.link.respond_batch(errors);
        return;
    }
    let batch = Arc::new(BatchLink {
        inner: Arc::clone(&conn.link),
        expected: requests.len() + errors.len(),
        responses: Mutex::new(errors),
    });
    for request in requests {
        let link: Arc<dyn Link> = batch.clone();
        conn.handle_on(request, &Envelope::default(), link);
    }
}

/// Holds a transport back until the connection is wired, and tells when it ends.
struct Gate {
    inner: Arc<dyn Transport>,
    inbound: Mutex<Option<Arc<dyn Inbound>>>,
}

impl Transport for Gate {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        *self.inbound.lock() = Some(inbound);
        Ok(())
    }

    fn send(&self, message: Outgoing, deadline: Option<std::time::Instant>) -> Result<()> {
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

    fn scrubber(&self) -> crate::transport::Scrubber {
        self.inner.scrubber()
    }
}

/// The client's inbound sink, with word of the end.
struct Watch {
    inner: Arc<dyn Inbound>,
    ended: Mutex<Option<Sender<Closed>>>,
}

impl Inbound for Watch {
    fn frame(&self, frame: std::result::Result<IncomingFrame, Invalid>, bytes: &[u8]) {
        self.inner.frame(frame, bytes);
    }

    fn event(&self, event: TransportEvent) {
        self.inner.event(event);
    }

    fn request_failed(&self, id: &RequestId, error: Error) {
        self.inner.request_failed(id, error);
    }

    fn closed(&self, closed: Closed) {
        self.inner.closed(closed.clone());
        if let Some(ended) = self.ended.lock().take() {
            let _ = ended.send(closed);
        }
    }
}

/// One client's connection to a server, over a transport: its requests are served as they
/// come until the transport ends ([`ServerConnection::wait`]) or the server ends it
/// ([`ServerConnection::close`]).
pub struct ServerConnection {
    conn: Arc<Connection>,
    client: Client,
    ended: Receiver<Closed>,
    end: OnceLock<Closed>,
}

impl std::fmt::Debug for ServerConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConnection")
            .field("transport", &self.client.describe())
            .field("in_flight", &self.conn.in_flight())
            .finish()
    }
}

pub(crate) fn connect(
    shared: &Arc<Shared>,
    transport: Arc<dyn Transport>,
    policy: EraPolicy,
    peer_address: Option<SocketAddr>,
    caller: Option<Arc<Caller>>,
) -> Result<ServerConnection> {
    let slot: Arc<OnceLock<Weak<Connection>>> = Arc::new(OnceLock::new());
    let sink_slot = Arc::clone(&slot);
    let mut config = ClientConfig::default()
        .dialect(McpDialect)
        .request_timeout(shared.config.request_timeout)
        .request_sink(move |requests| {
            let Some(conn) = sink_slot.get().and_then(Weak::upgrade) else {
                return;
            };
            match requests {
                PeerRequests::One(request) => conn.handle(request, &Envelope::default()),
                PeerRequests::Batch(requests, errors) => run_batch(&conn, requests, errors),
            }
        });
    let tap_slot = Arc::clone(&slot);
    config.set_notification_tap(Arc::new(move |notification| {
        if let Some(conn) = tap_slot.get().and_then(Weak::upgrade) {
            conn.on_notification(notification);
        }
    }));
    let link = Arc::new(ClientLink {
        client: OnceLock::new(),
    });
    let conn = Connection::new(
        Arc::clone(shared),
        link.clone(),
        policy,
        peer_address,
        caller,
    );
    let _ = slot.set(Arc::downgrade(&conn));
    let gate = Arc::new(Gate {
        inner: transport,
        inbound: Mutex::new(None),
    });
    let client = Client::with_shared_transport(gate.clone(), config)?;
    let _ = link.client.set(client.clone());
    let (ended_tx, ended) = bounded(1);
    let Some(inbound) = gate.inbound.lock().take() else {
        return Err(Error::Config(
            "the client did not start its transport".into(),
        ));
    };
    let watch = Arc::new(Watch {
        inner: inbound,
        ended: Mutex::new(Some(ended_tx)),
    });
    if let Err(error) = gate.inner.start(watch) {
        let _ = client.close();
        return Err(error);
    }
    Ok(ServerConnection {
        conn,
        client,
        ended,
        end: OnceLock::new(),
    })
}

impl ServerConnection {
    /// Records the HTTP session it serves (`mcp.session.id` of its spans).
    pub(crate) fn set_session_id(&self, id: &str) {
        self.conn.set_session_id(id);
    }

    /// Blocks until the client ends the connection (end of input, a closed socket), then
    /// gives up its requests (their handlers see their cancel flags and get the server's
    /// close grace to finish, writing what they answer in time) and closes it. Returns why
    /// it ended.
    pub fn wait(&self) -> Closed {
        let closed = match self.ended.recv() {
            Ok(closed) => closed,
            Err(_) => Closed::new("the connection ended"),
        };
        self.finish(closed)
    }

    /// [`ServerConnection::wait`], at most `limit`; `None` while the connection is open.
    pub fn wait_timeout(&self, limit: Duration) -> Option<Closed> {
        if let Some(end) = self.end.get() {
            return Some(end.clone());
        }
        match self.ended.recv_timeout(limit) {
            Ok(closed) => Some(self.finish(closed)),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                Some(self.finish(Closed::new("the connection ended")))
            }
        }
    }

    /// Ends the connection from the server's side: its requests are given up as in
    /// [`ServerConnection::wait`], then the transport is closed. Idempotent.
    ///
    /// # Errors
    ///
    /// When the transport reports a failure while closing; the connection is closed anyway.
    pub fn close(&self) -> Result<()> {
        self.finish(Closed::new("closed by the server"));
        Ok(())
    }

    fn finish(&self, closed: Closed) -> Closed {
        self.end
            .get_or_init(|| {
                self.conn.close();
                if let Err(error) = self.client.close() {
                    log::debug!("toolwire: closing the connection: {error}");
                }
                closed
            })
            .clone()
    }

    /// The handshake revision negotiated, once `initialize` was answered.
    pub(crate) fn negotiated_version(&self) -> Option<String> {
        self.conn.handshake.lock().version.clone()
    }

    /// Requests of this connection not answered yet.
    pub fn in_flight(&self) -> usize {
        self.conn.in_flight()
    }

    /// Handlers of this connection still running on the pool (abandoned ones included).
    pub fn running(&self) -> usize {
        self.conn.running()
    }

    /// Sends a notification to the client outside any request (e.g. a resource changed).
    ///
    /// # Errors
    ///
    /// When the connection is closed or its queue stays full.
    pub fn notify(&self, method: &str, params: Value) -> Result<()> {
        self.conn.link.notify(None, method, params)
    }
}

impl Drop for ServerConnection {
    fn drop(&mut self) {
        if self.end.get().is_none() {
            self.finish(Closed::new("the connection was dropped"));
        }
    }
}
