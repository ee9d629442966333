//! What every benchmark shares: the size knob, the median of three runs and the CPU clocks.
//! Included by path (`#[path = "support/mod.rs"] mod support;`); not every benchmark uses
//! every item.
#![allow(dead_code)]

use std::time::Duration;

/// `TOOLWIRE_BENCH_SCALE` (a factor on every N; `benches/readme.sh` documents it). Defaults
/// to 1.
pub fn scale() -> f64 {
    std::env::var("TOOLWIRE_BENCH_SCALE")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1.0)
}

/// `n` times the scale, at least `min`.
pub fn scaled(n: usize, min: usize) -> usize {
    ((n as f64 * scale()) as usize).max(min)
}

/// The median of three runs of `measure`.
pub fn median3<T: PartialOrd + Copy>(mut measure: impl FnMut() -> T) -> T {
    let mut runs = [measure(), measure(), measure()];
    runs.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    runs[1]
}

/// The CPU time (user and system) of this process (`RUSAGE_SELF`) or of its children waited
/// for (`RUSAGE_CHILDREN`).
pub fn cpu_time(who: libc::c_int) -> Duration {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// The CPU time of the calling thread.
pub fn thread_cpu() -> Duration {
    // SAFETY: clock_gettime writes into the zeroed struct it is given.
    let spec = unsafe {
        let mut spec: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut spec);
        spec
    };
    Duration::new(spec.tv_sec as u64, spec.tv_nsec as u32)
}

/// The CPU time (user and system, every thread's, living or exited) of the running process
/// `pid` so far, from `/proc/PID/stat` (in clock ticks, 10 ms on most kernels: measure long
/// enough); zero once it is gone.
pub fn process_cpu(pid: u32) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Duration::ZERO;
    };
    // The fields after the command's closing parenthesis: state is the first, utime the 12th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks: u64 =
        fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_nanos(ticks * 1_000_000_000 / per_second)
}

/// The process ids of `pid`'s living children (from `/proc/PID/task/*/children`).
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|id| id.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}
