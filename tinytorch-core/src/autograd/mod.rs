//! Reverse-mode automatic differentiation, define-by-run. An op records a [`Node`] on its
//! output only when grad mode is on and an input requires grad; `Tensor::backward` walks the
//! recorded graph. Backward rules are written with Tensor ops, so they run on every device.

pub mod checkpoint;
mod engine;
mod grad_mode;
pub mod gradcheck;
mod saved;
mod tensor_hooks;
pub mod trace;

pub use crate::tensor::node::BackwardFn;
pub(crate) use crate::tensor::node::Node;
pub use checkpoint::checkpoint;
pub use engine::{backward, backward_with_options, grad, grad_with_options, BackwardOptions};
pub use grad_mode::{is_grad_enabled, no_grad, set_grad_enabled, GradModeGuard};
pub use saved::SavedTensor;

use crate::error::Result;
use crate::tensor::{Layout, Tensor};

/// True when an op on `inputs` must record a node.
pub fn needs_grad(inputs: &[&Tensor]) -> bool {
    is_grad_enabled() && inputs.iter().any(|t| t.requires_grad())
}

impl Tensor {
    /// A custom differentiable op (`torch.autograd.Function`): `self`, computed from `inputs`
    /// without recording a graph, becomes an op output named `name` whose backward is `rule`
    /// (given the output's gradient and which inputs need one, it returns one gradient per
    /// input, `None` for none). Without grad mode or an input that requires grad, `self` is
    /// returned detached.
    pub fn with_custom_backward(
        &self,
        name: &'static str,
        inputs: &[&Tensor],
        rule: impl Fn(&Tensor, &[bool]) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static,
    ) -> Tensor {
        self.detach().record(name, inputs, rule)
    }

    /// Record `rule` as the backward of the op that produced `self` from `inputs`, if any input
    /// requires grad (callers check [`needs_grad`] first to avoid saving tensors for nothing).
    pub(crate) fn record(
        self,
        name: &'static str,
        inputs: &[&Tensor],
        rule: impl Fn(&Tensor, &[bool]) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static,
    ) -> Tensor {
        if !needs_grad(inputs) {
            return self;
        }
        if trace::is_active() {
            trace::forward_op(name, inputs, &self);
        }
        self.set_node(Node::new(
            name,
            inputs.iter().map(|t| (*t).clone()).collect(),
            Box::new(rule),
            None,
        ))
    }

    /// Record the backward of a view that is the `part` (a layout in the input's row-major
    /// coordinates) of `input`: `rule` embeds the gradient into zeros of the input's shape,
    /// and the engine may add it into an existing gradient in place instead (see
    /// [`Node::part`]).
    pub(crate) fn record_part(
        self,
        name: &'static str,
        input: &Tensor,
        part: Layout,
        rule: impl Fn(&Tensor, &[bool]) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static,
    ) -> Tensor {
        if !needs_grad(&[input]) {
            return self;
        }
        if trace::is_active() {
            trace::forward_op(name, &[input], &self);
        }
        self.set_node(Node::new(
            name,
            vec![input.clone()],
            Box::new(rule),
            Some(part),
        ))
    }

    /// A gradient that a fused kernel computed inside a backward rule, from `inputs` (the
    /// upstream gradient and the saved graph tensors). Outside `create_graph` it is returned
    /// as is. Under `create_graph` (grad mode on in backward) it joins the graph with a node
    /// whose own backward is an error naming `op`: the first-order gradient is right, and
    /// differentiating it again fails clearly instead of silently giving zero (PyTorch's
    /// "derivative for ... is not implemented").
    pub(crate) fn first_order_only(self, op: &'static str, inputs: &[&Tensor]) -> Tensor {
        if !needs_grad(inputs) {
            return self;
        }
        self.record(op, inputs, move |_, _| {
            Err(crate::error::Error::Autograd(format!(
                "{op}: double backward (a gradient of its gradient, create_graph) is not \
                 implemented for its fused kernel"
            )))
        })
    }

    /// Save this tensor for a backward rule of `op` (detached, version-checked).
    pub(crate) fn save(&self, op: &'static str) -> SavedTensor {
        SavedTensor::new(op, self)
    }
}
