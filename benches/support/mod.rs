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

/// A number field of `/proc/PID/status` (`pid` `None`: this process): `VmRSS` and `VmHWM`
/// in KiB, `Threads` as a count.
pub fn proc_status(pid: Option<u32>, field: &str) -> u64 {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_owned(),
    };
    let status = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{field} in {path}"))
}

/// The CPU time every thread of a process (`pid` `None`: this one) has run, in nanoseconds:
/// the sum of `/proc/PID/task/*/schedstat`'s first field (ns resolution, unlike the 10 ms
/// ticks of `/proc/PID/stat`). Threads that ended before the call are not counted.
pub fn cpu_ns(pid: Option<u32>) -> u64 {
    let dir = match pid {
        Some(pid) => format!("/proc/{pid}/task"),
        None => "/proc/self/task".to_owned(),
    };
    let Ok(tasks) = std::fs::read_dir(&dir) else {
        return 0;
    };
    tasks
        .filter_map(|task| {
            let text = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
            text.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum()
}

/// The load average (1, 5 and 15 minutes), as `/proc/loadavg` gives it.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".into())
}

/// A global allocator that counts what it hands out (`#[global_allocator] static A:
/// support::Counting = support::Counting;`): every allocation, the bytes allocated (a
/// `realloc` counts its new size) and the bytes live now.
pub struct Counting;

static ALLOCATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static ALLOCATED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static LIVE: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// What [`Counting`] counted so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Allocated {
    /// Allocations (and reallocations) so far.
    pub count: u64,
    /// Bytes allocated so far.
    pub bytes: u64,
    /// Bytes allocated and not yet freed.
    pub live: i64,
}

/// The counts of [`Counting`] now.
pub fn allocated() -> Allocated {
    use std::sync::atomic::Ordering::SeqCst;
    Allocated {
        count: ALLOCATIONS.load(SeqCst),
        bytes: ALLOCATED.load(SeqCst),
        live: LIVE.load(SeqCst),
    }
}

// SAFETY: every call is passed to the system allocator unchanged; the counters are atomics.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        use std::sync::atomic::Ordering::Relaxed;
        ALLOCATIONS.fetch_add(1, Relaxed);
        ALLOCATED.fetch_add(layout.size() as u64, Relaxed);
        LIVE.fetch_add(layout.size() as i64, Relaxed);
        std::alloc::System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE.fetch_sub(layout.size() as i64, std::sync::atomic::Ordering::Relaxed);
        std::alloc::System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        use std::sync::atomic::Ordering::Relaxed;
        ALLOCATIONS.fetch_add(1, Relaxed);
        ALLOCATED.fetch_add(new_size as u64, Relaxed);
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Relaxed);
        std::alloc::System.realloc(ptr, layout, new_size)
    }
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
