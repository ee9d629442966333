//! The authorization parsers' fuzz properties (`fuzz/auth_checks.rs`, included below) over
//! every committed seed and kept crash input, in the normal test suite.
#![cfg(feature = "oauth")]

use std::path::{Path, PathBuf};

#[path = "../../fuzz/auth_checks.rs"]
mod auth_checks;

fn inputs(target: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for kind in ["corpus", "regressions"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz")
            .join(kind)
            .join(target);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            found.extend(entries.filter_map(|entry| entry.ok().map(|entry| entry.path())));
        }
    }
    found.sort();
    found
}

fn run_all(target: &str, check: fn(&[u8])) {
    let inputs = inputs(target);
    assert!(!inputs.is_empty(), "no seeds for {target}");
    for path in inputs {
        let data = std::fs::read(&path).unwrap();
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            panic!("{target}: {} breaks a property", path.display());
        }
    }
}

#[test]
fn www_authenticate_inputs_hold_their_properties() {
    run_all("www_authenticate", auth_checks::www_authenticate);
}

#[test]
fn auth_documents_inputs_hold_their_properties() {
    run_all("auth_documents", auth_checks::auth_documents);
}

#[test]
fn auth_redirect_inputs_hold_their_properties() {
    run_all("auth_redirect", auth_checks::auth_redirect);
}

#[test]
fn auth_origin_inputs_hold_their_properties() {
    run_all("auth_origin", auth_checks::auth_origin);
}
