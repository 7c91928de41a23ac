//! Dynamically quantized Linear (`torch.ao.quantization.quantize_dynamic` of `nn.Linear`):
//! int8 weights quantized once (symmetric, per output channel), activations quantized on
//! every call from their own range (affine u8, per tensor), an int8 product with i32 sums
//! ([`super::gemm`]), and the result scaled back to f32 with the bias added.

use super::gemm::{gemm_u8i8, PackedWeight};
use super::observer::MinMaxObserver;
use super::qparams::{QTensor, QuantRange};
use crate::error::{Error, Result};
use crate::nn::{Linear, Module};
use crate::tensor::{DType, Device, Tensor};
use rayon::prelude::*;

/// A Linear layer with int8 weights, run in int8 (see the module docs).
#[derive(Clone, Debug)]
pub struct DynamicQuantLinear {
    weight: PackedWeight,
    /// One scale per output feature.
    weight_scales: Vec<f32>,
    bias: Option<Vec<f32>>,
    /// Run the portable kernel even where VNNI is available (for testing and comparison).
    pub portable: bool,
}

impl DynamicQuantLinear {
    /// Quantize `linear`'s weight per output channel (symmetric int8, PyTorch's
    /// `PerChannelMinMaxObserver`) and keep its bias in f32.
    pub fn from_linear(linear: &Linear) -> Result<DynamicQuantLinear> {
        let w = linear.weight.detach().to_device(Device::Cpu)?;
        let (n, k) = (w.shape()[0], w.shape()[1]);
        let mut obs = MinMaxObserver::per_channel(0);
        obs.observe(&w)?;
        let q = QTensor::quantize(&w, &obs.symmetric_qparams(QuantRange::int8(false))?)?;
        let bias = match &linear.bias {
            Some(b) => Some(b.detach().to_dtype(DType::F32)?.to_vec::<f32>()?),
            None => None,
        };
        Ok(DynamicQuantLinear {
            weight: PackedWeight::pack(&q.values, n, k),
            weight_scales: q.params.scales,
            bias,
            portable: false,
        })
    }

    /// Input features.
    pub fn in_features(&self) -> usize {
        self.weight.k
    }

    /// Output features.
    pub fn out_features(&self) -> usize {
        self.weight.n
    }

    /// Bytes of the int8 weights, their scales and the bias.
    pub fn weight_bytes(&self) -> usize {
        self.weight.k * self.weight.n
            + 4 * (self.weight_scales.len() + self.bias.as_ref().map_or(0, Vec::len))
    }
}

/// The smallest and largest of `values` and 0, in 16 lanes so that it vectorises.
fn range_with_zero(values: &[f32]) -> (f32, f32) {
    let (mut lo, mut hi) = ([0.0f32; 16], [0.0f32; 16]);
    let chunks = values.chunks_exact(16);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..16 {
            lo[i] = lo[i].min(c[i]);
            hi[i] = hi[i].max(c[i]);
        }
    }
    let fold = |a: &[f32], f: fn(f32, f32) -> f32| a.iter().copied().fold(0.0, f);
    let (lo, hi) = (fold(&lo, f32::min), fold(&hi, f32::max));
    (fold(rest, f32::min).min(lo), fold(rest, f32::max).max(hi))
}

/// `x` rounded to the nearest integer, ties to even, for `|x| < 2^22`: adding and removing
/// 1.5 * 2^23 leaves no fraction bits, and the FPU's default rounding is to nearest even.
/// (`f32::round_ties_even` is a libm call on x86-64 without SSE4.1: ten times slower, and
/// it was most of a small layer's time.)
#[inline]
fn round_half_even(x: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0;
    (x + MAGIC) - MAGIC
}

impl Module for DynamicQuantLinear {
    /// `x` of shape `(..., in_features)`, f32 on the CPU, to `(..., out_features)` f32.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        const OP: &str = "quantized linear";
        let (k, n) = (self.weight.k, self.weight.n);
        if x.ndim() == 0 || x.shape()[x.ndim() - 1] != k {
            return Err(Error::shape(
                OP,
                format!("input of shape {:?} for {k} input features", x.shape()),
            ));
        }
        if !x.device().is_cpu() || x.dtype() != DType::F32 {
            return Err(Error::invalid(
                OP,
                format!(
                    "runs on f32 CPU tensors, got {} on {}",
                    x.dtype(),
                    x.device()
                ),
            ));
        }
        let values = x.contiguous()?.to_vec::<f32>()?;
        let m = values.len() / k.max(1);
        // Affine u8 parameters from this batch's range (widened to include 0).
        let (lo, hi) = range_with_zero(&values);
        let scale = ((hi - lo) / 255.0).max(f32::EPSILON);
        let zero_point = (-(lo / scale).round_ties_even()).clamp(0.0, 255.0) as i32;
        let inv = 1.0 / scale;
        let k4 = k.next_multiple_of(4);
        let mut a = vec![0u8; m * k4];
        // Rows in parallel once there is enough work to share (16 Ki elements a task).
        let min_rows = (1 << 14) / k.max(1) + 1;
        a.par_chunks_mut(k4)
            .zip(values.par_chunks(k))
            .with_min_len(min_rows)
            .for_each(|(row, src)| {
                let zp = zero_point as f32;
                for (q, &v) in row.iter_mut().zip(src) {
                    // `max` first: it maps NaN to 0, so `t` is an integer in [0, 255]
                    // (`clamp` would keep a NaN).
                    #[allow(clippy::manual_clamp)]
                    let t = (round_half_even(v * inv) + zp).max(0.0).min(255.0);
                    // SAFETY: `t` is finite and in range for i32.
                    *q = unsafe { t.to_int_unchecked::<i32>() } as u8;
                }
            });
        let mut acc = vec![0i32; m * n];
        gemm_u8i8(&a, k4, m, &self.weight, &mut acc, self.portable);
        let mut out = vec![0.0f32; m * n];
        let zero = vec![0.0f32; n];
        let bias = self.bias.as_deref().unwrap_or(&zero);
        out.par_chunks_mut(n)
            .zip(acc.par_chunks(n))
            .with_min_len((1 << 14) / n.max(1) + 1)
            .for_each(|(o_row, acc_row)| {
                let columns = acc_row
                    .iter()
                    .zip(&self.weight.col_sums)
                    .zip(&self.weight_scales)
                    .zip(bias);
                for (o, (((&sum, &col_sum), &w_scale), &b)) in o_row.iter_mut().zip(columns) {
                    *o = scale * w_scale * (sum - zero_point * col_sum) as f32 + b;
                }
            });
        let mut shape = x.shape().to_vec();
        *shape.last_mut().expect("checked above") = n;
        Tensor::from_vec(out, &shape)
    }

    /// None: the int8 weights are not trained.
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }
}
