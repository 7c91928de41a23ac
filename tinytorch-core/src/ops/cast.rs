//! Dtype casts and contiguous copies.

use super::view::inverse_permutation;
use crate::autograd::needs_grad;
use crate::backend::Storage;
use crate::error::Result;
use crate::tensor::{DType, Device, Tensor};

impl Tensor {
    /// Convert to `dtype` (`x.to(dtype)`). Returns the same handle when the dtype already
    /// matches. Gradients flow back through float-to-float casts. As PyTorch's
    /// `preserve_format`, a permuted dense tensor (a transposed weight, say) keeps its strides:
    /// its buffer is cast in memory order, where a row-major copy would gather one element at
    /// a time (autocast casts each Linear layer's `W^T` this way).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if self.dtype() == dtype {
            return Ok(self.clone());
        }
        let out = match self.dense_order() {
            Some(order) if !self.is_contiguous() && self.numel() > 0 => {
                // Cast the dims in memory order (a contiguous view), then put them back.
                let dense = self.detach().permute(&order)?;
                let s = dense.storage().to_dtype(dense.layout(), dtype)?;
                let back = inverse_permutation(order.iter().map(|&d| d as usize));
                Tensor::from_contiguous(s, dense.shape()).permute(&back)?
            }
            _ => Tensor::from_contiguous(
                self.storage().to_dtype(self.layout(), dtype)?,
                self.shape(),
            ),
        };
        if !needs_grad(&[self]) || !dtype.is_float() {
            return Ok(out);
        }
        let src = self.dtype();
        Ok(out.record("to_dtype", &[self], move |g, _| {
            Ok(vec![Some(g.to_dtype(src)?)])
        }))
    }

    /// The dims from the largest stride to the smallest when they lay the elements out
    /// densely without overlap (`self.permute(order)` is contiguous), else `None`.
    fn dense_order(&self) -> Option<Vec<isize>> {
        let (shape, strides) = (self.shape(), self.layout().strides());
        let mut order: Vec<usize> = (0..shape.len()).collect();
        // Dims of size 1 have no say in the layout: they go first, in their order.
        order.sort_by_key(|&d| {
            std::cmp::Reverse(if shape[d] == 1 {
                usize::MAX
            } else {
                strides[d]
            })
        });
        let mut expected = 1;
        for &d in order.iter().rev() {
            if shape[d] != 1 && strides[d] != expected {
                return None;
            }
            expected *= shape[d];
        }
        Some(order.into_iter().map(|d| d as isize).collect())
    }

    /// Move to `device` (`x.to(device)`); the same handle when already there. Gradients
    /// flow back to the source device.
    pub fn to_device(&self, device: Device) -> Result<Tensor> {
        if self.device() == device {
            return Ok(self.clone());
        }
        let host = self.storage().to_cpu(self.layout())?;
        let out = Tensor::from_contiguous(Storage::from_cpu(host, device)?, self.shape());
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let src = self.device();
        Ok(out.record("to_device", &[self], move |g, _| {
            Ok(vec![Some(g.to_device(src)?)])
        }))
    }

    /// Move to `cuda:0` (`x.cuda()`).
    pub fn cuda(&self) -> Result<Tensor> {
        self.to_device(Device::Cuda(0))
    }

    /// Move to the host (`x.cpu()`).
    pub fn cpu(&self) -> Result<Tensor> {
        self.to_device(Device::Cpu)
    }

    /// A contiguous tensor with the same values: `self` when already contiguous, otherwise a
    /// copy (`x.contiguous()`).
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.contiguous_copy()
    }

    /// A copy in a new contiguous buffer, even when `self` is contiguous (`x.clone()` in
    /// PyTorch; named so because `Clone` on `Tensor` copies the handle). Differentiable.
    pub fn contiguous_copy(&self) -> Result<Tensor> {
        let s = self.storage().to_contiguous(self.layout())?;
        let out = Tensor::from_contiguous(s, self.shape());
        Ok(out.record("clone", &[self], |g, _| Ok(vec![Some(g.clone())])))
    }
}
