//! Saved tensors. A backward rule captures only `SavedTensor`s: the value, detached, with the
//! storage version at save time, plus the way back to the tensor's place in the graph for
//! double backward. Outside `create_graph` a rule sees the detached value, so the graph's
//! edges are exactly the nodes' inputs (`tensor/node.rs`). With grad mode on inside backward
//! (`create_graph`), it sees the graph tensor, so the gradient it computes is differentiable
//! through the saved values too (PyTorch's `SavedVariable` unpacking with its grad_fn).
//!
//! A tensor that is already in the graph when saved (an op's input) is held strongly: the
//! node holds its inputs anyway, and nothing below can reach the node, so there is no cycle.
//! A tensor saved before it enters the graph (an op's own output, saved before its node is
//! set) is held weakly, so that an output saved by its own rule creates no reference cycle.

use crate::error::{Error, Result};
use crate::tensor::{Tensor, TensorInner};
use std::sync::{Arc, Weak};

/// Where the saved tensor sits in the graph (see the module docs).
enum GraphHandle {
    /// A tensor that required grad when it was saved (an input of the op).
    Strong(Tensor),
    /// Any other tensor, which may be the op's output (its node is set after the save).
    Weak(Weak<TensorInner>),
}

/// A tensor saved by a backward rule, with the storage version at save time, so that an
/// in-place write before backward is reported instead of giving a wrong gradient.
pub struct SavedTensor {
    tensor: Tensor,
    graph: GraphHandle,
    version: u64,
    op: &'static str,
}

impl SavedTensor {
    /// Save `t` for the backward rule of `op`.
    pub fn new(op: &'static str, t: &Tensor) -> Self {
        let graph = if t.requires_grad() {
            GraphHandle::Strong(t.clone())
        } else {
            GraphHandle::Weak(Arc::downgrade(&t.inner))
        };
        SavedTensor {
            tensor: t.detach(),
            graph,
            version: t.version(),
            op,
        }
    }

    /// The saved value, or an error if it was modified in place since it was saved. With
    /// grad mode on (a backward pass with `create_graph`), the tensor with its place in the
    /// graph when it has one, so that the rule's result is differentiable; else detached.
    pub fn get(&self) -> Result<Tensor> {
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
        if super::is_grad_enabled() {
            match &self.graph {
                GraphHandle::Strong(t) => return Ok(t.clone()),
                GraphHandle::Weak(w) => {
                    if let Some(inner) = w.upgrade() {
                        let t = Tensor { inner };
                        if t.requires_grad() {
                            return Ok(t);
                        }
                    }
                }
            }
        }
        Ok(self.tensor.clone())
    }
}
