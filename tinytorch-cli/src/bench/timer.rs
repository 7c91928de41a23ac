//! Timing: warm up, then the median of repeated runs, enough of them to fill a time budget
//! (or a fixed count, for the seed's CUDA protocol). The statistics are the library's
//! (`tinytorch::benchmark`).

use std::time::{Duration, Instant};
use tinytorch::benchmark::{measure, Summary};

/// Median wall time of `f` in milliseconds: two warm-up calls, then at least `min_reps` timed
/// calls and more until `budget` is spent (at most 1,000).
pub fn median_ms<E>(
    min_reps: usize,
    budget: Duration,
    mut f: impl FnMut() -> Result<(), E>,
) -> Result<f64, E> {
    f()?;
    f()?;
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < min_reps || (start.elapsed() < budget && times.len() < 1000) {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Summary::of(&times).median)
}

/// Median wall time of `f` in milliseconds over exactly `reps` timed calls (at least one)
/// after `warmup` untimed ones.
pub fn median_fixed_ms<E>(
    warmup: usize,
    reps: usize,
    f: impl FnMut() -> Result<(), E>,
) -> Result<f64, E> {
    Ok(measure(warmup, reps, f)?.median)
}
