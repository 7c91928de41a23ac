//! Timing: warm up, then take the median of repeated runs, enough of them to fill a time budget.

use std::time::{Duration, Instant};

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
    times.sort_by(|a, b| a.total_cmp(b));
    Ok(times[times.len() / 2])
}
