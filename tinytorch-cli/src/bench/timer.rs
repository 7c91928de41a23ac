//! Timing: warm up, then take the median of repeated runs, enough of them to fill a time budget
//! (or a fixed count, for the seed's CUDA protocol).

use std::time::{Duration, Instant};

/// Milliseconds of one call of `f`.
fn time_ms<E>(f: &mut impl FnMut() -> Result<(), E>) -> Result<f64, E> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// The median of `times` (the upper one of an even count).
fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(|a, b| a.total_cmp(b));
    times[times.len() / 2]
}

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
        times.push(time_ms(&mut f)?);
    }
    Ok(median(times))
}

/// Median wall time of `f` in milliseconds over exactly `reps` timed calls (at least one)
/// after `warmup` untimed ones.
pub fn median_fixed_ms<E>(
    warmup: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<(), E>,
) -> Result<f64, E> {
    for _ in 0..warmup {
        f()?;
    }
    let times = (0..reps.max(1))
        .map(|_| time_ms(&mut f))
        .collect::<Result<Vec<f64>, E>>()?;
    Ok(median(times))
}
