//! A server that quotes its credentials puts them nowhere: the value of a variable given to a
//! stdio server (`--env`, a config entry's `env` and `envFile`), and an HTTP connection's
//! header values and URL password, quoted back in a JSON-RPC error's message and data, in a
//! tool's `isError` text, in a log message, a progress report and on the server's stderr,
//! show as `***` on
//! stderr at every log level, in `--json` output and in the `--transcript` (whose received
//! frames are masked too). A successful result is the caller's data: stdout shows it as
//! sent, the transcript masked.
#![cfg(feature = "cli")]

use crate::support::cli;
use crate::support::http_fake;

use std::path::Path;

use cli::{run, scratch, tool_server, toolwire, Run};
use serde_json::{json, Value};

/// Given with `--env`.
const ENV_SECRET: &str = "cli-env-S3CRET-0001";
/// A config entry's `env` value.
const ENTRY_SECRET: &str = "entry-env-S3CRET-0002";
/// A value of the entry's `envFile`.
const FILE_SECRET: &str = "env-file-S3CRET-0003";
/// An `Authorization: Bearer` header given with `-H`.
const BEARER_SECRET: &str = "bearer-S3CRET-0004";
/// Another header's value.
const KEY_SECRET: &str = "api-key-S3CRET-0005";
/// The URL's password.
const PASSWORD_SECRET: &str = "password-S3CRET-0006";

const ALL: [&str; 6] = [
    ENV_SECRET,
    ENTRY_SECRET,
    FILE_SECRET,
    BEARER_SECRET,
    KEY_SECRET,
    PASSWORD_SECRET,
];

/// Panics when `text` holds any planted secret.
fn assert_hidden(what: &str, text: &str) {
    for secret in ALL {
        assert!(
            !text.contains(secret),
            "{what} shows the secret {secret:?}:\n{text}"
        );
    }
}

/// What one run left: its output and its transcript's text.
struct Left {
    run: Run,
    transcript: String,
}

impl Left {
    /// Nothing the run wrote (stderr, the transcript; stdout unless it holds a successful
    /// result) shows a secret, and the mask shows where one was.
    fn assert_masked(&self, stdout_too: bool) {
        assert_hidden("stderr", &self.run.stderr);
        assert_hidden("the transcript", &self.transcript);
        if stdout_too {
            assert_hidden("stdout", &self.run.stdout);
            assert!(
                self.run.stdout.contains("***") || self.run.stderr.contains("***"),
                "no mask shown:\n{}\n{}",
                self.run.stdout,
                self.run.stderr
            );
        }
        // The received frames are recorded, masked.
        let received: Vec<Value> = self
            .transcript
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line"))
            .filter(|line| line["event"] == "recv")
            .collect();
        assert!(
            received
                .iter()
                .any(|line| line["message"].to_string().contains("***")),
            "no received frame shows the mask:\n{}",
            self.transcript
        );
    }
}

/// `toolwire ARGS --log-level LEVEL --transcript FILE`, then `-- tool_server --hostile` when
/// `server` is true.
fn run_leak(dir: &Path, args: &[&str], level: &str, server: bool) -> Left {
    let path = dir.join(format!("transcript-{level}.jsonl"));
    let mut command = toolwire(args);
    command
        .args(["--log-level", level, "--transcript"])
        .arg(&path);
    if server {
        command.arg("--").arg(tool_server()).arg("--hostile");
    }
    let run = run(command);
    let transcript = std::fs::read_to_string(&path).unwrap_or_default();
    Left { run, transcript }
}

#[test]
fn a_stdio_server_quoting_an_env_value_shows_it_nowhere_at_any_log_level() {
    let dir = scratch("peer-secrets-env");
    let env = format!("PLANTED={ENV_SECRET}");
    for level in ["warn", "info", "debug", "trace"] {
        // A JSON-RPC error whose message and data quote it, the server's stderr and log.
        let refused = run_leak(
            &dir,
            &[
                "call",
                "leak",
                "name=PLANTED",
                "as=rpc_error",
                "--env",
                &env,
            ],
            level,
            true,
        );
        assert_eq!(refused.run.code, 4, "{}", refused.run.stderr);
        refused.assert_masked(true);
        assert!(
            refused.run.stderr.contains("Bearer *** is not valid"),
            "{}",
            refused.run.stderr
        );
        assert!(
            refused.run.stderr.contains("using PLANTED=***"),
            "the server's log message: {}",
            refused.run.stderr
        );
        if ["debug", "trace"].contains(&level) {
            assert!(
                refused.run.stderr.contains("checking ***"),
                "the server's progress report: {}",
                refused.run.stderr
            );
        }
        // The same as JSON.
        let json = run_leak(
            &dir,
            &[
                "call",
                "leak",
                "name=PLANTED",
                "as=rpc_error",
                "--env",
                &env,
                "--json",
            ],
            level,
            true,
        );
        assert_eq!(json.run.code, 4, "{}", json.run.stderr);
        json.assert_masked(true);
        // A tool's `isError` text, as text and as JSON.
        for format in [None, Some("--json")] {
            let mut args = vec!["call", "leak", "name=PLANTED", "as=error", "--env", &env];
            args.extend(format);
            let failed = run_leak(&dir, &args, level, true);
            assert_eq!(failed.run.code, 1, "{}", failed.run.stderr);
            failed.assert_masked(true);
            assert!(
                failed.run.stdout.contains("rejected credential ***"),
                "{}",
                failed.run.stdout
            );
        }
    }
}

#[test]
fn a_successful_result_is_data_on_stdout_and_masked_in_the_transcript() {
    let dir = scratch("peer-secrets-data");
    let env = format!("PLANTED={ENV_SECRET}");
    let left = run_leak(
        &dir,
        &["call", "leak", "name=PLANTED", "--env", &env, "--json"],
        "debug",
        true,
    );
    assert_eq!(left.run.code, 0, "{}", left.run.stderr);
    assert!(
        left.run
            .stdout
            .contains(&format!("the credential is {ENV_SECRET}")),
        "{}",
        left.run.stdout
    );
    left.assert_masked(false);
}

#[test]
fn a_config_entrys_env_and_env_file_values_show_nowhere() {
    let dir = scratch("peer-secrets-entry");
    std::fs::write(dir.join("server.env"), format!("FROM_FILE={FILE_SECRET}\n"))
        .expect("write the env file");
    let vscode = dir.join(".vscode");
    std::fs::create_dir_all(&vscode).expect("the .vscode folder");
    let config = vscode.join("mcp.json");
    let text = json!({"servers": {"leaky": {
        "type": "stdio",
        "command": tool_server().display().to_string(),
        "args": ["--hostile"],
        "env": {"FROM_ENTRY": ENTRY_SECRET},
        "envFile": dir.join("server.env").display().to_string(),
    }}});
    std::fs::write(&config, text.to_string()).expect("write the config");
    let config = config.display().to_string();
    for name in ["FROM_ENTRY", "FROM_FILE"] {
        let named = format!("name={name}");
        for answer in ["as=rpc_error", "as=error"] {
            let left = run_leak(
                &dir,
                &[
                    "call", "leak", &named, answer, "--config", &config, "--server", "leaky",
                    "--json",
                ],
                "debug",
                false,
            );
            assert!([1, 4].contains(&left.run.code), "{}", left.run.stderr);
            left.assert_masked(true);
        }
    }
}

#[test]
fn an_http_server_quoting_its_headers_and_password_shows_them_nowhere() {
    let dir = scratch("peer-secrets-http");
    let server = http_fake::quoting_server(PASSWORD_SECRET);
    let url = server
        .url
        .replacen("http://", &format!("http://agent:{PASSWORD_SECRET}@"), 1);
    let bearer = format!("Authorization: Bearer {BEARER_SECRET}");
    let key = format!("X-Api-Key: {KEY_SECRET}");
    for tool in ["leak", "fails"] {
        for level in ["warn", "debug"] {
            let left = run_leak(
                &dir,
                &[
                    "call",
                    tool,
                    "--url",
                    &url,
                    "-H",
                    &bearer,
                    "-H",
                    &key,
                    "--json",
                    // The fake speaks the handshake only.
                    "--protocol",
                    "legacy",
                ],
                level,
                false,
            );
            assert!([1, 4].contains(&left.run.code), "{}", left.run.stderr);
            left.assert_masked(true);
        }
    }
    // The server did get them: they were masked on the way back only.
    let seen = server.requests();
    assert!(seen
        .iter()
        .any(|req| req.header("x-api-key") == Some(KEY_SECRET)));
}
