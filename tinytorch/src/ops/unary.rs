//! Elementwise functions of one tensor with their derivatives.

use crate::autograd::needs_grad;
use crate::backend::UnaryOp;
use crate::error::Result;
use crate::tensor::Tensor;

impl Tensor {
    /// Apply the primitive `op` (integers are computed as the default float first).
    pub(crate) fn unary_op(&self, op: UnaryOp) -> Result<Tensor> {
        let src = self.to_dtype(self.dtype().to_float())?;
        let s = src.storage().unary(src.layout(), op)?;
        Ok(Tensor::from_contiguous(s, self.shape()))
    }

    /// Natural logarithm (`torch.log`).
    pub fn log(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Log)?;
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let x = self.save("log");
        Ok(out.record("log", &[self], move |g, _| Ok(vec![Some(g.div(x.get()?)?)])))
    }
}
