//! Every differentiable operation, as methods on `Tensor`. Each file holds one family; each op
//! checks its arguments, calls one backend primitive, and records its backward rule (written
//! with Tensor ops) right next to the forward.

pub(crate) mod adam;
pub(crate) mod attention;
mod binary;
mod cast;
mod compare;
mod conv;
mod dropout;
mod einsum;
mod index;
mod inplace;
mod interpolate;
mod linalg;
pub mod loss;
mod matmul;
pub mod norm;
mod operators;
mod pixel_shuffle;
mod pixels;
mod pool;
mod reduce;
mod shape;
mod softmax;
mod special;
mod unary;
mod view;

pub use conv::{resolve_padding, window_count};
pub use conv::{set_direct_convolution, set_winograd_convolution, ConvPadding};
pub(crate) use dropout::check_dropout_p;
pub use dropout::dropout;
pub use interpolate::{interpolate, InterpolateMode};
pub use linalg::{MatrixNormOrd, QrMode, VectorNormOrd};
pub use shape::PadMode;
pub(crate) use unary::relu_grad;
pub use view::SliceArg;

use crate::backend::{Span, Storage};
use crate::error::{Error, Result};
use crate::tensor::{Device, Tensor};
use std::sync::RwLockReadGuard;

/// Error naming `op` unless `t` (the op's argument `what`) has a floating-point dtype.
pub(crate) fn require_float(op: &'static str, what: &str, t: &Tensor) -> Result<()> {
    if t.dtype().is_float() {
        Ok(())
    } else {
        Err(Error::dtype(
            op,
            format!("{what} must be a floating-point tensor, got {}", t.dtype()),
        ))
    }
}

/// `a` and `b` on one device where PyTorch allows it: a 0-d CPU tensor stands for a number
/// next to a tensor on any device (`cuda_x + torch.tensor(1.5)`), so it moves to the other's
/// device (differentiably: its gradient comes back to the CPU). Other pairs stay as they are,
/// for `same_device` to refuse.
pub(crate) fn cpu_scalar_follows(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    let cpu_scalar = |t: &Tensor| t.ndim() == 0 && t.device() == Device::Cpu;
    Ok(
        match (a.device() == b.device(), cpu_scalar(a), cpu_scalar(b)) {
            (false, true, false) => (a.to_device(b.device())?, b.clone()),
            (false, false, true) => (a.clone(), b.to_device(a.device())?),
            _ => (a.clone(), b.clone()),
        },
    )
}

/// Check that every tensor is on the same device as the first.
pub(crate) fn same_device(op: &'static str, tensors: &[&Tensor]) -> Result<()> {
    let first = tensors[0].device();
    for t in &tensors[1..] {
        if t.device() != first {
            return Err(Error::Device {
                op,
                lhs: first,
                rhs: t.device(),
            });
        }
    }
    Ok(())
}

/// A 2-D op's batched `(N, C, H, W)` and unbatched `(C, H, W)` input forms, for
/// [`with_batch_dim`].
pub(crate) const IMAGE: (usize, &str) = (4, "C, H, W");

/// Run `f` on `x` in its batched form `(N, C, ...)` of `rank` dims: an unbatched input, of
/// `rank - 1` dims, gets a batch dim of 1, removed from the result again (PyTorch accepts
/// both forms); any other rank is an error naming the two forms (`dims`: the unbatched
/// form's names, e.g. "C, H, W").
pub(crate) fn with_batch_dim(
    op: &'static str,
    x: &Tensor,
    (rank, dims): (usize, &str),
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    match x.ndim() {
        r if r == rank => f(x),
        r if r + 1 == rank => f(&x.unsqueeze(0)?)?.squeeze_dim(0),
        _ => Err(Error::shape(
            op,
            format!(
                "expected a {}-d ({dims}) or {rank}-d (N, {dims}) input, got shape {:?}",
                rank - 1,
                x.shape()
            ),
        )),
    }
}

/// Run `f` with read access to the storages of `a` and `b`, taking one lock when they share a
/// buffer (a second read lock on the same RwLock from one thread can deadlock).
pub(crate) fn with_storages2<R>(
    a: &Tensor,
    b: &Tensor,
    f: impl FnOnce(&Storage, &Storage) -> R,
) -> R {
    if a.shares_storage(b) {
        let s = a.storage();
        f(&s, &s)
    } else {
        let (sa, sb) = (a.storage(), b.storage());
        f(&sa, &sb)
    }
}

/// Three-tensor form of [`with_storages2`].
pub(crate) fn with_storages3<R>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    f: impl FnOnce(&Storage, &Storage, &Storage) -> R,
) -> R {
    // Copy whichever operands alias another so that each lock is taken once.
    if a.shares_storage(b) || a.shares_storage(c) || b.shares_storage(c) {
        let (a2, b2, c2) = (a.detach(), b.detached_copy(), c.detached_copy());
        let (sa, sb, sc) = (a2.storage(), b2.storage(), c2.storage());
        return f(&sa, &sb, &sc);
    }
    let (sa, sb, sc) = (a.storage(), b.storage(), c.storage());
    f(&sa, &sb, &sc)
}

/// Read guards on the distinct storages of `views` and, per view, the index of its guard.
/// One lock per storage: a second read lock on the same RwLock from one thread can deadlock
/// (q, k and v of a fused QKV projection share one buffer).
pub(crate) fn lock_storages<'a>(
    views: &[&'a Tensor],
) -> (Vec<RwLockReadGuard<'a, Storage>>, Vec<usize>) {
    let mut owners: Vec<&Tensor> = Vec::new();
    let mut which = Vec::new();
    for &v in views {
        match owners.iter().position(|o| o.shares_storage(v)) {
            Some(i) => which.push(i),
            None => {
                which.push(owners.len());
                owners.push(v);
            }
        }
    }
    (owners.iter().map(|o| o.storage()).collect(), which)
}

/// Run `f` on the contiguous tensors `ts` as fused-kernel operands read in place (`None`
/// stays `None`), one read lock per distinct storage; an error for a tensor with elements
/// that is not contiguous (a kernel would read the wrong elements).
/// (Shared with the `tinytorch` crate's quantized layers; not part of the API.)
#[doc(hidden)]
pub fn with_spans<R>(
    ts: &[Option<&Tensor>],
    f: impl FnOnce(&[Option<Span<'_>>]) -> Result<R>,
) -> Result<R> {
    let present: Vec<&Tensor> = ts.iter().flatten().copied().collect();
    if let Some(t) = present.iter().find(|t| t.numel() > 0 && !t.is_contiguous()) {
        return Err(Error::invalid(
            "fused kernel",
            format!(
                "operands must be contiguous, got shape {:?} with strides {:?}",
                t.shape(),
                t.stride()
            ),
        ));
    }
    let (guards, which) = lock_storages(&present);
    let mut next = present.iter().zip(&which);
    let spans: Vec<Option<Span<'_>>> = ts
        .iter()
        .map(|t| {
            t.map(|_| {
                let (t, &g) = next.next().expect("one guard per tensor");
                Span {
                    storage: &guards[g],
                    offset: t.layout().offset(),
                    len: t.numel(),
                }
            })
        })
        .collect();
    f(&spans)
}
