//! The one support module of the integration tests: every test binary (`tests/<area>/main.rs`)
//! includes it with `#[path = "../support/mod.rs"] mod support;`. Here: the bounds every test
//! uses ([`SOON`], [`LONG`]), [`eventually`], [`threads_named`], [`serial`], [`within`], the
//! retry [`Recorder`], the stdio helpers, and what re-runs a test in a child process
//! ([`test_name`]). The helpers of one kind of peer are its modules: [`client`] (a peer over
//! the in-memory transport), [`mcp`] (an MCP server played by the test), [`server`] (the
//! example servers), [`gateway`], [`cli`] (the `toolwire` binary), [`http_fake`],
//! [`auth_fake`], [`tls`] (certificates made at run time, connections from another
//! loopback address) and [`redis`] (a real `redis-server`).
//!
//! Each binary uses part of it: what one leaves unused (a helper, a re-export) is no warning.
#![allow(dead_code, unused_imports)]

#[cfg(feature = "oauth")]
pub mod auth_fake;
#[cfg(feature = "cli")]
pub mod cli;
pub mod client;
#[cfg(feature = "gateway")]
pub mod gateway;
#[cfg(feature = "http")]
pub mod http_fake;
pub mod mcp;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "server")]
pub mod server;
#[cfg(all(feature = "server", feature = "rustls"))]
pub mod tls;

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use toolwire::harness::Sleeper;
use toolwire::transport::StdioTransport;
use toolwire::{Client, ClientConfig, StdioConfig};

/// A program from the distribution's packages that `.ci/run` installs (prometheus, haproxy,
/// nginx): the one the environment variable `env` names, else the first `name` on `PATH`,
/// else in `/usr/sbin` or `/sbin` (where Debian puts daemons, off a user's `PATH`). Panics,
/// saying how to install it, when there is none: a test that needs it fails without it.
pub fn distribution_program(name: &str, env: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(env) {
        return PathBuf::from(path);
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no `{name}` on PATH: install the distribution's package (`apt-get install -y \
                 {name}`, as .ci/run does) or set {env}"
            )
        })
}

/// The path of the built `tool_server` example, building it once if needed.
pub fn tool_server_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        // Test binaries live in target/<profile>/deps; examples in target/<profile>/examples.
        let exe = std::env::current_exe().expect("test executable path");
        let profile_dir = exe
            .parent()
            .and_then(|deps| deps.parent())
            .expect("target dir");
        let path = profile_dir.join("examples").join("tool_server");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "--quiet", "--example", "tool_server"]);
        if profile_dir
            .file_name()
            .is_some_and(|name| name == "release")
        {
            build.arg("--release");
        }
        let status = build
            .status()
            .expect("run cargo build --example tool_server");
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

/// The bound on what must happen soon in this process, or in a child already running: it only
/// keeps a broken test from hanging, it never synchronises anything. 10 s.
pub const SOON: Duration = Duration::from_secs(10);

/// The bound on what waits for other processes to start and serve (an example server, a
/// gateway and its backends): like [`SOON`], only a hang guard. 30 s.
pub const LONG: Duration = Duration::from_secs(30);

// ---- Helpers for the stdio_* tests ----

/// The one lock of the tests that look at or change process-wide facts (thread names, child
/// processes, file descriptors, peak RSS, environment variables): every test of the `process`
/// binary holds it for its whole body, so such facts belong to one test at a time (the
/// `process` binary checks its own sources for that). Survives a poisoned lock (a failed test).
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Polls `condition` until it holds or `limit` passes; true when it held. For observing
/// external facts (a pid disappearing), never for synchronising with our own code.
pub fn eventually(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if condition() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Asserts that no stdio transport thread and no client dispatch thread of this process is
/// left. Only meaningful when the test holds [`serial`] and every client it made is closed.
/// A joined thread's /proc entry can outlive `join` by a moment, hence the bounded poll.
pub fn assert_no_client_threads() {
    let gone = eventually(SOON, || {
        threads_named("toolwire-std").is_empty() && threads_named("toolwire-dispat").is_empty()
    });
    assert!(
        gone,
        "threads left behind: {:?} {:?}",
        threads_named("toolwire-std"),
        threads_named("toolwire-dispat")
    );
}

/// A client over a stdio transport the test keeps a handle to (for its pid, stderr tail and
/// exit status).
pub fn shared_stdio_client(
    config: StdioConfig,
    client_config: ClientConfig,
) -> (Client, std::sync::Arc<StdioTransport>) {
    let transport = std::sync::Arc::new(StdioTransport::spawn(config).expect("spawn"));
    let shared: std::sync::Arc<dyn toolwire::transport::Transport> = transport.clone();
    let client = Client::with_shared_transport(shared, client_config).expect("client");
    (client, transport)
}

/// This process's peak resident set size (VmHWM), in KiB.
pub fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

/// The processes of process group `pgid`, with their state letter ('Z' for a zombie).
pub fn group_members(pgid: u32) -> Vec<(u32, String)> {
    let mut members = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return members;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the parenthesised name: state, ppid, pgrp, ...
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        if fields.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) {
            members.push((pid, fields[0].to_owned()));
        }
    }
    members
}

/// The parent pid of `pid`, while it exists.
pub fn parent_pid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Checks the end state every stdio test must leave: nothing pending, then `close()` twice
/// (the second has nothing left to do and returns Ok), then calls fail with `Closed`.
pub fn close_and_check(client: &Client) {
    assert_eq!(client.stats().in_flight, 0, "pending entries left");
    client.close().expect("close");
    let reason = client.closed_reason().expect("closed after close()");
    // A second close that redid the work (waiting for a child already reaped, joining threads
    // already joined) would block here; `within` fails it instead of hanging the test. How
    // long it took is not asserted: only that it returned, and changed nothing.
    let again = client.clone();
    within(SOON, move || again.close()).expect("second close");
    assert_eq!(
        client.closed_reason(),
        Some(reason),
        "the second close changed why the client is closed"
    );
    let error = client
        .call("echo", serde_json::json!({}))
        .expect_err("a call after close");
    assert!(error.is_closed(), "{error:?}");
    assert_eq!(client.stats().in_flight, 0);
}

/// Runs `body` on its own thread and returns its result, failing the test (instead of hanging
/// it) when that takes longer than `limit`.
pub fn within<T: Send + 'static>(limit: Duration, body: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(body());
    });
    match rx.recv_timeout(limit) {
        Ok(value) => value,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("still blocked after {limit:?}"),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("the body panicked"),
    }
}

/// Records the back-off delays a retry policy asks it to wait, and waits for none of them.
#[derive(Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<Duration>>>);

impl Sleeper for Recorder {
    fn sleep(&self, delay: Duration) {
        self.0.lock().unwrap().push(delay);
    }
}

impl Recorder {
    /// The delays asked for so far, in order.
    pub fn delays(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

/// The name libtest gives the test `name` of the module whose `module_path!()` is `module`
/// (the module path without the binary's name: `stdio_orphans::orphan_test_host`), for
/// re-running one test of this binary in a child process with `--exact`.
pub fn test_name(module: &str, name: &str) -> String {
    let within = module.split_once("::").map_or("", |(_, rest)| rest);
    if within.is_empty() {
        name.to_owned()
    } else {
        format!("{within}::{name}")
    }
}

/// The lower-case hex SHA-256 of `text`: how a static tokens file names a token.
pub fn hex_sha256(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}
