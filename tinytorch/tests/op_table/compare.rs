//! Comparing TinyTorch results with PyTorch's (dtype-aware tolerances) and with themselves
//! (bit equality for the non-contiguous reruns), and building non-contiguous copies.

// Shared by the op-table and random-case test binaries; each uses a part of it.
#![allow(dead_code)]

use super::fixture::Raw;
use crate::common::Tol;
use tinytorch::{DType, Result, Tensor};

/// `(atol, rtol)` for results of `dtype` (the harness's [`Tol::for_dtype`]): a value passes
/// when `|got - want| <= atol + rtol * |want|`. Integers and bools must be exact.
pub fn tolerance(dtype: DType) -> (f64, f64) {
    let t = Tol::for_dtype(dtype);
    (t.abs, t.rel)
}

/// The worst element outside the tolerance, as a message; `None` when all are close. NaN
/// matches NaN (PyTorch and TinyTorch agree on where NaNs go) and equal values (infinities)
/// match.
fn worst_mismatch(got: &[f64], want: &[f64], atol: f64, rtol: f64) -> Option<String> {
    crate::common::worst_mismatch(got, want, Tol::new(atol, rtol).equal_nan())
}

/// Check `got` against PyTorch's `want`: dtype, shape, then values within the dtype's
/// tolerance times `scale`.
pub fn against_torch(got: &Tensor, want: &Raw, scale: f64) -> std::result::Result<(), String> {
    let (atol, rtol) = tolerance(want.dtype);
    against_torch_within(got, want, atol * scale, rtol * scale)
}

/// [`against_torch`] with an explicit tolerance.
pub fn against_torch_within(
    got: &Tensor,
    want: &Raw,
    atol: f64,
    rtol: f64,
) -> std::result::Result<(), String> {
    if got.dtype() != want.dtype {
        return Err(format!(
            "dtype {} but PyTorch gives {}",
            got.dtype(),
            want.dtype
        ));
    }
    if got.shape() != want.shape.as_slice() {
        return Err(format!(
            "shape {:?} but PyTorch gives {:?}",
            got.shape(),
            want.shape
        ));
    }
    let values = got.to_vec_f64().map_err(|e| format!("to_vec_f64: {e}"))?;
    match worst_mismatch(&values, &want.values(), atol, rtol) {
        Some(m) => Err(m),
        None => Ok(()),
    }
}

/// Check that two TinyTorch results agree: bit-for-bit unless `loose`, then within the
/// dtype's tolerance.
pub fn against_self(got: &Tensor, want: &Tensor, loose: bool) -> std::result::Result<(), String> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(format!(
            "{} {:?} but the contiguous run gives {} {:?}",
            got.dtype(),
            got.shape(),
            want.dtype(),
            want.shape()
        ));
    }
    let a = got.to_vec_f64().map_err(|e| format!("to_vec_f64: {e}"))?;
    let b = want.to_vec_f64().map_err(|e| format!("to_vec_f64: {e}"))?;
    let (atol, rtol) = if loose {
        tolerance(want.dtype())
    } else {
        (0.0, 0.0)
    };
    match worst_mismatch(&a, &b, atol, rtol) {
        Some(m) => Err(format!("differs from the contiguous run: {m}")),
        None => Ok(()),
    }
}

/// The values of `t` at odd positions of a buffer twice as long in the last dim, with junk at
/// the even positions: offset 1, last stride 2 (0-d tensors: offset 1 only).
pub fn strided_copy(t: &Tensor) -> Result<Tensor> {
    Ok(strided_copy_in_buffer(t)?.0)
}

/// The junk value around the elements of [`strided_copy`].
pub const JUNK: f64 = 77.0;

/// [`strided_copy`] and the whole buffer it views (shape `[.., 2 * n]`, or `[2]` for 0-d).
pub fn strided_copy_in_buffer(t: &Tensor) -> Result<(Tensor, Tensor)> {
    let x = if t.ndim() == 0 {
        t.reshape(&[1])?
    } else {
        t.clone()
    };
    let junk = Tensor::full(&[], JUNK, t.dtype(), t.device())?;
    let pick_x = Tensor::from_vec(vec![false, true], &[2])?;
    let pairs = Tensor::where_cond(&pick_x, &x.unsqueeze(-1)?, &junk)?;
    let wide = pairs.flatten(-2, -1)?;
    let out = wide.slice(-1, Some(1), None, 2)?;
    let out = if t.ndim() == 0 {
        out.select(0, 0)?
    } else {
        out
    };
    Ok((out.detach(), wide))
}

/// The values of `t` (at least 2-d) stored transposed in its last two dims: column-major.
pub fn transposed_copy(t: &Tensor) -> Result<Tensor> {
    Ok(t.transpose(-1, -2)?
        .contiguous_copy()?
        .transpose(-1, -2)?
        .detach())
}
