//! `--connect-timeout` bounds starting the server, the `server/discover` probe and the
//! `initialize` handshake together, and a connection that runs out of it is reported after
//! the bound as the user wrote it (`after 1.5s`), not after the share of it the last step had.
#![cfg(feature = "cli")]

use crate::support::cli;

use std::time::{Duration, Instant};

use cli::{run_args, toolwire};
use toolwire::mcp::ProtocolMode;
use toolwire::transport::MemoryTransport;
use toolwire::{Error, McpClient, McpConfig};

/// A stdio server that reads everything it is sent and never answers; it ends at the end of
/// its input, so closing it takes no grace.
const READS_AND_NEVER_ANSWERS: &str = "while read -r line; do :; done";

#[test]
fn a_server_that_never_answers_is_given_up_at_the_bound_reported_as_written() {
    let bound = Duration::from_millis(1500);
    let run = cli::run(toolwire(&[
        "tools",
        "--connect-timeout",
        "1.5s",
        "--",
        "sh",
        "-c",
        READS_AND_NEVER_ANSWERS,
    ]))
    .expect(3);
    // Auto mode: the probe had half of the bound and the handshake the rest; the error
    // names the handshake and the whole bound.
    let first = run.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("toolwire: error: connecting to sh"),
        "{}",
        run.stderr
    );
    assert!(
        first.ends_with("`initialize` timed out after 1.5s"),
        "{}",
        run.stderr
    );
    assert!(run.took >= bound, "ended after {:?}", run.took);
    assert!(
        run.took < 3 * bound + Duration::from_secs(5),
        "{:?}",
        run.took
    );
}

#[test]
fn a_server_that_ignores_its_input_is_stopped_within_the_documented_grace() {
    // Legacy mode: the handshake has the whole bound. `sleep` reads nothing and outlives the
    // end of its input: the documented grace of a stdio server's stop (stdin closed, SIGTERM
    // 2 s later, SIGKILL 2 s after that) comes on top of the bound.
    let run = run_args(&[
        "ping",
        "--protocol",
        "legacy",
        "--connect-timeout",
        "2s",
        "--",
        "sleep",
        "30",
    ])
    .expect(3);
    assert!(
        run.stderr
            .contains("connecting to sleep 30: `initialize` timed out after 2s"),
        "{}",
        run.stderr
    );
    assert!(run.took >= Duration::from_secs(2), "{:?}", run.took);
    assert!(run.took < Duration::from_secs(3 * 2 + 5), "{:?}", run.took);
}

#[test]
fn the_library_reports_the_whole_budget_in_every_mode() {
    for mode in [
        ProtocolMode::Auto,
        ProtocolMode::Legacy,
        ProtocolMode::Modern,
    ] {
        let budget = Duration::from_millis(300);
        let (transport, peer) = MemoryTransport::pair();
        let started = Instant::now();
        let error = McpClient::connect(
            transport,
            McpConfig::default().mode(mode).connect_timeout(budget),
        )
        .expect_err("nobody answers");
        let took = started.elapsed();
        match error {
            Error::Timeout { method, after } => {
                assert_eq!(after, budget, "{mode:?}: `{method}`");
                let shown = Error::Timeout {
                    method: method.clone(),
                    after,
                }
                .to_string();
                assert!(shown.ends_with("timed out after 300ms"), "{shown}");
            }
            other => panic!("{mode:?}: expected a timeout, got {other:?}"),
        }
        assert!(took >= budget, "{mode:?}: {took:?}");
        // The peer was sent the probe or the handshake.
        assert!(
            peer.recv_line(Duration::ZERO).is_some(),
            "{mode:?}: nothing was sent"
        );
    }
}
