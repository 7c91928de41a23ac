//! Transposed convolution (`conv_transpose2d`): a `conv2d` of the zero-stuffed, padded input
//! with the flipped kernel, built from differentiable views, so autograd derives its backward.

use super::checks::{add_bias, check_conv_args};
use super::{conv2d_4d, ConvPadding};
use crate::error::{Error, Result};
use crate::ops::PadMode;
use crate::tensor::Tensor;

/// Insert `s - 1` zeros between neighbouring elements of `dim` (the "fractional stride" of a
/// transposed convolution), built from `pad` so that it is differentiable.
fn dilate_dim(x: &Tensor, dim: usize, s: usize) -> Result<Tensor> {
    let len = x.shape()[dim];
    if s == 1 || len == 0 {
        return Ok(x.clone());
    }
    let d = dim as isize;
    let spread = x.unsqueeze(d + 1)?;
    let mut pads = vec![0isize; 2 * (spread.ndim() - dim - 1)];
    let last = pads.len() - 1;
    // pads are listed from the last dim; the new unit dim is `dim + 1`.
    let idx = 2 * (spread.ndim() - 1 - (dim + 1)) + 1;
    debug_assert!(idx <= last);
    pads[idx] = s as isize - 1;
    let padded = spread.pad(&pads, PadMode::Constant(0.0))?;
    let merged = padded.flatten(d, d + 1)?;
    merged.narrow(d, 0, (len - 1) * s + 1)
}

/// Pad (or, for negative amounts, crop) `dim` by `before`/`after` elements.
fn pad_or_crop(x: &Tensor, dim: usize, before: isize, after: isize) -> Result<Tensor> {
    let nd = x.ndim();
    let mut pads = vec![0isize; 2 * (nd - dim)];
    let base = 2 * (nd - 1 - dim);
    pads[base] = before;
    pads[base + 1] = after;
    x.pad(&pads, PadMode::Constant(0.0))
}

#[allow(clippy::too_many_arguments)]
pub(super) fn conv_transpose2d_4d(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    stride: [usize; 2],
    padding: [usize; 2],
    output_padding: [usize; 2],
    groups: usize,
    dilation: [usize; 2],
) -> Result<Tensor> {
    check_conv_args(
        op,
        x,
        w,
        stride,
        dilation,
        groups,
        "(Ci, Co/groups, kh, kw)",
    )?;
    let ws = w.shape().to_vec();
    let ci = x.shape()[1];
    if ws[0] != ci {
        return Err(Error::shape(
            op,
            format!(
                "weight {ws:?} expects {} input channels, but the input {:?} has {ci}",
                ws[0],
                x.shape()
            ),
        ));
    }
    if !ci.is_multiple_of(groups) {
        return Err(Error::invalid(
            op,
            format!(
                "groups={groups} must divide the input channels ({ci}) (input {:?})",
                x.shape()
            ),
        ));
    }
    for a in 0..2 {
        if output_padding[a] >= stride[a] && output_padding[a] >= dilation[a] {
            return Err(Error::invalid(
                op,
                format!(
                    "output_padding {output_padding:?} must be smaller than either stride {stride:?} \
                     or dilation {dilation:?}"
                ),
            ));
        }
    }
    let k = [ws[2], ws[3]];
    let (cig, cog) = (ci / groups, ws[1]);
    let co = cog * groups;
    let out_size = |a: usize| -> isize {
        (x.shape()[2 + a] as isize - 1) * stride[a] as isize - 2 * padding[a] as isize
            + (dilation[a] * (k[a] - 1)) as isize
            + output_padding[a] as isize
            + 1
    };
    let (oh, ow) = (out_size(0), out_size(1));
    if oh <= 0 || ow <= 0 {
        return Err(Error::shape(
            op,
            format!(
                "output size ({oh}, {ow}) is too small (input {:?}, weight {ws:?})",
                x.shape()
            ),
        ));
    }
    // The adjoint of a convolution: zero-stuff the input, pad by d*(k-1) - p, and correlate
    // with the spatially flipped kernel whose in/out channel roles are swapped per group.
    let mut t = dilate_dim(x, 2, stride[0])?;
    t = dilate_dim(&t, 3, stride[1])?;
    for a in 0..2 {
        let full = (dilation[a] * (k[a] - 1)) as isize - padding[a] as isize;
        t = pad_or_crop(&t, 2 + a, full, full + output_padding[a] as isize)?;
    }
    let wt = w
        .reshape(&[groups, cig, cog, k[0], k[1]])?
        .transpose(1, 2)?
        .reshape(&[co, cig, k[0], k[1]])?
        .flip(&[2, 3])?;
    let out = conv2d_4d(
        op,
        &t,
        &wt,
        None,
        [1, 1],
        ConvPadding::Valid,
        dilation,
        groups,
    )?;
    add_bias(op, out, bias, co)
}
