//! The HTTP limit of the servers side by side (`toolwire-compare servers`): one thread per
//! connection, keep-alive, and to every request the same fixed JSON answer. It looks for
//! nothing in a request but its end (the blank line after the head, then `Content-Length`
//! bytes): no method, path, header or body is checked, no JSON is parsed.
//!
//! ```text
//! bare_http PORT
//! ```

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

const ANSWER: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}";

fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|port| port.parse().ok())
        .expect("a port");
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind");
    let mut response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        ANSWER.len()
    )
    .into_bytes();
    response.extend_from_slice(ANSWER);
    let response: &'static [u8] = response.leak();
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        std::thread::spawn(move || connection(stream, response));
    }
}

/// The value of the `Content-Length` header in `head`, 0 without one.
fn content_length(head: &[u8]) -> usize {
    const NAME: &[u8] = b"content-length:";
    head.windows(NAME.len())
        .position(|window| window.eq_ignore_ascii_case(NAME))
        .map(|at| {
            head[at + NAME.len()..]
                .iter()
                .skip_while(|b| **b == b' ')
                .take_while(|b| b.is_ascii_digit())
                .fold(0, |n, b| n * 10 + (b - b'0') as usize)
        })
        .unwrap_or(0)
}

fn connection(mut stream: TcpStream, response: &[u8]) {
    let _ = stream.set_nodelay(true);
    let mut buffer = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    loop {
        // One whole request (head and body) in `buffer`, then its answer.
        let end = loop {
            if let Some(head) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let end = head + 4 + content_length(&buffer[..head]);
                if buffer.len() >= end {
                    break end;
                }
            }
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        buffer.drain(..end);
        if stream.write_all(response).is_err() {
            return;
        }
    }
}
