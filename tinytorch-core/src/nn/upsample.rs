//! `torch.nn.Upsample`: a module around `nn::functional::interpolate` (`ops/interpolate.rs`);
//! no parameters.

use crate::error::Result;
use crate::nn::Module;
use crate::ops::{interpolate, InterpolateMode};
use crate::tensor::Tensor;

/// How [`Upsample`] picks its output size: PyTorch's `size=` or `scale_factor=` (one value for
/// every spatial dim, or one per dim).
#[derive(Clone, Debug, PartialEq)]
pub enum UpsampleSize {
    /// The output's spatial size.
    Size(Vec<usize>),
    /// Multipliers of the input's spatial size (`floor(in * scale)`).
    Scale(Vec<f64>),
}

/// `torch.nn.Upsample(size=None, scale_factor=None, mode='nearest', align_corners=None,
/// recompute_scale_factor=None)`.
pub struct Upsample {
    /// The output size or the scale factors.
    pub size: UpsampleSize,
    /// The resampling rule.
    pub mode: InterpolateMode,
    /// Corner-to-corner mapping (linear modes only; `None` means false).
    pub align_corners: Option<bool>,
    /// Map coordinates with `in / out` rather than `1 / scale_factor`.
    pub recompute_scale_factor: Option<bool>,
}

impl Upsample {
    /// An upsampler to `size` with `mode` and PyTorch's other defaults.
    pub fn new(size: UpsampleSize, mode: InterpolateMode) -> Upsample {
        Upsample {
            size,
            mode,
            align_corners: None,
            recompute_scale_factor: None,
        }
    }
}

impl Module for Upsample {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (size, scale) = match &self.size {
            UpsampleSize::Size(s) => (Some(s.as_slice()), None),
            UpsampleSize::Scale(s) => (None, Some(s.as_slice())),
        };
        interpolate(
            x,
            size,
            scale,
            self.mode,
            self.align_corners,
            self.recompute_scale_factor,
        )
    }
}
