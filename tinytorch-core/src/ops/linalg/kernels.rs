//! The numeric kernels of `torch.linalg`, on one row-major matrix of f64 at a time: LU with
//! partial pivoting (solve, inverse, determinant), triangular solves, Cholesky, Householder
//! QR, the cyclic Jacobi eigen-solver for symmetric matrices and the one-sided Jacobi SVD.
//!
//! They are the textbook algorithms (Golub & Van Loan, "Matrix Computations", 4th ed.:
//! 3.4 LU, 4.2 Cholesky, 5.1-5.2 Householder QR, 8.5 Jacobi, 8.6.3 one-sided Jacobi SVD),
//! written for readability: unblocked, O(n^3) per matrix. The op layer (`ops/linalg/*.rs`)
//! reads a tensor's matrices to the host in f64, calls these per batch element, and builds
//! the results; every computation here accumulates in f64 whatever the tensor's dtype.
//!
//! Layout: an `m x n` matrix is `a[i * n + j]`.

/// The transpose of the `m x n` matrix `a` (`n x m`).
fn transpose_of(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut t = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            t[j * m + i] = a[i * n + j];
        }
    }
    t
}

/// Rows `r0` and `r1` swapped: `a[r0]` row and `a[r1]` row of a matrix with `n` columns.
fn swap_rows(a: &mut [f64], n: usize, r0: usize, r1: usize) {
    if r0 != r1 {
        for j in 0..n {
            a.swap(r0 * n + j, r1 * n + j);
        }
    }
}

/// LU factorisation with partial pivoting of a square matrix, `P A = L U` (LAPACK's getrf).
pub(crate) struct Lu {
    /// `L` (unit diagonal, not stored) below the diagonal and `U` on and above it, `n x n`.
    pub lu: Vec<f64>,
    /// `perm[i]`: the row of `A` that is row `i` of `P A`.
    pub perm: Vec<usize>,
    /// +1 or -1: the sign of the permutation (an even or odd number of swaps).
    pub sign: f64,
    /// The first zero pivot `U[k, k]`, 1-based as LAPACK's `info` (`None` when `A` is
    /// invertible in exact arithmetic on the computed factors).
    pub zero_pivot: Option<usize>,
    pub n: usize,
}

/// `P A = L U` of the `n x n` matrix `a`. The pivot of column `k` is the largest `|a[i, k]|`
/// for `i >= k`; a zero pivot leaves its column as it is (LAPACK continues the same way), so
/// `U` is still right and the determinant is 0.
pub(crate) fn lu_factor(a: &[f64], n: usize) -> Lu {
    let mut lu = a.to_vec();
    let mut perm: Vec<usize> = (0..n).collect();
    let mut sign = 1.0;
    let mut zero_pivot = None;
    for k in 0..n {
        let mut p = k;
        for i in k + 1..n {
            if lu[i * n + k].abs() > lu[p * n + k].abs() {
                p = i;
            }
        }
        if p != k {
            swap_rows(&mut lu, n, p, k);
            perm.swap(p, k);
            sign = -sign;
        }
        let pivot = lu[k * n + k];
        if pivot == 0.0 {
            zero_pivot.get_or_insert(k + 1);
            continue;
        }
        for i in k + 1..n {
            let l = lu[i * n + k] / pivot;
            lu[i * n + k] = l;
            if l != 0.0 {
                for j in k + 1..n {
                    lu[i * n + j] -= l * lu[k * n + j];
                }
            }
        }
    }
    Lu {
        lu,
        perm,
        sign,
        zero_pivot,
        n,
    }
}

impl Lu {
    /// `det(A) = sign(P) * prod(diag(U))`.
    pub fn det(&self) -> f64 {
        (0..self.n).fold(self.sign, |d, k| d * self.lu[k * self.n + k])
    }

    /// `(sign, log|det|)` of `A` (`(0, -inf)` when singular), without the overflow of `det`.
    pub fn slogdet(&self) -> (f64, f64) {
        let (mut sign, mut log) = (self.sign, 0.0);
        for k in 0..self.n {
            let u = self.lu[k * self.n + k];
            if u == 0.0 {
                return (0.0, f64::NEG_INFINITY);
            }
            sign *= u.signum();
            log += u.abs().ln();
        }
        (sign, log)
    }

    /// `X` with `A X = B` for `B` of shape `n x k`: permute, then `L y = P b` forward and
    /// `U x = y` backward. Call only when `zero_pivot` is `None`.
    pub fn solve(&self, b: &[f64], k: usize) -> Vec<f64> {
        let n = self.n;
        let mut x = vec![0.0; n * k];
        for (i, &p) in self.perm.iter().enumerate() {
            x[i * k..(i + 1) * k].copy_from_slice(&b[p * k..(p + 1) * k]);
        }
        for i in 0..n {
            for j in 0..i {
                let l = self.lu[i * n + j];
                if l != 0.0 {
                    for c in 0..k {
                        x[i * k + c] -= l * x[j * k + c];
                    }
                }
            }
        }
        for i in (0..n).rev() {
            for j in i + 1..n {
                let u = self.lu[i * n + j];
                if u != 0.0 {
                    for c in 0..k {
                        x[i * k + c] -= u * x[j * k + c];
                    }
                }
            }
            let d = self.lu[i * n + i];
            for c in 0..k {
                x[i * k + c] /= d;
            }
        }
        x
    }
}

/// The `n x n` identity.
pub(crate) fn identity(n: usize) -> Vec<f64> {
    let mut e = vec![0.0; n * n];
    for i in 0..n {
        e[i * n + i] = 1.0;
    }
    e
}

/// `X` with `A X = B` for triangular `A` (`n x n`, only its `upper` or lower triangle read)
/// and `B` of shape `n x k`, by substitution; `unit` takes the diagonal as ones. A zero on
/// the diagonal gives inf/NaN, as LAPACK's trtrs leaves it to the caller.
pub(crate) fn solve_triangular(
    a: &[f64],
    b: &[f64],
    n: usize,
    k: usize,
    upper: bool,
    unit: bool,
) -> Vec<f64> {
    let mut x = b.to_vec();
    let rows: Vec<usize> = if upper {
        (0..n).rev().collect()
    } else {
        (0..n).collect()
    };
    for &i in &rows {
        let others: Box<dyn Iterator<Item = usize>> = if upper {
            Box::new(i + 1..n)
        } else {
            Box::new(0..i)
        };
        for j in others {
            let aij = a[i * n + j];
            if aij != 0.0 {
                for c in 0..k {
                    x[i * k + c] -= aij * x[j * k + c];
                }
            }
        }
        if !unit {
            let d = a[i * n + i];
            for c in 0..k {
                x[i * k + c] /= d;
            }
        }
    }
    x
}

/// The lower Cholesky factor `L` (`A = L L^T`) of the symmetric `n x n` matrix whose lower
/// triangle is `a` (the upper triangle is not read, as LAPACK's potrf with `uplo='L'`).
/// `Err(k)`: the leading minor of order `k` (1-based) is not positive definite.
pub(crate) fn cholesky(a: &[f64], n: usize) -> Result<Vec<f64>, usize> {
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= l[j * n + k] * l[j * n + k];
        }
        if d.is_nan() || d <= 0.0 {
            return Err(j + 1);
        }
        let d = d.sqrt();
        l[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = s / d;
        }
    }
    Ok(l)
}

/// Householder QR of the `m x n` matrix `a` (LAPACK's geqrf + orgqr conventions, so `Q` and
/// `R` match PyTorch's up to rounding): returns `(Q, R)` with `Q` of shape `m x q` and `R`
/// `q x n`, where `q = m` when `complete` and `min(m, n)` otherwise.
///
/// Each reflector `H = I - tau v v^T` (`v[0] = 1`) maps the column below the diagonal onto
/// `beta e_0` with `beta = -sign(alpha) * ||x||` (the sign that avoids cancellation); a
/// column already zero below the diagonal gets `tau = 0` (no reflection), as dlarfg.
pub(crate) fn householder_qr(
    a: &[f64],
    m: usize,
    n: usize,
    complete: bool,
) -> (Vec<f64>, Vec<f64>) {
    let mut r = a.to_vec();
    let kmax = m.min(n);
    let mut taus = vec![0.0; kmax];
    // v below the diagonal of column k is stored in vs[k] (length m - k - 1).
    let mut vs: Vec<Vec<f64>> = Vec::with_capacity(kmax);
    for k in 0..kmax {
        let alpha = r[k * n + k];
        let xnorm = (k + 1..m).map(|i| r[i * n + k].powi(2)).sum::<f64>().sqrt();
        if xnorm == 0.0 {
            vs.push(vec![0.0; m - k - 1]);
            continue;
        }
        let beta = -alpha.hypot(xnorm).copysign(alpha);
        let tau = (beta - alpha) / beta;
        let scale = 1.0 / (alpha - beta);
        let v: Vec<f64> = (k + 1..m).map(|i| r[i * n + k] * scale).collect();
        r[k * n + k] = beta;
        for i in k + 1..m {
            r[i * n + k] = 0.0;
        }
        // Apply H to the remaining columns: col -= tau * v * (v^T col).
        for j in k + 1..n {
            let mut w = r[k * n + j];
            for (t, i) in (k + 1..m).enumerate() {
                w += v[t] * r[i * n + j];
            }
            w *= tau;
            r[k * n + j] -= w;
            for (t, i) in (k + 1..m).enumerate() {
                r[i * n + j] -= w * v[t];
            }
        }
        taus[k] = tau;
        vs.push(v);
    }
    let q_cols = if complete { m } else { kmax };
    // Q = H_0 H_1 ... H_{k-1} applied to the first q columns of I, last reflector first.
    let mut q = vec![0.0; m * q_cols];
    for i in 0..q_cols.min(m) {
        q[i * q_cols + i] = 1.0;
    }
    for k in (0..kmax).rev() {
        let (tau, v) = (taus[k], &vs[k]);
        if tau == 0.0 {
            continue;
        }
        for j in 0..q_cols {
            let mut w = q[k * q_cols + j];
            for (t, i) in (k + 1..m).enumerate() {
                w += v[t] * q[i * q_cols + j];
            }
            w *= tau;
            q[k * q_cols + j] -= w;
            for (t, i) in (k + 1..m).enumerate() {
                q[i * q_cols + j] -= w * v[t];
            }
        }
    }
    let r_rows = if complete { m } else { kmax };
    let mut r_out = vec![0.0; r_rows * n];
    for i in 0..r_rows.min(m) {
        for j in i..n {
            r_out[i * n + j] = r[i * n + j];
        }
    }
    (q, r_out)
}

/// Flip the sign of each column of the `rows x cols` matrix `v` so that its entry of largest
/// magnitude is positive: a deterministic choice among the equally valid signs of
/// eigenvectors.
fn fix_signs(v: &mut [f64], rows: usize, cols: usize) {
    for j in 0..cols {
        let mut best = 0.0f64;
        for i in 0..rows {
            let x = v[i * cols + j];
            if x.abs() > best.abs() {
                best = x;
            }
        }
        if best < 0.0 {
            for i in 0..rows {
                v[i * cols + j] = -v[i * cols + j];
            }
        }
    }
}

/// Eigen-decomposition of a symmetric `n x n` matrix by cyclic Jacobi rotations: returns
/// `(eigenvalues ascending, V)` with `A = V diag(w) V^T` and the eigenvectors in the columns
/// of `V`. Only the `upper` (or lower) triangle of `a` is read, as LAPACK's syevd with UPLO.
///
/// Each rotation zeroes one off-diagonal pair; sweeps repeat until the off-diagonal mass is
/// below `eps * ||A||` (quadratic convergence near the end, usually 6-10 sweeps). Jacobi is
/// slower than tridiagonal QR but accurate to high relative precision and short to read.
pub(crate) fn eigh_jacobi(a: &[f64], n: usize, upper: bool) -> (Vec<f64>, Vec<f64>) {
    let mut s = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let (r, c) = if (j >= i) == upper { (i, j) } else { (j, i) };
            s[i * n + j] = a[r * n + c];
        }
    }
    let mut v = identity(n);
    let norm: f64 = s.iter().map(|x| x * x).sum::<f64>().sqrt();
    let tol = f64::EPSILON * norm;
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| s[i * n + j].powi(2))
            .sum::<f64>()
            .sqrt();
        if off <= tol || off == 0.0 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = s[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let (app, aqq) = (s[p * n + p], s[q * n + q]);
                let theta = (aqq - app) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let sn = t * c;
                // S <- J^T S J with J the rotation in the (p, q) plane.
                for k in 0..n {
                    let (skp, skq) = (s[k * n + p], s[k * n + q]);
                    s[k * n + p] = c * skp - sn * skq;
                    s[k * n + q] = sn * skp + c * skq;
                }
                for k in 0..n {
                    let (spk, sqk) = (s[p * n + k], s[q * n + k]);
                    s[p * n + k] = c * spk - sn * sqk;
                    s[q * n + k] = sn * spk + c * sqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - sn * vkq;
                    v[k * n + q] = sn * vkp + c * vkq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| s[i * n + i].total_cmp(&s[j * n + j]));
    let w: Vec<f64> = order.iter().map(|&i| s[i * n + i]).collect();
    let mut vs = vec![0.0; n * n];
    for (new, &old) in order.iter().enumerate() {
        for k in 0..n {
            vs[k * n + new] = v[k * n + old];
        }
    }
    fix_signs(&mut vs, n, n);
    (w, vs)
}

/// Extend the first `k` orthonormal columns of the `m x m` matrix `u` to an orthonormal basis
/// of R^m: each new column is the standard basis vector with the largest component left after
/// projecting out the columns so far (Gram-Schmidt, applied twice for orthogonality).
fn complete_basis(u: &mut [f64], m: usize, k: usize) {
    for col in k..m {
        let mut best: Option<(f64, Vec<f64>)> = None;
        for e in 0..m {
            let mut v = vec![0.0; m];
            v[e] = 1.0;
            for _ in 0..2 {
                for c in 0..col {
                    let dot: f64 = (0..m).map(|i| u[i * m + c] * v[i]).sum();
                    for (i, vi) in v.iter_mut().enumerate() {
                        *vi -= dot * u[i * m + c];
                    }
                }
            }
            let nv = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            if best.as_ref().is_none_or(|(b, _)| nv > *b) {
                best = Some((nv, v));
            }
        }
        let (nv, v) = best.expect("m > 0");
        for (i, vi) in v.iter().enumerate() {
            u[i * m + col] = vi / nv;
        }
    }
}

/// Singular value decomposition `A = U diag(S) Vh` of the `m x n` matrix `a` by one-sided
/// (Hestenes) Jacobi: column pairs of a working copy are rotated until all are orthogonal;
/// their norms are the singular values. Returns `(U, S descending, Vh)`: `U` is `m x m` and
/// `Vh` `n x n` when `full`, else `m x k` and `k x n` with `k = min(m, n)`.
///
/// Works on `A^T` when `m < n`, so the rotated columns are always the longer side. Singular
/// vectors of zero singular values (and the extra columns of `full`) complete the
/// orthonormal basis. Signs are fixed so that the largest entry of each right singular
/// vector is positive.
pub(crate) fn svd_jacobi(
    a: &[f64],
    m: usize,
    n: usize,
    full: bool,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    if m < n {
        // A^T = V S U^T: swap the roles of U and V.
        let at = transpose_of(a, m, n);
        // A^T = Ua S Vha, so A = Vha^T S Ua^T: U = Vha^T (m x m), Vh = Ua^T (uac x n).
        let (ua, s, vha) = svd_jacobi(&at, n, m, full);
        let uac = if full { n } else { m };
        let u = transpose_of(&vha, m, m);
        let vh = transpose_of(&ua, n, uac);
        return (u, s, vh);
    }
    // m >= n: rotate the n columns of W = A (m x n), accumulating V (n x n).
    let mut w = a.to_vec();
    let mut v = identity(n);
    for _sweep in 0..100 {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, 0.0);
                for i in 0..m {
                    let (wp, wq) = (w[i * n + p], w[i * n + q]);
                    alpha += wp * wp;
                    beta += wq * wq;
                    gamma += wp * wq;
                }
                if gamma == 0.0 || gamma.abs() <= f64::EPSILON * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                for i in 0..m {
                    let (wp, wq) = (w[i * n + p], w[i * n + q]);
                    w[i * n + p] = c * wp - s * wq;
                    w[i * n + q] = s * wp + c * wq;
                }
                for i in 0..n {
                    let (vp, vq) = (v[i * n + p], v[i * n + q]);
                    v[i * n + p] = c * vp - s * vq;
                    v[i * n + q] = s * vp + c * vq;
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let norms: Vec<f64> = (0..n)
        .map(|j| (0..m).map(|i| w[i * n + j].powi(2)).sum::<f64>().sqrt())
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| norms[j].total_cmp(&norms[i]));
    let s: Vec<f64> = order.iter().map(|&j| norms[j]).collect();
    // U's first n columns are the normalised columns of W; zero ones are completed below.
    let mut u = vec![0.0; m * m];
    let mut vs = vec![0.0; n * n];
    // Columns with a singular value this small relative to the largest are numerically zero.
    let tiny = s.first().copied().unwrap_or(0.0) * f64::EPSILON * (m as f64);
    let mut nonzero = 0;
    for (new, &old) in order.iter().enumerate() {
        for i in 0..n {
            vs[i * n + new] = v[i * n + old];
        }
        if norms[old] > tiny && norms[old] > 0.0 {
            nonzero = new + 1;
            for i in 0..m {
                u[i * m + new] = w[i * n + old] / norms[old];
            }
        }
    }
    complete_basis(&mut u, m, nonzero);
    // Signs: largest entry of each right singular vector positive (and U's column with it).
    for j in 0..n {
        let mut best = 0.0f64;
        for i in 0..n {
            let x = vs[i * n + j];
            if x.abs() > best.abs() {
                best = x;
            }
        }
        if best < 0.0 {
            for i in 0..n {
                vs[i * n + j] = -vs[i * n + j];
            }
            for i in 0..m {
                u[i * m + j] = -u[i * m + j];
            }
        }
    }
    let uc = if full { m } else { n };
    let mut u_out = vec![0.0; m * uc];
    for i in 0..m {
        u_out[i * uc..(i + 1) * uc].copy_from_slice(&u[i * m..i * m + uc]);
    }
    // Vh = V^T (n x n; with m >= n reduced and full agree).
    let mut vh = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            vh[j * n + i] = vs[i * n + j];
        }
    }
    (u_out, s, vh)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for p in 0..k {
                for j in 0..n {
                    c[i * n + j] += a[i * k + p] * b[p * n + j];
                }
            }
        }
        c
    }

    fn transpose(a: &[f64], m: usize, n: usize) -> Vec<f64> {
        let mut t = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                t[j * m + i] = a[i * n + j];
            }
        }
        t
    }

    fn max_diff(a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max)
    }

    /// A fixed pseudo-random matrix (an LCG), entries in [-1, 1).
    fn rand_mat(m: usize, n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..m * n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn lu_inverse_and_det() {
        for n in 1..7 {
            let a = rand_mat(n, n, n as u64);
            let lu = lu_factor(&a, n);
            assert!(lu.zero_pivot.is_none());
            let inv = lu.solve(&identity(n), n);
            assert!(max_diff(&matmul(&a, &inv, n, n, n), &identity(n)) < 1e-10);
            // det via the Leibniz formula on 2x2, via the product rule elsewhere.
            if n == 2 {
                assert!((lu.det() - (a[0] * a[3] - a[1] * a[2])).abs() < 1e-14);
            }
            let (sign, log) = lu.slogdet();
            assert!((sign * log.exp() - lu.det()).abs() < 1e-12 * lu.det().abs().max(1.0));
        }
        let singular = [1.0, 2.0, 2.0, 4.0];
        assert_eq!(lu_factor(&singular, 2).zero_pivot, Some(2));
        assert_eq!(lu_factor(&singular, 2).det(), 0.0);
    }

    #[test]
    fn triangular_solves() {
        let n = 5;
        let mut l = rand_mat(n, n, 3);
        for i in 0..n {
            l[i * n + i] += 3.0;
        }
        let b = rand_mat(n, 2, 4);
        for upper in [false, true] {
            let mut t = l.clone();
            for i in 0..n {
                for j in 0..n {
                    if (upper && j < i) || (!upper && j > i) {
                        t[i * n + j] = 0.0;
                    }
                }
            }
            let x = solve_triangular(&l, &b, n, 2, upper, false);
            assert!(max_diff(&matmul(&t, &x, n, n, 2), &b) < 1e-12);
        }
    }

    #[test]
    fn cholesky_reconstructs() {
        let n = 6;
        let b = rand_mat(n, n, 7);
        let mut a = matmul(&b, &transpose(&b, n, n), n, n, n);
        for i in 0..n {
            a[i * n + i] += 0.5;
        }
        let l = cholesky(&a, n).unwrap();
        assert!(max_diff(&matmul(&l, &transpose(&l, n, n), n, n, n), &a) < 1e-12);
        assert_eq!(cholesky(&[1.0, 2.0, 2.0, 1.0], 2), Err(2));
        assert_eq!(cholesky(&[-1.0], 1), Err(1));
    }

    #[test]
    fn qr_reconstructs_and_is_orthogonal() {
        for &(m, n) in &[(5, 3), (3, 5), (4, 4), (1, 3), (3, 1)] {
            let a = rand_mat(m, n, (m * 10 + n) as u64);
            for complete in [false, true] {
                let (q, r) = householder_qr(&a, m, n, complete);
                let qc = if complete { m } else { m.min(n) };
                assert!(max_diff(&matmul(&q, &r, m, qc, n), &a) < 1e-12, "{m}x{n}");
                let qtq = matmul(&transpose(&q, m, qc), &q, qc, m, qc);
                assert!(max_diff(&qtq, &identity(qc)) < 1e-12);
                for i in 0..qc {
                    for j in 0..i.min(n) {
                        assert_eq!(r[i * n + j], 0.0);
                    }
                }
            }
        }
    }

    #[test]
    fn eigh_reconstructs() {
        let n = 6;
        let b = rand_mat(n, n, 11);
        let a: Vec<f64> = (0..n * n).map(|k| b[k] + b[(k % n) * n + k / n]).collect();
        let (w, v) = eigh_jacobi(&a, n, false);
        assert!(w.windows(2).all(|p| p[0] <= p[1]));
        let mut vd = v.clone();
        for i in 0..n {
            for (j, wj) in w.iter().enumerate() {
                vd[i * n + j] *= wj;
            }
        }
        let back = matmul(&vd, &transpose(&v, n, n), n, n, n);
        assert!(max_diff(&back, &a) < 1e-12);
        let vtv = matmul(&transpose(&v, n, n), &v, n, n, n);
        assert!(max_diff(&vtv, &identity(n)) < 1e-12);
    }

    #[test]
    fn svd_reconstructs() {
        for &(m, n) in &[(5, 3), (3, 5), (4, 4), (1, 3), (3, 1)] {
            let mut a = rand_mat(m, n, (m * 7 + n) as u64);
            if m == 4 {
                // rank-deficient: the last row repeats the first.
                a.copy_within(0..n, 3 * n);
            }
            let k = m.min(n);
            for full in [false, true] {
                let (u, s, vh) = svd_jacobi(&a, m, n, full);
                let (uc, vr) = if full { (m, n) } else { (k, k) };
                assert_eq!((u.len(), s.len(), vh.len()), (m * uc, k, vr * n));
                assert!(s.windows(2).all(|p| p[0] >= p[1]));
                let mut us = vec![0.0; m * n];
                for i in 0..m {
                    for (j, sj) in s.iter().enumerate() {
                        for c in 0..n {
                            us[i * n + c] += u[i * uc + j] * sj * vh[j * n + c];
                        }
                    }
                }
                assert!(max_diff(&us, &a) < 1e-12, "{m}x{n}");
                let utu = matmul(&transpose(&u, m, uc), &u, uc, m, uc);
                assert!(max_diff(&utu, &identity(uc)) < 1e-12);
                let vvt = matmul(&vh, &transpose(&vh, vr, n), vr, n, vr);
                assert!(max_diff(&vvt, &identity(vr)) < 1e-12);
            }
        }
    }
}
