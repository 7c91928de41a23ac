//! Activation checkpointing (`torch.utils.checkpoint.checkpoint`, `use_reentrant=False`,
//! `preserve_rng_state=True`): the forward runs a function without recording its graph, so
//! none of its intermediate tensors stay alive; the backward runs it again with grad mode on,
//! from the same inputs and the same random-number state, and backpropagates through that
//! copy. Memory for compute: one more forward per checkpointed piece.

use super::{backward, is_grad_enabled, needs_grad, no_grad, set_grad_enabled, SavedTensor};
use crate::error::{Error, Result};
use crate::tensor::{get_rng_state, set_rng_state, GeneratorState, Tensor};
use std::sync::Arc;

/// A function checkpointed by [`checkpoint`]: it runs twice (forward, then again in backward).
pub type CheckpointFn = Arc<dyn Fn(&[Tensor]) -> Result<Tensor> + Send + Sync>;

/// Sets the default generator to a state and puts the previous one back when dropped.
struct RngSwap(GeneratorState);

impl RngSwap {
    fn to(state: &GeneratorState) -> RngSwap {
        let previous = get_rng_state();
        set_rng_state(state);
        RngSwap(previous)
    }
}

impl Drop for RngSwap {
    fn drop(&mut self) {
        set_rng_state(&self.0);
    }
}

/// `f(inputs)` without keeping its intermediate tensors for backward
/// (`torch.utils.checkpoint.checkpoint(f, *inputs, use_reentrant=False)`).
///
/// The forward runs `f` under `no_grad`; the output becomes one graph node over `inputs`.
/// Its backward restores the default generator to its state before the forward (so dropout
/// draws the same masks), runs `f` again with grad mode on from detached copies of the inputs,
/// and backpropagates the output's gradient through that graph: the gradients of the inputs
/// flow on, and the parameters `f` uses (tensors it captures) receive theirs in `.grad`
/// directly. The gradients equal those without checkpointing, bit for bit, when `f` is
/// deterministic given the generator.
///
/// Differences from PyTorch: the parameters' gradients are accumulated into `.grad` during
/// the outer backward pass even under `autograd::grad` (as with PyTorch's reentrant variant);
/// a backward with `create_graph` gives first-order gradients whose own derivative is an
/// error; only the default (CPU) generator's state is restored.
///
/// Errors when `f` fails, and in backward when the recomputed output's shape differs from
/// the forward's.
pub fn checkpoint(
    f: impl Fn(&[Tensor]) -> Result<Tensor> + Send + Sync + 'static,
    inputs: &[Tensor],
) -> Result<Tensor> {
    let refs: Vec<&Tensor> = inputs.iter().collect();
    if !is_grad_enabled() {
        return f(inputs);
    }
    let rng = get_rng_state();
    let out = {
        let _guard = no_grad();
        f(inputs)?
    };
    // Without an input in the graph f may still use parameters that require grad: the node
    // must exist anyway, so it hangs on the output of a dummy view when no input needs grad.
    let f: CheckpointFn = Arc::new(f);
    let saved: Vec<SavedTensor> = inputs.iter().map(|t| t.save("checkpoint")).collect();
    let shape = out.shape().to_vec();
    let rule = move |g: &Tensor, needs: &[bool]| -> Result<Vec<Option<Tensor>>> {
        let _rng = RngSwap::to(&rng);
        let _grad = set_grad_enabled(true);
        let leaves = saved
            .iter()
            .zip(needs)
            .map(|(s, &need)| {
                let t = s.get()?.detach();
                if need {
                    t.requires_grad_(true)
                } else {
                    Ok(t)
                }
            })
            .collect::<Result<Vec<Tensor>>>()?;
        let y = f(&leaves)?;
        if y.shape() != shape.as_slice() {
            return Err(Error::shape(
                "checkpoint",
                format!(
                    "the recomputed output has shape {:?} but the forward's had {:?}",
                    y.shape(),
                    shape
                ),
            ));
        }
        if y.requires_grad() {
            backward(&y, Some(&g.detach()), false)?;
        }
        Ok(leaves
            .iter()
            .zip(needs)
            .map(|(t, &need)| {
                let grad = if need { t.grad() } else { None };
                grad.map(|gr| gr.first_order_only("checkpoint", &[g]))
            })
            .collect())
    };
    if needs_grad(&refs) {
        return Ok(out.record("checkpoint", &refs, rule));
    }
    // No input requires grad: the parameters inside f may. Hang the node on an anchor leaf
    // that requires grad, so that backward reaches it (its own gradient is dropped).
    let anchor = Tensor::scalar(0.0f32).requires_grad_(true)?;
    let mut all = refs;
    all.push(&anchor);
    Ok(out.record("checkpoint", &all, move |g, needs| {
        let mut grads = rule(g, &needs[..needs.len() - 1])?;
        grads.push(None);
        Ok(grads)
    }))
}
