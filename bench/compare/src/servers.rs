//! Servers side by side (issue #29, item 5): one load client (`load.rs`) drives every
//! server below, each answering one `echo` tool, in rounds (every server once per round, a
//! fresh process each time), and prints a markdown table of medians with ratios within a
//! round against the limits and against rmcp.
//!
//! ```text
//! toolwire-compare servers [ROUNDS] [FILTER]   # 5 rounds; FILTER: only rows whose name has it
//! ```
//!
//! For each server: start it, shake hands, warm it up (1,000 calls or 0.3 s), then
//! * `seq`: sequential calls, µs per call (up to 5,000 × `COMPARE_SCALE`, at most
//!   `COMPARE_SCALE` seconds);
//! * `par`: 64 calls in flight (over stdio 64 pipelined frames on the one pipe; over HTTP
//!   64 keep-alive connections, each making its calls one after the other), calls/s (up to
//!   50,000 × `COMPARE_SCALE`, at most 1.5 × `COMPARE_SCALE` seconds);
//! * the server process's CPU time over each phase, per call: the run time of its threads
//!   (`/proc/PID/task/*/schedstat`, ns), or its utime + stime (`/proc/PID/stat`, 10 ms
//!   ticks) when threads that exited during the phase took more than two ticks with them.
//!
//! The peers' servers (TypeScript, Python) come from `TOOLWIRE_PEERS_DIR` (tests/peers/
//! install.sh); without it their rows are left out, said on stderr.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crate::load::{self, scale, Wire, WINDOW};

/// Which reference a row is compared with, and how it is reached.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stdio,
    Http(Wire),
}

struct Target {
    name: &'static str,
    kind: Kind,
    /// Program and arguments; `PORT` is replaced by the port for HTTP servers.
    command: Vec<String>,
    env: Vec<(String, String)>,
    /// The row of the limit and of rmcp this row is compared with.
    limit: &'static str,
    rmcp: &'static str,
}

const STDIO_LIMIT: &str = "hand-written loop";
const HTTP_LIMIT: &str = "bare responder";
const RMCP_STDIO: &str = "rmcp stdio_pipes()";
const RMCP_STATELESS: &str = "rmcp, stateless";
const RMCP_SESSIONS: &str = "rmcp, sessions";

fn sibling(name: &str) -> String {
    std::env::current_exe()
        .expect("own path")
        .with_file_name(name)
        .display()
        .to_string()
}

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("servers")
        .join(name)
        .display()
        .to_string()
}

fn targets() -> Vec<Target> {
    let rust = |bin: &str, args: &[&str]| {
        let mut command = vec![sibling(bin)];
        command.extend(args.iter().map(|arg| arg.to_string()));
        command
    };
    let stdio = |name, command, rmcp| Target {
        name,
        kind: Kind::Stdio,
        command,
        env: Vec::new(),
        limit: STDIO_LIMIT,
        rmcp,
    };
    let http = |name, wire: Wire, command| Target {
        name,
        kind: Kind::Http(wire),
        command,
        env: Vec::new(),
        limit: HTTP_LIMIT,
        rmcp: if wire == Wire::Session {
            RMCP_SESSIONS
        } else {
            RMCP_STATELESS
        },
    };
    use Wire::{Handshake, Session, Stateless2026};
    let mut targets = vec![
        stdio(STDIO_LIMIT, rust("echo_server", &[]), RMCP_STDIO),
        stdio("toolwire (pool)", rust("tw_server", &["stdio"]), RMCP_STDIO),
        stdio(
            "toolwire (inline)",
            rust("tw_server", &["stdio", "inline"]),
            RMCP_STDIO,
        ),
        stdio("rmcp stdio()", rust("rmcp_server", &["stdio"]), RMCP_STDIO),
        stdio(RMCP_STDIO, rust("rmcp_server", &["pipes"]), RMCP_STDIO),
        http(HTTP_LIMIT, Stateless2026, rust("bare_http", &["PORT"])),
        http(
            "toolwire, stateless (pool)",
            Stateless2026,
            rust("tw_server", &["http-stateless", "PORT"]),
        ),
        http(
            "toolwire, stateless (inline)",
            Stateless2026,
            rust("tw_server", &["http-stateless", "PORT", "inline"]),
        ),
        http(
            "toolwire, sessions (pool)",
            Session,
            rust("tw_server", &["http-sessions", "PORT"]),
        ),
        http(
            "toolwire, sessions (inline)",
            Session,
            rust("tw_server", &["http-sessions", "PORT", "inline"]),
        ),
        http(
            RMCP_STATELESS,
            Stateless2026,
            rust("rmcp_server", &["http-stateless", "PORT"]),
        ),
        http(
            RMCP_SESSIONS,
            Session,
            rust("rmcp_server", &["http-sessions", "PORT"]),
        ),
    ];
    let Some(peers) = std::env::var_os("TOOLWIRE_PEERS_DIR").map(PathBuf::from) else {
        eprintln!("TOOLWIRE_PEERS_DIR is not set: the TypeScript and Python rows are left out");
        return targets;
    };
    let node = std::env::var("TOOLWIRE_NODE").unwrap_or_else(|_| "node".into());
    let python = peers.join("pyvenv/bin/python").display().to_string();
    let node_path = peers.join("everything/node_modules").display().to_string();
    let with_node = |mut target: Target| {
        target.env.push(("NODE_PATH".into(), node_path.clone()));
        target
    };
    let ts = |args: &[&str]| {
        let mut command = vec![node.clone(), script("ts_echo.cjs")];
        command.extend(args.iter().map(|arg| arg.to_string()));
        command
    };
    let py = |args: &[&str]| {
        let mut command = vec![python.clone(), script("py_echo.py")];
        command.extend(args.iter().map(|arg| arg.to_string()));
        command
    };
    targets.extend([
        with_node(stdio("TypeScript SDK", ts(&["stdio"]), RMCP_STDIO)),
        stdio("Python SDK", py(&["stdio"]), RMCP_STDIO),
        with_node(http(
            "TypeScript SDK, stateless",
            Handshake,
            ts(&["http-stateless", "PORT"]),
        )),
        with_node(http(
            "TypeScript SDK, sessions",
            Session,
            ts(&["http-sessions", "PORT"]),
        )),
        http(
            "Python SDK, stateless",
            Handshake,
            py(&["http-stateless", "PORT"]),
        ),
        http(
            "Python SDK, sessions",
            Session,
            py(&["http-sessions", "PORT"]),
        ),
    ]);
    targets
}

/// CPU time (user + system) of process `pid`, in seconds, as two readings: the sum of
/// its live threads' run time (`/proc/PID/task/*/schedstat`, nanoseconds), and the
/// process's utime + stime (`/proc/PID/stat`, every thread, the exited ones too, in ticks of
/// 1/100 s).
fn cpu_readings(pid: u32) -> (f64, f64) {
    let mut threads = 0u64;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            if let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) {
                threads += stat
                    .split(' ')
                    .next()
                    .and_then(|ns| ns.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the command's closing parenthesis: 3 (state) is index 0, so 14 (utime)
    // and 15 (stime) are 11 and 12.
    let fields: Vec<&str> = stat[stat.rfind(')').expect("comm") + 2..]
        .split(' ')
        .collect();
    let ticks =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    (threads as f64 / 1e9, ticks as f64 / 100.0)
}

/// The server's CPU time between two readings: the threads' nanoseconds, unless threads that
/// exited meanwhile took more than two ticks with them (then the process's ticks).
fn cpu_between(before: (f64, f64), after: (f64, f64)) -> f64 {
    let (threads, ticks) = (after.0 - before.0, after.1 - before.1);
    if ticks > threads + 0.02 {
        ticks
    } else {
        threads
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// A running server, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One round's figures for one server.
#[derive(Clone, Copy, Debug)]
struct Sample {
    seq_us: f64,
    seq_cpu_us: f64,
    par_rate: f64,
    par_cpu_us: f64,
}

/// Warm-up before the phases (a JIT's included): this many calls, or this long.
const WARM_CALLS: usize = 1_000;
const WARM_TIME: Duration = Duration::from_millis(300);

fn budget(n: usize, seconds: f64) -> (usize, Duration) {
    (
        ((n as f64 * scale()) as usize).max(WINDOW),
        Duration::from_secs_f64(seconds * scale()),
    )
}

fn measure(target: &Target) -> Sample {
    let port = free_port();
    let args: Vec<String> = target.command[1..]
        .iter()
        .map(|arg| arg.replace("PORT", &port.to_string()))
        .collect();
    let mut command = Command::new(&target.command[0]);
    command
        .args(&args)
        .envs(target.env.iter().cloned())
        .stderr(Stdio::null());
    let (seq_n, seq_t) = budget(5_000, 1.0);
    let (par_n, par_t) = budget(50_000, 1.5);
    match target.kind {
        Kind::Stdio => {
            let mut child = command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("spawn {}: {e}", target.name));
            let (input, output) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
            let server = Server(child);
            let pid = server.0.id();
            let mut stdio = load::Stdio::connect(input, output);
            stdio.sequential(WARM_CALLS, Instant::now() + WARM_TIME);
            let (cpu, started) = (cpu_readings(pid), Instant::now());
            let seq = stdio.sequential(seq_n, started + seq_t);
            let seq_time = started.elapsed().as_secs_f64();
            let seq_cpu = cpu_between(cpu, cpu_readings(pid));
            let (cpu, started) = (cpu_readings(pid), Instant::now());
            let par = stdio.pipelined(par_n, started + par_t);
            let par_time = started.elapsed().as_secs_f64();
            let par_cpu = cpu_between(cpu, cpu_readings(pid));
            drop(stdio);
            drop(server);
            Sample {
                seq_us: seq_time * 1e6 / seq as f64,
                seq_cpu_us: seq_cpu * 1e6 / seq as f64,
                par_rate: par as f64 / par_time,
                par_cpu_us: par_cpu * 1e6 / par as f64,
            }
        }
        Kind::Http(wire) => {
            let child = command
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("spawn {}: {e}", target.name));
            let server = Server(child);
            let pid = server.0.id();
            let up = Instant::now() + Duration::from_secs(60);
            while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(Instant::now() < up, "{} did not listen", target.name);
                std::thread::sleep(Duration::from_millis(20));
            }
            let mut first = load::Http::connect(port);
            let session = first.open(wire);
            let ids = Arc::new(AtomicU64::new(1));
            let next = || ids.fetch_add(1, Ordering::Relaxed);
            let warm = Instant::now();
            for _ in 0..WARM_CALLS {
                first.call(wire, session.as_deref(), next());
                if warm.elapsed() > WARM_TIME {
                    break;
                }
            }
            let (cpu, started) = (cpu_readings(pid), Instant::now());
            let mut seq = 0;
            while seq < seq_n && (seq == 0 || started.elapsed() < seq_t) {
                first.call(wire, session.as_deref(), next());
                seq += 1;
            }
            let seq_time = started.elapsed().as_secs_f64();
            let seq_cpu = cpu_between(cpu, cpu_readings(pid));
            let (par, par_time, par_cpu) =
                http_parallel(port, wire, session, &ids, par_n, par_t, pid);
            drop(first);
            drop(server);
            Sample {
                seq_us: seq_time * 1e6 / seq as f64,
                seq_cpu_us: seq_cpu * 1e6 / seq as f64,
                par_rate: par as f64 / par_time,
                par_cpu_us: par_cpu * 1e6 / par as f64,
            }
        }
    }
}

/// `WINDOW` keep-alive connections, each calling one after the other until `n` calls in all
/// were started or `limit` passed: (calls, seconds, server CPU seconds).
fn http_parallel(
    port: u16,
    wire: Wire,
    session: Option<String>,
    ids: &Arc<AtomicU64>,
    n: usize,
    limit: Duration,
    pid: u32,
) -> (usize, f64, f64) {
    let start = Arc::new(Barrier::new(WINDOW + 1));
    let started_calls = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..WINDOW)
        .map(|_| {
            let (start, started_calls, done) = (start.clone(), started_calls.clone(), done.clone());
            let (ids, session) = (ids.clone(), session.clone());
            std::thread::spawn(move || {
                let mut http = load::Http::connect(port);
                start.wait();
                let until = Instant::now() + limit;
                while started_calls.fetch_add(1, Ordering::Relaxed) < n && Instant::now() < until {
                    http.call(
                        wire,
                        session.as_deref(),
                        ids.fetch_add(1, Ordering::Relaxed),
                    );
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let cpu = cpu_readings(pid);
    start.wait();
    let started = Instant::now();
    for thread in threads {
        thread.join().expect("a load thread");
    }
    let elapsed = started.elapsed().as_secs_f64();
    (
        done.load(Ordering::Relaxed),
        elapsed,
        cpu_between(cpu, cpu_readings(pid)),
    )
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).expect("a number"));
    values[values.len() / 2]
}

/// Every server once per round, `rounds` rounds; prints the table.
pub fn run(rounds: usize, filter: &str) {
    let targets: Vec<Target> = targets()
        .into_iter()
        .filter(|target| {
            filter.is_empty()
                || target.name.contains(filter)
                || target.name == target.limit
                || target.name == target.rmcp
        })
        .collect();
    let load_start = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let started = Instant::now();
    // samples[round][target]
    let mut samples: Vec<Vec<Sample>> = Vec::new();
    for round in 0..rounds {
        let row: Vec<Sample> = targets
            .iter()
            .map(|target| {
                let sample = measure(target);
                eprintln!("round {round}: {}: {sample:?}", target.name);
                sample
            })
            .collect();
        samples.push(row);
    }
    let load_end = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let index = |name: &str| targets.iter().position(|t| t.name == name);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "Servers side by side, one echo tool, one load client (medians of {rounds} rounds, ratios the median of each round's ratio; affinity {cpus} CPU; COMPARE_SCALE {}; {:.0} s; load average {} at the start, {} at the end)",
        scale(),
        started.elapsed().as_secs_f64(),
        load_start.split(' ').take(3).collect::<Vec<_>>().join(" "),
        load_end.split(' ').take(3).collect::<Vec<_>>().join(" "),
    );
    println!();
    println!("| server | transport | sequential µs/call | server CPU µs/call (seq) | 64 in flight calls/s | server CPU µs/call (64) | seq time ÷ limit | seq time ÷ rmcp | rate ÷ limit | rate ÷ rmcp | CPU (64) ÷ limit | CPU (64) ÷ rmcp |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (t, target) in targets.iter().enumerate() {
        let column =
            |pick: fn(&Sample) -> f64| median(samples.iter().map(|r| pick(&r[t])).collect());
        let ratio = |other: &str, pick: fn(&Sample) -> f64| match index(other) {
            Some(o) if samples.iter().all(|r| pick(&r[o]) > 0.0) => format!(
                "{:.2}×",
                median(
                    samples
                        .iter()
                        .map(|r| pick(&r[t]) / pick(&r[o]).max(1e-9))
                        .collect()
                )
            ),
            _ => "–".into(),
        };
        let transport = match target.kind {
            Kind::Stdio => "stdio".to_owned(),
            Kind::Http(Wire::Stateless2026) => "HTTP, 2026-07-28".to_owned(),
            Kind::Http(Wire::Handshake) => "HTTP, no session".to_owned(),
            Kind::Http(Wire::Session) => "HTTP, session".to_owned(),
        };
        println!(
            "| {} | {transport} | {:.1} | {:.1} | {:.0} | {:.1} | {} | {} | {} | {} | {} | {} |",
            target.name,
            column(|s| s.seq_us),
            column(|s| s.seq_cpu_us),
            column(|s| s.par_rate),
            column(|s| s.par_cpu_us),
            ratio(target.limit, |s| s.seq_us),
            ratio(target.rmcp, |s| s.seq_us),
            ratio(target.limit, |s| s.par_rate),
            ratio(target.rmcp, |s| s.par_rate),
            ratio(target.limit, |s| s.par_cpu_us),
            ratio(target.rmcp, |s| s.par_cpu_us),
        );
    }
}
