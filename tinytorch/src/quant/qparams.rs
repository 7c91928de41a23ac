//! Quantization parameters and int8 tensors, with PyTorch's formulas
//! (`torch.ao.quantization.observer`, ATen's `quantize_val`), in f32 as PyTorch computes
//! them, so the same ranges give the same scales and the same integers.

use crate::error::{Error, Result};
use crate::tensor::{DType, Device, Tensor};

/// The integer range of a quantized dtype: int8's `[-128, 127]`, or with `reduce_range` one
/// bit less, `[-64, 63]` (fbgemm's headroom against overflow in 16-bit intermediates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantRange {
    /// The smallest integer.
    pub qmin: i32,
    /// The largest integer.
    pub qmax: i32,
}

impl QuantRange {
    /// int8, `[-128, 127]` (or `[-64, 63]` with `reduce_range`).
    pub fn int8(reduce_range: bool) -> QuantRange {
        if reduce_range {
            QuantRange {
                qmin: -64,
                qmax: 63,
            }
        } else {
            QuantRange {
                qmin: -128,
                qmax: 127,
            }
        }
    }

    /// uint8, `[0, 255]`: affine activations (`quint8`).
    pub fn uint8() -> QuantRange {
        QuantRange { qmin: 0, qmax: 255 }
    }
}

/// `torch.finfo(torch.float32).eps`: the smallest scale an observer returns.
const EPS: f32 = f32::EPSILON;

/// Scales and zero points: one pair for the whole tensor, or one per channel along `axis`.
#[derive(Clone, Debug, PartialEq)]
pub struct QParams {
    /// One scale per channel (one for a per-tensor scheme).
    pub scales: Vec<f32>,
    /// One zero point per channel (zero for symmetric schemes).
    pub zero_points: Vec<i32>,
    /// The channel axis of a per-channel scheme.
    pub axis: Option<usize>,
}

impl QParams {
    /// Symmetric parameters for ranges `[min, max]` (one pair per channel): the scale maps
    /// `max(|min|, |max|)` to half the integer range, zero point 0 (`per_tensor_symmetric`,
    /// `per_channel_symmetric` with `qint8`).
    pub fn symmetric(
        mins: &[f32],
        maxs: &[f32],
        range: QuantRange,
        axis: Option<usize>,
    ) -> QParams {
        let half = (range.qmax - range.qmin) as f32 / 2.0;
        let scales = mins
            .iter()
            .zip(maxs)
            .map(|(&lo, &hi)| {
                let amax = (-lo.min(0.0)).max(hi.max(0.0));
                (amax / half).max(EPS)
            })
            .collect::<Vec<_>>();
        QParams {
            zero_points: vec![0; scales.len()],
            scales,
            axis,
        }
    }

    /// Affine parameters for ranges `[min, max]` (`per_tensor_affine`): the scale spreads the
    /// range (widened to include 0) over the integers, the zero point is where 0 lands.
    pub fn affine(mins: &[f32], maxs: &[f32], range: QuantRange, axis: Option<usize>) -> QParams {
        let (mut scales, mut zero_points) = (Vec::new(), Vec::new());
        for (&lo, &hi) in mins.iter().zip(maxs) {
            let (lo, hi) = (lo.min(0.0), hi.max(0.0));
            let scale = ((hi - lo) / (range.qmax - range.qmin) as f32).max(EPS);
            let zp = range.qmin - (lo / scale).round_ties_even() as i32;
            scales.push(scale);
            zero_points.push(zp.clamp(range.qmin, range.qmax));
        }
        QParams {
            scales,
            zero_points,
            axis,
        }
    }
}

/// An int8 tensor: its integers, shape and quantization parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct QTensor {
    /// The integers, row-major.
    pub values: Vec<i8>,
    /// The shape.
    pub shape: Vec<usize>,
    /// How the integers map to reals: `real = scale * (q - zero_point)`.
    pub params: QParams,
}

/// `x`'s values as f32, row-major, for `op` (a float tensor only).
pub(super) fn float_values(op: &'static str, x: &Tensor) -> Result<Vec<f32>> {
    if !x.dtype().is_float() {
        return Err(Error::dtype(
            op,
            format!("expected a float tensor, got {}", x.dtype()),
        ));
    }
    x.to_dtype(DType::F32)?.to_vec::<f32>()
}

/// The number of channels of `x` along `axis` (1 for a per-tensor scheme), for `op`.
pub(super) fn channels_along(op: &'static str, x: &Tensor, axis: Option<usize>) -> Result<usize> {
    match axis {
        Some(a) if a >= x.ndim() => Err(Error::invalid(
            op,
            format!("channel axis {a} for a tensor of shape {:?}", x.shape()),
        )),
        Some(a) => Ok(x.shape()[a]),
        None => Ok(1),
    }
}

/// For each element of a row-major `shape`, the index of its channel along `axis` (0 for a
/// per-tensor scheme).
pub(super) fn channel_of(shape: &[usize], axis: Option<usize>) -> impl Fn(usize) -> usize {
    let (inner, channels) = match axis {
        Some(a) => (shape[a + 1..].iter().product::<usize>(), shape[a]),
        None => (1, 1),
    };
    move |i| (i / inner.max(1)) % channels.max(1)
}

impl QTensor {
    /// Quantize `x` with `params` as ATen's `quantize_val` does: `zero_point +
    /// round_half_even(x * (1 / scale))` in f32, clamped to int8.
    pub fn quantize(x: &Tensor, params: &QParams) -> Result<QTensor> {
        const OP: &str = "quantize";
        let data = float_values(OP, x)?;
        let channels = channels_along(OP, x, params.axis)?;
        if params.scales.len() != channels || params.zero_points.len() != channels {
            return Err(Error::invalid(
                OP,
                format!(
                    "{} scales and {} zero points for {channels} channels",
                    params.scales.len(),
                    params.zero_points.len()
                ),
            ));
        }
        let channel = channel_of(x.shape(), params.axis);
        let values = data
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let c = channel(i);
                let inv = 1.0f32 / params.scales[c];
                let q = params.zero_points[c] as i64 + (v * inv).round_ties_even() as i64;
                q.clamp(i8::MIN as i64, i8::MAX as i64) as i8
            })
            .collect();
        Ok(QTensor {
            values,
            shape: x.shape().to_vec(),
            params: params.clone(),
        })
    }

    /// The reals the integers stand for, as an f32 tensor on the CPU.
    pub fn dequantize(&self) -> Result<Tensor> {
        let channel = channel_of(&self.shape, self.params.axis);
        let values: Vec<f32> = self
            .values
            .iter()
            .enumerate()
            .map(|(i, &q)| {
                let c = channel(i);
                self.params.scales[c] * (q as i32 - self.params.zero_points[c]) as f32
            })
            .collect();
        Tensor::from_vec(values, &self.shape)?.to_device(Device::Cpu)
    }
}
