//! The `Module` trait: forward, hierarchical parameter names equal to PyTorch's state_dict
//! keys, train/eval mode, and state-dict save/load with clear errors.

use super::hooks::{self, RemovableHandle};
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A module seen as `Any`, so that code which rewrites a model by layer type (quantization
/// swapping `Linear` for its int8 form, like PyTorch's `type(m) is nn.Linear`) can downcast
/// it. Every `'static` type has it; call it on a `&dyn Module`, not on a `Box` (a `Box` is
/// itself `Any`).
pub trait AsAny: Any {
    /// `self` as `&dyn Any`.
    fn as_any(&self) -> &dyn Any;
    /// The box as `Box<dyn Any>`, to take the module out by value.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// A module seen as `&dyn Module`, from a concrete type or from `dyn Module` alike, so that
/// the provided methods of [`Module`] can hand `self` to code that takes any module (hooks,
/// `apply`, `named_modules`). Every module has it.
pub trait AsModule {
    /// `self` as `&dyn Module`.
    fn as_module(&self) -> &dyn Module;
}

impl<T: Module> AsModule for T {
    fn as_module(&self) -> &dyn Module {
        self
    }
}

/// A layer or model. Parameters are tensor handles that require grad; optimizers update them
/// in place, so `load_state_dict` copies values into the existing handles. `Send + Sync` so
/// that a training step can run on a compute thread (`parallel::run`).
pub trait Module: AsAny + AsModule + Send + Sync {
    /// The forward pass itself, without hooks. Run a module with [`Module::call`]
    /// (`module(x)`), which also runs its hooks; containers and models call their children
    /// that way.
    fn forward(&self, x: &Tensor) -> Result<Tensor>;

    /// `module(x)`: the forward pre-hooks, [`Module::forward`], the forward hooks, and the
    /// full backward hooks around them (see `nn/hooks.rs`). Without hooks, `forward`.
    fn call(&self, x: &Tensor) -> Result<Tensor> {
        hooks::call(self.as_module(), x)
    }

    /// The direct submodules with their attribute names (`module.named_children()`), in
    /// registration order; a leaf layer has none. The names join into the parameter names
    /// (`layers.0` then `weight` is `layers.0.weight`).
    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        Vec::new()
    }

    /// The direct submodules (`module.children()`).
    fn children(&self) -> Vec<&dyn Module> {
        self.named_children().into_iter().map(|(_, m)| m).collect()
    }

    /// This module (named `""`) and every submodule below it, depth first, parents before
    /// children, with dotted names (`module.named_modules()`). A module reached twice is
    /// listed once, as in PyTorch.
    fn named_modules(&self) -> Vec<(String, &dyn Module)> {
        let mut out: Vec<(String, &dyn Module)> = Vec::new();
        let mut stack: Vec<(String, &dyn Module)> = vec![(String::new(), self.as_module())];
        let mut seen = std::collections::HashSet::new();
        while let Some((name, m)) = stack.pop() {
            // Identity is address and type: a struct's first field shares its address.
            let id = (
                m as *const dyn Module as *const () as usize,
                m.as_any().type_id(),
            );
            if std::mem::size_of_val(m) > 0 && !seen.insert(id) {
                continue;
            }
            let children = m.named_children();
            for (child, c) in children.into_iter().rev() {
                let full = if name.is_empty() {
                    child
                } else {
                    format!("{name}.{child}")
                };
                stack.push((full, c));
            }
            out.push((name, m));
        }
        out
    }

    /// This module and every submodule (`module.modules()`), as [`Module::named_modules`].
    fn modules(&self) -> Vec<&dyn Module> {
        self.named_modules().into_iter().map(|(_, m)| m).collect()
    }

    /// Call `f` on every submodule, children before their parent, then on this module
    /// (`module.apply(fn)`, e.g. for a custom initialisation: parameters are handles, so `f`
    /// can write them in place under `no_grad`). The first error stops the walk.
    fn apply(&self, f: &mut dyn FnMut(&dyn Module) -> Result<()>) -> Result<()> {
        for child in self.children() {
            child.apply(f)?;
        }
        f(self.as_module())
    }

    /// Trainable parameters with their names relative to this module (`weight`, `0.bias`,
    /// `layers.1.weight`, ...), in registration order.
    ///
    /// By default, those of [`Module::named_children`], each under its child's name, in the
    /// children's order (as PyTorch's recursion, without its de-duplication): so a layer
    /// without parameters (an activation, a pool) and a module made only of children (a
    /// container, an MLP) need not write it. A layer that owns tensors lists them itself.
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        children_named(self, |m| m.named_parameters())
    }

    /// Non-trainable state saved in the state dict (BatchNorm's running statistics). By
    /// default, the children's buffers under their names, as [`Module::named_parameters`].
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        children_named(self, |m| m.named_buffers())
    }

    /// Switch training mode on or off, recursively (`module.train(mode)`).
    fn set_training(&mut self, _training: bool) {}

    /// True in training mode (the default).
    fn is_training(&self) -> bool {
        true
    }

    /// Training mode (`module.train()`).
    fn train(&mut self) {
        self.set_training(true)
    }

    /// Evaluation mode (`module.eval()`).
    fn eval(&mut self) {
        self.set_training(false)
    }

    /// The parameters, in the order of `named_parameters`.
    fn parameters(&self) -> Vec<Tensor> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }

    /// Total number of trainable elements.
    fn num_parameters(&self) -> usize {
        self.named_parameters().iter().map(|(_, p)| p.numel()).sum()
    }

    /// Clear every parameter's gradient (`zero_grad(set_to_none=True)`).
    fn zero_grad(&self) {
        for (_, p) in self.named_parameters() {
            p.set_grad(None);
        }
    }

    /// Move every parameter and buffer (with its gradient) to `device`, in place
    /// (`module.to(device)`); an optimizer built over the parameters keeps working.
    fn to_device(&self, device: crate::tensor::Device) -> Result<()> {
        for (_, t) in self
            .named_parameters()
            .into_iter()
            .chain(self.named_buffers())
        {
            t.move_to_(device)?;
        }
        Ok(())
    }

    /// Parameters and buffers by name (`module.state_dict()`), detached.
    fn state_dict(&self) -> BTreeMap<String, Tensor> {
        self.named_parameters()
            .into_iter()
            .chain(self.named_buffers())
            .map(|(k, v)| (k, v.detach()))
            .collect()
    }

    /// Copy values from `state` into the parameters and buffers. With `strict`, missing and
    /// unexpected keys are errors; a shape mismatch is always an error. Nothing is written
    /// unless every key checks out.
    fn load_state_dict(&self, state: &HashMap<String, Tensor>, strict: bool) -> Result<()> {
        let own: Vec<(String, Tensor)> = self
            .named_parameters()
            .into_iter()
            .chain(self.named_buffers())
            .collect();
        let mut missing = Vec::new();
        let mut bad_shapes = Vec::new();
        for (name, t) in &own {
            match state.get(name) {
                None => missing.push(name.clone()),
                Some(v) if v.shape() != t.shape() => bad_shapes.push(format!(
                    "{name}: checkpoint {:?} vs model {:?}",
                    v.shape(),
                    t.shape()
                )),
                Some(_) => {}
            }
        }
        let mut unexpected: Vec<&String> = state
            .keys()
            .filter(|k| !own.iter().any(|(n, _)| n == *k))
            .collect();
        unexpected.sort();
        missing.sort();
        if !bad_shapes.is_empty() || (strict && (!missing.is_empty() || !unexpected.is_empty())) {
            return Err(Error::invalid(
                "load_state_dict",
                format!("missing keys {missing:?}, unexpected keys {unexpected:?}, size mismatches {bad_shapes:?}"),
            ));
        }
        let _guard = no_grad();
        for (name, t) in &own {
            if let Some(v) = state.get(name) {
                t.copy_(v)?;
            }
        }
        Ok(())
    }
}

/// `named(child)` of every child of `module`, each name prefixed with the child's name: the
/// default of [`Module::named_parameters`] and [`Module::named_buffers`].
fn children_named<M: Module + ?Sized>(
    module: &M,
    named: impl Fn(&dyn Module) -> Vec<(String, Tensor)>,
) -> Vec<(String, Tensor)> {
    module
        .named_children()
        .into_iter()
        .flat_map(|(name, child)| prefixed(&name, named(child)))
        .collect()
}

/// Prefix every name with `prefix.` (how containers build hierarchical names).
pub fn prefixed(prefix: &str, named: Vec<(String, Tensor)>) -> Vec<(String, Tensor)> {
    named
        .into_iter()
        .map(|(n, t)| (format!("{prefix}.{n}"), t))
        .collect()
}

/// Hook registration on any module, concrete or behind `dyn` (`module.register_*_hook`);
/// every module has it. Import it with the `Module` trait:
/// `use tinytorch::nn::{Module, ModuleHooks};`. Hooks are keyed by the module's address:
/// register them where the module will stay (see `nn/hooks.rs`). Registering on a
/// zero-sized module is an error.
pub trait ModuleHooks {
    /// Run `hook(module, input)` before every [`Module::call`]; `Some(x)` replaces the input
    /// (`register_forward_pre_hook`).
    fn register_forward_pre_hook(
        &self,
        hook: impl Fn(&dyn Module, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<RemovableHandle>;

    /// Run `hook(module, input, output)` after the forward of every [`Module::call`];
    /// `Some(y)` replaces the output (`register_forward_hook`).
    fn register_forward_hook(
        &self,
        hook: impl Fn(&dyn Module, &Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<RemovableHandle>;

    /// Run `hook(grad_input, grad_output)` when backward has computed the gradient of the
    /// module's input (`None` when the input does not require grad) from that of its output;
    /// `Some(g)` replaces the input's gradient (`register_full_backward_hook`).
    fn register_full_backward_hook(
        &self,
        hook: impl Fn(Option<&Tensor>, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<RemovableHandle>;
}

impl<M: Module + ?Sized> ModuleHooks for M {
    fn register_forward_pre_hook(
        &self,
        hook: impl Fn(&dyn Module, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<RemovableHandle> {
        hooks::register_forward_pre_hook(self.as_module(), Arc::new(hook))
    }

    fn register_forward_hook(
        &self,
        hook: impl Fn(&dyn Module, &Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<RemovableHandle> {
        hooks::register_forward_hook(self.as_module(), Arc::new(hook))
    }

    fn register_full_backward_hook(
        &self,
        hook: impl Fn(Option<&Tensor>, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<RemovableHandle> {
        hooks::register_full_backward_hook(self.as_module(), Arc::new(hook))
    }
}
