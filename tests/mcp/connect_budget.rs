//! One budget for the whole connection: with `connect_timeout`, the `server/discover` probe and
//! the `initialize` fallback share it, so Auto mode cannot spend it twice against a server that
//! answers neither.
use crate::support::mcp as support;

use std::time::{Duration, Instant};

use support::*;
use toolwire::transport::MemoryTransport;
use toolwire::{Error, McpClient, ProtocolMode};

#[test]
fn a_silent_server_spends_one_budget_not_two() {
    let budget = Duration::from_millis(300);
    // Each step alone would wait far longer than the hang guard: only the shared budget can
    // end the connection before it.
    let patient = config(ProtocolMode::Auto)
        .discover_timeout(SOON)
        .initialize_timeout(SOON)
        .connect_timeout(budget);
    let (transport, peer) = MemoryTransport::pair();
    let started = Instant::now();
    let (outcome, seen) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            // Read what the client sends and never answer.
            let mut seen = Vec::new();
            while let Some(line) = peer.recv_line(SOON) {
                seen.push(line);
            }
            seen
        });
        let outcome = McpClient::connect(transport, patient);
        (outcome, reader.join().expect("the reader"))
    });
    match outcome {
        Err(Error::Timeout { after, .. }) => {
            assert!(after >= Duration::from_millis(1), "{after:?}");
        }
        other => panic!("expected the budget's timeout, got {other:?}"),
    }
    assert!(started.elapsed() >= budget, "it gave up early");
    // The probe and the fallback were both tried within the one budget.
    assert!(
        seen.iter().any(|line| line.contains("server/discover")),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|line| line.contains("\"initialize\"")),
        "{seen:?}"
    );
}
