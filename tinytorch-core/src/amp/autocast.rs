//! The autocast scope: a thread-local target dtype, set by a guard.

use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use std::cell::Cell;

thread_local! {
    static TARGET: Cell<Option<DType>> = const { Cell::new(None) };
}

/// Restores the previous autocast state when dropped.
#[must_use = "autocast ends when the guard is dropped"]
pub struct AutocastGuard {
    previous: Option<DType>,
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        TARGET.with(|t| t.set(self.previous));
    }
}

/// Run the ops of this thread in `dtype` (f16 or bf16) until the guard drops
/// (`with torch.autocast(device_type, dtype)`).
pub fn autocast(dtype: DType) -> Result<AutocastGuard> {
    if !matches!(dtype, DType::F16 | DType::BF16) {
        return Err(Error::dtype(
            "autocast",
            format!("autocast runs in float16 or bfloat16, got {dtype}"),
        ));
    }
    let previous = TARGET.with(|t| t.replace(Some(dtype)));
    Ok(AutocastGuard { previous })
}

/// Set the autocast state of this thread (`None`: off) until the guard drops; carries a
/// caller's state onto the thread that runs its ops (`parallel::run`), and is how the Python
/// package enters and leaves its scopes.
pub fn set_autocast_dtype(dtype: Option<DType>) -> AutocastGuard {
    let previous = TARGET.with(|t| t.replace(dtype));
    AutocastGuard { previous }
}

/// The dtype of the enclosing autocast scope, if any.
pub fn autocast_dtype() -> Option<DType> {
    TARGET.with(Cell::get)
}

/// An f32 tensor cast to the autocast dtype (other tensors, and all tensors outside a
/// scope, unchanged): the inputs of ops on PyTorch's lower-precision list.
pub(crate) fn to_autocast(t: &Tensor) -> Result<Tensor> {
    match autocast_dtype() {
        Some(dt) if t.dtype() == DType::F32 => t.to_dtype(dt),
        _ => Ok(t.clone()),
    }
}

/// True for a half-precision tensor inside a scope: ops on PyTorch's f32 list (softmax,
/// log-softmax and the losses built on them) compute it in f32.
pub(crate) fn runs_in_f32(t: &Tensor) -> bool {
    autocast_dtype().is_some() && matches!(t.dtype(), DType::F16 | DType::BF16)
}
