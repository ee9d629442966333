//! A bounded soak test: N calls against tool_server over stdio from several threads, mixed with
//! timeouts, cancels, child restarts and requests from the server, checking that nothing leaks.
//!
//! ```text
//! cargo run --release --example soak -- --calls 100000     # the CI size: about a minute
//! cargo run --release --example soak                       # full size: 1,000,000 calls
//! ```
//!
//! Options: `--calls N` (default 1,000,000), `--threads T` client threads (default 4),
//! `--restart-every K` calls between child restarts (default 2,500), `--malloc-defaults`
//! (keep glibc's allocator settings, see below), `--server PATH` a built tool_server (default:
//! the one next to this example, built with cargo when missing).
//!
//! # The mix (decided per call from its index, so every run is the same)
//!
//! * 90.5 %: `echo`, checked to come back equal;
//! * 2 %: `hang` with a 5-15 ms deadline, which must time out;
//! * 1 %: `sleep {ms: 40}` with a 5 ms deadline: times out, and the answer then comes late;
//! * 2 %: `hang`, then cancel: the cancel must win and the wait say `Cancelled`;
//! * 1 %: `echo`, then cancel at once: a race that either side may win, and the outcome must
//!   match what `cancel()` returned;
//! * 1 %: `hang`, then drop the handle (which cancels);
//! * 2 %: `ask_client {method: "ping"}`: the server sends a request that our dispatch thread
//!   answers, then answers ours with what we said;
//! * 0.5 %: `sleep {ms: 2, progress: 2}` with reset-on-progress and a progress callback;
//! * every K calls, a restart: a new child and client take over, then the old child is made to
//!   `crash` (exit code 7) with calls of other threads still in flight on it. Those calls must
//!   fail with `Closed` (and only calls on a retired client may), the old client is closed, and
//!   its child must be reaped.
//!
//! Restarts use the plain `Client`: a new `StdioTransport` + `Client` per child, swapped in
//! under a lock. This keeps the soak on the layers that own the pending table, the timer and
//! the transport threads, where leaks would be, and lets it check each retired client exactly
//! (its table empty, its child reaped). `McpClient`'s `RestartPolicy` restarts inside one
//! handle instead; it belongs to the MCP tests.
//!
//! # What is checked
//!
//! Every outcome against its kind; then, after a warm-up (10 % of the calls, at least 25,000
//! but at most half, and at least one restart) has run and its client is closed, the thread
//! count is taken as the baseline and the resident set (VmRSS) is sampled every 100 ms (less
//! often on very long runs) until the end. At the end:
//! the medians of the first and last quarter of the samples differ by less than 5 %; the last
//! client's pending table is empty (`stats().in_flight == 0`) and so is the timer wheel; after
//! closing, the thread count is back to the baseline; no child of ours is a zombie, and every
//! child we started is gone. A summary is printed; any violation exits with status 1.
//!
//! # How memory is measured
//!
//! glibc's allocator gives threads their own arenas, up to 8 per core, keeps blocks under
//! 128 KiB in its heaps, and keeps freed memory for later. Every restart starts four new
//! threads (which keep landing in arenas not used before, each growing to its own high-water
//! mark) and allocates two 64 KiB pipe buffers (which fragment the heap as clients come and
//! go). With those defaults the raw resident set of this soak climbs by a few hundred KiB over
//! hundreds of restarts, on a process of under 5 MiB, without a byte leaked (valgrind's leak
//! check on a short soak: 0 bytes lost, nothing reachable piling up per restart). The soak is
//! after leaks in toolwire, so:
//! * before any thread starts it sets one arena (`M_ARENA_MAX` 1) and takes blocks of 32 KiB
//!   and more straight from mmap (`M_MMAP_THRESHOLD` 32 KiB); `--malloc-defaults` keeps
//!   glibc's settings instead;
//! * each sample is VmRSS right after `malloc_trim(0)`, so it counts memory the process holds,
//!   not free memory the allocator keeps (the progress lines show the raw VmRSS).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use toolwire::jsonrpc::TimerWheel;
use toolwire::mcp::McpDialect;
use toolwire::transport::StdioTransport;
use toolwire::{CallOptions, Client, ClientConfig, Error, StdioConfig};

// ---- options ----

struct Options {
    calls: u64,
    threads: usize,
    restart_every: u64,
    malloc_defaults: bool,
    server: Option<PathBuf>,
}

fn usage() -> ! {
    eprintln!(
        "usage: soak [--calls N] [--threads T] [--restart-every K] [--malloc-defaults] [--server PATH]\n\
         defaults: 1000000 calls, 4 threads, a restart every 2500 calls, a tuned allocator"
    );
    std::process::exit(2);
}

fn parse_options() -> Options {
    let mut options = Options {
        calls: 1_000_000,
        threads: 4,
        restart_every: 2_500,
        malloc_defaults: false,
        server: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--calls" => options.calls = value().parse().unwrap_or_else(|_| usage()),
            "--threads" => options.threads = value().parse().unwrap_or_else(|_| usage()),
            "--restart-every" => {
                options.restart_every = value().parse().unwrap_or_else(|_| usage())
            }
            "--malloc-defaults" => options.malloc_defaults = true,
            "--server" => options.server = Some(PathBuf::from(value())),
            "--help" | "-h" => usage(),
            _ => usage(),
        }
    }
    if options.calls == 0 || options.threads == 0 || options.restart_every == 0 {
        usage();
    }
    options
}

/// The tool_server next to this example, built with cargo when it is missing.
fn tool_server(options: &Options) -> PathBuf {
    if let Some(path) = &options.server {
        return path.clone();
    }
    let exe = std::env::current_exe().expect("the soak's own path");
    let examples = exe.parent().expect("examples dir");
    let path = examples.join("tool_server");
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "--quiet", "--example", "tool_server"]);
        if examples
            .parent()
            .is_some_and(|profile| profile.ends_with("release"))
        {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo build");
        assert!(status.success(), "building tool_server failed");
    }
    path
}

// ---- /proc ----

fn vm_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// VmRSS after handing the allocator's free pages back to the system (`malloc_trim(0)`), so a
/// sample counts memory the process holds, not memory glibc keeps free for later.
fn trimmed_rss_kib() -> u64 {
    // SAFETY: malloc_trim only releases free memory; it is safe to call from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
    vm_rss_kib()
}

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |entries| entries.count())
}

/// Our child processes, as (pid, state letter).
fn children() -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the parenthesised command name: state, ppid, ...
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        if fields.get(1).and_then(|ppid| ppid.parse::<u32>().ok()) == Some(me) {
            found.push((pid, fields[0].to_owned()));
        }
    }
    found
}

fn process_gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// Polls `condition` for up to `limit` (for facts outside our control, like /proc catching up).
fn eventually(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

// ---- the soak ----

/// One child and its client.
struct Conn {
    client: Client,
    generation: u64,
    pid: u32,
}

#[derive(Default)]
struct Counts {
    echo: AtomicU64,
    timeouts: AtomicU64,
    late_answers: AtomicU64,
    cancels_won: AtomicU64,
    cancel_races_answered: AtomicU64,
    cancel_races_cancelled: AtomicU64,
    dropped: AtomicU64,
    inbound: AtomicU64,
    progress_calls: AtomicU64,
    progress_reports: AtomicU64,
    restarts: AtomicU64,
    closed_by_restart: AtomicU64,
}

fn add(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

struct Soak {
    server: PathBuf,
    restart_every: u64,
    /// The client calls go to; `None` only before the start and after the end.
    current: RwLock<Option<Arc<Conn>>>,
    next_generation: AtomicU64,
    spawned_pids: Mutex<Vec<u32>>,
    counts: Counts,
    violations: Mutex<Vec<String>>,
    violation_count: AtomicU64,
    /// Calls of retired clients, kept for their final checks.
    retired_stats: Mutex<(u64, u64)>,
}

impl Soak {
    fn violation(&self, text: String) {
        self.violation_count.fetch_add(1, Ordering::Relaxed);
        let mut kept = self.violations.lock().unwrap();
        if kept.len() < 20 {
            eprintln!("soak: VIOLATION: {text}");
            kept.push(text);
        }
    }

    fn connect(&self) -> Arc<Conn> {
        let transport =
            StdioTransport::spawn(StdioConfig::new(&self.server)).expect("spawn tool_server");
        let pid = transport.pid();
        self.spawned_pids.lock().unwrap().push(pid);
        let client = Client::with_config(transport, ClientConfig::default().dialect(McpDialect))
            .expect("client");
        Arc::new(Conn {
            client,
            generation: self.next_generation.fetch_add(1, Ordering::Relaxed),
            pid,
        })
    }

    fn current(&self) -> Arc<Conn> {
        let current = self.current.read().unwrap();
        Arc::clone(current.as_ref().expect("a client is connected"))
    }

    fn current_generation(&self) -> u64 {
        self.current
            .read()
            .unwrap()
            .as_ref()
            .map_or(u64::MAX, |conn| conn.generation)
    }

    /// A new child takes over; the old one crashes under the other threads' calls.
    fn restart(&self) {
        let fresh = self.connect();
        let old = self
            .current
            .write()
            .unwrap()
            .replace(fresh)
            .expect("a client was connected");
        add(&self.counts.restarts);
        let crash = old.client.call_with(
            "crash",
            json!({"code": 7}),
            CallOptions::new().timeout(Duration::from_secs(10)),
        );
        match crash {
            Err(error) if error.is_closed() => {}
            other => self.violation(format!("crash answered {other:?}")),
        }
        let reason = old.client.closed_reason();
        if !reason
            .as_ref()
            .and_then(|closed| closed.exit_status.as_deref())
            .is_some_and(|status| status.contains('7'))
        {
            self.violation(format!("the crashed child's status is missing: {reason:?}"));
        }
        if let Err(error) = old.client.close() {
            self.violation(format!("closing a crashed client failed: {error}"));
        }
        let stats = old.client.stats();
        if stats.in_flight != 0 {
            self.violation(format!(
                "a retired client still has {} pending",
                stats.in_flight
            ));
        }
        {
            let mut retired = self.retired_stats.lock().unwrap();
            retired.0 += stats.timeouts;
            retired.1 += stats.late_responses;
        }
        if !eventually(Duration::from_secs(5), || process_gone(old.pid)) {
            self.violation(format!("crashed child {} was not reaped", old.pid));
        }
    }

    /// A failure that is fine only when the client was retired under the call.
    fn closed_or_violation(&self, conn: &Conn, what: &str, error: &Error) {
        if error.is_closed() && conn.generation < self.current_generation() {
            add(&self.counts.closed_by_restart);
        } else {
            self.violation(format!(
                "{what} on client {}: unexpected {error:?}",
                conn.generation
            ));
        }
    }

    fn one_call(&self, index: u64) {
        if index % self.restart_every == self.restart_every - 1 {
            self.restart();
            return;
        }
        let conn = self.current();
        let client = &conn.client;
        let roll = mix(index) % 1000;
        match roll {
            // hang past a short deadline
            0..=19 => {
                let timeout = Duration::from_millis(5 + mix(index ^ 1) % 11);
                match client.call_with("hang", json!({}), CallOptions::new().timeout(timeout)) {
                    Err(error) if error.is_timeout() => add(&self.counts.timeouts),
                    Err(error) => self.closed_or_violation(&conn, "hang", &error),
                    Ok(value) => self.violation(format!("hang answered {value}")),
                }
            }
            // a slow answer that arrives after its deadline
            20..=29 => {
                let options = CallOptions::new().timeout(Duration::from_millis(5));
                match client.call_with("sleep", json!({"ms": 40}), options) {
                    Err(error) if error.is_timeout() => {
                        add(&self.counts.timeouts);
                        add(&self.counts.late_answers);
                    }
                    Err(error) => self.closed_or_violation(&conn, "sleep", &error),
                    Ok(value) => self.violation(format!("a 40 ms sleep beat 5 ms: {value}")),
                }
            }
            // cancel a call that would never end
            30..=49 => match client.start("hang", json!({}), CallOptions::new()) {
                Ok(handle) => {
                    let cancelled = handle.cancel();
                    match handle.wait() {
                        Err(Error::Cancelled { .. }) if cancelled => add(&self.counts.cancels_won),
                        Err(error) if !cancelled => {
                            self.closed_or_violation(&conn, "cancelled hang", &error)
                        }
                        other => self.violation(format!(
                            "cancel() said {cancelled}, the hang ended {other:?}"
                        )),
                    }
                }
                Err(error) => self.closed_or_violation(&conn, "start hang", &error),
            },
            // cancel racing the answer
            50..=59 => {
                let params = json!({"race": index});
                match client.start("echo", params.clone(), CallOptions::new()) {
                    Ok(handle) => {
                        // Give the answer a chance: 0-300 µs, so either side may win.
                        thread::sleep(Duration::from_micros(mix(index ^ 2) % 300));
                        let cancelled = handle.cancel();
                        match handle.wait() {
                            Err(Error::Cancelled { .. }) if cancelled => {
                                add(&self.counts.cancel_races_cancelled)
                            }
                            Ok(value) if !cancelled && value == params => {
                                add(&self.counts.cancel_races_answered)
                            }
                            Err(error) if !cancelled => {
                                self.closed_or_violation(&conn, "raced echo", &error)
                            }
                            other => self.violation(format!(
                                "cancel() said {cancelled}, the echo ended {other:?}"
                            )),
                        }
                    }
                    Err(error) => self.closed_or_violation(&conn, "start echo", &error),
                }
            }
            // drop the handle
            60..=69 => match client.start("hang", json!({}), CallOptions::new()) {
                Ok(handle) => {
                    drop(handle);
                    add(&self.counts.dropped);
                }
                Err(error) => self.closed_or_violation(&conn, "start hang", &error),
            },
            // the server asks us something first
            70..=89 => match client.call("ask_client", json!({"method": "ping"})) {
                Ok(value) if value == json!({"result": {}}) => add(&self.counts.inbound),
                Ok(value) => self.violation(format!("ask_client ping answered {value}")),
                Err(error) => self.closed_or_violation(&conn, "ask_client", &error),
            },
            // progress that resets the deadline
            90..=94 => {
                let reports = Arc::new(AtomicU64::new(0));
                let seen = Arc::clone(&reports);
                let options = CallOptions::new()
                    .timeout(Duration::from_secs(5))
                    .reset_on_progress(true)
                    .on_progress(move |_| {
                        seen.fetch_add(1, Ordering::Relaxed);
                    });
                match client.call_with("sleep", json!({"ms": 2, "progress": 2}), options) {
                    Ok(value) if value == json!({"slept_ms": 2}) => {
                        add(&self.counts.progress_calls);
                        self.counts
                            .progress_reports
                            .fetch_add(reports.load(Ordering::Relaxed), Ordering::Relaxed);
                    }
                    Ok(value) => self.violation(format!("sleep answered {value}")),
                    Err(error) => self.closed_or_violation(&conn, "sleep", &error),
                }
            }
            _ => {
                let params = json!({"i": index, "text": "soak"});
                match client.call("echo", params.clone()) {
                    Ok(value) if value == params => add(&self.counts.echo),
                    Ok(value) => self.violation(format!("echo gave {value}")),
                    Err(error) => self.closed_or_violation(&conn, "echo", &error),
                }
            }
        }
    }

    /// Runs calls `range` on `threads` threads, each taking the next index.
    fn run(self: &Arc<Self>, range: std::ops::Range<u64>, threads: usize, progress: bool) {
        let next = Arc::new(AtomicU64::new(range.start));
        let started = Instant::now();
        let workers: Vec<_> = (0..threads)
            .map(|worker| {
                let soak = Arc::clone(self);
                let next = Arc::clone(&next);
                let end = range.end;
                let total = range.end - range.start;
                let first = range.start;
                thread::Builder::new()
                    .name(format!("soak-worker-{worker}"))
                    .spawn(move || loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= end {
                            return;
                        }
                        soak.one_call(index);
                        let done = index - first + 1;
                        if progress && done % (total / 10).max(1) == 0 {
                            println!(
                                "soak: {done}/{total} calls, {:.1} s, VmRSS {} KiB, {} threads",
                                started.elapsed().as_secs_f64(),
                                vm_rss_kib(),
                                thread_count()
                            );
                        }
                    })
                    .expect("spawn a worker")
            })
            .collect();
        for worker in workers {
            worker.join().expect("a worker panicked");
        }
    }
}

/// A fixed mixing function (splitmix64), so the mix of calls is the same in every run.
fn mix(index: u64) -> u64 {
    let mut z = index.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Resident-set samples in a fixed buffer, written through once before sampling starts, so
/// keeping them never grows the resident set they measure. When it is full, every other sample
/// is dropped and the interval doubles.
struct Samples {
    values: Vec<u64>,
    len: usize,
    interval: Duration,
}

impl Samples {
    const CAPACITY: usize = 4096;

    fn new() -> Samples {
        Samples {
            values: vec![0; Self::CAPACITY],
            len: 0,
            interval: Duration::from_millis(100),
        }
    }

    fn push(&mut self, value: u64) {
        if self.len == Self::CAPACITY {
            for i in 0..Self::CAPACITY / 2 {
                self.values[i] = self.values[2 * i + 1];
            }
            self.len = Self::CAPACITY / 2;
            self.interval *= 2;
        }
        self.values[self.len] = value;
        self.len += 1;
    }

    fn taken(&self) -> &[u64] {
        &self.values[..self.len]
    }
}

fn median(values: &[u64]) -> u64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted[sorted.len() / 2]
}

/// One malloc arena, and blocks of 32 KiB and more from mmap (see the module docs). Must run
/// before any thread is started.
fn tune_malloc() {
    for (name, param, value) in [
        ("M_ARENA_MAX", libc::M_ARENA_MAX, 1),
        ("M_MMAP_THRESHOLD", libc::M_MMAP_THRESHOLD, 32 * 1024),
    ] {
        // SAFETY: mallopt only sets an allocator parameter; no other thread exists yet.
        let accepted = unsafe { libc::mallopt(param, value) };
        if accepted != 1 {
            eprintln!("soak: mallopt({name}, {value}) was refused; keeping the default");
        }
    }
}

fn main() -> ExitCode {
    let options = parse_options();
    if !options.malloc_defaults {
        tune_malloc();
    }
    let server = tool_server(&options);
    let started = Instant::now();
    println!(
        "soak: {} calls on {} threads against {}, a restart every {} calls, {}",
        options.calls,
        options.threads,
        server.display(),
        options.restart_every,
        if options.malloc_defaults {
            "glibc's malloc defaults"
        } else {
            "malloc tuned (1 arena, mmap from 32 KiB)"
        }
    );
    let soak = Arc::new(Soak {
        server,
        restart_every: options.restart_every,
        current: RwLock::new(None),
        next_generation: AtomicU64::new(1),
        spawned_pids: Mutex::new(Vec::new()),
        counts: Counts::default(),
        violations: Mutex::new(Vec::new()),
        violation_count: AtomicU64::new(0),
        retired_stats: Mutex::new((0, 0)),
    });
    *soak.current.write().unwrap() = Some(soak.connect());

    // Warm-up: every kind of call and at least one restart, then a clean stop.
    let warm = (options.calls / 10)
        .max(25_000)
        .min(options.calls / 2)
        .max(2_000)
        .max(options.restart_every + 1)
        .min(options.calls);
    soak.run(0..warm, options.threads, false);
    let conn = soak.current();
    conn.client.close().expect("close after the warm-up");
    drop(conn);
    // A joined thread's /proc entry can linger a moment: take the settled count.
    thread::sleep(Duration::from_millis(200));
    let baseline_threads = thread_count();
    let baseline_rss = vm_rss_kib();
    println!(
        "soak: warm-up of {warm} calls done in {:.1} s; baseline {baseline_threads} threads, VmRSS {baseline_rss} KiB",
        started.elapsed().as_secs_f64()
    );

    // The measured run, with RSS sampled every 100 ms (less often on long runs, see `Samples`).
    *soak.current.write().unwrap() = Some(soak.connect());
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = Arc::clone(&sampling);
        let mut samples = Samples::new();
        thread::Builder::new()
            .name("soak-sampler".into())
            .spawn(move || {
                while sampling.load(Ordering::Relaxed) {
                    samples.push(trimmed_rss_kib());
                    thread::sleep(samples.interval);
                }
                samples
            })
            .expect("spawn the sampler")
    };
    let measured = Instant::now();
    soak.run(warm..options.calls, options.threads, true);
    let run_time = measured.elapsed();
    sampling.store(false, Ordering::Relaxed);
    let samples = sampler.join().expect("the sampler panicked");

    // End state.
    let conn = soak.current();
    let stats = conn.client.stats();
    if stats.in_flight != 0 {
        soak.violation(format!(
            "{} calls still pending at the end",
            stats.in_flight
        ));
    }
    let timer_entries = TimerWheel::global().len();
    if timer_entries != 0 {
        soak.violation(format!("{timer_entries} deadlines left in the timer wheel"));
    }
    conn.client.close().expect("close at the end");
    drop(conn);
    *soak.current.write().unwrap() = None;
    let threads_back = eventually(Duration::from_secs(5), || {
        thread_count() == baseline_threads
    });
    let final_threads = thread_count();
    if !threads_back {
        soak.violation(format!(
            "{final_threads} threads at the end, {baseline_threads} after the warm-up"
        ));
    }
    let leftover = children();
    let zombies: Vec<_> = leftover.iter().filter(|(_, state)| state == "Z").collect();
    if !zombies.is_empty() {
        soak.violation(format!("zombie children: {zombies:?}"));
    }
    if !leftover.is_empty() {
        soak.violation(format!("children still there: {leftover:?}"));
    }
    let spawned = soak.spawned_pids.lock().unwrap().clone();
    let alive: Vec<u32> = spawned
        .iter()
        .copied()
        .filter(|&pid| !process_gone(pid))
        .collect();
    if !alive.is_empty() {
        soak.violation(format!("started children not gone: {alive:?}"));
    }

    // Memory drift.
    let samples = samples.taken();
    let (first_q, last_q, drift) = if samples.len() >= 8 {
        let quarter = samples.len() / 4;
        let first = median(&samples[..quarter]);
        let last = median(&samples[samples.len() - quarter..]);
        let drift = (last as f64 - first as f64) / first as f64 * 100.0;
        (first, last, drift)
    } else {
        (0, 0, 0.0)
    };
    if samples.len() < 8 {
        println!(
            "soak: only {} RSS samples; the run is too short to judge drift",
            samples.len()
        );
    } else if drift.abs() >= 5.0 {
        soak.violation(format!(
            "VmRSS drifted {drift:+.2} % (first-quarter median {first_q} KiB, last-quarter median {last_q} KiB)"
        ));
    }

    let counts = &soak.counts;
    let (retired_timeouts, retired_late) = *soak.retired_stats.lock().unwrap();
    let measured_calls = options.calls - warm;
    println!();
    println!("soak summary");
    println!(
        "  calls                 {} ({warm} warm-up + {measured_calls} measured)",
        options.calls
    );
    println!(
        "  measured run          {:.1} s ({:.0} calls/s); total {:.1} s",
        run_time.as_secs_f64(),
        measured_calls as f64 / run_time.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    println!("  threads               {} client threads; {baseline_threads} after warm-up, {final_threads} at the end", options.threads);
    println!("  echo ok               {}", get(&counts.echo));
    println!(
        "  timeouts              {} (of them sleep answered late: {}); client counters: {} timeouts, {} late responses",
        get(&counts.timeouts),
        get(&counts.late_answers),
        retired_timeouts + stats.timeouts,
        retired_late + stats.late_responses
    );
    println!(
        "  cancels               {} won; races: {} answered first, {} cancelled first; {} handles dropped",
        get(&counts.cancels_won),
        get(&counts.cancel_races_answered),
        get(&counts.cancel_races_cancelled),
        get(&counts.dropped)
    );
    println!(
        "  server requests       {} ping round trips",
        get(&counts.inbound)
    );
    println!(
        "  progress              {} calls, {} reports",
        get(&counts.progress_calls),
        get(&counts.progress_reports)
    );
    println!(
        "  restarts              {} (children started: {}); calls failed Closed by a restart: {}",
        get(&counts.restarts),
        spawned.len(),
        get(&counts.closed_by_restart)
    );
    println!(
        "  VmRSS                 {} samples; first-quarter median {first_q} KiB, last-quarter median {last_q} KiB, drift {drift:+.2} % (limit ±5 %); min {} max {} KiB",
        samples.len(),
        samples.iter().min().copied().unwrap_or(0),
        samples.iter().max().copied().unwrap_or(0)
    );
    println!(
        "  end state             pending {}, timer entries {timer_entries}, children left {}, zombies {}",
        stats.in_flight,
        leftover.len(),
        zombies.len()
    );
    let violations = soak.violation_count.load(Ordering::Relaxed);
    if violations == 0 {
        println!("soak: PASS");
        ExitCode::SUCCESS
    } else {
        println!("soak: FAIL, {violations} violation(s):");
        for text in soak.violations.lock().unwrap().iter() {
            println!("  - {text}");
        }
        ExitCode::FAILURE
    }
}
