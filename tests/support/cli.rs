//! Helpers shared by the tests that run the `toolwire` binary (built with the `cli` feature):
//! each file names it with `use crate::support::cli;`.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support as common;

/// The upper bound on one run of the binary: it only keeps a broken test from hanging.
pub const LIMIT: Duration = Duration::from_secs(60);

/// Runs the binary with `args` under a pseudo-terminal (python3's `pty` module, driven by a
/// small script): `script` is a list of (expected, typed) pairs, each typed once its expected
/// text has shown. Returns the exit code and everything the terminal showed. Past [`LIMIT`] the
/// session is killed and the test fails with the screen so far (the step the script waited
/// for is the one after the last output).
pub fn under_a_pty(args: &[&str], script: &[(&str, &str)]) -> (i32, String) {
    const DRIVER: &str = r#"
import json, os, pty, sys
script = [(e.encode(), t.encode()) for e, t in json.loads(sys.argv[1])]
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
out = sys.stdout.buffer
pending = b""
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    out.write(data)
    out.flush()
    pending += data
    while script and script[0][0] in pending:
        expected, typed = script.pop(0)
        pending = pending[pending.index(expected) + len(expected):]
        os.write(fd, typed)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"#;
    let mut command = Command::new("python3");
    command
        .arg("-c")
        .arg(DRIVER)
        .arg(serde_json::to_string(script).unwrap())
        .arg(bin())
        .args(args)
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = command
        .spawn()
        .expect("python3 is needed for the pseudo-terminal tests");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stdout.read_to_end(&mut bytes).unwrap();
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the pty driver") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let screen = reader.join().unwrap();
    let Some(status) = status else {
        panic!("the terminal session was still running after {LIMIT:?}; the screen:\n{screen}");
    };
    (status.code().expect("the driver exits with a code"), screen)
}

/// The binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolwire"))
}

/// What one run left behind.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Run {
    /// Asserts the exit code, showing everything the run wrote when it differs.
    pub fn expect(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "expected exit {code}, got {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }
}

/// A command for the binary with `args`, in `cwd` when given, with colours and the user's
/// config out of the way.
pub fn toolwire(args: &[&str]) -> Command {
    let mut command = Command::new(bin());
    command
        .args(args)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    command
}

/// Runs the command to the end (at most [`LIMIT`]) and collects its output.
pub fn run(mut command: Command) -> Run {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = command.spawn().expect("start toolwire");
    let stdout = drain(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let code = wait_bounded(&mut child, LIMIT);
    Run {
        code,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
        took: started.elapsed(),
    }
}

/// Runs `toolwire ARGS`.
pub fn run_args(args: &[&str]) -> Run {
    run(toolwire(args))
}

/// Runs `toolwire ARGS -- tool_server`.
pub fn run_tool_server(args: &[&str]) -> Run {
    let server = tool_server();
    let mut all: Vec<&str> = args.to_vec();
    all.push("--");
    all.push(server.to_str().expect("a UTF-8 path"));
    run_args(&all)
}

fn drain(mut stream: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Waits for the child's exit code, killing it and failing the test past `limit`.
pub fn wait_bounded(child: &mut Child, limit: Duration) -> i32 {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait for toolwire") {
            return status
                .code()
                .unwrap_or_else(|| panic!("killed by a signal: {status}"));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("toolwire still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The tool_server example, built on first use (see tests/support/mod.rs).
pub fn tool_server() -> PathBuf {
    common::tool_server_path()
}

/// A fresh, empty folder in the temporary directory, for config files and transcripts.
pub fn scratch(name: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "toolwire-cli-{}-{}-{name}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// The lines of a JSONL transcript.
pub fn transcript(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("read {}: {error}", path.display()))
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}")))
        .collect()
}

/// The messages the binary sent with `method`, from a transcript.
pub fn sent(lines: &[Value], method: &str) -> Vec<Value> {
    lines
        .iter()
        .filter(|line| line["event"] == "send" && line["message"]["method"] == method)
        .map(|line| line["message"].clone())
        .collect()
}

/// An address on 127.0.0.1 where nothing listens.
pub fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    drop(listener);
    url
}

/// The indices of `needles` in `haystack`, each searched after the previous one; panics
/// naming the first that is missing.
pub fn assert_in_order(haystack: &str, needles: &[&str]) {
    let mut from = 0;
    for needle in needles {
        match haystack[from..].find(needle) {
            Some(at) => from += at + needle.len(),
            None => panic!("{needle:?} missing (or out of order) in:\n{haystack}"),
        }
    }
}

/// Starts the command with stdout discarded; returns the child and a channel of its stderr
/// lines (closed when stderr ends).
pub fn spawn_with_stderr_lines(mut command: Command) -> (KillOnDrop, mpsc::Receiver<String>) {
    command.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = KillOnDrop(command.spawn().expect("start toolwire"));
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

/// A child that is killed and reaped when dropped, so a test that fails halfway leaves no
/// process behind (one that already ended and was waited for is left as it is).
pub struct KillOnDrop(pub Child);

impl std::ops::Deref for KillOnDrop {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Reads lines until one satisfies `wanted`; returns every line read. Fails past [`LIMIT`].
pub fn read_until(lines: &mpsc::Receiver<String>, wanted: impl Fn(&str) -> bool) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        match lines.recv_timeout(LIMIT) {
            Ok(line) => {
                let done = wanted(&line);
                seen.push(line);
                if done {
                    return seen;
                }
            }
            Err(error) => panic!("no wanted line ({error}); stderr so far: {seen:#?}"),
        }
    }
}

/// Reads stderr lines until each of `wanted` has been in one, in any order (lines from two
/// threads of the command may come either way round); the lines read.
pub fn read_until_each(lines: &mpsc::Receiver<String>, wanted: &[&str]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    while !wanted
        .iter()
        .all(|what| seen.iter().any(|line| line.contains(what)))
    {
        seen.extend(read_until(lines, |_| true));
    }
    seen
}

/// Sends SIGINT to `pid`, as Ctrl-C on a terminal would.
pub fn sigint(pid: u32) {
    signal(pid, "INT");
}

/// Sends the signal `name` (`INT`, `HUP`, `TERM`, …) to `pid` with kill(1).
pub fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{name} {pid}");
}

/// Points the command's user folders (HOME, XDG_CONFIG_HOME, APPDATA, USERPROFILE) at
/// `home`, so the hosts' user config files it searches are the test's, never the machine's.
pub fn with_home(command: &mut Command, home: &Path) {
    command
        .env("HOME", home)
        .env("USERPROFILE", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("APPDATA", home.join("AppData"));
}

/// Runs a command that logs in (`login --no-browser`, or any command that logs in by itself),
/// playing the browser for the authorization address it prints on stderr: the address is
/// fetched without following its redirect, and the redirect is delivered to the command's
/// loopback listener, as a browser would.
pub fn browse(mut command: Command) -> Run {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("start toolwire");
    let stdout = drain(child.stdout.take().expect("stdout"));
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = String::new();
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap_or(0) > 0 {
        seen.push_str(&line);
        if let Some(address) = line
            .split_whitespace()
            .find(|word| word.contains("/authorize?"))
        {
            let agent = ureq::Agent::new_with_config(
                ureq::Agent::config_builder()
                    .max_redirects(0)
                    .http_status_as_error(false)
                    .build(),
            );
            let answer = agent
                .get(address)
                .call()
                .expect("the authorization endpoint");
            let location = answer.headers()["location"].to_str().unwrap().to_owned();
            assert!(location.starts_with("http://127.0.0.1:"), "{location}");
            let page = agent.get(&location).call().expect("the command's listener");
            assert_eq!(page.status().as_u16(), 200);
        }
        line.clear();
    }
    let code = wait_bounded(&mut child, LIMIT);
    Run {
        code,
        stdout: stdout.join().expect("stdout reader"),
        stderr: seen,
        took: Duration::ZERO,
    }
}
