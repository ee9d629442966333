//! Progress callbacks run on the thread that waits for the call, in the order sent.
use crate::support::client as support;

use std::sync::Arc;
use std::thread;

use parking_lot::Mutex;
use serde_json::json;
use support::{memory_client, next_request, progress_token, SOON};
use toolwire::jsonrpc::{CallEvent, Progress};
use toolwire::mcp::methods::PROGRESS;
use toolwire::mcp::McpDialect;
use toolwire::{CallOptions, ClientConfig};

const REPORTS: u32 = 50;

#[test]
fn callbacks_run_on_the_callers_thread_in_order() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let peer = Arc::new(peer);
    let peer_thread = {
        let peer = Arc::clone(&peer);
        thread::spawn(move || {
            let request = next_request(&peer);
            let token = progress_token(&request);
            for step in 1..=REPORTS {
                support::notify(
                    &peer,
                    PROGRESS,
                    json!({
                        "progressToken": token.to_value(),
                        "progress": step,
                        "total": REPORTS,
                        "message": format!("step {step}"),
                    }),
                );
            }
            support::answer(&peer, &request.id, json!("finished"));
        })
    };
    let caller = {
        let client = client.clone();
        thread::Builder::new()
            .name("the-caller".into())
            .spawn(move || {
                let seen: Arc<Mutex<Vec<(thread::ThreadId, Progress)>>> = Arc::default();
                let record = Arc::clone(&seen);
                let outcome = client.call_with(
                    "tools/report",
                    json!({}),
                    CallOptions::new().timeout(SOON).on_progress(move |report| {
                        record.lock().push((thread::current().id(), report.clone()));
                    }),
                );
                let seen = std::mem::take(&mut *seen.lock());
                (thread::current().id(), outcome, seen)
            })
            .expect("spawn")
    };
    let (caller_id, outcome, seen) = caller.join().expect("caller");
    peer_thread.join().expect("peer");
    assert_eq!(outcome.expect("the call succeeds"), json!("finished"));
    // Every report was delivered before the outcome, in order, on the caller's own thread.
    assert_eq!(seen.len(), REPORTS as usize);
    for (index, (thread_id, report)) in seen.iter().enumerate() {
        let step = index as u32 + 1;
        assert_eq!(*thread_id, caller_id, "report {step} ran on another thread");
        assert_eq!(report.progress, f64::from(step));
        assert_eq!(report.total, Some(f64::from(REPORTS)));
        assert_eq!(
            report.message.as_deref(),
            Some(format!("step {step}").as_str())
        );
    }
    assert_ne!(caller_id, thread::current().id());
    support::finish(&client);
}

#[test]
fn want_progress_without_a_callback_delivers_reports_on_the_receiver() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let mut handle = client
        .start(
            "tools/report",
            json!({"keep": "me"}),
            CallOptions::new().timeout(SOON).want_progress(true),
        )
        .expect("start");
    let request = next_request(&peer);
    let params = request.params.as_ref().expect("params");
    assert_eq!(
        params["keep"], "me",
        "the caller's params survive the token"
    );
    let token = progress_token(&request);
    assert_eq!(&token, handle.id());
    support::progress(&peer, &token, 1.0);
    support::progress(&peer, &token, 2.0);
    support::answer(&peer, &request.id, json!(3));
    let mut reports = Vec::new();
    let outcome = loop {
        match handle.receiver().recv_timeout(SOON).expect("event") {
            CallEvent::Progress(report) => {
                reports.push(report.progress);
                assert!(handle.on_event(CallEvent::Progress(report)).is_none());
            }
            done @ CallEvent::Done(_) => break handle.on_event(done).expect("an outcome"),
        }
    };
    assert_eq!(reports, vec![1.0, 2.0]);
    assert_eq!(outcome.expect("ok"), json!(3));
    drop(handle);
    support::finish(&client);
}

#[test]
fn a_call_without_progress_options_carries_no_token() {
    let (client, peer) = memory_client(ClientConfig::default().dialect(McpDialect));
    let handle = client
        .start(
            "tools/plain",
            json!({"a": 1}),
            CallOptions::new().timeout(SOON),
        )
        .expect("start");
    let request = next_request(&peer);
    assert_eq!(request.params, Some(json!({"a": 1})));
    support::answer(&peer, &request.id, json!(null));
    assert_eq!(handle.wait().expect("ok"), json!(null));
    support::finish(&client);
}
