//! `examples/proxy.rs` runs to the end: a proxy built on the public server API only serves an
//! upstream server's tools, resources and prompts, and asserts what its client sees.

use std::process::Command;

#[test]
fn the_proxy_example_serves_its_upstream() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["run", "--quiet", "--example", "proxy"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the example failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for line in [
        "tools served: up.add, up.report",
        "up.add 2 3 = 5",
        "up.report: all quiet",
        "did you mean \"up.add\"",
        "quota of 2 calls is used up",
        "note://readme: read me",
        "up.greet Ada: Hello, Ada!",
        "proxy example: all checks passed",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
}
