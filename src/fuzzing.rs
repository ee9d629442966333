//! Thin entry points into crate-private code, for the fuzz targets in `fuzz/` and the
//! property tests in `tests/`. Hidden from the docs and not part of the API: names and shapes
//! may change with any release.
//!
//! Each wrapper runs the real code path on an in-memory input and returns what it produced as
//! plain owned data, so a fuzz target can check invariants against a simple model.

use std::io::{self, Read};

use serde_json::Value;

use crate::harness::{name_refusal, read_raw, CallShape};
use crate::transport::lines::{self, LineEvent};

/// A reader over memory that hands out at most `chunk` bytes per `read` (`0`: no limit).
struct Chunked<'a> {
    rest: &'a [u8],
    chunk: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let limit = if self.chunk == 0 {
            usize::MAX
        } else {
            self.chunk
        };
        let n = self.rest.len().min(buf.len()).min(limit);
        buf[..n].copy_from_slice(&self.rest[..n]);
        self.rest = &self.rest[n..];
        Ok(n)
    }
}

/// One event of the stdio line reader, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineOut {
    /// A line, without its `\n`, trailing `\r` and leading byte-order mark. Never blank.
    Line(Vec<u8>),
    /// A line longer than the cap was discarded; the count of its bytes (without the `\n`).
    Oversized(u64),
}

/// Runs the stdio transport's line reader over `bytes` with a line cap of `cap`, the reader
/// handing out at most `chunk` bytes per `read` call (`0`: no limit), so lines split across
/// reads are exercised too.
pub fn read_lines(bytes: &[u8], cap: usize, chunk: usize) -> Vec<LineOut> {
    let mut out = Vec::new();
    let reader = Chunked { rest: bytes, chunk };
    // Reading from memory cannot fail.
    let _ = lines::read_lines(reader, cap, |event| match event {
        LineEvent::Line(line) => out.push(LineOut::Line(line.to_vec())),
        LineEvent::Oversized(count) => out.push(LineOut::Oversized(count)),
    });
    out
}

/// One item of the SSE reader, owned.
#[cfg(feature = "http")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseOut {
    /// A dispatched event.
    Event {
        /// Its type: the `event` field, or `message`.
        event: String,
        /// Its `data` lines joined with `\n`.
        data: String,
        /// The last event id in force when it was dispatched (`None`: never set).
        id: Option<String>,
    },
    /// An event whose lines added up to more than the cap was skipped; the count of its
    /// bytes (its lines without their line ends).
    Oversized(u64),
}

/// What the SSE reader made of a whole stream.
#[cfg(feature = "http")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseRead {
    /// The items in the order they were handed out.
    pub items: Vec<SseOut>,
    /// The id a reconnection would send as `Last-Event-ID` at the end of the stream (never
    /// empty).
    pub last_event_id: Option<String>,
    /// The reconnection time the stream asked for with `retry:`.
    pub retry: Option<std::time::Duration>,
}

/// Runs the HTTP transport's SSE reader over `bytes` with an event cap of `cap` bytes. With
/// `chunk == 0` the whole input is one `feed`; otherwise it goes through the transport's read
/// loop, the reader handing out at most `chunk` bytes per `read`, so lines, line ends and the
/// byte-order mark arrive split across chunks.
#[cfg(feature = "http")]
pub fn read_sse(bytes: &[u8], cap: usize, chunk: usize) -> SseRead {
    use crate::transport::sse::{read_stream, SseItem, SseParser};

    let mut parser = SseParser::new(cap);
    let mut items = Vec::new();
    let mut out = |item: SseItem| {
        items.push(match item {
            SseItem::Event(event) => SseOut::Event {
                event: event.event,
                data: event.data,
                id: event.id,
            },
            SseItem::Oversized { bytes } => SseOut::Oversized(bytes),
        })
    };
    if chunk == 0 {
        parser.feed(bytes, &mut out);
    } else {
        // Reading from memory cannot fail.
        let _ = read_stream(
            Chunked { rest: bytes, chunk },
            &mut parser,
            &mut out,
            &|| false,
        );
    }
    SseRead {
        items,
        last_event_id: parser.last_event_id().map(str::to_owned),
        retry: parser.retry(),
    }
}

/// A raw tool call that passed the harness's checks up to the registry, owned.
#[derive(Debug, Clone, PartialEq)]
pub struct RawCall {
    /// The call's id (every shape but plain; optional for Gemini; never empty).
    pub call_id: Option<String>,
    /// The tool name.
    pub name: String,
    /// The arguments (an object).
    pub arguments: Value,
}

/// Why the harness refused a raw call, as [`crate::Harness::handle`] would say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawCallError {
    /// The `INVALID` detail.
    pub reason: String,
    /// The call id, when it could be read (to address the reply).
    pub call_id: Option<String>,
}

/// Runs the checks [`crate::Harness::handle`] runs on a raw call before it looks in the
/// registry: the size in characters (at most `max_chars`), strict JSON, the exact fields of
/// `shape`, and the tool name (one no model API nor MCP accepts is refused; any other is
/// then looked up).
pub fn read_call(shape: CallShape, raw: &str, max_chars: usize) -> Result<RawCall, RawCallError> {
    let request = read_raw(shape, raw, max_chars).map_err(|error| RawCallError {
        reason: error.reason,
        call_id: error.call_id,
    })?;
    // The first check of `Harness::handle` once the call is read.
    if let Some(reason) = name_refusal(&request.name) {
        return Err(RawCallError {
            reason,
            call_id: request.call_id,
        });
    }
    Ok(RawCall {
        call_id: request.call_id,
        name: request.name,
        arguments: request.arguments,
    })
}

/// One HTTP request as the Streamable HTTP server read it, owned.
#[cfg(feature = "server")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequestOut {
    /// The method.
    pub method: String,
    /// The request target, as sent.
    pub target: String,
    /// `1` for HTTP/1.1, `0` for HTTP/1.0.
    pub minor: u8,
    /// Header names in lower case and values without surrounding whitespace, in order.
    pub headers: Vec<(String, String)>,
    /// The body, its framing undone.
    pub body: Vec<u8>,
}

/// Runs the HTTP server's request reader over `bytes` (the reader handing out at most `chunk`
/// bytes per `read`, `0`: no limit) with these limits. `Err` holds the status the client
/// would be answered with (`0` when the input ends before a request begins: nothing is
/// answered) and the reason.
#[cfg(feature = "server")]
pub fn read_http_request(
    bytes: &[u8],
    chunk: usize,
    max_head_bytes: usize,
    max_headers: usize,
    max_body_bytes: usize,
) -> Result<HttpRequestOut, (u16, String)> {
    use crate::server::http::request::{Limits, ReadError};
    let limits = Limits {
        max_head_bytes,
        max_headers,
        max_body_bytes,
    };
    match crate::server::fuzz::read_request(bytes, chunk, limits) {
        Ok((head, body)) => Ok(HttpRequestOut {
            method: head.method,
            target: head.target,
            minor: head.minor,
            headers: head.headers,
            body,
        }),
        Err(ReadError::Idle) => Err((0, String::new())),
        Err(ReadError::TimedOut) => Err((408, "timed out".into())),
        Err(ReadError::Refused(status, reason)) => Err((status, reason)),
        Err(ReadError::Broken(reason)) => Err((0, reason)),
    }
}

/// Feeds `bytes` to a stdio MCP server as its input (line by line) through the whole server
/// path (the JSON-RPC client's inbound handling, the request sink, both protocol eras, the
/// worker pool), then ends the connection; every frame the server wrote, in order.
#[cfg(feature = "server")]
pub fn serve_frames(bytes: &[u8]) -> Vec<String> {
    crate::server::fuzz::serve_lines(bytes)
}

/// What the authorization flow's rule for URLs the network names says of one (see
/// `docs/authorization.md`, "Where metadata is fetched from").
#[cfg(feature = "oauth")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthOrigin {
    /// `url` is on the MCP server's origin (a challenge's `resource_metadata` is fetched).
    pub same_origin: bool,
    /// `url` is on a loopback or private address.
    pub url_local: bool,
    /// The MCP server is on a loopback or private address.
    pub mcp_local: bool,
    /// An authorization server or endpoint at `url` may be contacted for that MCP server.
    pub reachable: bool,
}

/// The rule applied to `url`, named by the network, for the MCP server at `mcp_url`.
#[cfg(feature = "oauth")]
pub fn auth_origin(url: &str, mcp_url: &str) -> AuthOrigin {
    use crate::auth::origin;
    AuthOrigin {
        same_origin: origin::same_origin(url, mcp_url),
        url_local: origin::is_local(url),
        mcp_local: origin::is_local(mcp_url),
        reachable: origin::reachable_from(url, mcp_url),
    }
}

/// What the HTTP server's authorization made of one request (see [`resource_token`]).
#[cfg(all(feature = "server", feature = "oauth"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceTokenOut {
    /// How many usable keys the JWKS document gave; `None` when it was refused whole.
    pub keys: Option<usize>,
    /// 200 when the request would be served, else the 401 or 403 it is answered with.
    pub status: u16,
    /// The `WWW-Authenticate` challenge of a refusal (empty when served).
    pub challenge: String,
    /// The refusal's body (empty when served).
    pub body: String,
    /// The caller's subject and scopes when served.
    pub caller: Option<(String, Vec<String>)>,
}

/// Runs the HTTP server's authorization on a request whose `Authorization` header is `header`
/// (empty: none), for JWT access tokens of `resource` from `issuer`, whose keys are the JWKS
/// document `jwks` (never fetched), every request needing `scopes`.
#[cfg(all(feature = "server", feature = "oauth"))]
pub fn resource_token(
    header: &str,
    jwks: &[u8],
    resource: &str,
    issuer: &str,
    scopes: &[&str],
) -> ResourceTokenOut {
    let (keys, outcome) = crate::server::auth::fuzz_check(header, jwks, resource, issuer, scopes);
    match outcome {
        Ok(caller) => ResourceTokenOut {
            keys,
            status: 200,
            challenge: String::new(),
            body: String::new(),
            caller: Some((caller.subject, caller.scopes)),
        },
        Err(refusal) => ResourceTokenOut {
            keys,
            status: refusal.status,
            challenge: refusal.challenge,
            body: String::from_utf8_lossy(&refusal.body).into_owned(),
            caller: None,
        },
    }
}

/// The HTTP server's reading of an authorization server's metadata document for `issuer`
/// (to find its `jwks_uri` or `introspection_endpoint`): the document when taken, else why
/// not.
#[cfg(all(feature = "server", feature = "oauth"))]
pub fn resource_server_metadata(bytes: &[u8], issuer: &str) -> Result<serde_json::Value, String> {
    crate::server::auth::fuzz_metadata(bytes, issuer)
}

/// The HTTP server's reading of a JWKS document: how many usable keys it gives (at most
/// `max_keys` keys taken), else why it was refused whole.
#[cfg(all(feature = "server", feature = "oauth"))]
pub fn resource_jwks(bytes: &[u8], max_keys: usize) -> Result<usize, String> {
    crate::server::auth::fuzz_jwks(bytes, max_keys)
}

/// What the HTTP server made of a token introspection answer (RFC 7662) for `resource` from
/// `issuer` at `now` (Unix seconds, no leeway).
#[cfg(all(feature = "server", feature = "oauth"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntrospectionOut {
    /// The caller's subject.
    pub subject: String,
    /// The caller's client id.
    pub client_id: Option<String>,
    /// The caller's scopes.
    pub scopes: Vec<String>,
    /// The token's `exp`.
    pub exp: Option<u64>,
}

/// Reads a token introspection answer as the HTTP server does (see [`IntrospectionOut`]):
/// the caller it admits, else why not.
#[cfg(all(feature = "server", feature = "oauth"))]
pub fn introspection_answer(
    bytes: &[u8],
    resource: &str,
    issuer: &str,
    now: u64,
) -> Result<IntrospectionOut, String> {
    crate::server::auth::fuzz_introspection(bytes, resource, issuer, now).map(|(caller, exp)| {
        IntrospectionOut {
            subject: caller.subject,
            client_id: caller.client_id,
            scopes: caller.scopes,
            exp,
        }
    })
}

/// A RESP2 reply of the Redis store's client, and the bounds it is read within.
#[cfg(feature = "redis")]
pub use crate::server::store::resp::{Limits as RespLimits, Reply as RespReply};

/// Reads one RESP2 reply from `bytes` within `limits` as the Redis store's client does: the
/// reply and how many bytes it took, or the error's text.
#[cfg(feature = "redis")]
pub fn read_resp(bytes: &[u8], limits: RespLimits) -> Result<(RespReply, usize), String> {
    let mut reader = bytes;
    let reply = crate::server::store::resp::read_reply(&mut reader, &limits)
        .map_err(|error| error.to_string())?;
    Ok((reply, bytes.len() - reader.len()))
}

/// A reply as a server would send it.
#[cfg(feature = "redis")]
pub fn write_resp(reply: &RespReply) -> Vec<u8> {
    crate::server::store::resp::encode_reply(reply)
}
