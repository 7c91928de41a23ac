//! Timing: warm up, then repeated runs, enough of them to fill a time budget (or a fixed
//! count, for the seed's CUDA protocol), summarised by the library's statistics
//! (`tinytorch::benchmark`): median, mean ± standard deviation and a 95% confidence interval.
//! Every suite prints them the same way ([`cells`], [`to_json`]).

use std::time::{Duration, Instant};
use tinytorch::benchmark::{measure, Summary};

/// Wall times of `f` in milliseconds: two warm-up calls, then at least `min_reps` timed
/// calls and more until `budget` is spent (at most 1,000).
pub fn time_ms<E>(
    min_reps: usize,
    budget: Duration,
    mut f: impl FnMut() -> Result<(), E>,
) -> Result<Summary, E> {
    f()?;
    f()?;
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < min_reps || (start.elapsed() < budget && times.len() < 1000) {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Summary::of(&times))
}

/// Wall times of `f` in milliseconds over exactly `reps` timed calls (at least one) after
/// `warmup` untimed ones.
pub fn time_fixed_ms<E>(
    warmup: usize,
    reps: usize,
    f: impl FnMut() -> Result<(), E>,
) -> Result<Summary, E> {
    measure(warmup, reps, f)
}

/// `x` with four significant digits (sub-microsecond rows stay readable in milliseconds).
fn sig4(x: f64) -> String {
    let decimals = if x > 0.0 {
        (3 - x.log10().floor() as i32).clamp(0, 9) as usize
    } else {
        4
    };
    format!("{x:.decimals$}")
}

/// The table cells of a timing after its median: `mean ± sd` and the 95% CI of the mean.
pub fn cells(s: &Summary) -> String {
    format!(
        "{:>10} ± {:<9} [{}, {}]",
        sig4(s.mean),
        sig4(s.std),
        sig4(s.ci95.0),
        sig4(s.ci95.1)
    )
}

/// Header of [`cells`].
pub const CELLS_HEADER: &str = "      mean ± sd        95% CI";

/// A timing for a JSON row: `{n, mean_ms, sd_ms, median_ms, ci95_ms: [lo, hi]}`.
pub fn to_json(s: &Summary) -> serde_json::Value {
    serde_json::json!({
        "n": s.n, "mean_ms": s.mean, "sd_ms": s.std, "median_ms": s.median,
        "ci95_ms": [s.ci95.0, s.ci95.1],
    })
}
