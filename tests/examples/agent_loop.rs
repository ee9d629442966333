//! The README's complete program (`examples/agent_loop.rs`) runs against the bundled tool
//! server, and the README shows exactly the program that ran.

use crate::support as common;

use std::path::PathBuf;
use std::process::Command;

/// The `agent_loop` example, built next to `tool_server` (every time, a no-op when fresh:
/// `cargo test --test agent_loop_example` alone does not build examples).
fn agent_loop_path() -> PathBuf {
    let examples = common::tool_server_path()
        .parent()
        .expect("examples dir")
        .to_path_buf();
    let path = examples.join("agent_loop");
    {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "--example", "agent_loop"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo build --example agent_loop");
        assert!(status.success(), "building agent_loop failed");
    }
    path
}

#[test]
fn the_agent_loop_runs_a_model_call_through_the_harness_to_the_mcp_server() {
    let output = Command::new(agent_loop_path())
        .arg(common::tool_server_path())
        .output()
        .expect("run agent_loop");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the example failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The good call ran on the server and its answer is a `role: tool` message for call_1.
    let ok = stdout
        .lines()
        .find(|line| line.starts_with("OK "))
        .unwrap_or_else(|| panic!("no OK line:\n{stdout}"));
    assert!(ok.contains(r#""tool_call_id":"call_1""#), "{ok}");
    assert!(ok.contains("42"), "{ok}");
    // The bad one never reached the server: the model is told which field to fix.
    let invalid = stdout
        .lines()
        .find(|line| line.starts_with("INVALID "))
        .unwrap_or_else(|| panic!("no INVALID line:\n{stdout}"));
    assert!(invalid.contains(r#""tool_call_id":"call_2""#), "{invalid}");
    assert!(invalid.contains("/b"), "{invalid}");
    assert!(stdout.contains("4 messages for the next turn"), "{stdout}");
}

#[test]
fn the_readme_shows_the_program_that_runs() {
    let root = env!("CARGO_MANIFEST_DIR");
    let example = std::fs::read_to_string(format!("{root}/examples/agent_loop.rs")).unwrap();
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let program = example
        .split("// readme:begin\n")
        .nth(1)
        .and_then(|rest| rest.split("// readme:end\n").next())
        .expect("examples/agent_loop.rs has its readme:begin / readme:end markers");
    assert!(
        program.contains("harness.handle(CallShape::OpenAi"),
        "{program}"
    );
    assert!(
        readme.contains(program),
        "README.md does not show examples/agent_loop.rs (between its readme markers) verbatim"
    );
}
