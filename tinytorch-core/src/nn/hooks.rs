//! Module hooks (`register_forward_pre_hook`, `register_forward_hook`,
//! `register_full_backward_hook`) and the call that runs them (`Module::call`, PyTorch's
//! `module(x)`).
//!
//! Design: one process-wide registry keyed by the module's identity (its address and concrete
//! type), so that no layer carries a hook field and every `Module` implementation, ours or a
//! user's, supports hooks unchanged. `Module::call` is the normal path: containers and models
//! run their children with it, so hooks fire on submodules too. While no hook is registered
//! anywhere, `call` costs one relaxed atomic load on top of `forward`. Because the key is an
//! address:
//! - register a hook once the module sits where it will be run (after boxing it into a
//!   `Sequential`, e.g. on `seq.get(0)` or on an entry of `named_modules()`): a module moved
//!   afterwards is a different address, and its hooks stay behind (until removed);
//! - hooks do not die with their module: remove them with their handle. A module with
//!   parameters is recognised by them (the ids of its parameter handles are part of the
//!   entry), so a new module allocated at a dropped one's address does not inherit its hooks;
//!   a parameterless one could, for as long as the old hooks are not removed;
//! - zero-sized modules have no address of their own and are refused.
//!
//! The full backward hook follows PyTorch's `BackwardHook`: the input and the output go
//! through identity nodes; the output's records the gradient of the output, the input's
//! calls the hooks with (grad_input, grad_output) and passes on what they return.

use crate::autograd::is_grad_enabled;
use crate::error::{Error, Result};
use crate::nn::Module;
use crate::tensor::{Tensor, TensorId};
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

/// A forward pre-hook: given the module and its input, it returns `Some(new_input)` to
/// replace it, or `None`.
pub type ForwardPreHook = Arc<dyn Fn(&dyn Module, &Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// A forward hook: given the module, its input and its output, it returns `Some(new_output)`
/// to replace the output, or `None`.
pub type ForwardHook =
    Arc<dyn Fn(&dyn Module, &Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// A full backward hook: given the gradient w.r.t. the module's input (`None` when the input
/// does not require grad) and w.r.t. its output, it returns `Some(new_grad_input)` to replace
/// the input's gradient, or `None` (PyTorch's `hook(module, grad_input, grad_output)`, with
/// the one input and output of `Module::forward`).
pub type FullBackwardHook =
    Arc<dyn Fn(Option<&Tensor>, &Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// Which list a hook is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    ForwardPre,
    Forward,
    Backward,
}

/// A module's identity: address and concrete type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key(usize, TypeId);

impl Key {
    fn of(m: &dyn Module) -> Key {
        Key(
            m as *const dyn Module as *const () as usize,
            m.as_any().type_id(),
        )
    }
}

/// The hooks of one module, with the ids of its parameters when they were registered.
#[derive(Default, Clone)]
struct Entry {
    params: Vec<TensorId>,
    pre: Vec<(u64, ForwardPreHook)>,
    forward: Vec<(u64, ForwardHook)>,
    backward: Vec<(u64, FullBackwardHook)>,
}

impl Entry {
    fn len(&self) -> usize {
        self.pre.len() + self.forward.len() + self.backward.len()
    }
}

static REGISTRY: LazyLock<Mutex<HashMap<Key, Entry>>> = LazyLock::new(Default::default);
/// Hooks registered over all modules: `call` skips the registry while it is 0.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

fn registry() -> std::sync::MutexGuard<'static, HashMap<Key, Entry>> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

fn param_ids(m: &dyn Module) -> Vec<TensorId> {
    m.named_parameters().iter().map(|(_, p)| p.id()).collect()
}

/// Unregisters a module hook (PyTorch's `RemovableHandle`).
#[derive(Debug)]
pub struct RemovableHandle {
    key: Key,
    kind: Kind,
    id: u64,
}

impl RemovableHandle {
    /// Unregister the hook; removing it twice does nothing.
    pub fn remove(&self) {
        let mut reg = registry();
        let Some(entry) = reg.get_mut(&self.key) else {
            return;
        };
        let before = entry.len();
        match self.kind {
            Kind::ForwardPre => entry.pre.retain(|(i, _)| *i != self.id),
            Kind::Forward => entry.forward.retain(|(i, _)| *i != self.id),
            Kind::Backward => entry.backward.retain(|(i, _)| *i != self.id),
        }
        ACTIVE.fetch_sub(before - entry.len(), Ordering::Relaxed);
        if entry.len() == 0 {
            reg.remove(&self.key);
        }
    }
}

/// Add a hook to `m`'s entry with `push`; the handle that removes it.
fn register(
    m: &dyn Module,
    kind: Kind,
    push: impl FnOnce(&mut Entry, u64),
) -> Result<RemovableHandle> {
    if std::mem::size_of_val(m) == 0 {
        return Err(Error::invalid(
            "register_module_hook",
            "the module is zero-sized, so it has no address to identify it by; give it a field",
        ));
    }
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let (key, params) = (Key::of(m), param_ids(m));
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut reg = registry();
    let entry = reg.entry(key).or_default();
    if entry.params != params {
        // A dropped module's hooks at this address: they are not this module's.
        ACTIVE.fetch_sub(entry.len(), Ordering::Relaxed);
        *entry = Entry {
            params,
            ..Entry::default()
        };
    }
    push(entry, id);
    ACTIVE.fetch_add(1, Ordering::Relaxed);
    Ok(RemovableHandle { key, kind, id })
}

/// `module.register_forward_pre_hook(hook)`.
pub(crate) fn register_forward_pre_hook(
    m: &dyn Module,
    hook: ForwardPreHook,
) -> Result<RemovableHandle> {
    register(m, Kind::ForwardPre, |e, id| e.pre.push((id, hook)))
}

/// `module.register_forward_hook(hook)`.
pub(crate) fn register_forward_hook(m: &dyn Module, hook: ForwardHook) -> Result<RemovableHandle> {
    register(m, Kind::Forward, |e, id| e.forward.push((id, hook)))
}

/// `module.register_full_backward_hook(hook)`.
pub(crate) fn register_full_backward_hook(
    m: &dyn Module,
    hook: FullBackwardHook,
) -> Result<RemovableHandle> {
    register(m, Kind::Backward, |e, id| e.backward.push((id, hook)))
}

/// The hooks registered on `m` (a copy, so that hooks may register or remove hooks), if any.
fn hooks_of(m: &dyn Module) -> Option<Entry> {
    if ACTIVE.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let key = Key::of(m);
    let entry = registry().get(&key).cloned()?;
    // Checked outside the lock: named_parameters may run user code.
    (entry.params == param_ids(m)).then_some(entry)
}

/// Whether `m` has hooks (so that `module(x)` is more than its forward).
pub(crate) fn has_hooks(m: &dyn Module) -> bool {
    hooks_of(m).is_some()
}

/// `module(x)`: the forward pre-hooks, `forward`, the forward hooks, with the full backward
/// hooks wrapped around input and output.
pub(crate) fn call(m: &dyn Module, x: &Tensor) -> Result<Tensor> {
    let Some(hooks) = hooks_of(m) else {
        return m.forward(x);
    };
    let mut x = x.clone();
    for (_, pre) in &hooks.pre {
        if let Some(new) = pre(m, &x)? {
            x = new;
        }
    }
    let backward: Vec<FullBackwardHook> = hooks.backward.iter().map(|(_, h)| h.clone()).collect();
    let slot = Arc::new(Mutex::new(None::<Tensor>));
    let with_backward = !backward.is_empty() && is_grad_enabled();
    let input_in_graph = x.requires_grad();
    if with_backward && input_in_graph {
        x = wrap_input(&x, slot.clone(), backward.clone());
    }
    let mut y = m.forward(&x)?;
    for (_, fwd) in &hooks.forward {
        if let Some(new) = fwd(m, &x, &y)? {
            y = new;
        }
    }
    if with_backward && y.requires_grad() {
        y = wrap_output(&y, slot, (!input_in_graph).then_some(backward));
    }
    Ok(y)
}

/// Run the backward hooks in order on (grad_input, grad_output); the final grad_input.
fn run_backward_hooks(
    hooks: &[FullBackwardHook],
    grad_input: Option<Tensor>,
    grad_output: &Tensor,
) -> Result<Option<Tensor>> {
    let mut gi = grad_input;
    for h in hooks {
        if let Some(new) = h(gi.as_ref(), grad_output)? {
            if let Some(old) = &gi {
                if new.shape() != old.shape() {
                    return Err(Error::shape(
                        "register_full_backward_hook",
                        format!(
                            "a hook returned a grad_input of shape {:?} for an input of shape {:?}",
                            new.shape(),
                            old.shape()
                        ),
                    ));
                }
            }
            gi = Some(new);
        }
    }
    Ok(gi)
}

/// The identity node before the module: its gradient is grad_input; the hooks run on it.
fn wrap_input(
    x: &Tensor,
    slot: Arc<Mutex<Option<Tensor>>>,
    hooks: Vec<FullBackwardHook>,
) -> Tensor {
    x.with_custom_backward("BackwardHookFunction", &[x], move |g, _| {
        let grad_output = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(grad_output) = grad_output else {
            // The output's gradient did not come through the module's output (the input
            // reached the loss another way only): PyTorch calls no hook then either.
            return Ok(vec![Some(g.clone())]);
        };
        Ok(vec![run_backward_hooks(
            &hooks,
            Some(g.clone()),
            &grad_output,
        )?])
    })
}

/// The identity node after the module: it records grad_output; when the input is not in the
/// graph (`hooks` given), it calls the hooks with no grad_input.
fn wrap_output(
    y: &Tensor,
    slot: Arc<Mutex<Option<Tensor>>>,
    hooks: Option<Vec<FullBackwardHook>>,
) -> Tensor {
    y.with_custom_backward("BackwardHookFunction", &[y], move |g, _| {
        match &hooks {
            Some(hooks) => {
                run_backward_hooks(hooks, None, g)?;
            }
            None => *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(g.clone()),
        }
        Ok(vec![Some(g.clone())])
    })
}
