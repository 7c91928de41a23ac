//! The weight side of an int8 layer: int8 weights (symmetric, one scale per output channel)
//! packed for the kernels, the f32 bias, and the product with u8 activations followed by the
//! epilogue that turns the i32 sums into reals.

use super::activation::{quantize_rows, Affine, MIN_TASK};
use super::gemm::{gemm_u8i8, gemm_u8i8_serial, Kernel, PackedWeight};
use super::observer::MinMaxObserver;
use super::qparams::{QTensor, QuantRange};
use crate::error::{Error, Result};
use crate::tensor::memory::CountedBytes;
use crate::tensor::{DType, Device, Tensor};
use rayon::prelude::*;

/// What becomes of the i32 sums.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Epilogue {
    /// The reals, in f32 (dynamic quantization).
    Float,
    /// Requantized to the output's u8 parameters (static quantization), optionally with a
    /// fused ReLU (the integers clamped at the zero point), and returned as the reals those
    /// integers stand for.
    Requantize {
        /// The output's parameters.
        out: Affine,
        /// Clamp at zero.
        relu: bool,
    },
}

/// Int8 weights of `n` output channels by `k` inputs, their scales and the f32 bias.
#[derive(Clone, Debug)]
pub(super) struct Int8Weight {
    packed: PackedWeight,
    /// The packed bytes, in the memory statistics.
    _counted: CountedBytes,
    /// One scale per output channel.
    pub scales: Vec<f32>,
    /// One value per output channel, if the layer has a bias.
    pub bias: Option<Vec<f32>>,
}

/// `weight`'s integers (row-major) and one scale per output channel (dim 0), symmetric int8
/// as PyTorch's `PerChannelMinMaxObserver(qscheme=torch.per_channel_symmetric)` gives them.
pub(super) fn quantize_per_channel(weight: &Tensor) -> Result<(Vec<i8>, Vec<f32>)> {
    let w = weight.detach().to_device(Device::Cpu)?;
    let mut obs = MinMaxObserver::per_channel(0);
    obs.observe(&w)?;
    let q = QTensor::quantize(&w, &obs.symmetric_qparams(QuantRange::int8(false))?)?;
    Ok((q.values, q.params.scales))
}

/// `bias` as f32 values on the host.
pub(super) fn bias_values(bias: Option<&Tensor>) -> Result<Option<Vec<f32>>> {
    bias.map(|b| b.detach().to_dtype(DType::F32)?.to_vec::<f32>())
        .transpose()
}

impl Int8Weight {
    /// Weights from `values` (`n` rows of `k`), with `scales` and `bias` of `n` entries; `op`
    /// names the caller in errors.
    pub fn new(
        op: &'static str,
        values: &[i8],
        n: usize,
        k: usize,
        scales: Vec<f32>,
        bias: Option<Vec<f32>>,
    ) -> Result<Int8Weight> {
        let bad_bias = bias.as_ref().is_some_and(|b| b.len() != n);
        if values.len() != n * k || scales.len() != n || bad_bias {
            return Err(Error::shape(
                op,
                format!(
                    "{} weights, {} scales and {:?} biases for {n} outputs of {k} inputs",
                    values.len(),
                    scales.len(),
                    bias.as_ref().map(Vec::len)
                ),
            ));
        }
        if let Some(s) = scales.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
            return Err(Error::invalid(
                op,
                format!("weight scale {s} is not positive"),
            ));
        }
        let packed = PackedWeight::pack(values, n, k);
        Ok(Int8Weight {
            _counted: CountedBytes::cpu(packed.bytes()),
            packed,
            scales,
            bias,
        })
    }

    /// Output channels.
    pub fn n(&self) -> usize {
        self.packed.n
    }

    /// Inputs per output channel.
    pub fn k(&self) -> usize {
        self.packed.k
    }

    /// The integers, `n` rows of `k`.
    pub fn values(&self) -> Vec<i8> {
        self.packed.unpack()
    }

    /// Bytes of the integers, the scales and the bias.
    pub fn bytes(&self) -> usize {
        self.n() * self.k() + 4 * (self.scales.len() + self.bias.as_ref().map_or(0, Vec::len))
    }

    /// The packed integers, for callers that run the product themselves.
    pub fn packed(&self) -> &PackedWeight {
        &self.packed
    }

    /// The epilogue of one call: activations with `act`, sums turned into reals by
    /// `epilogue`.
    pub fn epilogue(&self, act: Affine, epilogue: Epilogue) -> RowEpilogue {
        RowEpilogue {
            // Per column: the real value of one unit of the sum, and the zero point's share.
            mult: self.scales.iter().map(|s| act.scale * s).collect(),
            offset: self
                .packed
                .col_sums
                .iter()
                .map(|s| act.zero_point * s)
                .collect(),
            bias: self.bias.clone().unwrap_or_else(|| vec![0.0; self.n()]),
            kind: epilogue,
        }
    }

    /// `values` (`m` rows of `k` f32) quantized with `act`, times the weights, through
    /// `epilogue`: `m x n` f32, row-major.
    ///
    /// With enough rows, each thread takes a block of rows and quantizes, multiplies and
    /// finishes it alone: one parallel region instead of three, and the block's bytes stay
    /// in its core's cache. With few rows the threads split the columns instead.
    pub fn run(
        &self,
        values: &[f32],
        m: usize,
        act: Affine,
        epilogue: Epilogue,
        kernel: Kernel,
    ) -> Vec<f32> {
        let (n, k) = (self.n(), self.k());
        let k4 = k.next_multiple_of(4);
        let epilogue = self.epilogue(act, epilogue);
        let mut out = vec![0.0f32; m * n];
        let threads = rayon::current_num_threads();
        if m >= ROWS_TO_SPLIT * threads {
            let block = m.div_ceil(threads).next_multiple_of(6);
            out.par_chunks_mut(block * n)
                .zip(values.par_chunks(block * k))
                .for_each(|(out, values)| {
                    let rows = values.len() / k;
                    let (a, _counted) = quantize_rows(values, k, act, false);
                    let _sums = CountedBytes::cpu(4 * rows * n);
                    let mut acc = vec![0i32; rows * n];
                    gemm_u8i8_serial(&a, k4, rows, &self.packed, &mut acc, kernel);
                    for (o_row, acc_row) in out.chunks_exact_mut(n).zip(acc.chunks_exact(n)) {
                        epilogue.apply(acc_row, o_row);
                    }
                });
            return out;
        }
        let (a, _counted) = quantize_rows(values, k, act, true);
        let _sums = CountedBytes::cpu(4 * m * n);
        let mut acc = vec![0i32; m * n];
        gemm_u8i8(&a, k4, m, &self.packed, &mut acc, kernel);
        out.par_chunks_mut(n.max(1))
            .zip(acc.par_chunks(n.max(1)))
            .with_min_len(MIN_TASK / n.max(1) + 1)
            .for_each(|(o_row, acc_row)| epilogue.apply(acc_row, o_row));
        out
    }
}

/// Rows per thread from which `Int8Weight::run` splits rows rather than columns.
const ROWS_TO_SPLIT: usize = 12;

/// An epilogue with its per-column constants (see [`Int8Weight::epilogue`]).
pub(super) struct RowEpilogue {
    mult: Vec<f32>,
    offset: Vec<i32>,
    bias: Vec<f32>,
    kind: Epilogue,
}

impl RowEpilogue {
    /// One row of sums into one row of reals.
    pub fn apply(&self, acc_row: &[i32], o_row: &mut [f32]) {
        let columns = acc_row
            .iter()
            .zip(&self.offset)
            .zip(&self.mult)
            .zip(&self.bias);
        match self.kind {
            Epilogue::Float => {
                for (o, (((&sum, &off), &mul), &b)) in o_row.iter_mut().zip(columns) {
                    *o = mul * (sum - off) as f32 + b;
                }
            }
            Epilogue::Requantize { out, relu } => {
                let inv = 1.0 / out.scale;
                let lo = if relu { out.zero_point as f32 } else { 0.0 };
                for (o, (((&sum, &off), &mul), &b)) in o_row.iter_mut().zip(columns) {
                    let q = out.quantize((sum - off) as f32 * mul + b, inv, lo);
                    *o = out.scale * (q as i32 - out.zero_point) as f32;
                }
            }
        }
    }
}
