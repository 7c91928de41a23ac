//! The special functions of `torch.special` that are primitives (their kernels are in
//! `backend/cpu/special.rs` and the CUDA elementwise kernel): `erfc`, `erfinv`, `lgamma`,
//! `digamma`, `polygamma(1, x)`, and the modified Bessel functions `i0`, `i0e`, `i1`, `i1e`.
//! Integers compute in the default float, as PyTorch. The rest of `torch.special` (`logit`,
//! `xlogy`, `ndtr`, `sinc`, `entr`, ...) is composed from these in the Python package.

use super::unary::{Saved, TWO_OVER_SQRT_PI};
use crate::backend::UnaryOp;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// `1 - erf(x)` without cancellation for large `x` (`torch.erfc`).
    pub fn erfc(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Erfc)?;
        self.unary_backward(out, "erfc", Saved::Input, |g, x| {
            g.mul(&x.square()?.neg()?.exp()?.mul_scalar(-TWO_OVER_SQRT_PI)?)
        })
    }

    /// The inverse error function on `[-1, 1]` (`torch.erfinv`): ±inf at ±1, NaN outside.
    /// Gradient `sqrt(pi)/2 * exp(erfinv(x)^2)`.
    pub fn erfinv(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Erfinv)?;
        self.unary_backward(out, "erfinv", Saved::Output, |g, y| {
            g.mul(&y.square()?.exp()?.mul_scalar(1.0 / TWO_OVER_SQRT_PI)?)
        })
    }

    /// `log|Gamma(x)|` (`torch.lgamma`, `torch.special.gammaln`); gradient `digamma(x)`.
    pub fn lgamma(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Lgamma)?;
        self.unary_backward(out, "lgamma", Saved::Input, |g, x| g.mul(&x.digamma()?))
    }

    /// The logarithmic derivative of Gamma (`torch.digamma`, `torch.special.psi`): -inf at 0,
    /// NaN at the negative integers, as PyTorch. Gradient `polygamma(1, x)`.
    pub fn digamma(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Digamma)?;
        self.unary_backward(out, "digamma", Saved::Input, |g, x| g.mul(&x.polygamma(1)?))
    }

    /// The `n`-th derivative of digamma (`torch.polygamma(n, x)`) for `n` 0 (digamma) and 1
    /// (trigamma); higher orders are not implemented. Trigamma's own gradient is not either.
    pub fn polygamma(&self, n: u32) -> Result<Tensor> {
        match n {
            0 => self.digamma(),
            1 => {
                let out = self.unary_op(UnaryOp::Trigamma)?;
                self.unary_backward(out, "polygamma", Saved::Input, |_, _| {
                    Err(Error::NotImplemented {
                        op: "polygamma",
                        what: "the derivative of polygamma(1, x) (it needs polygamma(2, x))".into(),
                    })
                })
            }
            _ => Err(Error::NotImplemented {
                op: "polygamma",
                what: format!("order n = {n} (orders 0 and 1 are implemented)"),
            }),
        }
    }

    /// The modified Bessel function of the first kind of order 0 (`torch.i0`); gradient `i1`.
    pub fn i0(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::I0)?;
        self.unary_backward(out, "i0", Saved::Input, |g, x| g.mul(&x.i1()?))
    }

    /// `i0(x) * exp(-|x|)` (`torch.special.i0e`); gradient `i1e(x) - sign(x) i0e(x)`.
    pub fn i0e(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::I0e)?;
        self.unary_backward(out, "i0e", Saved::Input, |g, x| {
            g.mul(&x.i1e()?.sub(&x.sign()?.mul(&x.i0e()?)?)?)
        })
    }

    /// The modified Bessel function of the first kind of order 1 (`torch.special.i1`);
    /// gradient `i0(x) - i1(x) / x`, 1/2 at 0.
    pub fn i1(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::I1)?;
        self.unary_backward(out, "i1", Saved::Input, |g, x| {
            let zero = x.eq_scalar(0.0)?;
            let ratio = x
                .i1()?
                .div(&x.masked_fill(&zero, 1.0)?)?
                .masked_fill(&zero, 0.5)?;
            g.mul(&x.i0()?.sub(&ratio)?.masked_fill(&zero, 0.5)?)
        })
    }

    /// `i1(x) * exp(-|x|)` (`torch.special.i1e`); gradient `i0e(x) - i1e(x) (sign(x) + 1/x)`,
    /// 1/2 at 0.
    pub fn i1e(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::I1e)?;
        self.unary_backward(out, "i1e", Saved::Input, |g, x| {
            let zero = x.eq_scalar(0.0)?;
            let safe = x.masked_fill(&zero, 1.0)?;
            let i1e = x.i1e()?;
            let d = x
                .i0e()?
                .sub(&i1e.mul(&x.sign()?)?)?
                .sub(&i1e.div(&safe)?)?
                .masked_fill(&zero, 0.5)?;
            g.mul(&d)
        })
    }
}
