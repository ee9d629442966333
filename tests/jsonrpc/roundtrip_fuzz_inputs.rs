//! The fuzz targets' properties over the committed fuzz inputs, in the normal test suite.
//!
//! Every file under `fuzz/corpus/<target>/` (the seeds) and `fuzz/regressions/<target>/`
//! (inputs that once crashed a target, kept when the bug was fixed) is run through the same
//! check the fuzz target runs (`fuzz/checks.rs`, included below), so a fixed crash stays fixed
//! without cargo-fuzz.

#[path = "../../fuzz/checks.rs"]
mod checks;

use std::path::{Path, PathBuf};

/// The files of `fuzz/<kind>/<target>/`, sorted; none when the folder does not exist.
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(kind)
        .join(target);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.is_file())
            // Dot files are libFuzzer's bookkeeping, not inputs.
            .filter(|path| !path.file_name().unwrap().to_string_lossy().starts_with('.'))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

fn run_all(target: &str, check: fn(&[u8])) {
    let seeds = inputs("corpus", target);
    assert!(!seeds.is_empty(), "no seeds for {target}");
    for path in seeds.iter().chain(&inputs("regressions", target)) {
        let data = std::fs::read(path).expect("read a fuzz input");
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(outcome.is_ok(), "{} fails its check", path.display());
    }
}

#[test]
fn jsonrpc_frame_inputs_hold_their_properties() {
    run_all("jsonrpc_frame", checks::jsonrpc_frame);
}

#[test]
fn line_framing_inputs_hold_their_properties() {
    run_all("line_framing", checks::line_framing);
}

#[cfg(feature = "http")]
#[test]
fn sse_reader_inputs_hold_their_properties() {
    run_all("sse_reader", checks::sse_reader);
}

#[test]
fn raw_call_inputs_hold_their_properties() {
    run_all("raw_call", checks::raw_call);
}

#[test]
fn config_inputs_hold_their_properties() {
    run_all("config", checks::config);
}

#[cfg(feature = "server")]
#[test]
fn http_request_inputs_hold_their_properties() {
    run_all("http_request", checks::http_request);
}

#[cfg(feature = "server")]
#[test]
fn server_frames_inputs_hold_their_properties() {
    run_all("server_frames", checks::server_frames);
}

#[cfg(feature = "redis")]
#[test]
fn resp_reply_inputs_hold_their_properties() {
    run_all("resp_reply", checks::resp_reply);
}

#[test]
fn tool_definition_inputs_hold_their_properties() {
    run_all("tool_definition", checks::tool_definition);
}
