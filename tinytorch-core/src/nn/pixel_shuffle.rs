//! `torch.nn.PixelShuffle` and `PixelUnshuffle`; no parameters (the ops are in
//! `ops/pixel_shuffle.rs`).

use crate::error::Result;
use crate::nn::Module;
use crate::tensor::Tensor;

/// `torch.nn.PixelShuffle(upscale_factor)`: `(*, C*r*r, H, W)` -> `(*, C, H*r, W*r)`.
pub struct PixelShuffle {
    /// The factor `r` by which height and width grow.
    pub upscale_factor: usize,
}

impl PixelShuffle {
    /// A pixel shuffle by `upscale_factor`.
    pub fn new(upscale_factor: usize) -> PixelShuffle {
        PixelShuffle { upscale_factor }
    }
}

impl Module for PixelShuffle {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.pixel_shuffle(self.upscale_factor)
    }
}

/// `torch.nn.PixelUnshuffle(downscale_factor)`: `(*, C, H*r, W*r)` -> `(*, C*r*r, H, W)`.
pub struct PixelUnshuffle {
    /// The factor `r` by which height and width shrink.
    pub downscale_factor: usize,
}

impl PixelUnshuffle {
    /// A pixel unshuffle by `downscale_factor`.
    pub fn new(downscale_factor: usize) -> PixelUnshuffle {
        PixelUnshuffle { downscale_factor }
    }
}

impl Module for PixelUnshuffle {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.pixel_unshuffle(self.downscale_factor)
    }
}
