//! Position encodings: the fixed sinusoidal table of "Attention Is All You Need", and rotary
//! embeddings (RoPE) as Llama applies them (Hugging Face's `rotate_half` layout). Learned
//! positions are an `Embedding` (as in `models::gpt`).

use super::module::Module;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// `(max_len, d_model)` table: `pe[p, 2i] = sin(p / 10000^(2i/d))`, `pe[p, 2i+1] = cos(...)`.
pub fn sinusoidal_table(max_len: usize, d_model: usize) -> Result<Tensor> {
    let mut v = vec![0.0f32; max_len * d_model];
    for p in 0..max_len {
        for i in (0..d_model).step_by(2) {
            let angle = p as f64 / 10000f64.powf(i as f64 / d_model as f64);
            v[p * d_model + i] = angle.sin() as f32;
            if i + 1 < d_model {
                v[p * d_model + i + 1] = angle.cos() as f32;
            }
        }
    }
    Tensor::from_vec(v, &[max_len, d_model])
}

/// Adds the sinusoidal table to inputs `(..., T, d_model)` (no parameters).
pub struct SinusoidalPositionalEncoding {
    table: Tensor,
}

impl SinusoidalPositionalEncoding {
    /// Positions up to `max_len` of width `d_model`.
    pub fn new(d_model: usize, max_len: usize) -> Result<Self> {
        Ok(SinusoidalPositionalEncoding {
            table: sinusoidal_table(max_len, d_model)?,
        })
    }
}

impl Module for SinusoidalPositionalEncoding {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (max_len, d) = (self.table.shape()[0], self.table.shape()[1]);
        let n = x.ndim();
        if n < 2 || x.shape()[n - 1] != d || x.shape()[n - 2] > max_len {
            return Err(Error::shape(
                "SinusoidalPositionalEncoding",
                format!("expected (..., T <= {max_len}, {d}), got {:?}", x.shape()),
            ));
        }
        let pe = self
            .table
            .narrow(0, 0, x.shape()[n - 2])?
            .to_device(x.device())?;
        x.add(&pe.to_dtype(x.dtype())?)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }
}

/// Rotary position embeddings for heads of `head_dim` features (even), positions below
/// `max_positions`, frequencies `base^(-2i/head_dim)`.
pub struct RotaryEmbedding {
    cos: Tensor,
    sin: Tensor,
}

impl RotaryEmbedding {
    /// The cos/sin tables of Llama's RoPE (`base` 10000 in Llama 1/2).
    pub fn new(head_dim: usize, max_positions: usize, base: f64) -> Result<Self> {
        if head_dim == 0 || !head_dim.is_multiple_of(2) {
            return Err(Error::invalid(
                "RotaryEmbedding",
                format!("head_dim must be even and positive, got {head_dim}"),
            ));
        }
        let half = head_dim / 2;
        let (mut cos, mut sin) = (
            Vec::with_capacity(max_positions * head_dim),
            Vec::with_capacity(max_positions * head_dim),
        );
        for p in 0..max_positions {
            let angles: Vec<f64> = (0..half)
                .map(|i| p as f64 / base.powf(2.0 * i as f64 / head_dim as f64))
                .collect();
            // cat(freqs, freqs): the two halves of a head share frequencies.
            for _ in 0..2 {
                cos.extend(angles.iter().map(|a| a.cos() as f32));
                sin.extend(angles.iter().map(|a| a.sin() as f32));
            }
        }
        Ok(RotaryEmbedding {
            cos: Tensor::from_vec(cos, &[max_positions, head_dim])?,
            sin: Tensor::from_vec(sin, &[max_positions, head_dim])?,
        })
    }

    /// Rotate `x` `(..., T, head_dim)` whose positions start at `offset`:
    /// `x * cos + rotate_half(x) * sin`, with `rotate_half(x) = cat(-x2, x1)`.
    pub fn apply(&self, x: &Tensor, offset: usize) -> Result<Tensor> {
        let (max, d) = (self.cos.shape()[0], self.cos.shape()[1]);
        let n = x.ndim();
        if n < 2 || x.shape()[n - 1] != d || offset + x.shape()[n - 2] > max {
            return Err(Error::shape(
                "RotaryEmbedding",
                format!(
                    "expected (..., T, {d}) with offset + T <= {max}, got {:?} at offset {offset}",
                    x.shape()
                ),
            ));
        }
        let t = x.shape()[n - 2];
        let table = |m: &Tensor| -> Result<Tensor> {
            m.narrow(0, offset as isize, t)?
                .to_device(x.device())?
                .to_dtype(x.dtype())
        };
        let halves = x.chunk(2, -1)?;
        let rotated = Tensor::cat(&[&halves[1].neg()?, &halves[0]], -1)?;
        x.mul(&table(&self.cos)?)?
            .add(&rotated.mul(&table(&self.sin)?)?)
    }
}
