//! Position encodings: the fixed sinusoidal table of "Attention Is All You Need", and rotary
//! embeddings (RoPE) as Llama applies them (Hugging Face's `rotate_half` layout). Learned
//! positions are an `Embedding` (as in `models::gpt`).

use super::module::Module;
use crate::error::{Error, Result};
use crate::tensor::{DType, Device, Tensor};

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
}

/// Llama's RoPE inverse frequencies `1 / base^(2i/head_dim)`, `i < head_dim/2`, computed in
/// f32 exactly as Hugging Face's `LlamaRotaryEmbedding` (and Meta's reference code) does, so
/// that rotations agree with theirs to the last bit or so.
pub fn rope_inv_freq(head_dim: usize, base: f64) -> Vec<f32> {
    (0..head_dim)
        .step_by(2)
        .map(|i| 1.0f32 / (base as f32).powf(i as f32 / head_dim as f32))
        .collect()
}

/// Rotate `x` `(..., T, head_dim)` by the tables `cos`, `sin` `(T, head_dim)` of
/// [`RotaryEmbedding::cos_sin`] (of `x`'s dtype and device):
/// `x * cos + rotate_half(x) * sin`, with `rotate_half(x) = cat(-x2, x1)` (Hugging Face's
/// `apply_rotary_pos_emb`).
pub fn apply_rotary(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    let n = x.ndim();
    if n < 2 || cos.ndim() != 2 || x.shape()[n - 2..] != *cos.shape() || sin.shape() != cos.shape()
    {
        return Err(Error::shape(
            "apply_rotary",
            format!(
                "x {:?} must end in the (T, head_dim) of cos {:?} and sin {:?}",
                x.shape(),
                cos.shape(),
                sin.shape()
            ),
        ));
    }
    let halves = x.chunk(2, -1)?;
    let rotated = Tensor::cat(&[&halves[1].neg()?, &halves[0]], -1)?;
    x.mul(cos)?.add(&rotated.mul(sin)?)
}

/// Rotary position embeddings for heads of `head_dim` features (even), positions below
/// `max_positions`. The rotation tables are computed for the positions asked for (as
/// Hugging Face does), so a long `max_positions` costs no memory.
pub struct RotaryEmbedding {
    /// `head_dim / 2` inverse frequencies; the two halves of a head share them.
    inv_freq: Vec<f32>,
    max_positions: usize,
}

impl RotaryEmbedding {
    /// Llama's RoPE with frequencies `base^(-2i/head_dim)` (`base` 10000 in Llama 1/2).
    pub fn new(head_dim: usize, max_positions: usize, base: f64) -> Result<Self> {
        if head_dim == 0 || !head_dim.is_multiple_of(2) {
            return Err(Error::invalid(
                "RotaryEmbedding",
                format!("head_dim must be even and positive, got {head_dim}"),
            ));
        }
        Self::from_inv_freq(rope_inv_freq(head_dim, base), max_positions)
    }

    /// RoPE with given inverse frequencies (`head_dim / 2` of them), e.g. rescaled ones
    /// (Llama 3.1's, linear scaling).
    pub fn from_inv_freq(inv_freq: Vec<f32>, max_positions: usize) -> Result<Self> {
        if inv_freq.is_empty() || inv_freq.iter().any(|f| !f.is_finite()) {
            return Err(Error::invalid(
                "RotaryEmbedding",
                format!("inverse frequencies must be finite and non-empty, got {inv_freq:?}"),
            ));
        }
        Ok(RotaryEmbedding {
            inv_freq,
            max_positions,
        })
    }

    /// Features per head.
    pub fn head_dim(&self) -> usize {
        2 * self.inv_freq.len()
    }

    /// The inverse frequencies.
    pub fn inv_freq(&self) -> &[f32] {
        &self.inv_freq
    }

    /// The tables `cos`, `sin` `(len, head_dim)` of positions `offset..offset + len`, in
    /// `dtype` on `device`. Angles are `position * inv_freq` in f32, as in Hugging Face.
    pub fn cos_sin(
        &self,
        offset: usize,
        len: usize,
        dtype: DType,
        device: Device,
    ) -> Result<(Tensor, Tensor)> {
        if offset + len > self.max_positions {
            return Err(Error::shape(
                "RotaryEmbedding",
                format!(
                    "positions {offset}..{} exceed the {} positions of the embedding",
                    offset + len,
                    self.max_positions
                ),
            ));
        }
        let d = self.head_dim();
        let (mut cos, mut sin) = (Vec::with_capacity(len * d), Vec::with_capacity(len * d));
        for p in offset..offset + len {
            // The f32 angle, its cosine and sine rounded from f64 (within an ulp of torch's).
            let (c, s): (Vec<f32>, Vec<f32>) = self
                .inv_freq
                .iter()
                .map(|&f| {
                    let angle = (p as f32 * f) as f64;
                    (angle.cos() as f32, angle.sin() as f32)
                })
                .unzip();
            // cat(freqs, freqs): the two halves of a head share frequencies.
            for _ in 0..2 {
                cos.extend_from_slice(&c);
                sin.extend_from_slice(&s);
            }
        }
        let table = |v: Vec<f32>| -> Result<Tensor> {
            Tensor::from_vec(v, &[len, d])?
                .to_dtype(dtype)?
                .to_device(device)
        };
        Ok((table(cos)?, table(sin)?))
    }

    /// Rotate `x` `(..., T, head_dim)` whose positions start at `offset`:
    /// `x * cos + rotate_half(x) * sin`, with `rotate_half(x) = cat(-x2, x1)`.
    pub fn apply(&self, x: &Tensor, offset: usize) -> Result<Tensor> {
        let d = self.head_dim();
        let n = x.ndim();
        if n < 2 || x.shape()[n - 1] != d {
            return Err(Error::shape(
                "RotaryEmbedding",
                format!("expected (..., T, {d}), got {:?}", x.shape()),
            ));
        }
        let (cos, sin) = self.cos_sin(offset, x.shape()[n - 2], x.dtype(), x.device())?;
        apply_rotary(x, &cos, &sin)
    }
}
