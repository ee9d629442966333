//! What every benchmark shares: the size knob and the median of three runs. Included by
//! path (`#[path = "support/mod.rs"] mod support;`); not every benchmark uses every item.
#![allow(dead_code)]

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
