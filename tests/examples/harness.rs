//! `examples/harness.rs` runs to the end: it asserts all eight statuses itself.

use std::process::Command;

#[test]
fn the_harness_example_shows_all_eight_statuses() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["run", "--quiet", "--example", "harness"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the example failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(
            "all eight statuses seen: OK INVALID UNKNOWN_TOOL NOT_FOUND TIMEOUT BUSY TOOL_ERROR \
             BUDGET"
        ),
        "{stdout}"
    );
    // The withheld failure text never reaches the model's messages.
    assert!(!stdout.contains("secret.pem"), "{stdout}");
}
