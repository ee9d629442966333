//! toolwire's gateway (`toolwire serve`) beside supergateway and mcp-proxy (issue #29, item 5),
//! each in front of the same stdio backend, the hand-parsed echo server (src/bin/echo_server.rs),
//! driven by one neutral load client written here (raw JSON-RPC: newline-delimited frames over
//! pipes; keep-alive HTTP/1.1 POSTs over `std::net::TcpStream`, with the session id and
//! SSE-framed answers handled). Rounds are interleaved (every target once per round, the order
//! rotated each round); the table gives medians, and ratios taken within a round. Run it with
//! `bench/compare/run.sh gateway [ROUNDS]` (it builds, pins to one core, runs).
//!
//! ```text
//! gateways run [ROUNDS]      # every target, ROUNDS rounds (5): per-round lines on stderr, the table
//! gateways one NAME          # one target (by the start of its name), one round
//! GATEWAYS_PERF_OUT=FILE gateways one "toolwire serve (HTTP)"   # with perf record of it at 64
//! ```
//!
//! Targets, each started afresh every round:
//! * `direct (stdio)`: the echo server itself over pipes: the baseline;
//! * `direct (HTTP)`: the echo server in its own HTTP mode (what HTTP alone costs this client);
//! * `toolwire serve (stdio)`: `toolwire serve --config C` over pipes (tool `mcp__echo__echo`;
//!   the config's policy raises the backend's concurrency from 4 to 128 and the caller's
//!   budget from 1,000 to 1,000,000 calls a minute, or 64 in flight would be BUSY and BUDGET);
//! * `toolwire serve (HTTP)`: the same with `--http 127.0.0.1:PORT`;
//! * `supergateway (HTTP)`: `supergateway --stdio ECHO --outputTransport streamableHttp
//!   --stateful` (stateful: one backend per session; its stateless mode starts a backend
//!   process per POST);
//! * `mcp-proxy (HTTP)`: `mcp-proxy --port PORT ECHO` (Streamable HTTP at `/mcp`, stateful).
//!
//! Each HTTP target gets one session (one `initialize`), used by every connection. Phases:
//! * `seq`: sequential `tools/call echo`, 5,000 × scale or 2 s × scale, whichever ends first
//!   (after 100 to warm up): µs per call;
//! * `par`: 64 calls in flight, 100,000 × scale or 2 s × scale: calls/s. Over pipes one thread
//!   keeps 64 frames written ahead; over HTTP 64 keep-alive connections, one thread each.
//!
//! CPU per call: the run time of every thread of the target's process and its descendants
//! (/proc/PID/task/TID/schedstat, in ns; utime+stime of /proc/PID/stat, in 10 ms ticks, is
//! printed beside as a cross-check), read before and after each phase, split into the
//! backend's (processes named `echo_server`) and the gateway's (the rest). `COMPARE_SCALE` scales the counts and time caps;
//! `TOOLWIRE_BIN`, `GATEWAYS_DIR` (where gateways/install.sh put supergateway and mcp-proxy)
//! and `NODE` say where the programs are.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[path = "../load.rs"]
#[allow(dead_code)] // what only the servers' comparison calls
mod load;

use load::{scale, scaled, Speech, Wire, WINDOW};

/// The version the load client asks the gateways for.
const VERSION: &str = "2025-06-18";

#[derive(Clone, Copy, PartialEq)]
enum Target {
    Direct,
    DirectHttp,
    ToolwireStdio,
    ToolwireHttp,
    Supergateway,
    McpProxy,
}

const TARGETS: [Target; 6] = [
    Target::Direct,
    Target::DirectHttp,
    Target::ToolwireStdio,
    Target::ToolwireHttp,
    Target::Supergateway,
    Target::McpProxy,
];

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Direct => "direct (stdio)",
            Target::DirectHttp => "direct (HTTP)",
            Target::ToolwireStdio => "toolwire serve (stdio)",
            Target::ToolwireHttp => "toolwire serve (HTTP)",
            Target::Supergateway => "supergateway (HTTP)",
            Target::McpProxy => "mcp-proxy (HTTP)",
        }
    }

    fn speech(self) -> Speech {
        let tool = match self {
            Target::ToolwireStdio | Target::ToolwireHttp => "mcp__echo__echo",
            _ => "echo",
        };
        Speech {
            version: VERSION,
            tool,
        }
    }

    /// How its HTTP front is spoken to: the echo server's own HTTP gives no session.
    fn wire(self) -> Wire {
        if self == Target::DirectHttp {
            Wire::Handshake
        } else {
            Wire::Session
        }
    }
}

fn cap() -> Duration {
    Duration::from_secs_f64(2.0 * scale())
}

fn env_path(name: &str, default: &str) -> PathBuf {
    std::env::var_os(name)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default))
}

fn echo_server() -> PathBuf {
    std::env::current_exe()
        .expect("own path")
        .with_file_name("echo_server")
}

fn gateways_dir() -> PathBuf {
    env_path(
        "GATEWAYS_DIR",
        concat!(env!("CARGO_MANIFEST_DIR"), "/gateways"),
    )
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("address").port()
}

// ---------------------------------------------------------------------------------------------
// Processes and their CPU time.

/// A started target: its process (killed with its descendants when dropped) and its front.
struct Running {
    child: Child,
    front: Front,
    _dir: Option<TempDir>,
}

enum Front {
    Stdio(Option<(ChildStdin, ChildStdout)>),
    Http(u16),
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let tree = descendants(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in tree {
            if pid != self.child.id() {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}

struct Stat {
    ppid: u32,
    comm: String,
}

fn stats() -> HashMap<u32, Stat> {
    let mut all = HashMap::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (text.find('('), text.rfind(')')) else {
            continue;
        };
        let comm = text[open + 1..close].to_owned();
        // After the comm: state, then ppid (field 4 in proc(5)).
        let ppid = text[close + 2..]
            .split(' ')
            .nth(1)
            .and_then(|f| f.parse().ok())
            .unwrap_or(0);
        all.insert(pid, Stat { ppid, comm });
    }
    all
}

fn tree_of(all: &HashMap<u32, Stat>, root: u32) -> Vec<u32> {
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            all.iter()
                .filter(|(_, stat)| stat.ppid == parent)
                .map(|(pid, _)| *pid),
        );
        i += 1;
    }
    tree
}

fn descendants(root: u32) -> Vec<u32> {
    tree_of(&stats(), root)
}

/// CPU seconds of one process: the sum of its live threads' run time in ns
/// (/proc/PID/task/TID/schedstat), exact where utime+stime counts 10 ms ticks; and
/// utime+stime in ticks (which also holds threads that have exited), as a cross-check.
fn process_cpu(pid: u32) -> (f64, f64) {
    let mut ns = 0u64;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) {
                ns += text
                    .split(' ')
                    .next()
                    .and_then(|f| f.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    let ticks = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|text| {
            let fields: Vec<u64> = text[text.rfind(')')? + 2..]
                .split(' ')
                .map(|f| f.parse().unwrap_or(0))
                .collect();
            Some(fields[11] + fields[12])
        })
        .unwrap_or(0);
    (ns as f64 * 1e-9, ticks as f64 / ticks_per_second())
}

/// CPU seconds so far of the tree under `root`: the gateway's (every process but the
/// backend's), the backend's (processes named `echo_server`), and the gateway's in ticks.
#[derive(Clone, Copy)]
struct Cpu {
    gateway: f64,
    backend: f64,
    gateway_ticks: f64,
}

fn cpu(root: u32) -> Cpu {
    let all = stats();
    let mut total = Cpu {
        gateway: 0.0,
        backend: 0.0,
        gateway_ticks: 0.0,
    };
    for pid in tree_of(&all, root) {
        let (exact, ticks) = process_cpu(pid);
        if all.get(&pid).is_some_and(|stat| stat.comm == "echo_server") {
            total.backend += exact;
        } else {
            total.gateway += exact;
            total.gateway_ticks += ticks;
        }
    }
    total
}

fn ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

fn start(target: Target) -> Running {
    let echo = echo_server();
    let echo_str = echo.to_str().expect("a UTF-8 path").to_owned();
    let port = free_port();
    let log = std::env::temp_dir().join(format!(
        "gateways-{}.log",
        target.name().replace([' ', '(', ')'], "")
    ));
    let mut dir = None;
    let mut command = match target {
        Target::Direct => Command::new(&echo),
        Target::DirectHttp => {
            let mut command = Command::new(&echo);
            command.arg("http");
            command
        }
        Target::ToolwireStdio | Target::ToolwireHttp => {
            let tmp = std::env::temp_dir().join(format!("gateways-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&tmp).expect("temp dir");
            let config = tmp.join("servers.json");
            std::fs::write(
                &config,
                format!(
                    "{{\"mcpServers\":{{\"echo\":{{\"command\":{echo_str:?}}}}},\"toolwire\":{{\"concurrency\":128,\"calls_per_caller\":1000000}}}}"
                ),
            )
            .expect("config");
            let mut command = Command::new(env_path(
                "TOOLWIRE_BIN",
                concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/release/toolwire"),
            ));
            command.arg("serve").arg("--config").arg(&config);
            if target == Target::ToolwireHttp {
                command.arg("--http").arg(format!("127.0.0.1:{port}"));
            }
            dir = Some(TempDir(tmp));
            command
        }
        Target::Supergateway => {
            let mut command = Command::new(env_path("NODE", "node"));
            command
                .arg(gateways_dir().join("node_modules/supergateway/dist/index.js"))
                .args(["--stdio", &echo_str])
                .args(["--outputTransport", "streamableHttp", "--stateful"])
                .args(["--port", &port.to_string(), "--logLevel", "none"]);
            command
        }
        Target::McpProxy => {
            let mut command = Command::new(gateways_dir().join("venv/bin/mcp-proxy"));
            command
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(["--log-level", "WARNING", &echo_str]);
            command
        }
    };
    let stdio = matches!(target, Target::Direct | Target::ToolwireStdio);
    command
        .stdin(if stdio { Stdio::piped() } else { Stdio::null() })
        .stdout(if stdio || target == Target::DirectHttp {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(std::fs::File::create(&log).expect("log file"));
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", target.name()));
    let front = if stdio {
        Front::Stdio(Some((
            child.stdin.take().expect("stdin"),
            child.stdout.take().expect("stdout"),
        )))
    } else if target == Target::DirectHttp {
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the port");
        Front::Http(line.trim().parse().expect("a port"))
    } else {
        let until = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("{} exited ({status}); see {}", target.name(), log.display());
            }
            assert!(Instant::now() < until, "{} did not listen", target.name());
            std::thread::sleep(Duration::from_millis(20));
        }
        Front::Http(port)
    };
    Running {
        child,
        front,
        _dir: dir,
    }
}

// ---------------------------------------------------------------------------------------------
// Rounds and the table.

#[derive(Clone, Copy, Default)]
struct Sample {
    seq_us: f64,
    seq_gateway_cpu_us: f64,
    par_per_s: f64,
    par_gateway_cpu_us: f64,
    par_backend_cpu_us: f64,
    /// The same as `par_gateway_cpu_us` from utime+stime (10 ms ticks), a cross-check.
    par_gateway_ticks_us: f64,
}

impl Sample {
    fn seq(&mut self, calls: usize, took: Duration, before: Cpu, after: Cpu) {
        self.seq_us = took.as_secs_f64() * 1e6 / calls as f64;
        self.seq_gateway_cpu_us = (after.gateway - before.gateway) * 1e6 / calls as f64;
    }

    fn par(&mut self, calls: usize, took: Duration, before: Cpu, after: Cpu) {
        self.par_per_s = calls as f64 / took.as_secs_f64();
        let per_call = |f: fn(&Cpu) -> f64| (f(&after) - f(&before)) * 1e6 / calls as f64;
        self.par_gateway_cpu_us = per_call(|c| c.gateway);
        self.par_backend_cpu_us = per_call(|c| c.backend);
        self.par_gateway_ticks_us = per_call(|c| c.gateway_ticks);
    }
}

fn measure(target: Target) -> Sample {
    let mut run = start(target);
    let pid = run.child.id();
    let speech = target.speech();
    let (n_seq, n_par, cap) = (scaled(5_000), scaled(100_000), cap());
    let mut sample = Sample::default();
    match &mut run.front {
        Front::Stdio(pipes) => {
            let (input, output) = pipes.take().expect("the pipes, once");
            let mut stdio = load::Stdio::connect_speaking(input, output, speech);
            stdio.check_listed();
            stdio.sequential(100, Instant::now() + cap); // warm-up
            let before = cpu(pid);
            let started = Instant::now();
            let calls = stdio.sequential(n_seq, started + cap);
            sample.seq(calls, started.elapsed(), before, cpu(pid));
            let perf = Perf::start(pid);
            let before = cpu(pid);
            let started = Instant::now();
            let calls = stdio.pipelined(n_par, started + cap);
            sample.par(calls, started.elapsed(), before, cpu(pid));
            drop(perf);
        }
        Front::Http(port) => {
            let (port, wire) = (*port, target.wire());
            let mut http = load::Http::connect_speaking(port, speech);
            let session = http.open(wire);
            http.check_listed(wire, session.as_deref());
            let mut id = 10;
            let mut sequential = |http: &mut load::Http, n: usize| {
                let started = Instant::now();
                let mut done = 0;
                while done < n && started.elapsed() < cap {
                    http.call(wire, session.as_deref(), id);
                    (id, done) = (id + 1, done + 1);
                }
                (done, started.elapsed())
            };
            sequential(&mut http, 100); // warm-up
            let before = cpu(pid);
            let (calls, took) = sequential(&mut http, n_seq);
            sample.seq(calls, took, before, cpu(pid));
            let perf = Perf::start(pid);
            let (calls, took, before, after) =
                http_par(port, speech, wire, session, n_par, cap, pid);
            sample.par(calls, took, before, after);
            drop(perf);
        }
    }
    sample
}

/// `WINDOW` keep-alive connections of one session, one thread each; the CPU read once all
/// are open and again before any closes (so the gateway's connection threads are all alive for
/// both): (calls, time, CPU before, CPU after).
fn http_par(
    port: u16,
    speech: Speech,
    wire: Wire,
    session: Option<String>,
    n: usize,
    cap: Duration,
    pid: u32,
) -> (usize, Duration, Cpu, Cpu) {
    let [open, go, finished, close] = std::array::from_fn(|_| Arc::new(Barrier::new(WINDOW + 1)));
    let next = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..WINDOW)
        .map(|_| {
            let barriers = [&open, &go, &finished, &close].map(Arc::clone);
            let (next, session) = (next.clone(), session.clone());
            std::thread::spawn(move || {
                let mut http = load::Http::connect_speaking(port, speech);
                barriers[0].wait();
                barriers[1].wait();
                let started = Instant::now();
                let mut done = 0;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n || started.elapsed() >= cap {
                        break;
                    }
                    http.call(wire, session.as_deref(), 1_000_000 + i as u64);
                    done += 1;
                }
                barriers[2].wait();
                barriers[3].wait();
                done
            })
        })
        .collect();
    open.wait();
    let before = cpu(pid);
    let started = Instant::now();
    go.wait();
    finished.wait();
    let took = started.elapsed();
    let after = cpu(pid);
    close.wait();
    let done = threads
        .into_iter()
        .map(|t| t.join().expect("a caller"))
        .sum();
    (done, took, before, after)
}

/// With `GATEWAYS_PERF_OUT=FILE` (the `one` command), `perf record -e cpu-clock` of the
/// target's process (not its backend) during the 64-in-flight phase, into FILE.
struct Perf(Option<Child>);

impl Perf {
    fn start(pid: u32) -> Perf {
        Perf(std::env::var_os("GATEWAYS_PERF_OUT").map(|out| {
            let child = Command::new("perf")
                .args(["record", "-e", "cpu-clock", "-p", &pid.to_string(), "-o"])
                .arg(out)
                .stdout(Stdio::null())
                .spawn()
                .expect("perf record");
            std::thread::sleep(Duration::from_millis(500)); // until it is attached
            child
        }))
    }
}

impl Drop for Perf {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
            let _ = child.wait();
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn range(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)))
}

fn run(rounds: usize) {
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); TARGETS.len()];
    for round in 0..rounds {
        let mut sampled = [None; TARGETS.len()];
        for k in 0..TARGETS.len() {
            let i = (round + k) % TARGETS.len();
            let sample = measure(TARGETS[i]);
            eprintln!(
                "round {} {:<24} seq {:8.1} µs  cpu {:7.1} µs | 64: {:9.0}/s  cpu {:7.1} (ticks {:7.1}) + backend {:5.1} µs",
                round + 1,
                TARGETS[i].name(),
                sample.seq_us,
                sample.seq_gateway_cpu_us,
                sample.par_per_s,
                sample.par_gateway_cpu_us,
                sample.par_gateway_ticks_us,
                sample.par_backend_cpu_us
            );
            sampled[i] = Some(sample);
        }
        for (i, sample) in sampled.into_iter().enumerate() {
            samples[i].push(sample.expect("sampled"));
        }
    }
    let ratios = |rows: &[Sample], base: &[Sample], f: fn(&Sample, &Sample) -> f64| {
        let values: Vec<f64> = rows.iter().zip(base).map(|(s, d)| f(s, d)).collect();
        let (lo, hi) = range(&values);
        (median(values), lo, hi)
    };
    let added = |s: &Sample, d: &Sample| s.seq_us - d.seq_us;
    let times = |s: &Sample, d: &Sample| s.par_per_s / d.par_per_s;
    println!(
        "| target | sequential µs/call | added µs/call vs direct (stdio) | added µs/call vs direct (HTTP) | gateway CPU µs/call, sequential | 64 in flight, calls/s | × direct (stdio) | × direct (HTTP) | gateway CPU µs/call, 64 in flight | backend CPU µs/call, 64 in flight |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (target, rows) in TARGETS.iter().zip(&samples) {
        let col = |f: fn(&Sample) -> f64| median(rows.iter().map(f).collect());
        let against = |base: Target, f: fn(&Sample, &Sample) -> f64, digits: usize| {
            if *target == base {
                "(baseline)".to_owned()
            } else {
                let (m, lo, hi) = ratios(rows, &samples[base as usize], f);
                format!("{m:.digits$} ({lo:.digits$}–{hi:.digits$})")
            }
        };
        let http = !matches!(target, Target::Direct | Target::ToolwireStdio);
        let dash = || "".to_owned();
        println!(
            "| {} | {:.1} | {} | {} | {:.1} | {:.0} | {} | {} | {:.1} | {:.1} |",
            target.name(),
            col(|s| s.seq_us),
            against(Target::Direct, added, 1),
            if http {
                against(Target::DirectHttp, added, 1)
            } else {
                dash()
            },
            col(|s| s.seq_gateway_cpu_us),
            col(|s| s.par_per_s),
            against(Target::Direct, times, 4),
            if http {
                against(Target::DirectHttp, times, 3)
            } else {
                dash()
            },
            col(|s| s.par_gateway_cpu_us),
            col(|s| s.par_backend_cpu_us),
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("run") => run(args.get(2).and_then(|n| n.parse().ok()).unwrap_or(5)),
        Some("one") => {
            let name = args.get(2).expect("a target name");
            let target = *TARGETS
                .iter()
                .find(|t| t.name().starts_with(name.as_str()))
                .expect("a known target");
            let s = measure(target);
            println!(
                "{}: seq {:.1} µs, cpu {:.1} µs; 64: {:.0}/s, cpu {:.1} (ticks {:.1}) + backend {:.1} µs",
                target.name(),
                s.seq_us,
                s.seq_gateway_cpu_us,
                s.par_per_s,
                s.par_gateway_cpu_us,
                s.par_gateway_ticks_us,
                s.par_backend_cpu_us
            );
        }
        _ => {
            eprintln!("usage: gateways run [ROUNDS] | gateways one TARGET");
            std::process::exit(2);
        }
    }
}
