//! Many threads calling one client at once each get their own answer.
use crate::support::client as support;

use std::sync::Arc;
use std::thread;

use serde_json::json;
use support::{memory_client, SOON};
use toolwire::jsonrpc::{Message, Response};
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig};

const THREADS: usize = 16;
const CALLS: usize = 250;

#[test]
fn every_concurrent_caller_gets_its_own_answer() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let peer = Arc::new(peer);
    // The peer echoes each request's params, answering whatever it has in reverse order so
    // answers often come back out of order.
    let peer_thread = {
        let peer = Arc::clone(&peer);
        thread::spawn(move || {
            let mut answered = 0usize;
            while let Some(first) = peer.recv_line(SOON) {
                let mut lines = vec![first];
                lines.extend(peer.receiver().try_iter());
                for line in lines.into_iter().rev() {
                    let Ok(toolwire::jsonrpc::Frame::Single(Message::Request(request))) =
                        toolwire::jsonrpc::parse_frame(line.as_bytes())
                    else {
                        panic!("unexpected frame {line}")
                    };
                    peer.send(&Message::Response(Response::ok(
                        request.id,
                        json!({"echo": request.params, "method": request.method}),
                    )));
                    answered += 1;
                }
            }
            answered
        })
    };
    let callers: Vec<_> = (0..THREADS)
        .map(|caller| {
            let client = client.clone();
            thread::spawn(move || {
                for call in 0..CALLS {
                    let params = json!({"caller": caller, "call": call});
                    let method = format!("tools/t{caller}");
                    let answer = client
                        .call_with(&method, params.clone(), CallOptions::new().timeout(SOON))
                        .expect("answered");
                    assert_eq!(answer, json!({"echo": params, "method": method}));
                }
            })
        })
        .collect();
    for caller in callers {
        caller.join().expect("caller");
    }
    let stats = client.stats();
    assert_eq!(stats.sent as usize, THREADS * CALLS, "{stats:?}");
    assert_eq!(stats.received as usize, THREADS * CALLS, "{stats:?}");
    assert_eq!(stats.late_responses, 0, "{stats:?}");
    assert_eq!(stats.timeouts, 0, "{stats:?}");
    support::finish(&client);
    // Closing disconnects the peer, which then stops.
    assert_eq!(peer_thread.join().expect("peer"), THREADS * CALLS);
}
