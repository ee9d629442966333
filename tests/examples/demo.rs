//! The README's first command, `cargo run --example demo`, runs to the end: the demo asserts
//! every step itself (it once stopped at its progress step, unnoticed, when the plain client
//! lost MCP's progress convention).

use crate::support as common;

use std::process::Command;

#[test]
fn the_demo_runs_to_the_end() {
    // The demo finds tool_server next to itself; common builds it there. Built every time (a
    // no-op when fresh): `cargo test --test demo_example` alone does not build examples.
    let examples = common::tool_server_path()
        .parent()
        .expect("examples dir")
        .to_path_buf();
    let demo = examples.join("demo");
    {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "--example", "demo"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo build --example demo");
        assert!(status.success(), "building demo failed");
    }
    let output = Command::new(&demo).output().expect("run the demo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the demo failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("progress 5/5"), "{stdout}");
    assert!(
        stdout.contains("Calls after close fail at once with a clear error. Done."),
        "{stdout}"
    );
}
