//! A response on its way to the client: JSON when the answer comes before anything else,
//! otherwise an event stream (priming event, messages, keep-alive comments) that ends with the
//! answer. While it waits, the connection looks whether the client hung up.

use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use serde_json::Value;

use super::response::{
    self, chunk, event, priming, stream_head, write_full, KEEPALIVE, LAST_CHUNK,
};
use super::socket::Socket;
use super::HttpInner;
use crate::error::Result;
use crate::server::context::Link;
use crate::wire::{self, Message, Notification, RequestId, Response};

/// What a response stream carries.
#[derive(Debug)]
pub(crate) enum StreamItem {
    /// One message; `last` ends the stream (the answer); `status` is the HTTP status it
    /// would carry alone.
    Event {
        id: Option<String>,
        data: String,
        last: bool,
        status: u16,
    },
    /// The stream ends without an answer (the session closed, the server stops).
    End,
}

/// How long a handler may wait for room in its stream before a notification is dropped.
const STREAM_SEND: Duration = Duration::from_secs(1);

/// One stateless exchange's way out: its POST's response.
pub(crate) struct StreamLink {
    pub(crate) tx: Sender<StreamItem>,
}

impl Link for StreamLink {
    fn notify(&self, _related: Option<&RequestId>, method: &str, params: Value) -> Result<()> {
        let params = (!params.is_null()).then_some(params);
        let data = wire::to_line(&Message::Notification(Notification {
            method: method.to_owned(),
            params,
        }));
        self.tx
            .send_timeout(
                StreamItem::Event {
                    id: None,
                    data,
                    last: false,
                    status: 200,
                },
                STREAM_SEND,
            )
            .map_err(|_| crate::Error::closed_because("the response stream is gone"))
    }

    fn respond(&self, response: Response, status: u16) {
        let data = wire::to_line(&Message::Response(response));
        let _ = self.tx.send_timeout(
            StreamItem::Event {
                id: None,
                data,
                last: true,
                status,
            },
            STREAM_SEND,
        );
    }

    fn respond_batch(&self, responses: Vec<Response>) {
        let messages: Vec<Message> = responses.into_iter().map(Message::Response).collect();
        let _ = self.tx.send_timeout(
            StreamItem::Event {
                id: None,
                data: wire::batch_to_line(&messages),
                last: true,
                status: 200,
            },
            STREAM_SEND,
        );
    }
}

/// How a stream may be answered.
pub(crate) struct StreamMode<'a> {
    /// The client takes `application/json`.
    pub(crate) json: bool,
    /// The client takes `text/event-stream`.
    pub(crate) sse: bool,
    /// The id of the priming event of a resumable stream (`None`: not resumable).
    pub(crate) priming: Option<String>,
    /// Headers every response carries (`Mcp-Session-Id`).
    pub(crate) headers: &'a [(&'a str, String)],
    /// The stream is a standalone GET stream: it is SSE from the start and never "answers".
    pub(crate) standalone: bool,
    /// The stream's head is already written (a resumption).
    pub(crate) opened: bool,
    /// Run just before the answer is written as one JSON body (a session forgets the
    /// stream's events then: no client can resume it).
    pub(crate) as_json: Option<&'a dyn Fn()>,
}

/// How a stream ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Answered; the connection may take another request.
    Answered,
    /// Closed by the server (session gone, shutting down); the connection closes.
    Closed,
    /// The client hung up.
    Gone,
}

/// Serves one response stream until it is answered, closed, or the client goes.
pub(crate) fn serve(
    inner: &HttpInner,
    stream: &mut Socket,
    items: &Receiver<StreamItem>,
    mode: StreamMode<'_>,
) -> io::Result<Ended> {
    let config = &inner.config;
    let mut streaming = mode.opened;
    let mut last_write = Instant::now();
    let open = |stream: &mut Socket, streaming: &mut bool| -> io::Result<()> {
        let mut out = stream_head(mode.headers);
        if let Some(id) = &mode.priming {
            out.extend(chunk(
                priming(id, config.retry.as_millis() as u64).as_bytes(),
            ));
        }
        stream.write_all(&out)?;
        stream.flush()?;
        *streaming = true;
        Ok(())
    };
    if !streaming && (mode.standalone || !mode.json) {
        open(stream, &mut streaming)?;
    }
    loop {
        match items.recv_timeout(config.poll) {
            Ok(StreamItem::Event {
                id,
                data,
                last,
                status,
            }) => {
                // A draining server closes the connection after this answer: it says so, so
                // a proxy reuses it for nothing more.
                let keep_alive = !inner.draining.load(Ordering::SeqCst);
                if !streaming && last && mode.json {
                    if let Some(as_json) = mode.as_json {
                        as_json();
                    }
                    write_full(
                        stream,
                        status,
                        Some("application/json"),
                        mode.headers,
                        data.as_bytes(),
                        keep_alive,
                    )?;
                    return Ok(Ended::Answered);
                }
                if !streaming {
                    if !mode.sse {
                        // A JSON-only client cannot take notifications: only the answer goes.
                        if last {
                            if let Some(as_json) = mode.as_json {
                                as_json();
                            }
                            write_full(
                                stream,
                                status,
                                Some("application/json"),
                                mode.headers,
                                data.as_bytes(),
                                keep_alive,
                            )?;
                            return Ok(Ended::Answered);
                        }
                        continue;
                    }
                    open(stream, &mut streaming)?;
                }
                let mut out = chunk(event(id.as_deref(), &data).as_bytes());
                if last && !mode.standalone {
                    out.extend_from_slice(LAST_CHUNK);
                }
                stream.write_all(&out)?;
                stream.flush()?;
                last_write = Instant::now();
                if last && !mode.standalone {
                    return Ok(Ended::Answered);
                }
            }
            Ok(StreamItem::End) | Err(RecvTimeoutError::Disconnected) => {
                if streaming {
                    stream.write_all(LAST_CHUNK)?;
                    stream.flush()?;
                } else {
                    let body = response::error_body(-32603, "the server closed this request");
                    write_full(
                        stream,
                        503,
                        Some("application/json"),
                        mode.headers,
                        &body,
                        false,
                    )?;
                }
                return Ok(Ended::Closed);
            }
            Err(RecvTimeoutError::Timeout) => {
                if inner.stopping.load(Ordering::SeqCst) {
                    if streaming {
                        let _ = stream.write_all(LAST_CHUNK);
                    }
                    return Ok(Ended::Closed);
                }
                if stream.client_gone() {
                    return Ok(Ended::Gone);
                }
                if streaming && last_write.elapsed() >= config.keepalive {
                    stream.write_all(&chunk(KEEPALIVE.as_bytes()))?;
                    stream.flush()?;
                    last_write = Instant::now();
                }
            }
        }
    }
}
