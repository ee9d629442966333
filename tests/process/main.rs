//! Tests that look at or change what belongs to the whole process: its threads (by name),
//! its child processes, file descriptors, peak memory, environment variables. In a binary
//! shared with other tests they would see those tests' threads and children, so they are
//! here, and every test of this binary holds the one lock `support::serial()` for its whole
//! body: one test at a time. `every_test_holds_the_process_lock` checks that, so a test added
//! here without the lock fails.

#[path = "../support/mod.rs"]
mod support;

mod gateway_close;
mod harness_hand_off;
mod harness_parallel;
mod http_threads;
mod server_stdio_eof;
mod stdio_close;
mod stdio_concurrency;
mod stdio_crash;
mod stdio_env;
mod stdio_exit_watch;
mod stdio_frame_order;
mod stdio_hang;
mod stdio_huge_line;
mod stdio_lines;
mod stdio_orphans;
mod stdio_oversized_reply;
mod stdio_refused_send_stderr;
mod stdio_stderr;
mod stdio_stderr_secrets;
mod stdio_stuck_stdin;

/// Every `#[test]` function of this binary's modules begins by taking `support::serial()`
/// (as `let _serial = ...serial();`), so no two of them run at once.
#[test]
fn every_test_holds_the_process_lock() {
    let _serial = support::serial();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/process");
    let mut checked = 0;
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/process") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("a source file");
        let lines: Vec<&str> = source.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            if line.trim() != "#[test]" {
                continue;
            }
            // The function's first statement, past its other attributes and its signature.
            let body = lines[at + 1..]
                .iter()
                .skip_while(|line| line.trim_start().starts_with("#["))
                .skip_while(|line| !line.trim_end().ends_with('{'))
                .nth(1)
                .map(|line| line.trim())
                .unwrap_or("");
            checked += 1;
            if !(body.starts_with("let _serial = ") && body.ends_with("serial();")) {
                missing.push(format!("{}:{}", path.display(), at + 1));
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} tests found in {}",
        dir.display()
    );
    assert!(
        missing.is_empty(),
        "tests without the process lock: {missing:#?}"
    );
}
