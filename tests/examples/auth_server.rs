//! `examples/auth_server.rs`, as a newcomer uses it: started, then `toolwire login` against
//! the URL it prints (the test plays the browser), then a call with the kept token.
#![cfg(feature = "cli")]

use crate::support::cli::{browse, run, scratch, toolwire};
use crate::support::server::HttpExample;

#[test]
fn toolwire_logs_in_to_the_auth_server_example_and_calls_with_the_token() {
    // Built with the features of this test build (`cli`, which has `oauth`), so the
    // library built for the tests is the one it links.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = std::process::Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "--example",
            "auth_server",
            "--features",
            "cli",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("run cargo build");
    assert!(built.success(), "building the auth_server example failed");
    let program = crate::support::cli::bin()
        .parent()
        .expect("the target folder")
        .join("examples/auth_server");
    let example = HttpExample::start_program(&program, &[]);
    let tokens = scratch("auth-server-example").join("tokens.json");
    let with_tokens = |args: &[&str]| {
        let mut command = toolwire(args);
        command
            .env("TOOLWIRE_TOKEN_FILE", &tokens)
            .env_remove("MCP_CLIENT_SECRET");
        command
    };
    // Before the login the server refuses, and says how to log in.
    let refused = run(with_tokens(&["--url", &example.url, "--no-login", "tools"])).expect(4);
    assert!(
        refused.stderr.contains("toolwire login"),
        "{}",
        refused.stderr
    );
    let login = browse(with_tokens(&[
        "--url",
        &example.url,
        "login",
        "--no-browser",
    ]))
    .expect(0);
    assert!(
        login.stderr.contains("authorized as newcomer@example.com"),
        "{}",
        login.stderr
    );
    let call = run(with_tokens(&["--url", &example.url, "call", "echo"])).expect(0);
    assert_eq!(call.stdout.trim(), "done", "{}", call.stderr);
    assert_eq!(example.stop(), Some(0));
}
