//! A flood of requests past the worker pool: those that find every worker busy are answered
//! at once with BUSY (-32000), nothing waits in a queue, and once the workers are free the
//! next requests run; over a stream transport and over stateless HTTP (503).

use crate::support::server as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_channel::{bounded, Receiver};
use serde_json::json;
use toolwire::harness::LocalTool;
use toolwire::server::{
    CallToolResult, HttpServer, HttpServerConfig, PeerTransport, Server, ServerConfig, BUSY,
};
use toolwire::transport::MemoryTransport;
use toolwire::{CallOptions, Client, Error};

use support::{stateless_headers, stateless_request, LONG};

const WORKERS: usize = 2;

/// A server whose `hold` tool runs until the test releases it, counting the runs.
fn server(release: Receiver<()>, runs: Arc<AtomicUsize>) -> Server {
    let server = Server::new(ServerConfig::new("flood", "1").workers(WORKERS)).unwrap();
    server
        .add_tool(LocalTool::with_context(
            "hold",
            "Holds a worker.",
            json!({"type": "object"}),
            move |_, _| {
                runs.fetch_add(1, Ordering::SeqCst);
                let _ = release.recv_timeout(LONG);
                Ok(CallToolResult::from_text("released"))
            },
        ))
        .unwrap();
    server
}

#[test]
fn a_flood_past_the_pool_is_refused_at_once_over_a_stream() {
    let (release_tx, release) = bounded::<()>(0);
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(release, Arc::clone(&runs));
    let (client_end, server_end) = MemoryTransport::pair();
    let connection = server.connect(PeerTransport::new(server_end)).unwrap();
    let client = Client::new(client_end).unwrap();
    let calls: Vec<_> = (0..20)
        .map(|_| {
            client
                .start(
                    "tools/call",
                    json!({"name": "hold"}),
                    CallOptions::new().timeout(LONG),
                )
                .unwrap()
        })
        .collect();
    // Every refusal comes while both workers are still held (they wait for the release,
    // which comes only after): nothing waited for them.
    let mut calls: Vec<Option<_>> = calls.into_iter().map(Some).collect();
    let mut busy = 0;
    assert!(
        support::eventually(support::LONG, || {
            for slot in calls.iter_mut() {
                let Some(call) = slot.as_mut() else { continue };
                match call.try_result() {
                    Some(Err(Error::Rpc(error))) => {
                        assert_eq!(error.code, BUSY, "{error}");
                        assert!(error.message.contains("nothing was queued"), "{error}");
                        busy += 1;
                        *slot = None;
                    }
                    Some(other) => panic!("a flooded call ended with {other:?}"),
                    None => {}
                }
            }
            busy == 20 - WORKERS
        }),
        "only {busy} refusals"
    );
    let running: Vec<_> = calls.into_iter().flatten().collect();
    assert_eq!((busy, running.len()), (20 - WORKERS, WORKERS));
    // An admitted call's handler starts on its worker after the hand-off: the refusals may
    // all come first.
    assert!(support::eventually(support::LONG, || runs
        .load(Ordering::SeqCst)
        == WORKERS));
    for _ in 0..WORKERS {
        release_tx.send(()).unwrap();
    }
    for call in running {
        assert_eq!(call.wait().unwrap()["content"][0]["text"], "released");
    }
    assert!(server.wait_idle(LONG));
    // The pool is whole again, and nothing that was refused runs late.
    let next = client
        .start("tools/call", json!({"name": "hold"}), CallOptions::new())
        .unwrap();
    release_tx.send(()).unwrap();
    next.wait().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), WORKERS + 1);
    client.close().unwrap();
    connection.wait();
    assert_eq!(connection.in_flight(), 0);
}

#[test]
fn a_flood_past_the_pool_gets_503_over_http() {
    let (release_tx, release) = bounded::<()>(0);
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(release, Arc::clone(&runs));
    let http = HttpServer::bind(&server, HttpServerConfig::new()).unwrap();
    let url = http.url();
    let holders: Vec<_> = (0..WORKERS)
        .map(|id| {
            let url = url.clone();
            std::thread::spawn(move || {
                let body = stateless_request(id as i64, "tools/call", json!({"name": "hold"}));
                support::post(&url, &stateless_headers("tools/call", Some("hold")), &body)
            })
        })
        .collect();
    assert!(support::eventually(support::LONG, || runs
        .load(Ordering::SeqCst)
        == WORKERS));
    for id in 0..5 {
        let body = stateless_request(100 + id, "tools/call", json!({"name": "hold"}));
        let refused = support::post(&url, &stateless_headers("tools/call", Some("hold")), &body);
        assert_eq!(refused.status, 503, "{refused:?}");
        assert_eq!(refused.messages()[0]["error"]["code"], BUSY.0);
        assert_eq!(refused.messages()[0]["id"], 100 + id);
    }
    for _ in 0..WORKERS {
        release_tx.send(()).unwrap();
    }
    for holder in holders {
        assert_eq!(holder.join().unwrap().status, 200);
    }
    assert_eq!(runs.load(Ordering::SeqCst), WORKERS);
    http.close().unwrap();
}
