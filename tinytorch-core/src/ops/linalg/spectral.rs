//! Spectral decompositions: `linalg.eigh`/`eigvalsh` (symmetric eigen-decomposition by
//! Jacobi rotations) and `linalg.svd`/`svdvals` (one-sided Jacobi), with PyTorch's backward
//! rules (`linalg_eig_backward` with `is_hermitian`, `svd_backward`). Eigen- and singular
//! vectors are defined up to sign; ours have their largest entry positive, LAPACK's follow
//! no rule, so compare them with PyTorch's through sign-invariant functions.

use super::kernels::{eigh_jacobi, svd_jacobi};
use super::{build, diag_embed, mt, record_outputs, HostMats};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// Eigenvalues (ascending) and orthonormal eigenvectors (the columns of `V`) of each
    /// symmetric matrix of `(*, n, n)` (`torch.linalg.eigh(A, UPLO)`): `A = V diag(w) V^T`.
    /// Only the lower triangle is read, or the upper one when `upper` (`UPLO='U'`).
    /// Differentiable where the eigenvalues are distinct (the gradient through `V` divides by
    /// their differences, as PyTorch's).
    pub fn linalg_eigh(&self, upper: bool) -> Result<(Tensor, Tensor)> {
        let op = "linalg.eigh";
        let mats = HostMats::read(op, self, true)?;
        let n = mats.n;
        let (mut ws, mut vs) = (Vec::new(), Vec::new());
        for b in 0..mats.count() {
            let (w, v) = eigh_jacobi(mats.mat(b), n, upper);
            ws.extend(w);
            vs.extend(v);
        }
        let w = build(ws, &mats.shape(&[n]), self)?;
        let v = build(vs, &mats.shape(&[n, n]), self)?;
        let rule = |gs: &[Tensor], vs: &[Tensor]| -> Result<Vec<Option<Tensor>>> {
            Ok(vec![Some(eigh_backward(&gs[0], &gs[1], &vs[0], &vs[1])?)])
        };
        let outs = record_outputs(op, &[self], vec![w, v], mats.batch.len(), Box::new(rule))?;
        Ok((outs[0].clone(), outs[1].clone()))
    }

    /// The eigenvalues of each symmetric matrix, ascending (`torch.linalg.eigvalsh`); the
    /// gradient `V diag(g) V^T` exists also for repeated eigenvalues.
    pub fn linalg_eigvalsh(&self, upper: bool) -> Result<Tensor> {
        Ok(self.linalg_eigh(upper)?.0)
    }

    /// The singular value decomposition `A = U diag(S) Vh` of each matrix of `(*, m, n)`
    /// (`torch.linalg.svd(A, full_matrices)`), singular values descending. With
    /// `full_matrices`, `U` is `(*, m, m)` and `Vh` `(*, n, n)`; otherwise `(*, m, k)` and
    /// `(*, k, n)`, `k = min(m, n)`. Differentiable where the singular values are distinct
    /// and non-zero; as in PyTorch, the extra columns of `full_matrices` get no gradient.
    pub fn linalg_svd(&self, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor)> {
        let op = "linalg.svd";
        let mats = HostMats::read(op, self, false)?;
        let (m, n) = (mats.m, mats.n);
        let k = m.min(n);
        let (uc, vr) = if full_matrices { (m, n) } else { (k, k) };
        let (mut us, mut ss, mut vhs) = (Vec::new(), Vec::new(), Vec::new());
        for b in 0..mats.count() {
            let (u, s, vh) = svd_jacobi(mats.mat(b), m, n, full_matrices);
            us.extend(u);
            ss.extend(s);
            vhs.extend(vh);
        }
        let u = build(us, &mats.shape(&[m, uc]), self)?;
        let s = build(ss, &mats.shape(&[k]), self)?;
        let vh = build(vhs, &mats.shape(&[vr, n]), self)?;
        let rule = move |gs: &[Tensor], vs: &[Tensor]| -> Result<Vec<Option<Tensor>>> {
            // The extra columns of U and rows of Vh do not depend on A: drop them.
            let cut_u = |t: &Tensor| t.narrow(-1, 0, k);
            let cut_v = |t: &Tensor| t.narrow(-2, 0, k);
            let ga = svd_backward(
                &cut_u(&gs[0])?,
                &gs[1],
                &cut_v(&gs[2])?,
                &cut_u(&vs[0])?,
                &vs[1],
                &cut_v(&vs[2])?,
            )?;
            Ok(vec![Some(ga)])
        };
        let outs = record_outputs(
            op,
            &[self],
            vec![u, s, vh],
            mats.batch.len(),
            Box::new(rule),
        )?;
        Ok((outs[0].clone(), outs[1].clone(), outs[2].clone()))
    }

    /// The singular values of each matrix, descending (`torch.linalg.svdvals`); the gradient
    /// `U diag(g) Vh` exists also for repeated singular values.
    pub fn linalg_svdvals(&self) -> Result<Tensor> {
        Ok(self.linalg_svd(false)?.1)
    }
}

/// `1 / (x_j - x_i)` off the diagonal for `x` `(*, n)`, with 0 where `x_j == x_i` (a
/// repeated value: its term is 0 / 0 and the gradient there is only defined when the
/// matching gradient entries are zero, as for `eigvalsh`/`svdvals`) and on the diagonal.
fn inverse_gaps(x: &Tensor) -> Result<Tensor> {
    let e = x.unsqueeze(-2)?.sub(&x.unsqueeze(-1)?)?;
    let zero = e.eq_scalar(0.0)?;
    e.masked_fill(&zero, 1.0)?
        .reciprocal()?
        .masked_fill(&zero, 0.0)
}

/// PyTorch's backward of `eigh` (`linalg_eig_backward`, hermitian case): with `E_ij = w_j -
/// w_i`, `gA = V (diag(gw) + skew(V^T gV) / E) V^T`, `skew(X) = (X - X^T) / 2`.
fn eigh_backward(gw: &Tensor, gv: &Tensor, w: &Tensor, v: &Tensor) -> Result<Tensor> {
    let vtgv = mt(v)?.matmul(gv)?;
    let skew = vtgv.sub(&mt(&vtgv)?)?.mul_scalar(0.5)?;
    let inner = skew.mul(&inverse_gaps(w)?)?.add(&diag_embed(gw)?)?;
    v.matmul(&inner)?.matmul(&mt(v)?)
}

/// PyTorch's `svd_backward` for the reduced factors `U` `(m, k)`, `S`, `Vh` `(k, n)`:
/// `gA = U [(skew(U^T gU) S + S skew(Vh gVh^T)) / E + diag(gS)] Vh` with `E_jk = s_k^2 -
/// s_j^2` and `skew(X) = X - X^T`, plus `(I - U U^T) gU S^-1 Vh` when `m > k` and
/// `U S^-1 gVh (I - Vh^T Vh)` when `n > k`. Zero singular values contribute nothing to the
/// last two terms (PyTorch divides by them).
fn svd_backward(
    gu: &Tensor,
    gs: &Tensor,
    gvh: &Tensor,
    u: &Tensor,
    s: &Tensor,
    vh: &Tensor,
) -> Result<Tensor> {
    let (m, n) = (u.shape()[u.ndim() - 2], vh.shape()[vh.ndim() - 1]);
    let k = s.shape()[s.ndim() - 1];
    if k == 0 {
        return Err(Error::invalid(
            "linalg.svd",
            "no singular values to differentiate",
        ));
    }
    let uhgu = mt(u)?.matmul(gu)?;
    let uhgu = uhgu.sub(&mt(&uhgu)?)?;
    let vhgv = vh.matmul(&mt(gvh)?)?;
    let vhgv = vhgv.sub(&mt(&vhgv)?)?;
    let s2 = s.mul(s)?;
    let inner = uhgu
        .mul(&s.unsqueeze(-2)?)?
        .add(&s.unsqueeze(-1)?.mul(&vhgv)?)?
        .mul(&inverse_gaps(&s2)?)?
        .add(&diag_embed(gs)?)?;
    let zero = s.eq_scalar(0.0)?;
    let s_inv = s
        .masked_fill(&zero, 1.0)?
        .reciprocal()?
        .masked_fill(&zero, 0.0)?;
    let mut ga = u.matmul(&inner)?.matmul(vh)?;
    if m > k {
        let gu_sinv = gu.mul(&s_inv.unsqueeze(-2)?)?;
        let proj = gu_sinv.sub(&u.matmul(&mt(u)?.matmul(&gu_sinv)?)?)?;
        ga = ga.add(&proj.matmul(vh)?)?;
    }
    if n > k {
        let sinv_gvh = gvh.mul(&s_inv.unsqueeze(-1)?)?;
        let proj = sinv_gvh.sub(&sinv_gvh.matmul(&mt(vh)?)?.matmul(vh)?)?;
        ga = ga.add(&u.matmul(&proj)?)?;
    }
    Ok(ga)
}
