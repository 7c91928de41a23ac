//! Thread-local grad mode: `no_grad()` returns a guard under which no op records a node.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// True unless a `no_grad` guard is alive on this thread.
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Restores the previous grad mode when dropped.
#[must_use = "grad mode is restored when the guard is dropped"]
pub struct GradModeGuard {
    prev: bool,
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.prev));
    }
}

/// Disable graph recording until the guard is dropped (`with torch.no_grad():`).
pub fn no_grad() -> GradModeGuard {
    set_grad_enabled(false)
}

/// Enable or disable graph recording until the guard is dropped.
pub fn set_grad_enabled(enabled: bool) -> GradModeGuard {
    let prev = GRAD_ENABLED.with(|g| g.replace(enabled));
    GradModeGuard { prev }
}
