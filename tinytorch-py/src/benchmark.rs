//! The statistics of `tinytorch.utils.benchmark` (`tinytorch::benchmark`): a summary of
//! timings and the speed-up of one variant over another, each with a 95% confidence interval.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tinytorch::benchmark::{Speedup, Summary};

fn summary_of(what: &str, samples: &[f64]) -> PyResult<Summary> {
    if samples.is_empty() {
        return Err(PyValueError::new_err(format!("{what}: no timings")));
    }
    if let Some(x) = samples.iter().find(|x| !x.is_finite() || **x <= 0.0) {
        return Err(PyValueError::new_err(format!(
            "{what}: timings must be positive and finite, got {x}"
        )));
    }
    Ok(Summary::of(samples))
}

/// `(n, mean, std, median, ci95_low, ci95_high)` of `samples` (any time unit).
#[pyfunction]
pub fn _timing_summary(samples: Vec<f64>) -> PyResult<(usize, f64, f64, f64, f64, f64)> {
    let s = summary_of("summary", &samples)?;
    Ok((s.n, s.mean, s.std, s.median, s.ci95.0, s.ci95.1))
}

/// `(ratio, ci95_low, ci95_high)`: how much faster `candidate` is than `baseline` (the ratio
/// of their mean times) and its 95% confidence interval.
#[pyfunction]
pub fn _timing_speedup(baseline: Vec<f64>, candidate: Vec<f64>) -> PyResult<(f64, f64, f64)> {
    let s = Speedup::of(
        &summary_of("speedup baseline", &baseline)?,
        &summary_of("speedup candidate", &candidate)?,
    );
    Ok((s.ratio, s.ci95.0, s.ci95.1))
}
