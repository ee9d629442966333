//! A flood of the peer's notifications past the inbound queue (a server that logs thousands
//! of messages while the handler is busy) is dropped with one rate-limited warning, not one
//! warning per notification, and counted; the connection goes on.
use crate::support::client as support;

use std::sync::Mutex;

use crossbeam_channel::bounded;
use log::{Level, LevelFilter, Log, Metadata, Record};
use serde_json::json;
use support::{memory_client, SOON};
use toolwire::jsonrpc::{Message, Notification};
use toolwire::ClientConfig;

/// The warnings logged in this binary.
static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Capture;

impl Log for Capture {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= Level::Warn
    }

    fn log(&self, record: &Record<'_>) {
        if record.level() <= Level::Warn {
            WARNINGS
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(record.args().to_string());
        }
    }

    fn flush(&self) {}
}

#[test]
fn a_notification_flood_logs_one_warning_and_counts_what_it_dropped() {
    static CAPTURE: Capture = Capture;
    log::set_logger(&CAPTURE).expect("the only logger of this binary");
    log::set_max_level(LevelFilter::Warn);
    const FLOOD: usize = 5_000;
    // The handler holds the dispatch thread until the flood is over: the queue of one fills.
    let (release_tx, release) = bounded::<()>(0);
    let (seen_tx, seen) = bounded::<String>(FLOOD);
    let config = ClientConfig::default()
        .inbound_queue(1)
        .on_notification(move |notification| {
            if notification.method == "hold" {
                let _ = release.recv_timeout(SOON);
            }
            let _ = seen_tx.try_send(notification.method.clone());
        });
    let (client, peer) = memory_client(config);
    let send = |method: &str| {
        peer.send(&Message::Notification(Notification {
            method: method.into(),
            params: Some(json!({"level": "info", "data": "x"})),
        }))
    };
    send("hold");
    let started = std::time::Instant::now();
    for _ in 0..FLOOD {
        send("notifications/message");
    }
    // A request after the flood is still answered: the connection goes on. It also proves
    // the reader has taken in the whole flood.
    peer.send_line(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    let Some(Message::Response(_)) = peer.recv_message(SOON) else {
        panic!("the ping after the flood was not answered");
    };
    let took = started.elapsed();
    release_tx.send(()).expect("release the handler");
    let dropped = client.stats().dropped_notifications;
    // Taken: the held one and at most one that waited in the queue; the rest dropped.
    assert!(
        dropped as usize >= FLOOD - 2,
        "dropped {dropped} of {FLOOD}"
    );
    let warnings: Vec<String> = WARNINGS
        .lock()
        .unwrap()
        .iter()
        .filter(|warning| warning.contains("dropped"))
        .cloned()
        .collect();
    // One warning a second at most, however long the flood took.
    assert!(
        !warnings.is_empty() && warnings.len() as u64 <= 1 + took.as_secs() + 1,
        "{} warnings for {dropped} drops: {warnings:?}",
        warnings.len()
    );
    assert_eq!(seen.recv_timeout(SOON).expect("the held one"), "hold");
    client.close().expect("close");
}
