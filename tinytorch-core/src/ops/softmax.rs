//! Softmax and log-softmax along one dim: one fused, numerically stable kernel forward (max,
//! sum of exponentials, normalise) and a backward rule written with Tensor ops.

use crate::autograd::needs_grad;
use crate::base::Dim;
use crate::error::Result;
use crate::tensor::layout::normalize_dim;
use crate::tensor::{DType, Tensor};

impl Tensor {
    /// The fused kernel on `self`, which must be a float tensor (PyTorch refuses integers
    /// unless a dtype is given: cast first); no autograd.
    fn softmax_raw(&self, name: &'static str, dim: isize, log: bool) -> Result<(Tensor, usize)> {
        self.require_float(name)?;
        let d = normalize_dim(name, dim, self.ndim())?;
        // A 0-d tensor is a row of one: exp(x - x) / 1, so NaN for an infinite x, as in
        // PyTorch (not a constant 1).
        let row = if self.ndim() == 0 {
            self.reshape(&[1])?
        } else {
            self.clone()
        };
        let s = row.storage().softmax(row.layout(), d, log)?;
        Ok((Tensor::from_contiguous(s, self.shape()), d))
    }

    /// `exp(x) / sum(exp(x))` along `dim` (`torch.softmax(x, dim)`). Stable for any
    /// finite input; a slice of all -inf gives NaN, as in PyTorch.
    pub fn softmax(&self, dim: impl Dim) -> Result<Tensor> {
        let dim = dim.to_isize();
        if crate::amp::runs_in_f32(self) {
            return self.to_dtype(DType::F32)?.softmax(dim);
        }
        let (out, d) = self.softmax_raw("softmax", dim, false)?;
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let y = out.save("softmax");
        Ok(out.record("softmax", &[self], move |g, _| {
            // dx = y * (g - sum(g * y))
            let y = &y.get()?;
            let dot = g.mul(y)?.sum(&[d], true)?;
            Ok(vec![Some(y.mul(&g.sub(&dot)?)?)])
        }))
    }

    /// `x - log(sum(exp(x)))` along `dim` (`torch.log_softmax(x, dim)`), stable for any
    /// finite input.
    pub fn log_softmax(&self, dim: impl Dim) -> Result<Tensor> {
        let dim = dim.to_isize();
        if crate::amp::runs_in_f32(self) {
            return self.to_dtype(DType::F32)?.log_softmax(dim);
        }
        let (out, d) = self.softmax_raw("log_softmax", dim, true)?;
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let y = out.save("log_softmax");
        Ok(out.record("log_softmax", &[self], move |g, _| {
            // dx = g - exp(y) * sum(g). exp(y) is the softmax of x; it is computed as
            // softmax(y), equal since softmax is shift-invariant and y = x - logsumexp(x),
            // and it reuses the fused kernel.
            let p = y.get()?.softmax(d)?;
            let total = g.sum(&[d], true)?;
            Ok(vec![Some(g.sub(&p.mul(&total)?)?)])
        }))
    }
}
