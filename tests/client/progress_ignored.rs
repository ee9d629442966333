//! Progress for a token no call owns (unknown, finished, cancelled) is dropped quietly.
use crate::support::client as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use support::{memory_client, next_request, progress, progress_token, round_trip, SOON};
use toolwire::jsonrpc::RequestId;
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig, Error};

fn counting_options(count: &Arc<AtomicUsize>) -> CallOptions {
    let count = Arc::clone(count);
    CallOptions::new().timeout(SOON).on_progress(move |_| {
        count.fetch_add(1, Ordering::SeqCst);
    })
}

#[test]
fn progress_for_unknown_tokens_is_ignored_without_error() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let reports = Arc::new(AtomicUsize::new(0));
    // A live call that asked for progress must not receive reports meant for other tokens.
    let mut handle = client
        .start("tools/live", json!({}), counting_options(&reports))
        .expect("start");
    let request = next_request(&peer);
    progress(&peer, &RequestId::Number(424_242), 1.0);
    progress(&peer, &RequestId::String("nobody".into()), 1.0);
    // The same number as a string is another token.
    progress(&peer, &RequestId::String(request.id.to_string()), 1.0);
    round_trip(&client, &peer);
    assert!(
        handle.try_result().is_none(),
        "the live call is still running"
    );
    assert_eq!(reports.load(Ordering::SeqCst), 0);
    let stats = client.stats();
    assert_eq!(stats.skipped_lines, 0, "{stats:?}");
    assert_eq!(stats.late_responses, 0, "{stats:?}");
    assert!(!client.is_closed());
    // Its own report still arrives.
    progress(&peer, &progress_token(&request), 5.0);
    support::answer(&peer, &request.id, json!("ok"));
    assert_eq!(
        handle.wait_timeout(SOON).expect("done").expect("ok"),
        json!("ok")
    );
    assert_eq!(reports.load(Ordering::SeqCst), 1);
    drop(handle);
    support::finish(&client);
}

#[test]
fn progress_for_a_finished_call_is_ignored() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let reports = Arc::new(AtomicUsize::new(0));
    let mut handle = client
        .start("tools/quick", json!({}), counting_options(&reports))
        .expect("start");
    let request = next_request(&peer);
    support::answer(&peer, &request.id, json!(1));
    assert_eq!(
        handle.wait_timeout(SOON).expect("done").expect("ok"),
        json!(1)
    );
    progress(&peer, &progress_token(&request), 1.0);
    round_trip(&client, &peer);
    assert!(
        handle.receiver().try_recv().is_err(),
        "nothing after the outcome"
    );
    assert!(handle.try_result().is_none());
    assert_eq!(reports.load(Ordering::SeqCst), 0);
    assert_eq!(client.stats().skipped_lines, 0);
    drop(handle);
    support::finish(&client);
}

#[test]
fn progress_after_cancel_is_ignored() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let reports = Arc::new(AtomicUsize::new(0));
    let mut handle = client
        .start("tools/slow", json!({}), counting_options(&reports))
        .expect("start");
    let request = next_request(&peer);
    assert!(handle.cancel());
    support::expect_cancelled(&peer, &request.id);
    progress(&peer, &progress_token(&request), 1.0);
    progress(&peer, &progress_token(&request), 2.0);
    round_trip(&client, &peer);
    match handle.wait_timeout(SOON) {
        Some(Err(Error::Cancelled { method })) => assert_eq!(method, "tools/slow"),
        other => panic!("expected Cancelled, got {other:?}"),
    }
    assert!(
        handle.receiver().try_recv().is_err(),
        "no report after the cancel"
    );
    assert_eq!(reports.load(Ordering::SeqCst), 0);
    let stats = client.stats();
    assert_eq!(stats.cancels, 1, "{stats:?}");
    assert_eq!(stats.skipped_lines, 0, "{stats:?}");
    drop(handle);
    support::finish(&client);
}
