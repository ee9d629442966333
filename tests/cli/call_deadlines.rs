//! A call's deadline is reported as the user set it (`after 300ms`), naming which bound it
//! was when progress moved it, never as a measured `300.41 ms`.
#![cfg(feature = "cli")]

use crate::support::cli;

use std::time::Duration;

use cli::run_tool_server;

#[test]
fn a_call_without_an_answer_is_reported_after_its_timeout_as_written() {
    let run = run_tool_server(&["call", "hang", "--timeout", "300ms"]).expect(3);
    assert!(
        run.stderr.contains(
            "the call to `hang` timed out after 300ms (it was cancelled; the server was told)"
        ),
        "{}",
        run.stderr
    );
    assert!(run.took >= Duration::from_millis(300), "{:?}", run.took);
}

#[test]
fn a_call_that_keeps_reporting_progress_is_reported_after_its_max_total() {
    let run = run_tool_server(&[
        "call",
        "sleep",
        "ms=600000",
        "progress=6000",
        "--timeout",
        "400ms",
        "--max-total",
        "0.7s",
    ])
    .expect(3);
    assert!(
        run.stderr
            .contains("the call to `sleep` timed out after 700ms in all (--max-total;"),
        "{}",
        run.stderr
    );
    assert!(run.took >= Duration::from_millis(700), "{:?}", run.took);
    assert!(run.took < Duration::from_secs(3 + 5), "{:?}", run.took);
}
