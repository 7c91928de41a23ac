//! Saved tensors. Backward rules capture only `SavedTensor`s, which are detached, so the
//! graph's edges are exactly the nodes' inputs (`tensor/node.rs`) and an output saved by its
//! own rule creates no reference cycle.

use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// A tensor saved by a backward rule: detached, with the storage version at save time, so
/// that an in-place write before backward is reported instead of giving a wrong gradient.
pub struct SavedTensor {
    tensor: Tensor,
    version: u64,
    op: &'static str,
}

impl SavedTensor {
    /// Save `t` for the backward rule of `op`.
    pub fn new(op: &'static str, t: &Tensor) -> Self {
        SavedTensor {
            tensor: t.detach(),
            version: t.version(),
            op,
        }
    }

    /// The saved value, or an error if it was modified in place since it was saved.
    pub fn get(&self) -> Result<&Tensor> {
        let now = self.tensor.version();
        if now != self.version {
            return Err(Error::Autograd(format!(
                "one of the variables needed for gradient computation has been modified by an inplace \
                 operation: a tensor of shape {:?} saved by {} is at version {now}; expected version {}",
                self.tensor.shape(),
                self.op,
                self.version
            )));
        }
        Ok(&self.tensor)
    }
}
