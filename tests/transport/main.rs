//! The socket transports: Streamable HTTP, legacy HTTP+SSE, TCP, Unix sockets and WebSocket.

#[path = "../support/mod.rs"]
mod support;

mod http;
mod legacy_sse;
mod oversized_reply;
mod sockets;
mod websocket_interop;
