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
