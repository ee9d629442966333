//! A call is completed in place (its slot) and gets a channel only when its receiver is asked
//! for: the events already waiting move into the channel in order, later events follow them
//! there, and the handle's own waits keep working, whichever way the events are read.
use crate::support::client as support;

use serde_json::json;
use support::{memory_client, next_request, progress_token, round_trip, SOON};
use toolwire::jsonrpc::CallEvent;
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig};

fn progress_of(event: CallEvent) -> f64 {
    match event {
        CallEvent::Progress(report) => report.progress,
        other => panic!("expected progress, got {other:?}"),
    }
}

#[test]
fn a_receiver_asked_for_late_yields_every_waiting_event_in_order() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let mut handle = client
        .start(
            "tools/report",
            json!({}),
            CallOptions::new().timeout(SOON).want_progress(true),
        )
        .expect("start");
    let request = next_request(&peer);
    let token = progress_token(&request);
    for step in 1..=3 {
        support::progress(&peer, &token, f64::from(step));
    }
    support::answer(&peer, &request.id, json!("done"));
    // Everything above has reached the call's slot once this round trip is back.
    round_trip(&client, &peer);

    let receiver = handle.receiver().clone();
    let steps: Vec<f64> = (0..3)
        .map(|_| progress_of(receiver.try_recv().expect("a waiting report")))
        .collect();
    assert_eq!(steps, vec![1.0, 2.0, 3.0]);
    let outcome = match receiver.try_recv().expect("the waiting outcome") {
        done @ CallEvent::Done(_) => handle.on_event(done).expect("an outcome"),
        other => panic!("expected the outcome, got {other:?}"),
    };
    assert_eq!(outcome.expect("ok"), json!("done"));
    assert!(receiver.try_recv().is_err(), "nothing follows the outcome");
    assert!(handle.try_result().is_none(), "the outcome was taken once");
    drop(handle);
    support::finish(&client);
}

#[test]
fn events_after_the_receiver_go_to_it_and_the_handle_still_waits() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let mut handle = client
        .start(
            "tools/report",
            json!({}),
            CallOptions::new().timeout(SOON).want_progress(true),
        )
        .expect("start");
    let request = next_request(&peer);
    let token = progress_token(&request);
    support::progress(&peer, &token, 1.0);
    round_trip(&client, &peer);

    // The report that waited in the slot, through the channel.
    let first = handle
        .receiver()
        .recv_timeout(SOON)
        .expect("the first report");
    assert!(handle.on_event(first).is_none());
    // A report sent after the channel exists goes to it, not to the slot.
    support::progress(&peer, &token, 2.0);
    let second = handle
        .receiver()
        .recv_timeout(SOON)
        .expect("the second report");
    assert_eq!(progress_of(second), 2.0);
    // The handle's own wait now reads the channel: the outcome reaches it there.
    support::answer(&peer, &request.id, json!(7));
    assert_eq!(handle.wait().expect("ok"), json!(7));
    support::finish(&client);
}

#[test]
fn a_handle_polled_without_a_receiver_completes_once() {
    let (client, peer) = memory_client(ClientConfig::default());
    let mut handle = client
        .start("echo", json!({}), CallOptions::new().timeout(SOON))
        .expect("start");
    let request = next_request(&peer);
    assert!(handle.try_result().is_none(), "nothing has arrived yet");
    support::answer(&peer, &request.id, json!({"n": 1}));
    round_trip(&client, &peer);
    assert_eq!(
        handle.try_result().expect("the outcome").expect("ok"),
        json!({"n": 1})
    );
    assert!(handle.try_result().is_none(), "the outcome was taken once");
    let late = handle.wait_timeout(std::time::Duration::ZERO);
    assert!(
        matches!(late, Some(Err(toolwire::Error::Protocol(_)))),
        "{late:?}"
    );
    drop(handle);
    support::finish(&client);
}
