//! The storage side of gradient hooks on a tensor (`Tensor.register_hook`): the hook type
//! and their removal. Registering and running them is in `autograd/tensor_hooks.rs`.

use super::{Tensor, TensorInner};
use crate::error::Result;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A hook on a tensor's gradient: given the gradient, it returns `Some(replacement)` or
/// `None` to leave it as is (PyTorch's `hook(grad) -> Tensor or None`).
pub type TensorHook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// Unregister the hook `id` of `inner` (what [`HookHandle::remove`] does for these hooks).
pub(super) fn remove_tensor_hook(inner: &TensorInner, id: u64) {
    let mut hooks = inner.tensor_hooks.lock().unwrap_or_else(|e| e.into_inner());
    hooks.retain(|(h, _)| *h != id);
    let retains = inner.retains_grad.load(Ordering::Acquire);
    inner
        .has_tensor_hooks
        .store(!hooks.is_empty() || retains, Ordering::Release);
}
