//! A tensor's place in the autograd graph: the node of the op that produced it, holding the
//! op's inputs (the graph's edges) and its backward rule. It lives with the tensor that owns
//! it; the engine that walks the graph (`autograd/engine.rs`) and the recording of ops
//! (`autograd/mod.rs`) sit a layer above and use it from there.

use crate::error::Result;
use crate::tensor::{Layout, Tensor};
use std::sync::{Arc, Mutex};

/// The backward rule of one op: given the gradient of its output and which inputs need a
/// gradient, return one gradient per input (shape of that input), or `None`.
pub type BackwardFn = Box<dyn Fn(&Tensor, &[bool]) -> Result<Vec<Option<Tensor>>> + Send + Sync>;

/// One recorded op.
pub struct Node {
    /// Name shown as the tensor's grad_fn (`"mul"`, `"matmul"`, ...).
    pub name: &'static str,
    pub(crate) inputs: Vec<Tensor>,
    /// `None` once the graph has been freed by a backward pass without `retain_graph`.
    pub(crate) backward: Mutex<Option<BackwardFn>>,
    /// For a view that picks part of its one input (narrow, slice, select): where the output
    /// lies in the input, in the input's row-major coordinates. The engine then adds the
    /// upstream gradient into that part of a gradient already waiting for the input, in
    /// place, instead of running the rule (zeros of the input's size, then a full add).
    pub(crate) part: Option<Layout>,
}

impl Node {
    /// Whether the backward rule is still there (not freed by an earlier backward pass).
    pub(crate) fn has_rule(&self) -> bool {
        self.backward
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Frees the saved tensors; a second backward through this node then fails clearly.
    pub(crate) fn release(&self) {
        self.backward
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }
}

impl Drop for Node {
    /// Drops the chain of inputs iteratively: a graph of 100,000 ops would otherwise drop
    /// recursively and overflow the stack.
    fn drop(&mut self) {
        // The rule first: its saved tensors may hold inputs too (a saved input keeps its
        // graph for double backward), and the inputs below unwind only what nothing else holds.
        drop(
            self.backward
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        let mut stack: Vec<Tensor> = std::mem::take(&mut self.inputs);
        while let Some(t) = stack.pop() {
            // Only unwind what this node owned alone; shared parts are dropped by their owner.
            if let Some(mut inner) = Arc::into_inner(t.inner) {
                if let Some(node) = inner.node.take() {
                    if let Some(mut node) = Arc::into_inner(node) {
                        stack.append(&mut node.inputs);
                    }
                }
            }
        }
    }
}
