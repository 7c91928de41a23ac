//! What `torch.linalg` composes from the factorisations: `matrix_power` (repeated squaring,
//! the inverse for negative powers), `pinv` (through the SVD) and `lstsq`'s solution
//! (through `pinv`). Their gradients are those of the pieces.

use super::{check_matrix, mt};
use crate::error::Result;
use crate::tensor::{DType, Tensor};

impl Tensor {
    /// `A^k` for each square matrix of `(*, n, n)` (`torch.linalg.matrix_power`): the
    /// identity for `k = 0`, repeated squaring for `k > 0`, the same on `inv(A)` for `k < 0`.
    pub fn linalg_matrix_power(&self, k: i64) -> Result<Tensor> {
        let op = "linalg.matrix_power";
        check_matrix(op, self, true)?;
        let n = self.shape()[self.ndim() - 1];
        if k == 0 {
            let eye = Tensor::eye(n, n, self.dtype(), self.device())?;
            return eye.expand(&self.shape())?.contiguous();
        }
        let base = if k < 0 {
            self.linalg_inv()?
        } else {
            self.clone()
        };
        let (mut e, mut sq, mut acc): (u64, Tensor, Option<Tensor>) =
            (k.unsigned_abs(), base, None);
        loop {
            if e & 1 == 1 {
                acc = Some(match acc {
                    Some(a) => a.matmul(&sq)?,
                    None => sq.clone(),
                });
            }
            e >>= 1;
            if e == 0 {
                break;
            }
            sq = sq.matmul(&sq)?;
        }
        Ok(acc.expect("k != 0"))
    }

    /// The Moore-Penrose pseudo-inverse of each matrix of `(*, m, n)` (`torch.linalg.pinv(A,
    /// rtol=None)`): `Vh^T diag(1/s) U^T` over the singular values `s > rtol * max(s)`, with
    /// PyTorch's default `rtol = max(m, n) * eps(dtype)` when `rtol` is `None`.
    pub fn linalg_pinv(&self, rtol: Option<f64>) -> Result<Tensor> {
        check_matrix("linalg.pinv", self, false)?;
        let (m, n) = (self.shape()[self.ndim() - 2], self.shape()[self.ndim() - 1]);
        let eps = if self.dtype() == DType::F32 {
            f32::EPSILON as f64
        } else {
            f64::EPSILON
        };
        let rtol = rtol.unwrap_or(m.max(n) as f64 * eps);
        let (u, s, vh) = self.linalg_svd(false)?;
        if s.shape()[s.ndim() - 1] == 0 {
            return Tensor::zeros(
                &{
                    let mut sh = self.shape().to_vec();
                    let nd = sh.len();
                    sh.swap(nd - 2, nd - 1);
                    sh
                },
                self.dtype(),
                self.device(),
            );
        }
        let cutoff = s.amax(&[-1], true)?.mul_scalar(rtol)?;
        let keep = s.gt(&cutoff)?;
        // 1/s where kept, 0 elsewhere; the masked entries get no gradient.
        let safe = Tensor::where_cond(&keep, &s, &s.ones_like()?)?;
        let s_inv = Tensor::where_cond(&keep, &safe.reciprocal()?, &s.zeros_like()?)?;
        mt(&vh)?.mul(&s_inv.unsqueeze(-2)?)?.matmul(&mt(&u)?)
    }

    /// The least-squares solution `X` minimising `||A X - B||` for `A` `(*, m, n)` and `B`
    /// `(*, m, k)` (`torch.linalg.lstsq(A, B).solution`), as `pinv(A) @ B`: the minimum-norm
    /// solution, also for rank-deficient `A`. `rcond` is `pinv`'s `rtol`.
    pub fn linalg_lstsq(&self, b: &Tensor, rcond: Option<f64>) -> Result<Tensor> {
        check_matrix("linalg.lstsq", self, false)?;
        check_matrix("linalg.lstsq", b, false)?;
        self.linalg_pinv(rcond)?.matmul(b)
    }
}
