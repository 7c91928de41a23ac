//! Timing with confidence: a summary of repeated timings (mean ± standard deviation, median,
//! a 95% confidence interval for the mean from Student's t) and the speed-up of one variant
//! over another with its own 95% interval (the ratio of means, its interval from the
//! log-ratio's standard error with Welch's degrees of freedom). [`measure`] times a closure
//! after a warm-up. Only `std`: the caller synchronises a device inside its closure.

use std::time::Instant;

/// Repeated timings of one thing, in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Number of timings.
    pub n: usize,
    /// Their mean.
    pub mean: f64,
    /// Their sample standard deviation (n - 1 in the denominator; 0 for one timing).
    pub std: f64,
    /// Their median.
    pub median: f64,
    /// 95% confidence interval of the mean, `mean ± t(0.975, n - 1) * std / sqrt(n)` (the
    /// mean itself at both ends for one timing).
    pub ci95: (f64, f64),
}

impl Summary {
    /// The summary of `samples` (at least one, all finite).
    ///
    /// # Panics
    /// On no samples: a benchmark always has at least one timing.
    pub fn of(samples: &[f64]) -> Summary {
        assert!(!samples.is_empty(), "a summary of no timings");
        let n = samples.len();
        let mean = samples.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let std = var.sqrt();
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
        };
        let half = if n > 1 {
            t_quantile_975((n - 1) as f64) * std / (n as f64).sqrt()
        } else {
            0.0
        };
        Summary {
            n,
            mean,
            std,
            median,
            ci95: (mean - half, mean + half),
        }
    }
}

impl std::fmt::Display for Summary {
    /// `12.345 ms ± 0.210 (median 12.301, 95% CI 12.19–12.50, n=20)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.3} ms ± {:.3} (median {:.3}, 95% CI {:.3}–{:.3}, n={})",
            self.mean, self.std, self.median, self.ci95.0, self.ci95.1, self.n
        )
    }
}

/// How much faster a candidate is than a baseline: `baseline mean / candidate mean` (above 1:
/// faster) with a 95% confidence interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Speedup {
    /// The ratio of the means.
    pub ratio: f64,
    /// 95% confidence interval of the ratio.
    pub ci95: (f64, f64),
}

impl Speedup {
    /// The speed-up of `candidate` over `baseline` from their timings. The interval is
    /// `exp(ln r ± t * se)` with `se² = s_b² / (n_b m_b²) + s_c² / (n_c m_c²)` (the delta
    /// method on the log of each mean) and Welch–Satterthwaite degrees of freedom; with a
    /// single timing on both sides it is the ratio itself.
    pub fn of(baseline: &Summary, candidate: &Summary) -> Speedup {
        let ratio = baseline.mean / candidate.mean;
        let rel = |s: &Summary| (s.std / s.mean).powi(2) / s.n as f64;
        let (vb, vc) = (rel(baseline), rel(candidate));
        let se = (vb + vc).sqrt();
        if se == 0.0 || !se.is_finite() {
            return Speedup {
                ratio,
                ci95: (ratio, ratio),
            };
        }
        let dof = |v: f64, n: usize| if n > 1 { v * v / (n - 1) as f64 } else { 0.0 };
        let df = (vb + vc).powi(2) / (dof(vb, baseline.n) + dof(vc, candidate.n));
        let half = t_quantile_975(df.max(1.0)) * se;
        Speedup {
            ratio,
            ci95: (ratio * (-half).exp(), ratio * half.exp()),
        }
    }
}

impl std::fmt::Display for Speedup {
    /// `3.40x faster (95% CI 3.21–3.60)`, or `slower` below 1.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let word = if self.ratio >= 1.0 {
            "faster"
        } else {
            "slower"
        };
        write!(
            f,
            "{:.2}x {word} (95% CI {:.2}–{:.2})",
            self.ratio, self.ci95.0, self.ci95.1
        )
    }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom (`df >= 1`, fractional
/// allowed): exact table values for whole `df` up to 30, beyond that (and between whole
/// values) the Cornish–Fisher expansion around the normal quantile, within 2e-4 of the exact
/// value for `df >= 30` and within 0.5% down to `df = 3`.
pub fn t_quantile_975(df: f64) -> f64 {
    /// t(0.975, df) for df = 1..=30 (the standard table, to four decimals).
    const TABLE: [f64; 30] = [
        12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010,
        2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739,
        2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
    ];
    let df = df.max(1.0);
    if df.fract() == 0.0 && df <= 30.0 {
        return TABLE[df as usize - 1];
    }
    if df < 30.0 {
        // Between two whole values: interpolate in 1/df, in which t is nearly linear.
        let (lo, hi) = (df.floor(), df.ceil());
        let (tl, th) = (TABLE[lo as usize - 1], TABLE[hi as usize - 1]);
        let w = (1.0 / lo - 1.0 / df) / (1.0 / lo - 1.0 / hi);
        return tl + w * (th - tl);
    }
    const Z: f64 = 1.959_963_984_540_054;
    let (z3, z5, z7) = (Z.powi(3), Z.powi(5), Z.powi(7));
    Z + (z3 + Z) / (4.0 * df)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * Z) / (96.0 * df * df)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * Z) / (384.0 * df.powi(3))
}

/// Time `f` `runs` times (at least once) after `warmup` untimed calls, in milliseconds.
pub fn measure<E>(
    warmup: usize,
    runs: usize,
    mut f: impl FnMut() -> Result<(), E>,
) -> Result<Summary, E> {
    for _ in 0..warmup {
        f()?;
    }
    let mut times = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        f()?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Summary::of(&times))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against published values of Student's t (e.g. scipy.stats.t.ppf(0.975, df)).
    #[test]
    fn t_quantiles_match_the_tables() {
        for (df, want, tol) in [
            (1.0, 12.7062, 1e-4),
            (4.0, 2.7764, 1e-4),
            (10.0, 2.2281, 1e-4),
            (30.0, 2.0423, 1e-4),
            (40.0, 2.0211, 2e-4),
            (60.0, 2.0003, 2e-4),
            (120.0, 1.9799, 2e-4),
            (1e9, 1.9600, 1e-4),
            (4.5, 2.6589, 0.005), // between table rows (by integrating the density)
        ] {
            let got = t_quantile_975(df);
            assert!((got - want).abs() <= tol, "df {df}: {got} vs {want}");
        }
    }

    /// A hand-computed example: 10, 12, 11, 13, 14 -> mean 12, std sqrt(2.5), median 12,
    /// half-width 2.7764 * 1.5811 / sqrt(5) = 1.9632.
    #[test]
    fn summary_of_five_timings() {
        let s = Summary::of(&[10.0, 12.0, 11.0, 13.0, 14.0]);
        assert_eq!((s.n, s.mean, s.median), (5, 12.0, 12.0));
        assert!((s.std - 2.5f64.sqrt()).abs() < 1e-12);
        assert!((s.ci95.0 - (12.0 - 1.96318)).abs() < 1e-4, "{s:?}");
        assert!((s.ci95.1 - (12.0 + 1.96318)).abs() < 1e-4, "{s:?}");
        let one = Summary::of(&[3.0]);
        assert_eq!((one.std, one.ci95), (0.0, (3.0, 3.0)));
        assert_eq!(Summary::of(&[1.0, 4.0, 2.0, 3.0]).median, 2.5);
    }

    #[test]
    fn speedup_and_its_interval() {
        let base = Summary::of(&[10.0, 10.5, 9.5, 10.2, 9.8]);
        let cand = Summary::of(&[5.0, 5.1, 4.9, 5.05, 4.95]);
        let s = Speedup::of(&base, &cand);
        assert!((s.ratio - 2.0).abs() < 1e-9);
        assert!(
            s.ci95.0 < 2.0 && s.ci95.1 > 2.0 && s.ci95.0 > 1.8 && s.ci95.1 < 2.2,
            "{s:?}"
        );
        // Exchanging the sides inverts the ratio and its interval.
        let r = Speedup::of(&cand, &base);
        assert!((r.ratio - 0.5).abs() < 1e-9);
        assert!(
            (r.ci95.0 - 1.0 / s.ci95.1).abs() < 1e-9 && (r.ci95.1 - 1.0 / s.ci95.0).abs() < 1e-9
        );
        assert_eq!(format!("{s}").split(' ').nth(1), Some("faster"));
        assert_eq!(format!("{r}").split(' ').nth(1), Some("slower"));
        // Noise-free timings give the ratio itself.
        let exact = Speedup::of(&Summary::of(&[2.0, 2.0]), &Summary::of(&[1.0, 1.0]));
        assert_eq!(exact.ci95, (2.0, 2.0));
    }

    #[test]
    fn measure_runs_the_warm_up_and_the_timed_calls() {
        let mut calls = 0;
        let s = measure::<()>(2, 3, || {
            calls += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((calls, s.n), (5, 3));
        assert!(measure(0, 2, || Err::<(), _>("stop")).is_err());
    }
}
