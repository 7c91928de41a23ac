//! `torch.linalg`: solves, inverses and determinants (`solve.rs`), Cholesky and QR
//! (`factor.rs`), symmetric eigen-decomposition and SVD (`spectral.rs`), vector and matrix
//! norms (`norm.rs`), and what is composed from them (`composite.rs`: matrix_power, pinv,
//! lstsq). The numeric kernels are in `kernels.rs`.
//!
//! Every factorisation runs on the host in f64 whatever the tensor's dtype and device (the
//! matrices are read with `to_vec_f64`, factored one batch element at a time, and the
//! results cast and moved back): these are small-matrix routines for models (a covariance's
//! Cholesky factor, an orthogonal init, a whitening), not a LAPACK. Their backward rules are
//! PyTorch's (`FunctionsManual.cpp`), written with Tensor ops, so they run on every device
//! and can be differentiated again. Inputs have shape `(*, m, n)`: any number of leading batch
//! dims, each matrix handled independently, as in PyTorch.

mod composite;
mod factor;
mod kernels;
mod norm;
mod solve;
mod spectral;

pub use factor::QrMode;
pub use norm::{MatrixNormOrd, VectorNormOrd};

use crate::autograd::needs_grad;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// The matrices of a tensor `(*, m, n)`, read to the host in f64, row-major.
struct HostMats {
    /// The batch dims `*`.
    batch: Vec<usize>,
    m: usize,
    n: usize,
    data: Vec<f64>,
}

impl HostMats {
    /// Read `a`, which must be an f32 or f64 tensor with at least 2 dims (square when
    /// `square`), with PyTorch's errors naming `op`.
    fn read(op: &'static str, a: &Tensor, square: bool) -> Result<HostMats> {
        check_matrix(op, a, square)?;
        let s = a.shape();
        let (m, n) = (s[s.len() - 2], s[s.len() - 1]);
        Ok(HostMats {
            batch: s[..s.len() - 2].to_vec(),
            m,
            n,
            data: a.to_vec_f64()?,
        })
    }

    /// The number of matrices.
    fn count(&self) -> usize {
        self.batch.iter().product()
    }

    /// Matrix `b` of the batch, `m x n` row-major.
    fn mat(&self, b: usize) -> &[f64] {
        let size = self.m * self.n;
        &self.data[b * size..(b + 1) * size]
    }

    /// PyTorch's prefix of an error about matrix `b`: `"(Batch element 3): "` for a batched
    /// input, nothing for a single matrix.
    fn prefix(&self, b: usize) -> String {
        if self.batch.is_empty() {
            String::new()
        } else {
            format!("(Batch element {b}): ")
        }
    }

    /// The batch dims followed by `tail`.
    fn shape(&self, tail: &[usize]) -> Vec<usize> {
        let mut s = self.batch.clone();
        s.extend_from_slice(tail);
        s
    }
}

/// Error unless `a` is an f32/f64 tensor with at least 2 dims, square when `square`;
/// the messages are PyTorch's.
fn check_matrix(op: &'static str, a: &Tensor, square: bool) -> Result<()> {
    check_float(op, a)?;
    if a.ndim() < 2 {
        return Err(Error::shape(
            op,
            format!(
                "The input tensor A must have at least 2 dimensions (got shape {:?}).",
                a.shape()
            ),
        ));
    }
    let s = a.shape();
    let (m, n) = (s[s.len() - 2], s[s.len() - 1]);
    if square && m != n {
        return Err(Error::shape(
            op,
            format!("A must be batches of square matrices, but they are {m} by {n} matrices"),
        ));
    }
    Ok(())
}

/// Error unless `a` is f32 or f64 (PyTorch's linalg has no f16/bf16 or integer kernels).
fn check_float(op: &'static str, a: &Tensor) -> Result<()> {
    match a.dtype() {
        DType::F32 | DType::F64 => Ok(()),
        d => Err(Error::dtype(
            op,
            format!("Expected a float32 or float64 tensor as input. Got {d}"),
        )),
    }
}

/// A tensor of `shape` holding `data`, with `like`'s dtype and device, outside the graph.
fn build(data: Vec<f64>, shape: &[usize], like: &Tensor) -> Result<Tensor> {
    Tensor::from_vec(data, shape)?
        .to_dtype(like.dtype())?
        .to_device(like.device())
}

/// `t` with its last two dims swapped (`t.mT`).
fn mt(t: &Tensor) -> Result<Tensor> {
    t.transpose(-2, -1)
}

/// The `(*, n, n)` matrices with `v` `(*, n)` on the diagonal (`torch.diag_embed`),
/// differentiable: `v` broadcast against the identity.
fn diag_embed(v: &Tensor) -> Result<Tensor> {
    let n = v.shape()[v.ndim() - 1];
    let eye = Tensor::eye(n, n, v.dtype(), v.device())?;
    v.unsqueeze(-2)?.mul(&eye)
}

/// The shape of the broadcast batch dims of two operands (NumPy rules), or an error naming
/// `op` and both shapes.
fn broadcast_batch(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let nd = a.len().max(b.len());
    let mut out = vec![0; nd];
    for (i, o) in out.iter_mut().enumerate() {
        let da = if i + a.len() >= nd {
            a[i + a.len() - nd]
        } else {
            1
        };
        let db = if i + b.len() >= nd {
            b[i + b.len() - nd]
        } else {
            1
        };
        *o = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(Error::shape(
                    op,
                    format!("the batch dims {a:?} and {b:?} cannot be broadcast together"),
                ))
            }
        };
    }
    Ok(out)
}

/// Backward rule of an op with several outputs: given each output's gradient (zeros for an
/// output that was not used) and each output's value, one gradient per input.
type MultiRule = dyn Fn(&[Tensor], &[Tensor]) -> Result<Vec<Option<Tensor>>> + Send + Sync;

/// The outputs `outs` of op `name` on `inputs` (each with the same `nbatch` leading batch
/// dims) returned as views of one graph node, so that one backward rule sees the gradients of
/// all of them (a QR's `Q` and `R`, an SVD's `U`, `S` and `Vh`). The outputs are flattened
/// per batch element and concatenated into one tensor whose node runs `rule`; each output is
/// a narrow-and-reshape of it, whose own backward embeds its gradient (zeros elsewhere). The
/// rule gets the values through a saved tensor, so under `create_graph` they are graph
/// tensors and the gradient is differentiable again.
fn record_outputs(
    name: &'static str,
    inputs: &[&Tensor],
    outs: Vec<Tensor>,
    nbatch: usize,
    rule: Box<MultiRule>,
) -> Result<Vec<Tensor>> {
    if !needs_grad(inputs) {
        return Ok(outs);
    }
    let shapes: Vec<Vec<usize>> = outs.iter().map(|t| t.shape().to_vec()).collect();
    let batch = shapes[0][..nbatch].to_vec();
    let sizes: Vec<usize> = shapes
        .iter()
        .map(|s| s[nbatch..].iter().product())
        .collect();
    let flat: Vec<Tensor> = outs
        .iter()
        .zip(&sizes)
        .map(|(t, &size)| {
            let mut s = batch.clone();
            s.push(size);
            t.reshape(&s)
        })
        .collect::<Result<_>>()?;
    let packed = Tensor::cat(&flat.iter().collect::<Vec<_>>(), -1)?;
    let split = move |t: &Tensor| -> Result<Vec<Tensor>> {
        let mut off = 0;
        let mut parts = Vec::with_capacity(sizes.len());
        for (shape, &size) in shapes.iter().zip(&sizes) {
            parts.push(t.narrow(-1, off as isize, size)?.reshape(&shape)?);
            off += size;
        }
        Ok(parts)
    };
    let split = std::sync::Arc::new(split);
    let saved = packed.save(name);
    let split_rule = split.clone();
    let packed = packed.record(name, inputs, move |g, _| {
        let grads = split_rule(g)?;
        let values = split_rule(&saved.get()?)?;
        rule(&grads, &values)
    });
    split(&packed)
}
