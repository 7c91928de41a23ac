//! Linear systems through LU with partial pivoting: `linalg.inv`, `linalg.solve`,
//! `linalg.det`, `linalg.slogdet`, and `linalg.solve_triangular` by substitution. Backward
//! rules as PyTorch's: `d(A^-1) = -A^-1 dA A^-1`, `d det(A) = det(A) tr(A^-1 dA)`.

use super::kernels::{identity, lu_factor, solve_triangular as tri_solve, svd_jacobi};
use super::{broadcast_batch, build, check_matrix, mt, HostMats};
use crate::autograd::{needs_grad, no_grad};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// The inverse of each square matrix of `(*, n, n)` (`torch.linalg.inv`). A singular
    /// matrix (a zero pivot of its LU factors) is an [`Error::LinAlg`] with PyTorch's message.
    pub fn linalg_inv(&self) -> Result<Tensor> {
        let op = "linalg.inv";
        let mats = HostMats::read(op, self, true)?;
        let n = mats.n;
        let mut out = Vec::with_capacity(mats.data.len());
        for b in 0..mats.count() {
            let lu = lu_factor(mats.mat(b), n);
            if let Some(k) = lu.zero_pivot {
                return Err(Error::linalg(
                    op,
                    format!(
                        "{}The diagonal element {k} is zero, the inversion could not be \
                         completed because the input matrix is singular.",
                        mats.prefix(b)
                    ),
                ));
            }
            out.extend(lu.solve(&identity(n), n));
        }
        let x = build(out, self.shape(), self)?;
        if !needs_grad(&[self]) {
            return Ok(x);
        }
        let saved = x.save(op);
        Ok(x.record(op, &[self], move |g, _| {
            // gA = -X^T g X^T with X = A^-1.
            let xt = mt(&saved.get()?)?;
            Ok(vec![Some(xt.matmul(g)?.matmul(&xt)?.neg()?)])
        }))
    }

    /// `X` with `A X = B` (`torch.linalg.solve(A, B, left=True)`; `left = false` solves
    /// `X A = B`). `A` is `(*, n, n)`; `B` is `(*, n, k)`, or a batch of vectors `(*, n)` when
    /// it has one dim or exactly the batch dims of `A` plus `n` (PyTorch's rule). Batch dims
    /// broadcast. Singular `A` is an [`Error::LinAlg`].
    pub fn linalg_solve(&self, b: &Tensor, left: bool) -> Result<Tensor> {
        let op = "linalg.solve";
        check_matrix(op, self, true)?;
        super::check_float(op, b)?;
        if !left {
            // X A = B  <=>  A^T X^T = B^T.
            let bt = if b.ndim() == 1 { b.clone() } else { mt(b)? };
            let x = mt(self)?.linalg_solve(&bt, true)?;
            return if b.ndim() == 1 { Ok(x) } else { mt(&x) };
        }
        let n = self.shape()[self.ndim() - 1];
        let a_batch = &self.shape()[..self.ndim() - 2];
        let vector =
            b.ndim() == 1 || (b.ndim() + 1 == self.ndim() && &b.shape()[..b.ndim() - 1] == a_batch);
        let bm = if vector { b.unsqueeze(-1)? } else { b.clone() };
        if bm.ndim() < 2 || bm.shape()[bm.ndim() - 2] != n {
            let (r, c) = if bm.ndim() >= 2 {
                (bm.shape()[bm.ndim() - 2], bm.shape()[bm.ndim() - 1])
            } else {
                (0, 0)
            };
            return Err(Error::shape(
                op,
                format!(
                    "Incompatible shapes of A and B for the equation AX = B ({n}x{n} and {r}x{c})"
                ),
            ));
        }
        let k = bm.shape()[bm.ndim() - 1];
        let batch = broadcast_batch(op, a_batch, &bm.shape()[..bm.ndim() - 2])?;
        let mut a_shape = batch.clone();
        a_shape.extend([n, n]);
        let mut b_shape = batch.clone();
        b_shape.extend([n, k]);
        let a = self.expand(&a_shape)?;
        let bm = bm.expand(&b_shape)?;
        let x = solve_same_batch(&a, &bm)?;
        if vector {
            x.squeeze_dim(-1)
        } else {
            Ok(x)
        }
    }

    /// `X` with `A X = B` for triangular `A` (`torch.linalg.solve_triangular(A, B, upper=,
    /// left=, unitriangular=)`): only the `upper` (or lower) triangle of `A` is read, and
    /// with `unitriangular` its diagonal is taken as ones. `B` is `(*, n, k)`; batch dims
    /// broadcast. A zero on the diagonal gives inf/NaN, as in PyTorch (no error).
    pub fn linalg_solve_triangular(
        &self,
        b: &Tensor,
        upper: bool,
        left: bool,
        unitriangular: bool,
    ) -> Result<Tensor> {
        let op = "linalg.solve_triangular";
        check_matrix(op, self, true)?;
        check_matrix(op, b, false)?;
        if !left {
            // X A = B  <=>  A^T X^T = B^T, and A^T is triangular on the other side.
            let x = mt(self)?.linalg_solve_triangular(&mt(b)?, !upper, true, unitriangular)?;
            return mt(&x);
        }
        let n = self.shape()[self.ndim() - 1];
        let (br, k) = (b.shape()[b.ndim() - 2], b.shape()[b.ndim() - 1]);
        if br != n {
            return Err(Error::shape(
                op,
                format!(
                    "Incompatible shapes of A and B for the equation AX = B ({n}x{n} and {br}x{k})"
                ),
            ));
        }
        let batch = broadcast_batch(
            op,
            &self.shape()[..self.ndim() - 2],
            &b.shape()[..b.ndim() - 2],
        )?;
        let mut a_shape = batch.clone();
        a_shape.extend([n, n]);
        let mut b_shape = batch.clone();
        b_shape.extend([n, k]);
        let a = self.expand(&a_shape)?;
        let bb = b.expand(&b_shape)?;
        let am = HostMats::read(op, &a, true)?;
        let bmats = HostMats::read(op, &bb, false)?;
        let mut out = Vec::with_capacity(bmats.data.len());
        for i in 0..am.count() {
            out.extend(tri_solve(
                am.mat(i),
                bmats.mat(i),
                n,
                k,
                upper,
                unitriangular,
            ));
        }
        let x = build(out, &b_shape, &bb)?;
        if !needs_grad(&[&a, &bb]) {
            return Ok(x);
        }
        let (sa, sx) = (a.save(op), x.save(op));
        Ok(x.record(op, &[&a, &bb], move |g, _| {
            // gB = A^-T g (triangular on the other side); gA = -gB X^T on A's triangle.
            let a = sa.get()?;
            let gb = mt(&a)?.linalg_solve_triangular(g, !upper, true, unitriangular)?;
            let ga = gb.matmul(&mt(&sx.get()?)?)?.neg()?;
            let off = if unitriangular { 1 } else { 0 };
            let ga = if upper { ga.triu(off)? } else { ga.tril(-off)? };
            Ok(vec![Some(ga), Some(gb)])
        }))
    }

    /// The determinant of each square matrix of `(*, n, n)` (`torch.linalg.det`), from its LU
    /// factors. Differentiable also at singular matrices: the gradient is the transposed
    /// adjugate, computed from an SVD there (PyTorch does the same).
    pub fn linalg_det(&self) -> Result<Tensor> {
        let op = "linalg.det";
        let mats = HostMats::read(op, self, true)?;
        let n = mats.n;
        let dets: Vec<f64> = (0..mats.count())
            .map(|b| lu_factor(mats.mat(b), n).det())
            .collect();
        let det = build(dets.clone(), &mats.batch, self)?;
        if !needs_grad(&[self]) {
            return Ok(det);
        }
        let (sa, sd) = (self.save(op), det.save(op));
        let singular = dets.contains(&0.0);
        Ok(det.record(op, &[self], move |g, _| {
            let a = sa.get()?;
            let scale = g.mul(&sd.get()?)?.unsqueeze(-1)?.unsqueeze(-1)?;
            if !singular {
                // d det = det * tr(A^-1 dA), so gA = g * det * A^-T.
                return Ok(vec![Some(scale.mul(&mt(&a.linalg_inv()?)?)?)]);
            }
            // Singular somewhere in the batch: adj(A)^T = det(U) det(V) U adj(S) Vh, where
            // adj(S) = diag(prod_{j != i} s_j). Computed without a graph (first order only).
            let adj_t = {
                let _guard = no_grad();
                adjugate_transposed(&a)?
            };
            let ga = g.unsqueeze(-1)?.unsqueeze(-1)?.mul(&adj_t)?;
            Ok(vec![Some(ga.first_order_only("linalg.det", &[g, &a]))])
        }))
    }

    /// `(sign, log|det|)` of each square matrix (`torch.linalg.slogdet`), computed from the LU
    /// factors without overflow; `(0, -inf)` for a singular matrix. `log|det|` is
    /// differentiable (`g * A^-T`), `sign` is not.
    pub fn linalg_slogdet(&self) -> Result<(Tensor, Tensor)> {
        let op = "linalg.slogdet";
        let mats = HostMats::read(op, self, true)?;
        let n = mats.n;
        let (signs, logs): (Vec<f64>, Vec<f64>) = (0..mats.count())
            .map(|b| lu_factor(mats.mat(b), n).slogdet())
            .unzip();
        let sign = build(signs, &mats.batch, self)?;
        let log = build(logs, &mats.batch, self)?;
        if !needs_grad(&[self]) {
            return Ok((sign, log));
        }
        let sa = self.save(op);
        let log = log.record(op, &[self], move |g, _| {
            let inv_t = mt(&sa.get()?.linalg_inv()?)?;
            Ok(vec![Some(g.unsqueeze(-1)?.unsqueeze(-1)?.mul(&inv_t)?)])
        });
        Ok((sign, log))
    }
}

/// `X` with `A X = B` for `A` `(*, n, n)` and `B` `(*, n, k)` with the same batch dims, with
/// its backward: `gB = A^-T g` (a solve again, so differentiable twice), `gA = -gB X^T`.
fn solve_same_batch(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let am = HostMats::read("linalg.solve", a, true)?;
    let bm = HostMats::read("linalg.solve", b, false)?;
    let (n, k) = (am.n, bm.n);
    let mut out = Vec::with_capacity(bm.data.len());
    for i in 0..am.count() {
        let lu = lu_factor(am.mat(i), n);
        if lu.zero_pivot.is_some() {
            return Err(Error::linalg(
                "torch.linalg.solve",
                format!(
                    "{}The solver failed because the input matrix is singular.",
                    am.prefix(i)
                ),
            ));
        }
        out.extend(lu.solve(bm.mat(i), k));
    }
    let x = build(out, b.shape(), b)?;
    if !needs_grad(&[a, b]) {
        return Ok(x);
    }
    let (sa, sx) = (a.save("linalg.solve"), x.save("linalg.solve"));
    Ok(x.record("linalg.solve", &[a, b], move |g, _| {
        let gb = mt(&sa.get()?)?.linalg_solve(g, true)?;
        let ga = gb.matmul(&mt(&sx.get()?)?)?.neg()?;
        Ok(vec![Some(ga), Some(gb)])
    }))
}

/// `adj(A)^T`, the gradient of `det` at `A`, for every matrix of `a` `(*, n, n)`, from its SVD
/// (defined for singular matrices, where `det(A) A^-T` is not).
fn adjugate_transposed(a: &Tensor) -> Result<Tensor> {
    let mats = HostMats::read("linalg.det", a, true)?;
    let n = mats.n;
    let mut out = Vec::with_capacity(mats.data.len());
    for b in 0..mats.count() {
        let (u, s, vh) = svd_jacobi(mats.mat(b), n, n, false);
        let sign = lu_factor(&u, n).det() * lu_factor(&vh, n).det();
        let adj_s: Vec<f64> = (0..n)
            .map(|i| (0..n).filter(|&j| j != i).map(|j| s[j]).product())
            .collect();
        for i in 0..n {
            for j in 0..n {
                let v: f64 = (0..n)
                    .map(|k| u[i * n + k] * adj_s[k] * vh[k * n + j])
                    .sum();
                out.push(sign * v);
            }
        }
    }
    build(out, a.shape(), a)
}
