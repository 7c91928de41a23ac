//! Observers: watch the tensors that flow through a point of a model during calibration
//! (a few batches of data) and turn what they saw into quantization parameters.

use super::qparams::{channel_of, channels_along, float_values, QParams, QuantRange};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Running minimum and maximum, of the whole tensor or per channel along `axis`
/// (`MinMaxObserver` / `PerChannelMinMaxObserver`).
#[derive(Clone, Debug, Default)]
pub struct MinMaxObserver {
    axis: Option<usize>,
    mins: Vec<f32>,
    maxs: Vec<f32>,
}

impl MinMaxObserver {
    /// One range for the whole tensor.
    pub fn per_tensor() -> MinMaxObserver {
        MinMaxObserver::default()
    }

    /// One range per channel along `axis` (0: a weight's output channels).
    pub fn per_channel(axis: usize) -> MinMaxObserver {
        MinMaxObserver {
            axis: Some(axis),
            ..Default::default()
        }
    }

    /// Widen the ranges to cover `x`.
    pub fn observe(&mut self, x: &Tensor) -> Result<()> {
        const OP: &str = "MinMaxObserver";
        let values = float_values(OP, x)?;
        let channels = channels_along(OP, x, self.axis)?;
        if self.mins.is_empty() {
            self.mins = vec![f32::INFINITY; channels];
            self.maxs = vec![f32::NEG_INFINITY; channels];
        } else if self.mins.len() != channels {
            return Err(Error::shape(
                OP,
                format!("{channels} channels after {} before", self.mins.len()),
            ));
        }
        let channel = channel_of(x.shape(), self.axis);
        for (i, v) in values.into_iter().enumerate() {
            let c = channel(i);
            self.mins[c] = self.mins[c].min(v);
            self.maxs[c] = self.maxs[c].max(v);
        }
        Ok(())
    }

    /// The ranges seen, `(mins, maxs)` (empty before anything was observed).
    pub fn ranges(&self) -> (&[f32], &[f32]) {
        (&self.mins, &self.maxs)
    }

    /// Symmetric parameters for what was seen.
    pub fn symmetric_qparams(&self, range: QuantRange) -> Result<QParams> {
        self.require_data()?;
        Ok(QParams::symmetric(&self.mins, &self.maxs, range, self.axis))
    }

    /// Affine parameters for what was seen.
    pub fn affine_qparams(&self, range: QuantRange) -> Result<QParams> {
        self.require_data()?;
        Ok(QParams::affine(&self.mins, &self.maxs, range, self.axis))
    }

    fn require_data(&self) -> Result<()> {
        if self.mins.is_empty() {
            return Err(Error::invalid("MinMaxObserver", "nothing was observed"));
        }
        Ok(())
    }
}

/// Bins of the |x| histogram.
const BINS: usize = 2048;

/// The `percentile`-th percentile of |x| over everything observed, from a histogram of 2048
/// bins over `[0, largest |x| seen]` (when a larger value comes, the range doubles and
/// neighbouring bins merge). Clipping the range there keeps a few outliers from costing
/// every other value its resolution. Accurate to one bin (1/2048 of the largest |x|).
#[derive(Clone, Debug)]
pub struct PercentileObserver {
    percentile: f64,
    counts: Vec<u64>,
    /// Upper edge of the last bin (0 before any non-zero value).
    top: f32,
}

impl PercentileObserver {
    /// An observer of the `percentile`-th percentile (in `(0, 100]`, e.g. 99.99).
    pub fn new(percentile: f64) -> Result<PercentileObserver> {
        if !(percentile > 0.0 && percentile <= 100.0) {
            return Err(Error::invalid(
                "PercentileObserver",
                format!("the percentile must be in (0, 100], got {percentile}"),
            ));
        }
        Ok(PercentileObserver {
            percentile,
            counts: vec![0; BINS],
            top: 0.0,
        })
    }

    /// Count `x`'s absolute values.
    pub fn observe(&mut self, x: &Tensor) -> Result<()> {
        let values = float_values("PercentileObserver", x)?;
        let peak = values.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        if self.top == 0.0 {
            self.top = peak;
        }
        while peak > self.top {
            // Double the range: bins 2i and 2i+1 become bin i.
            for i in 0..BINS / 2 {
                self.counts[i] = self.counts[2 * i] + self.counts[2 * i + 1];
            }
            self.counts[BINS / 2..].iter_mut().for_each(|c| *c = 0);
            self.top *= 2.0;
        }
        for v in values {
            let bin = if self.top > 0.0 {
                ((v.abs() / self.top) * BINS as f32) as usize
            } else {
                0
            };
            self.counts[bin.min(BINS - 1)] += 1;
        }
        Ok(())
    }

    /// The percentile of |x| seen: the upper edge of the bin where the cumulative count
    /// reaches it.
    pub fn value(&self) -> Result<f32> {
        let total: u64 = self.counts.iter().sum();
        if total == 0 {
            return Err(Error::invalid("PercentileObserver", "nothing was observed"));
        }
        let want = (self.percentile / 100.0 * total as f64).ceil() as u64;
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= want {
                return Ok(self.top * (i + 1) as f32 / BINS as f32);
            }
        }
        Ok(self.top)
    }

    /// Symmetric parameters clipping at the percentile.
    pub fn symmetric_qparams(&self, range: QuantRange) -> Result<QParams> {
        let v = self.value()?;
        Ok(QParams::symmetric(&[-v], &[v], range, None))
    }
}
