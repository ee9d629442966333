//! Entry points for the fuzz targets (through `crate::fuzzing`): the HTTP request reader over
//! bytes in memory, and stdin frames through a server's whole dispatch (the JSON-RPC client's
//! inbound path, the request sink, both eras) on a transport that collects what it sends.

use std::io::{self, Read};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::json;

use super::conn::EraPolicy;
use super::http::request::{framing, read_body, read_head, Buffer, Head, Limits, ReadError};
use super::{content, Method, PromptResult, Server, ServerConfig, ServerPrompt, ServerResource};
use crate::error::Result;
use crate::harness::LocalTool;
use crate::transport::lines::{self, LineEvent};
use crate::transport::{Inbound, Outgoing, Transport, TransportEvent};

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

/// Reads one request from `bytes` as a connection would.
pub(crate) fn read_request(
    bytes: &[u8],
    chunk: usize,
    limits: Limits,
) -> std::result::Result<(Head, Vec<u8>), ReadError> {
    let mut reader = Chunked { rest: bytes, chunk };
    let mut buffer = Buffer::default();
    let mut ready = || Ok(());
    let head = read_head(&mut reader, &mut buffer, &limits, &mut ready)?;
    let framing = framing(&head, &limits)?;
    let body = read_body(&mut reader, &mut buffer, framing, &limits, &mut ready)?;
    Ok((head, body))
}

/// A transport that keeps what the server sends.
struct Collect {
    inbound: Mutex<Option<Arc<dyn Inbound>>>,
    out: Mutex<Vec<String>>,
}

impl Transport for Collect {
    fn start(&self, inbound: Arc<dyn Inbound>) -> Result<()> {
        *self.inbound.lock() = Some(inbound);
        Ok(())
    }

    fn send(&self, message: Outgoing, _deadline: Option<std::time::Instant>) -> Result<()> {
        self.out.lock().push(message.to_line());
        Ok(())
    }

    fn close(&self) -> Result<()> {
        Ok(())
    }

    fn describe(&self) -> String {
        "fuzz".into()
    }
}

/// The fuzzed server: one per process, with a tool of each kind.
fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        // Requests to the client give up at once: nobody answers them here.
        let config = ServerConfig::new("fuzz", "1")
            .workers(2)
            .client_request_timeout(Duration::from_millis(1));
        let server = Server::new(config).expect("server");
        let object = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        server
            .add_tool(
                LocalTool::with_context("echo", "Echoes.", object.clone(), |_, args| {
                    Ok(crate::mcp::CallToolResult::structured(args.clone()))
                })
                .inline(true),
            )
            .expect("echo");
        server
            .add_tool(LocalTool::with_context(
                "pooled",
                "Runs on a worker.",
                object,
                |context, args| {
                    context.report_progress(1.0, None, None);
                    let _ = context.request_input(
                        "x",
                        crate::mcp::methods::ELICITATION_CREATE,
                        json!({"message": "?"}),
                    );
                    Ok(crate::mcp::CallToolResult::from_text(args.to_string()))
                },
            ))
            .expect("pooled");
        server
            .add_resource(ServerResource::new("test://r", "r", |_, uri| {
                Ok(vec![content::text_contents(uri, None, "r")])
            }))
            .expect("resource");
        server
            .add_prompt(
                ServerPrompt::new("p", "A prompt.", |_, _| {
                    Ok(PromptResult::new().user_text("p"))
                })
                .argument("a", "A", true),
            )
            .expect("prompt");
        server
            .add_method(Method::new("plain", |_, params| Ok(params.clone())).inline(true))
            .expect("method");
        server.set_completion(|_, request| Ok(vec![request.value.clone()]));
        server
    })
}

/// Feeds `bytes` as a stdio server's input, line by line (16 KiB cap), waits for the pool,
/// ends the connection, and returns every frame the server wrote.
pub(crate) fn serve_lines(bytes: &[u8]) -> Vec<String> {
    let server = server();
    let collect = Arc::new(Collect {
        inbound: Mutex::new(None),
        out: Mutex::new(Vec::new()),
    });
    let transport: Arc<dyn Transport> = collect.clone();
    let Ok(connection) =
        super::serve::connect(server.shared(), transport, EraPolicy::Mixed, None, None)
    else {
        return Vec::new();
    };
    let inbound = collect.inbound.lock().clone();
    if let Some(inbound) = inbound {
        let cap = 16 * 1024;
        let _ = lines::read_lines(bytes, cap, |event| match event {
            LineEvent::Line(line) => crate::transport::deliver(&*inbound, line),
            LineEvent::Oversized(count) => inbound.event(TransportEvent::Oversized {
                bytes: count,
                limit: cap,
            }),
        });
    }
    // Every pooled handler of this connection done and its answer sent (a worker is free a
    // moment before its answer goes, so the pool being idle is not enough).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    // (A subscription stays in flight by design: only running handlers are waited for.)
    while connection.running() > 0 && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    let _ = connection.close();
    let out = std::mem::take(&mut *collect.out.lock());
    out
}
