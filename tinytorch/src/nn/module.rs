//! The `Module` trait: forward, hierarchical parameter names equal to PyTorch's state_dict
//! keys, train/eval mode, and state-dict save/load with clear errors.

use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::any::Any;
use std::collections::{BTreeMap, HashMap};

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

/// A layer or model. Parameters are tensor handles that require grad; optimizers update them
/// in place, so `load_state_dict` copies values into the existing handles. `Send + Sync` so
/// that a training step can run on a compute thread (`parallel::run`).
pub trait Module: AsAny + Send + Sync {
    /// The forward pass (`module(x)`).
    fn forward(&self, x: &Tensor) -> Result<Tensor>;

    /// Trainable parameters with their names relative to this module (`weight`, `0.bias`,
    /// `layers.1.weight`, ...), in registration order.
    fn named_parameters(&self) -> Vec<(String, Tensor)>;

    /// Non-trainable state saved in the state dict (BatchNorm's running statistics).
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        Vec::new()
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

/// Prefix every name with `prefix.` (how containers build hierarchical names).
pub fn prefixed(prefix: &str, named: Vec<(String, Tensor)>) -> Vec<(String, Tensor)> {
    named
        .into_iter()
        .map(|(n, t)| (format!("{prefix}.{n}"), t))
        .collect()
}
