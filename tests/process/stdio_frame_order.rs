//! Callers write their own frames to the child's stdin when the pipe has room, and only what
//! would block goes to the writer thread: frames larger than the pipe, and every frame queued
//! behind one, still reach the child whole and in order.

use crate::support as common;

use std::thread;

use serde_json::json;
use toolwire::{CallOptions, ClientConfig};

/// Far more than a pipe holds (64 KiB on Linux): the pipe takes part of the frame and the
/// writer thread writes the rest while the child reads.
const BIG: usize = 300 * 1024;

#[test]
fn a_frame_larger_than_the_pipe_and_the_frames_behind_it_arrive_whole_and_in_order() {
    let _serial = common::serial();
    let (client, _pid) = common::tool_server_client(ClientConfig::default());
    // One thread: a big frame, then small ones sent while its rest still waits for the
    // writer thread. A small frame written straight into the pipe would land inside the big
    // line and break both.
    for round in 0..5 {
        let big = format!("{round}").repeat(BIG);
        let first = client
            .start("echo", json!({"big": big}), CallOptions::new())
            .expect("start the big call");
        let small: Vec<_> = (0..50)
            .map(|n| {
                client
                    .start("echo", json!({"round": round, "n": n}), CallOptions::new())
                    .expect("start a small call")
            })
            .collect();
        for (n, handle) in small.into_iter().enumerate() {
            assert_eq!(
                handle.wait().expect("small call"),
                json!({"round": round, "n": n})
            );
        }
        assert_eq!(first.wait().expect("big call"), json!({"big": big}));
    }
    assert_eq!(client.stats().in_flight, 0);
    assert_eq!(client.stats().skipped_lines, 0);
    common::close_and_check(&client);
    common::assert_no_client_threads();
}

#[test]
fn callers_on_many_threads_mixing_big_and_small_frames_get_their_own_results() {
    let _serial = common::serial();
    let (client, _pid) = common::tool_server_client(ClientConfig::default());
    let callers: Vec<_> = (0..4)
        .map(|caller| {
            let client = client.clone();
            thread::spawn(move || {
                for n in 0..40 {
                    let params = if n % 4 == 0 {
                        json!({"caller": caller, "n": n, "big": "x".repeat(BIG)})
                    } else {
                        json!({"caller": caller, "n": n})
                    };
                    let result = client.call("echo", params.clone()).expect("call");
                    assert_eq!(result, params, "caller {caller}, call {n}");
                }
            })
        })
        .collect();
    for caller in callers {
        caller.join().expect("caller thread");
    }
    let stats = client.stats();
    assert_eq!(stats.in_flight, 0);
    assert_eq!(stats.skipped_lines, 0);
    assert_eq!(stats.late_responses, 0);
    common::close_and_check(&client);
    common::assert_no_client_threads();
}
