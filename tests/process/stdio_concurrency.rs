//! Many callers on one client over one child: 8 threads with 1,000 calls each in flight at
//! once, and every caller gets its own answer.

use crate::support as common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::json;
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig};

const THREADS: usize = 8;
const CALLS: usize = 1_000;

#[test]
fn eight_threads_with_a_thousand_calls_in_flight_each_get_their_own_answers() {
    let _serial = common::serial();
    let (client, pid) = common::tool_server_client(ClientConfig::default().dialect(McpDialect));
    // All threads start their calls together, so they interleave on the wire.
    let barrier = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let client = client.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                let calls: Vec<_> = (0..CALLS)
                    .map(|n| {
                        let payload =
                            json!({"thread": thread, "n": n, "text": format!("t{thread}-c{n}")});
                        let handle = client
                            .start(
                                "echo",
                                payload.clone(),
                                CallOptions::new().timeout(Duration::from_secs(120)),
                            )
                            .unwrap_or_else(|error| panic!("start {thread}/{n}: {error}"));
                        (payload, handle)
                    })
                    .collect();
                for (payload, handle) in calls {
                    let answer = handle
                        .wait()
                        .unwrap_or_else(|error| panic!("call {payload}: {error}"));
                    assert_eq!(answer, payload, "a caller got someone else's answer");
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a worker failed");
    }

    let stats = client.stats();
    assert_eq!(stats.in_flight, 0);
    assert_eq!(stats.sent, (THREADS * CALLS) as u64);
    assert_eq!(stats.received, (THREADS * CALLS) as u64);
    assert_eq!(stats.timeouts, 0);
    assert_eq!(stats.late_responses, 0);
    assert_eq!(stats.skipped_lines, 0);
    common::close_and_check(&client);
    assert!(common::process_gone(pid));
    common::assert_no_client_threads();
}
