//! Convolutions (`torch.nn.functional.conv1d/conv2d/conv_transpose2d`) as im2col + gemm.
//!
//! `conv2d` first asks the fused kernels of its device (`Storage::conv2d_forward`, in
//! `fused.rs`). On the CPU, f32/f64 run the chunk-parallel kernels of
//! `backend/cpu/conv/gemm.rs` (one thread per chunk of images, forward and both gradients),
//! or for f32 3x3 and 5x5 stride-1 kernels
//! with enough channels the Winograd kernels of `backend/cpu/conv/winograd.rs` (switched off
//! with [`set_winograd_convolution`]), or for other f32 convolutions on AVX-512 CPUs the
//! direct kernels of `backend/cpu/conv/direct.rs` (switched off with
//! [`set_direct_convolution`]); `backend/cpu/conv/mod.rs` picks. Other dtypes and devices
//! take the composition of `im2col.rs`, described next.
//! `conv2d` splits the batch into chunks whose column matrix fits in a few megabytes; for each
//! chunk it gathers the input windows into a `(Ci*kh*kw, n*OH*OW)` column matrix with the
//! `im2col` backend primitive and multiplies it by the weight with one batched gemm over the
//! groups. Its hand-written backward node runs chunk by chunk too:
//! `grad_input = col2im(W^T @ grad_out)`, `grad_weight = sum of (cols @ grad_out^T)^T` (the
//! columns rebuilt from the saved input), `grad_bias = sum(grad_out)`. `conv1d` is a `conv2d`
//! of height 1; `conv_transpose2d` (`transposed.rs`) is a `conv2d` of the zero-stuffed, padded
//! input with the flipped kernel, built from differentiable views. Pooling still uses the
//! view-based [`patches`].
//!
//! This file holds the public doors, the argument checks of `checks.rs` aside, and the
//! geometry that every path shares.

mod checks;
mod fused;
mod im2col;
mod transposed;

use crate::amp::to_autocast;
pub use crate::backend::{set_direct_convolution, set_winograd_convolution};
use crate::backend::{Conv2dSpec, ConvGeometry};
use crate::error::{Error, Result};
use crate::ops::{same_device, with_batch_dim, IMAGE};
use crate::tensor::Tensor;
pub use checks::resolve_padding;
use checks::{check_bias, check_conv_args, check_conv_shapes};
use fused::conv2d_fused;
use im2col::conv2d_im2col;
use transposed::conv_transpose2d_4d;

/// The `padding` argument of a convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvPadding {
    /// Explicit zero padding `(ph, pw)` on both sides of each spatial dim.
    Explicit(usize, usize),
    /// `padding="same"`: the output has the input's size (stride must be 1); with an even
    /// kernel the extra element goes on the right/bottom, as in PyTorch.
    Same,
    /// `padding="valid"`: no padding.
    Valid,
}

/// Output length of a sliding window over `padded` elements (PyTorch's formula, floor mode).
pub fn window_count(padded: usize, k: usize, stride: usize, dilation: usize) -> usize {
    let span = dilation * (k - 1) + 1;
    if padded < span {
        0
    } else {
        (padded - span) / stride + 1
    }
}

/// im2col on an already padded `(N, C, Hp, Wp)` tensor: `(N, C, kh*kw, OH, OW)`, where entry
/// `[n, c, i*kw + j, oh, ow]` is `x[n, c, oh*sh + i*dh, ow*sw + j*dw]`.
pub(crate) fn patches(
    x: &Tensor,
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
    out: [usize; 2],
) -> Result<Tensor> {
    let mut taps = Vec::with_capacity(kernel[0] * kernel[1]);
    for i in 0..kernel[0] {
        let h0 = i * dilation[0];
        let rows = x.slice(
            2,
            Some(h0 as isize),
            Some((h0 + (out[0] - 1) * stride[0] + 1) as isize),
            stride[0],
        )?;
        for j in 0..kernel[1] {
            let w0 = j * dilation[1];
            taps.push(rows.slice(
                3,
                Some(w0 as isize),
                Some((w0 + (out[1] - 1) * stride[1] + 1) as isize),
                stride[1],
            )?);
        }
    }
    let refs: Vec<&Tensor> = taps.iter().collect();
    Tensor::stack(&refs, 2)
}

impl Tensor {
    /// 2-D convolution (`torch.nn.functional.conv2d`). `self` is `(N, Ci, H, W)` or
    /// `(Ci, H, W)`, `weight` is `(Co, Ci/groups, kh, kw)`, `bias` is `(Co,)`. Output spatial
    /// size: `(H + 2p - d*(k-1) - 1) / s + 1`.
    pub fn conv2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: [usize; 2],
        padding: ConvPadding,
        dilation: [usize; 2],
        groups: usize,
    ) -> Result<Tensor> {
        const OP: &str = "conv2d";
        if crate::amp::autocast_dtype().is_some() {
            let (x, w) = (to_autocast(self)?, to_autocast(weight)?);
            let b = bias.map(to_autocast).transpose()?;
            return with_batch_dim(OP, &x, IMAGE, |x| {
                conv2d_4d(OP, x, &w, b.as_ref(), stride, padding, dilation, groups)
            });
        }
        with_batch_dim(OP, self, IMAGE, |x| {
            conv2d_4d(OP, x, weight, bias, stride, padding, dilation, groups)
        })
    }

    /// 1-D convolution (`torch.nn.functional.conv1d`): `self` is `(N, Ci, L)` or `(Ci, L)`,
    /// `weight` is `(Co, Ci/groups, k)`. Computed as a 2-D convolution with height 1.
    pub fn conv1d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: usize,
        padding: ConvPadding,
        dilation: usize,
        groups: usize,
    ) -> Result<Tensor> {
        const OP: &str = "conv1d";
        if weight.ndim() != 3 {
            return Err(Error::shape(
                OP,
                format!(
                    "expected a 3-d weight (Co, Ci/groups, k), got shape {:?}",
                    weight.shape()
                ),
            ));
        }
        let pad2 = match padding {
            ConvPadding::Explicit(_, p) => ConvPadding::Explicit(0, p),
            other => other,
        };
        let w2 = weight.unsqueeze(2)?;
        let run = |x: &Tensor| -> Result<Tensor> {
            conv2d_4d(
                OP,
                &x.unsqueeze(2)?,
                &w2,
                bias,
                [1, stride],
                pad2,
                [1, dilation],
                groups,
            )?
            .squeeze_dim(2)
        };
        with_batch_dim(OP, self, (3, "C, L"), run)
    }

    /// Transposed 2-D convolution (`torch.nn.functional.conv_transpose2d`), the adjoint of
    /// `conv2d`: `self` is `(N, Ci, H, W)` or `(Ci, H, W)`, `weight` is `(Ci, Co/groups, kh, kw)`.
    /// Output size: `(H - 1)*s - 2p + d*(k-1) + output_padding + 1`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_transpose2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: [usize; 2],
        padding: [usize; 2],
        output_padding: [usize; 2],
        groups: usize,
        dilation: [usize; 2],
    ) -> Result<Tensor> {
        const OP: &str = "conv_transpose2d";
        with_batch_dim(OP, self, IMAGE, |x| {
            conv_transpose2d_4d(
                OP,
                x,
                weight,
                bias,
                stride,
                padding,
                output_padding,
                groups,
                dilation,
            )
        })
    }
}

/// `conv2d` on a batched `(N, Ci, H, W)` input: checks the arguments, works out the
/// geometry, and runs the fused kernels of x's device where it has them, else the
/// im2col + gemm composition.
#[allow(clippy::too_many_arguments)]
fn conv2d_4d(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    stride: [usize; 2],
    padding: ConvPadding,
    dilation: [usize; 2],
    groups: usize,
) -> Result<Tensor> {
    check_conv_args(
        op,
        x,
        w,
        stride,
        dilation,
        groups,
        "(Co, Ci/groups, kh, kw)",
    )?;
    let (n, ci, co, k) = check_conv_shapes(op, x, w, groups)?;
    same_device(op, &[x, w])?;
    if let Some(b) = bias {
        check_bias(op, b, co, x)?;
    }
    let [pt, pb, pl, pr] = resolve_padding(op, padding, k, stride, dilation)?;
    let (hp, wp) = (x.shape()[2] + pt + pb, x.shape()[3] + pl + pr);
    let span = [dilation[0] * (k[0] - 1) + 1, dilation[1] * (k[1] - 1) + 1];
    if hp < span[0] || wp < span[1] {
        return Err(Error::shape(
            op,
            format!(
                "kernel size {k:?} (dilated {span:?}) is larger than the padded input \
                 ({hp}, {wp}) (input {:?})",
                x.shape()
            ),
        ));
    }
    let geom = ConvGeometry {
        batch: n,
        channels: ci,
        input: [x.shape()[2], x.shape()[3]],
        kernel: k,
        stride,
        dilation,
        padding: [pt, pl],
        output: [
            window_count(hp, k[0], stride[0], dilation[0]),
            window_count(wp, k[1], stride[1], dilation[1]),
        ],
    };
    let spec = Conv2dSpec {
        geom,
        out_channels: co,
        groups,
    };
    let bias_ok = bias.is_none_or(|b| b.device() == x.device() && b.dtype() == x.dtype());
    if bias_ok && w.dtype() == x.dtype() {
        if let Some(y) = conv2d_fused(op, x, w, bias, &spec)? {
            return Ok(y);
        }
    }
    conv2d_im2col(op, x, w, bias, &spec)
}
