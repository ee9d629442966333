//! A peer server process for the HTTP interop tests (tests/mcp/interop_http.rs,
//! tests/mcp/interop_sse.rs): started on a free loopback port (again on another one when the
//! port was taken first), its output collected, killed and reaped on drop.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How long a server may take to accept TCP connections after it was started.
const STARTUP: Duration = Duration::from_secs(20);

/// A port that was free on 127.0.0.1 a moment ago: bound, then released for the server.
/// How many ports [`Server::start`] tries before it gives up.
const PORT_TRIES: usize = 4;

pub fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// A server process, killed (and reaped) on drop; its stdout and stderr are collected.
pub struct Server {
    child: Child,
    pub port: u16,
    log: Arc<Mutex<String>>,
}

impl Server {
    /// Starts the command `make(port)` builds (which must listen on 127.0.0.1:`port`) on a
    /// free port and waits, at most [`STARTUP`], until the port accepts TCP connections while
    /// the server is alive. The port is free when chosen but may be taken before the server
    /// binds it (other test processes share the machine): a server that exits before
    /// listening is started again on another port, up to [`PORT_TRIES`] times.
    pub fn start(make: impl Fn(u16) -> Command) -> Server {
        let mut exits = Vec::new();
        for _ in 0..PORT_TRIES {
            let port = free_port();
            let mut command = make(port);
            command
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let mut child = command
                .spawn()
                .unwrap_or_else(|error| panic!("spawn {command:?}: {error}"));
            let log = Arc::new(Mutex::new(String::new()));
            let stdout = child.stdout.take().expect("stdout");
            let stderr = child.stderr.take().expect("stderr");
            drain(stdout, Arc::clone(&log));
            drain(stderr, Arc::clone(&log));
            let mut server = Server { child, port, log };
            match server.wait_for_port() {
                Ok(()) => return server,
                Err(exit) => exits.push(exit),
            }
        }
        panic!(
            "the server exited before listening, {PORT_TRIES} times:\n{}",
            exits.join("\n")
        );
    }

    /// Waits until the port accepts connections and the server is still running then (so the
    /// listener is the server's, not another process's on a port taken first); `Err` with
    /// the server's output when it exited first.
    fn wait_for_port(&mut self) -> Result<(), String> {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let deadline = Instant::now() + STARTUP;
        loop {
            let open = TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok();
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "exited ({status}) before listening on {address}:\n{}",
                    self.log()
                ));
            }
            if open {
                return Ok(());
            }
            assert!(
                Instant::now() < deadline,
                "the server did not listen on {address} within {STARTUP:?}:\n{}",
                self.log()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's URL with `path` (`/mcp`, `/sse`).
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Everything the server printed so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Copies a pipe, line by line, into `log` on its own thread (ends at EOF, when the server
/// dies).
fn drain(pipe: impl Read + Send + 'static, log: Arc<Mutex<String>>) {
    thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            let mut log = log.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
}

pub fn loopback_preload() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/loopback.cjs")
}
