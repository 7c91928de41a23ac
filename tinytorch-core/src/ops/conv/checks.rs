//! The argument checks of the convolutions (strides, dtypes, shapes, bias) and the
//! resolution of their `padding` argument.

use super::ConvPadding;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

fn check_positive(op: &'static str, name: &str, v: [usize; 2]) -> Result<()> {
    if v[0] == 0 || v[1] == 0 {
        return Err(Error::invalid(
            op,
            format!("{name} must be positive, got {v:?}"),
        ));
    }
    Ok(())
}

fn check_float_pair(op: &'static str, x: &Tensor, w: &Tensor) -> Result<()> {
    if !x.dtype().is_float() {
        return Err(Error::dtype(
            op,
            format!("expected a floating-point input, got {}", x.dtype()),
        ));
    }
    if x.dtype() != w.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "input dtype {:?} and weight dtype {:?} differ",
                x.dtype(),
                w.dtype()
            ),
        ));
    }
    Ok(())
}

/// Add `bias` (shape `(C,)`) over dim 1 of an `(N, C, H, W)` tensor after checking its shape.
pub(super) fn add_bias(
    op: &'static str,
    out: Tensor,
    bias: Option<&Tensor>,
    channels: usize,
) -> Result<Tensor> {
    let Some(b) = bias else { return Ok(out) };
    check_bias(op, b, channels, &out)?;
    out.add(&b.reshape(&[1, channels, 1, 1])?)
}

/// `bias` must be `(C,)` with the input's dtype.
pub(super) fn check_bias(
    op: &'static str,
    b: &Tensor,
    channels: usize,
    out: &Tensor,
) -> Result<()> {
    if b.shape() != [channels] {
        return Err(Error::shape(
            op,
            format!(
                "bias must have shape [{channels}] (one per output channel), got {:?}",
                b.shape()
            ),
        ));
    }
    if b.dtype() != out.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "bias dtype {:?} differs from input dtype {:?}",
                b.dtype(),
                out.dtype()
            ),
        ));
    }
    Ok(())
}

/// The checks that convolution and transposed convolution share, in this order: positive
/// stride and dilation, a floating-point input with the weight's dtype, a 4-d weight
/// (`weight_layout` names its dims in the error, e.g. `(Co, Ci/groups, kh, kw)`) and a
/// positive number of groups.
#[allow(clippy::too_many_arguments)]
pub(super) fn check_conv_args(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    stride: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
    weight_layout: &str,
) -> Result<()> {
    check_positive(op, "stride", stride)?;
    check_positive(op, "dilation", dilation)?;
    check_float_pair(op, x, w)?;
    if w.ndim() != 4 {
        return Err(Error::shape(
            op,
            format!(
                "expected a 4-d weight {weight_layout}, got shape {:?}",
                w.shape()
            ),
        ));
    }
    if groups == 0 {
        return Err(Error::invalid(op, "groups must be positive"));
    }
    Ok(())
}

/// Check the channel and kernel shapes of a convolution whose arguments passed
/// [`check_conv_args`], and return `(N, Ci, Co, kernel)`.
pub(super) fn check_conv_shapes(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    groups: usize,
) -> Result<(usize, usize, usize, [usize; 2])> {
    let (n, ci) = (x.shape()[0], x.shape()[1]);
    let ws = w.shape();
    if !ci.is_multiple_of(groups) || !ws[0].is_multiple_of(groups) {
        return Err(Error::invalid(
            op,
            format!(
                "groups={groups} must divide both the input channels ({ci}) and the output \
                 channels ({}) (input {:?}, weight {:?})",
                ws[0],
                x.shape(),
                ws
            ),
        ));
    }
    if ws[1] * groups != ci {
        return Err(Error::shape(
            op,
            format!(
                "weight {:?} with groups={groups} expects {} input channels, but the input {:?} \
                 has {ci}",
                ws,
                ws[1] * groups,
                x.shape()
            ),
        ));
    }
    if ws[2] == 0 || ws[3] == 0 {
        return Err(Error::shape(op, format!("empty kernel in weight {ws:?}")));
    }
    Ok((n, ci, ws[0], [ws[2], ws[3]]))
}

/// Resolve `padding` into `(top, bottom, left, right)`.
pub fn resolve_padding(
    op: &'static str,
    padding: ConvPadding,
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
) -> Result<[usize; 4]> {
    Ok(match padding {
        ConvPadding::Explicit(ph, pw) => [ph, ph, pw, pw],
        ConvPadding::Valid => [0; 4],
        ConvPadding::Same => {
            if stride != [1, 1] {
                return Err(Error::invalid(
                    op,
                    format!("padding='same' is not supported for strided convolutions (stride {stride:?})"),
                ));
            }
            let th = dilation[0] * (kernel[0] - 1);
            let tw = dilation[1] * (kernel[1] - 1);
            [th / 2, th - th / 2, tw / 2, tw - tw / 2]
        }
    })
}
