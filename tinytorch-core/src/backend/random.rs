//! The door of random draws made on the device itself (`Storage::draw_random`): on a GPU a
//! kernel draws each element from one seed and its index (`cuda/random.rs`); the CPU has no
//! such kernel, since its values come from the host generator in row-major order.

use super::Storage;
use crate::base::{DType, Device};
use crate::error::Result;

/// What to draw.
#[derive(Clone, Copy, Debug)]
pub enum RandomDraw<'a> {
    /// Uniform in [0, 1) with this many random mantissa bits (the dtype's precision).
    Uniform {
        /// Random bits of each value.
        bits: u32,
    },
    /// Standard normal.
    Normal,
    /// 1 with the probability at the same index of these contiguous values (storage, element
    /// offset), of the output's dtype, on the same device.
    BernoulliOf(&'a Storage, usize),
}

impl Storage {
    /// `n` values of `dtype` drawn on `device` from `seed` as `draw` says, or `Ok(None)` where
    /// the device draws nothing itself (the CPU).
    pub fn draw_random(
        device: Device,
        dtype: DType,
        n: usize,
        seed: u64,
        draw: RandomDraw<'_>,
    ) -> Result<Option<Storage>> {
        match device {
            Device::Cpu => Ok(None),
            #[cfg(feature = "cuda")]
            Device::Cuda(ordinal) => {
                use crate::backend::cuda::random::{draw as cuda_draw, Draw};
                let draw = match draw {
                    RandomDraw::Uniform { bits } => Draw::Uniform { bits },
                    RandomDraw::Normal => Draw::Normal,
                    RandomDraw::BernoulliOf(Storage::Cuda(probs), at) => {
                        Draw::BernoulliOf(probs, at)
                    }
                    RandomDraw::BernoulliOf(Storage::Cpu(_), _) => {
                        return Err(crate::error::Error::invalid(
                            "bernoulli",
                            "the probabilities are on the host, the draw on a GPU",
                        ))
                    }
                };
                Ok(Some(Storage::Cuda(cuda_draw(
                    ordinal, dtype, n, seed, draw,
                )?)))
            }
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => {
                let _ = (dtype, n, seed, draw);
                Err(super::no_cuda("random"))
            }
        }
    }
}
