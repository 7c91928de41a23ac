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
    /// The node each input had when this op ran (`None` for a leaf): the graph's edges.
    /// An in-place op on an input later gives that tensor a new node (PyTorch's history
    /// rebase), and this op's gradient must still reach the node it was computed from, so
    /// the edge is a snapshot, not a lookup through the tensor at backward time.
    pub(crate) input_nodes: Vec<Option<Arc<Node>>>,
    /// `None` once the graph has been freed by a backward pass without `retain_graph`.
    pub(crate) backward: Mutex<Option<BackwardFn>>,
    /// For a view that picks part of its one input (narrow, slice, select): where the output
    /// lies in the input, in the input's row-major coordinates. The engine then adds the
    /// upstream gradient into that part of a gradient already waiting for the input, in
    /// place, instead of running the rule (zeros of the input's size, then a full add).
    pub(crate) part: Option<Layout>,
}

impl Node {
    /// A node for op `name` on `inputs`, its edges taken from their current nodes.
    pub(crate) fn new(
        name: &'static str,
        inputs: Vec<Tensor>,
        backward: BackwardFn,
        part: Option<Layout>,
    ) -> Node {
        let input_nodes = inputs.iter().map(|t| t.node()).collect();
        Node {
            name,
            inputs,
            input_nodes,
            backward: Mutex::new(Some(backward)),
            part,
        }
    }

    /// Whether input `i` gets a gradient: it was in the graph (a node or a leaf that
    /// requires grad) when this op ran. A tensor that gained a node later (an in-place op
    /// with an operand that requires grad) was a constant here.
    pub(crate) fn input_needs_grad(&self, i: usize) -> bool {
        self.input_nodes[i].is_some() || {
            let t = &self.inputs[i];
            t.is_leaf() && t.requires_grad()
        }
    }

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
        let mut tensors: Vec<Tensor> = std::mem::take(&mut self.inputs);
        let mut nodes: Vec<Arc<Node>> = std::mem::take(&mut self.input_nodes)
            .into_iter()
            .flatten()
            .collect();
        // Only unwind what this node owned alone; shared parts are dropped by their owner.
        // A node is held by its tensor and by the edges of the nodes that used it, so both
        // lists are unwound until neither yields something owned alone.
        loop {
            if let Some(t) = tensors.pop() {
                if let Some(inner) = Arc::into_inner(t.inner) {
                    let node = inner.node.into_inner().unwrap_or_else(|e| e.into_inner());
                    nodes.extend(node);
                    tensors.extend(inner.view_base);
                }
            } else if let Some(node) = nodes.pop() {
                if let Some(mut node) = Arc::into_inner(node) {
                    tensors.append(&mut node.inputs);
                    nodes.extend(std::mem::take(&mut node.input_nodes).into_iter().flatten());
                }
            } else {
                break;
            }
        }
    }
}
