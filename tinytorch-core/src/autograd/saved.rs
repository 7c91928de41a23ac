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
    /// The op that produced the tensor, when it was in the graph at save time (for the
    /// error message when the tensor is gone: "which is output 0 of Mul").
    producer: Option<&'static str>,
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
            // `detach` shares the version counter, so writes through `t` or any view show.
            tensor: t.detach(),
            graph,
            version: t.version(),
            op,
            producer: t.grad_fn_name(),
        }
    }

    /// PyTorch's message for a saved tensor modified in place since it was saved. Like
    /// PyTorch 2.15, it names the tensor's current producer (after an in-place op on a graph
    /// tensor, that op) without the `Backward0` suffix: "which is output 0 of Add".
    fn modified_error(&self, now: u64) -> Error {
        let current = match &self.graph {
            GraphHandle::Strong(t) => t.grad_fn_name(),
            GraphHandle::Weak(w) => w
                .upgrade()
                .and_then(|inner| Tensor { inner }.grad_fn_name()),
        };
        let which = match current.or(self.producer) {
            Some(name) => {
                let shown = crate::tensor::grad_fn_display(name);
                let shown = shown
                    .strip_suffix("Backward0")
                    .unwrap_or(&shown)
                    .to_string();
                format!(", which is output 0 of {shown},")
            }
            None => String::new(),
        };
        Error::Autograd(format!(
            "one of the variables needed for gradient computation has been modified by an \
             inplace operation: [{} {:?}]{which} is at version {now}; expected version {} \
             instead. Hint: the backward of {} saved it; an in-place op on it, a view of it or \
             a `detach()`ed alias of it ran before backward. Use the out-of-place op, or \
             `.clone()` the tensor before modifying it.",
            legacy_type_name(&self.tensor),
            self.tensor.shape(),
            self.version,
            crate::tensor::grad_fn_display(self.op),
        ))
    }

    /// The saved value, or an error if it was modified in place since it was saved. With
    /// grad mode on (a backward pass with `create_graph`), the tensor with its place in the
    /// graph when it has one, so that the rule's result is differentiable; else detached.
    pub fn get(&self) -> Result<Tensor> {
        let now = self.tensor.version();
        if now != self.version {
            return Err(self.modified_error(now));
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

/// PyTorch's legacy type name of a tensor (`torch.FloatTensor`, `torch.cuda.LongTensor`), as
/// its autograd messages write it.
fn legacy_type_name(t: &Tensor) -> String {
    let name = t.dtype().legacy_name();
    let cuda = if t.device().is_cpu() { "" } else { "cuda." };
    format!("torch.{cuda}{name}Tensor")
}
