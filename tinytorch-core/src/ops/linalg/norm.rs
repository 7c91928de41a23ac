//! `linalg.vector_norm` and `linalg.matrix_norm`, composed from reductions (and the singular
//! values for the 2-norm and the nuclear norm), so their gradients are those of the pieces:
//! PyTorch's, including its conventions at zero and at ties (`norm_backward`, `amax`).

use super::check_float;
use crate::base::Dims;
use crate::error::{Error, Result};
use crate::tensor::layout::normalize_dim;
use crate::tensor::Tensor;

/// The `ord` of `linalg.vector_norm`: any real number or ±inf (`sum(|x|^p)^(1/p)`, max or min
/// of `|x|`, count of non-zeros for 0).
pub type VectorNormOrd = f64;

/// The `ord` of `linalg.matrix_norm`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MatrixNormOrd {
    /// Frobenius: the 2-norm of all entries (`'fro'`, the default).
    Fro,
    /// Nuclear: the sum of the singular values (`'nuc'`).
    Nuc,
    /// 1, -1 (max / min column sum of `|A|`), 2, -2 (largest / smallest singular value),
    /// inf, -inf (max / min row sum of `|A|`).
    P(f64),
}

impl Tensor {
    /// The vector `ord`-norm over `dims` (all dims when empty) (`torch.linalg.vector_norm(x,
    /// ord, dim, keepdim)`); see [`Tensor::norm`].
    pub fn linalg_vector_norm<D: Dims + ?Sized>(
        &self,
        ord: VectorNormOrd,
        dims: &D,
        keepdim: bool,
    ) -> Result<Tensor> {
        let dims = &*dims.to_isizes();
        check_float("linalg.vector_norm", self)?;
        self.norm(ord, dims, keepdim)
    }

    /// The matrix norm over the two dims `dims` (`(-2, -1)` in PyTorch's default) of a tensor
    /// with at least 2 dims (`torch.linalg.matrix_norm(A, ord, dim, keepdim)`).
    pub fn linalg_matrix_norm(
        &self,
        ord: MatrixNormOrd,
        dims: [isize; 2],
        keepdim: bool,
    ) -> Result<Tensor> {
        let op = "linalg.matrix_norm";
        check_float(op, self)?;
        if self.ndim() < 2 {
            return Err(Error::shape(
                op,
                format!(
                    "The input tensor A must have at least 2 dimensions (got shape {:?}).",
                    self.shape()
                ),
            ));
        }
        let d0 = normalize_dim(op, dims[0], self.ndim())? as isize;
        let d1 = normalize_dim(op, dims[1], self.ndim())? as isize;
        if d0 == d1 {
            return Err(Error::invalid(
                op,
                format!("dims must be different. Got ({d0}, {d1})"),
            ));
        }
        match ord {
            MatrixNormOrd::Fro => self.norm(2.0, &[d0, d1], keepdim),
            MatrixNormOrd::Nuc => {
                self.singular_value_norm(d0, d1, keepdim, |s| s.sum(&[-1], false))
            }
            MatrixNormOrd::P(2.0) => {
                self.singular_value_norm(d0, d1, keepdim, |s| s.amax(&[-1], false))
            }
            MatrixNormOrd::P(-2.0) => {
                self.singular_value_norm(d0, d1, keepdim, |s| s.amin(&[-1], false))
            }
            MatrixNormOrd::P(p) if p.abs() == 1.0 || p.is_infinite() => {
                // 1: max over columns of the column sums; inf: max over rows of the row sums.
                let (sum_dim, ext_dim) = if p.abs() == 1.0 { (d0, d1) } else { (d1, d0) };
                let sums = self.abs()?.sum(&[sum_dim], true)?;
                let ext = if p > 0.0 {
                    sums.amax(&[ext_dim], true)?
                } else {
                    sums.amin(&[ext_dim], true)?
                };
                if keepdim {
                    Ok(ext)
                } else {
                    ext.squeeze_dims(&[d0, d1])
                }
            }
            MatrixNormOrd::P(p) => Err(Error::invalid(op, format!("Order {p} not supported."))),
        }
    }

    /// A norm computed from the singular values: the dims `d0`, `d1` moved last, the
    /// singular values reduced by `reduce`, the reduced dims put back when `keepdim`.
    fn singular_value_norm(
        &self,
        d0: isize,
        d1: isize,
        keepdim: bool,
        reduce: impl Fn(&Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let nd = self.ndim();
        let mut perm: Vec<usize> = (0..nd)
            .filter(|&i| i as isize != d0 && i as isize != d1)
            .collect();
        perm.extend([d0 as usize, d1 as usize]);
        let moved = self.permute(&perm)?;
        let out = reduce(&moved.linalg_svdvals()?)?;
        if !keepdim {
            return Ok(out);
        }
        let (lo, hi) = (d0.min(d1), d0.max(d1));
        out.unsqueeze(lo)?.unsqueeze(hi)
    }
}
