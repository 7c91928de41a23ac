//! Gradient hooks on a tensor (`Tensor.register_hook`) and `retain_grad`: what the backward
//! engine runs on a tensor's gradient once it is complete, before it flows on (a non-leaf)
//! or is accumulated into `.grad` (a leaf). The hook list lives on the tensor
//! (`tensor/hooks.rs`).

use crate::error::{Error, Result};
use crate::tensor::{next_hook_id, HookHandle, Tensor, TensorHook};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Tensor {
    /// Run `hook` on this tensor's gradient every time backward computes it
    /// (`Tensor.register_hook`), on leaves and non-leaves: the hook sees the complete
    /// gradient (the sum over every use of the tensor) and may return a replacement, which
    /// then flows on to the tensor's inputs, or into `.grad` of a leaf, and to
    /// `autograd::grad`'s result. Hooks run in registration order, each on the previous one's
    /// result; an error ends the backward pass. Errors on a tensor that does not require
    /// grad, as PyTorch does.
    pub fn register_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<HookHandle> {
        if !self.requires_grad() {
            return Err(Error::Autograd(format!(
                "register_hook: cannot register a hook on a tensor that doesn't require gradient \
                 (shape {:?}, dtype {})",
                self.shape(),
                self.dtype()
            )));
        }
        let id = next_hook_id();
        let mut hooks = self
            .inner
            .tensor_hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        hooks.push((id, Arc::new(hook)));
        self.inner.has_tensor_hooks.store(true, Ordering::Release);
        Ok(HookHandle {
            tensor: Arc::downgrade(&self.inner),
            id,
            gradient_hook: true,
        })
    }

    /// Keep this non-leaf tensor's gradient in `.grad` after backward (`Tensor.retain_grad`),
    /// accumulated over backward passes like a leaf's; a no-op on a leaf. Errors on a tensor
    /// that does not require grad, as PyTorch does.
    pub fn retain_grad(&self) -> Result<()> {
        if !self.requires_grad() {
            return Err(Error::Autograd(format!(
                "retain_grad: can't retain_grad on a tensor that has requires_grad=False \
                 (shape {:?})",
                self.shape()
            )));
        }
        if !self.is_leaf() {
            self.inner.retains_grad.store(true, Ordering::Release);
            self.inner.has_tensor_hooks.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// True when this non-leaf keeps its gradient in `.grad` (`Tensor.retains_grad`).
    pub fn retains_grad(&self) -> bool {
        self.inner.retains_grad.load(Ordering::Acquire)
    }

    /// True when backward must hand this tensor's gradient to [`Tensor::apply_grad_hooks`].
    pub(crate) fn has_tensor_hooks(&self) -> bool {
        self.inner.has_tensor_hooks.load(Ordering::Acquire)
    }

    /// Run the gradient hooks on `grad` (the engine calls it once the gradient of this
    /// tensor is complete) and return the gradient that flows on; a non-leaf that retains
    /// its gradient stores it in `.grad` last (as PyTorch runs retain_grad after the hooks).
    pub(crate) fn apply_grad_hooks(&self, grad: Tensor) -> Result<Tensor> {
        // A copy of the list: a hook may register or remove hooks.
        let hooks: Vec<TensorHook> = self
            .inner
            .tensor_hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(_, h)| h.clone())
            .collect();
        let mut grad = grad;
        for hook in hooks {
            if let Some(new) = hook(&grad)? {
                if new.shape() != grad.shape() {
                    return Err(Error::shape(
                        "register_hook",
                        format!(
                            "a hook changed the gradient's shape from {:?} to {:?}",
                            grad.shape(),
                            new.shape()
                        ),
                    ));
                }
                grad = new;
            }
        }
        if self.retains_grad() {
            let kept = if super::is_grad_enabled() {
                grad.clone()
            } else {
                grad.detach()
            };
            let new = match self.grad() {
                Some(old) => old.add(&kept)?,
                None => kept.contiguous_copy()?,
            };
            self.set_grad(Some(new));
        }
        Ok(grad)
    }
}
