//! Factorisations into triangular pieces: `linalg.cholesky` (`A = L L^T`) and `linalg.qr`
//! (`A = Q R`, Householder), with PyTorch's backward rules (`cholesky_backward`,
//! `linalg_qr_backward` in FunctionsManual.cpp).

use super::kernels::{cholesky as chol, householder_qr};
use super::{build, check_matrix, mt, record_outputs, HostMats};
use crate::autograd::needs_grad;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Which factors `linalg.qr` returns (PyTorch's `mode` string).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QrMode {
    /// `Q` `(*, m, k)` and `R` `(*, k, n)` with `k = min(m, n)` (`"reduced"`, the default).
    Reduced,
    /// `Q` `(*, m, m)` and `R` `(*, m, n)` (`"complete"`).
    Complete,
    /// Only `R` `(*, k, n)`; `Q` is an empty tensor (`"r"`).
    R,
}

impl QrMode {
    /// The mode named by PyTorch's string, or an error naming it.
    pub fn parse(mode: &str) -> Result<QrMode> {
        match mode {
            "reduced" => Ok(QrMode::Reduced),
            "complete" => Ok(QrMode::Complete),
            "r" => Ok(QrMode::R),
            _ => Err(Error::invalid(
                "linalg.qr",
                format!("qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"),
            )),
        }
    }
}

impl Tensor {
    /// The Cholesky factor of each symmetric positive-definite matrix of `(*, n, n)`
    /// (`torch.linalg.cholesky(A, upper=False)`): lower `L` with `A = L L^T`, or upper
    /// `U = L^T` with `A = U^T U` when `upper`. Only the lower triangle of `A` is read (the
    /// upper one when `upper`). A matrix that is not positive definite is an
    /// [`Error::LinAlg`] naming the order of the first failing leading minor.
    pub fn linalg_cholesky(&self, upper: bool) -> Result<Tensor> {
        let op = "linalg.cholesky";
        check_matrix(op, self, true)?;
        // The upper triangle of A is the lower one of A^T.
        let src = if upper { mt(self)? } else { self.clone() };
        let mats = HostMats::read(op, &src, true)?;
        let n = mats.n;
        let mut out = Vec::with_capacity(mats.data.len());
        for b in 0..mats.count() {
            match chol(mats.mat(b), n) {
                Ok(l) => out.extend(l),
                Err(k) => {
                    return Err(Error::linalg(
                        op,
                        format!(
                            "{}The factorization could not be completed because the input is \
                             not positive-definite (the leading minor of order {k} is not \
                             positive-definite).",
                            mats.prefix(b)
                        ),
                    ))
                }
            }
        }
        let l = build(out, self.shape(), self)?;
        let l = if upper { mt(&l)?.contiguous()? } else { l };
        if !needs_grad(&[self]) {
            return Ok(l);
        }
        let saved = l.save(op);
        Ok(l.record(op, &[self], move |g, _| {
            let (l, gl) = if upper {
                (mt(&saved.get()?)?, mt(g)?)
            } else {
                (saved.get()?, g.clone())
            };
            Ok(vec![Some(cholesky_backward(&l, &gl)?)])
        }))
    }

    /// The QR decomposition of each matrix of `(*, m, n)` (`torch.linalg.qr(A, mode)`) by
    /// Householder reflections, with LAPACK's sign convention (so the factors equal
    /// PyTorch's up to rounding): `Q` with orthonormal columns and upper-triangular `R`.
    /// Differentiable for `Reduced` (and `Complete` when `m <= n`, where the two agree);
    /// like PyTorch, the backward of `Complete` with `m > n` is an error, as `Q`'s extra
    /// columns are not determined by `A`.
    pub fn linalg_qr(&self, mode: QrMode) -> Result<(Tensor, Tensor)> {
        let op = "linalg.qr";
        let mats = HostMats::read(op, self, false)?;
        let (m, n) = (mats.m, mats.n);
        let complete = mode == QrMode::Complete;
        let k = m.min(n);
        let qc = if complete { m } else { k };
        let (mut qs, mut rs) = (Vec::new(), Vec::new());
        for b in 0..mats.count() {
            let (q, r) = householder_qr(mats.mat(b), m, n, complete);
            qs.extend(q);
            rs.extend(r);
        }
        let q = build(qs, &mats.shape(&[m, qc]), self)?;
        let r = build(rs, &mats.shape(&[qc, n]), self)?;
        let nb = mats.batch.len();
        let rule = move |gs: &[Tensor], vs: &[Tensor]| -> Result<Vec<Option<Tensor>>> {
            if complete && m > n {
                return Err(Error::Autograd(
                    "linalg.qr: The derivative of linalg.qr depends on Q, which is not \
                     computed when mode='r', or is not unique when mode='complete' and \
                     nrows > ncols. Please use mode='reduced'"
                        .into(),
                ));
            }
            Ok(vec![Some(qr_backward(&gs[0], &gs[1], &vs[0], &vs[1])?)])
        };
        let outs = record_outputs(op, &[self], vec![q, r], nb, Box::new(rule))?;
        let (q, r) = (outs[0].clone(), outs[1].clone());
        if mode == QrMode::R {
            let empty = Tensor::zeros(&[0], self.dtype(), self.device())?;
            return Ok((empty, r));
        }
        Ok((q, r))
    }
}

/// PyTorch's `cholesky_backward` for lower `L` (Murray 2016, arXiv:1602.07527):
/// `gA = L^-T Phi(L^T gL) L^-1` with `Phi` the lower triangle, its diagonal halved and the
/// result symmetrised.
fn cholesky_backward(l: &Tensor, gl: &Tensor) -> Result<Tensor> {
    let p = mt(l)?.matmul(gl)?.tril(0)?;
    // 0.5 * (P + tril(P, -1)^T): symmetric, with the diagonal of P halved.
    let p = p.add(&mt(&p.tril(-1)?)?)?.mul_scalar(0.5)?;
    // L^-T P  (L^T is upper), then (.) L^-1 (a right solve with lower L).
    let x = mt(l)?.linalg_solve_triangular(&p, true, true, false)?;
    l.linalg_solve_triangular(&x, false, false, false)
}

/// The gradient of `A = Q R` for Householder QR with `m >= n` (or the square left block when
/// `m < n`): `gA = (gQ + Q copyltu(M)) R^-T` with `M = R gR^T - gQ^T Q` and `copyltu(M)`
/// the symmetric matrix whose lower triangle is `M`'s (Walter & Lehmann 2018; Liao et al.
/// 2019). For `m < n` (`A = [X | Y]`, `R = [U | V]`): `Y = Q V` gives `gY = Q gV` and adds
/// `Y gV^T` to `X`'s `gQ`.
fn qr_backward(gq: &Tensor, gr: &Tensor, q: &Tensor, r: &Tensor) -> Result<Tensor> {
    let (m, n) = (q.shape()[q.ndim() - 2], r.shape()[r.ndim() - 1]);
    if m >= n {
        return qr_backward_tall(gq, gr, q, r);
    }
    let (u, v) = (r.narrow(-1, 0, m)?, r.narrow(-1, m as isize, n - m)?);
    let (gu, gv) = (gr.narrow(-1, 0, m)?, gr.narrow(-1, m as isize, n - m)?);
    let y = q.matmul(&v)?;
    let gq_x = gq.add(&y.matmul(&mt(&gv)?)?)?;
    let gx = qr_backward_tall(&gq_x, &gu, q, &u)?;
    let gy = q.matmul(&gv)?;
    Tensor::cat(&[&gx, &gy], -1)
}

/// [`qr_backward`] for `m >= n` (reduced `Q` `(m, n)`, square `R`).
fn qr_backward_tall(gq: &Tensor, gr: &Tensor, q: &Tensor, r: &Tensor) -> Result<Tensor> {
    let m_ = r.matmul(&mt(gr)?)?.sub(&mt(gq)?.matmul(q)?)?;
    let low = m_.tril(-1)?;
    let copyltu = low.add(&mt(&low)?)?.add(&m_.sub(&m_.tril(-1)?)?.tril(0)?)?;
    let z = gq.add(&q.matmul(&copyltu)?)?;
    // Z R^-T: a right solve with R^T, which is lower triangular.
    mt(r)?.linalg_solve_triangular(&z, false, false, false)
}
