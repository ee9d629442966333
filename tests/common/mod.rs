//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use toolwire::{Client, ClientConfig, StdioConfig, StdioTransport};

/// The path of the built `tool_server` example, building it once if needed.
pub fn tool_server_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        // Test binaries live in target/<profile>/deps; examples in target/<profile>/examples.
        let exe = std::env::current_exe().expect("test executable path");
        let profile_dir = exe.parent().and_then(|deps| deps.parent()).expect("target dir");
        let path = profile_dir.join("examples").join("tool_server");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "--quiet", "--example", "tool_server"]);
        if profile_dir.file_name().is_some_and(|name| name == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo build --example tool_server");
        assert!(status.success(), "building tool_server failed");
        assert!(path.exists(), "{} missing after build", path.display());
        path
    })
    .clone()
}

/// A stdio config for tool_server with the given extra arguments.
pub fn tool_server_config(args: &[&str]) -> StdioConfig {
    StdioConfig::new(tool_server_path()).args(args.iter().copied())
}

/// A client connected to a fresh tool_server.
pub fn tool_server_client(config: ClientConfig) -> (Client, u32) {
    let transport = StdioTransport::spawn(tool_server_config(&[])).expect("spawn tool_server");
    let pid = transport.pid();
    let client = Client::with_config(transport, config).expect("client");
    (client, pid)
}

/// True while a process with this pid exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state is the first field after the parenthesised command name.
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("");
            state != "Z"
        }
        Err(_) => false,
    }
}

/// True when the pid is gone entirely (not even a zombie).
pub fn process_gone(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The names of this process's threads that start with `prefix`.
pub fn threads_named(prefix: &str) -> Vec<String> {
    let mut names = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc/self/task") {
        for entry in entries.flatten() {
            if let Ok(name) = std::fs::read_to_string(entry.path().join("comm")) {
                let name = name.trim().to_owned();
                if name.starts_with(prefix) {
                    names.push(name);
                }
            }
        }
    }
    names
}

/// A generous bound for things that must happen "soon" (used only as an upper bound that keeps
/// a broken test from hanging, never as a synchronisation sleep).
pub const SOON: Duration = Duration::from_secs(10);
