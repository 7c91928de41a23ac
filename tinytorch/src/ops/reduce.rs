//! Reductions over any set of dims (`keepdim` as in PyTorch) and scans.

use crate::autograd::needs_grad;
use crate::backend::ReduceOp;
use crate::error::Result;
use crate::tensor::layout::normalize_dims;
use crate::tensor::{DType, Tensor};

/// The shape of a reduction's output with the reduced dims kept as size 1.
fn keepdim_shape(shape: &[usize], dims: &[usize]) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .map(|(i, &d)| if dims.contains(&i) { 1 } else { d })
        .collect()
}

/// Drop the reduced dims from a keepdim shape.
fn squeezed_shape(shape: &[usize], dims: &[usize]) -> Vec<isize> {
    shape
        .iter()
        .enumerate()
        .filter(|(i, _)| !dims.contains(i))
        .map(|(_, &d)| d as isize)
        .collect()
}

impl Tensor {
    /// Sum over `dims` (empty: all dims), keeping them as size 1 if `keepdim`
    /// (`x.sum(dims, keepdim)`). Bool and integer inputs sum to i64.
    pub fn sum(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        let d = normalize_dims("sum", dims, self.ndim())?;
        let src = if self.dtype().is_float() {
            self.clone()
        } else {
            self.to_dtype(DType::I64)?
        };
        let s = src.storage().reduce(src.layout(), ReduceOp::Sum, &d)?;
        let kshape = keepdim_shape(self.shape(), &d);
        let mut out = Tensor::from_contiguous(s, &kshape);
        if !keepdim {
            out = out.view_with_layout(
                out.layout()
                    .view_as(
                        &squeezed_shape(self.shape(), &d)
                            .iter()
                            .map(|&x| x as usize)
                            .collect::<Vec<_>>(),
                    )
                    .expect("contiguous"),
            );
        }
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let in_shape = self.shape().to_vec();
        let kshape: Vec<isize> = kshape.iter().map(|&x| x as isize).collect();
        Ok(out.record("sum", &[self], move |g, _| {
            Ok(vec![Some(
                g.reshape(&kshape)?.broadcast_to(&in_shape)?.contiguous()?,
            )])
        }))
    }

    /// Sum of all elements as a 0-d tensor.
    pub fn sum_all(&self) -> Result<Tensor> {
        self.sum(&[], false)
    }
}
