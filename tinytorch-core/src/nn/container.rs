//! Containers: `nn.Sequential` and `nn.ModuleList`.

use crate::error::{Error, Result};
use crate::nn::Module;
use crate::tensor::Tensor;

/// The children named by their index (`0`, `1`, ...): the parameter and buffer names
/// (`0.weight`) follow from them through `Module`'s defaults.
fn indexed_children(modules: &[Box<dyn Module>]) -> Vec<(String, &dyn Module)> {
    modules
        .iter()
        .enumerate()
        .map(|(i, m)| (i.to_string(), m.as_ref()))
        .collect()
}

/// Modules applied in order (`torch.nn.Sequential`); parameter names are `"<index>.<name>"`.
pub struct Sequential {
    modules: Vec<Box<dyn Module>>,
    training: bool,
}

impl Sequential {
    /// A container over `modules`.
    pub fn new(modules: Vec<Box<dyn Module>>) -> Sequential {
        Sequential {
            modules,
            training: true,
        }
    }

    /// Append a module (`Sequential.append`).
    pub fn push(&mut self, module: Box<dyn Module>) {
        self.modules.push(module);
    }

    /// Number of children (`len(seq)`).
    pub fn len(&self) -> usize {
        self.modules.len()
    }

    /// True when there are no children.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// The `i`-th child (`seq[i]`).
    pub fn get(&self, i: usize) -> Option<&(dyn Module + 'static)> {
        self.modules.get(i).map(|m| m.as_ref())
    }

    /// The children, taken out (to rebuild the container with some of them replaced).
    pub fn into_modules(self) -> Vec<Box<dyn Module>> {
        self.modules
    }
}

impl Module for Sequential {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut y = x.clone();
        for m in &self.modules {
            y = m.call(&y)?;
        }
        Ok(y)
    }

    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        indexed_children(&self.modules)
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
        for m in &mut self.modules {
            m.set_training(training);
        }
    }

    fn is_training(&self) -> bool {
        self.training
    }
}

/// A list of modules with indexed names (`torch.nn.ModuleList`). It has no forward of its own:
/// index it and call the children.
pub struct ModuleList {
    modules: Vec<Box<dyn Module>>,
    training: bool,
}

impl ModuleList {
    /// A list over `modules`.
    pub fn new(modules: Vec<Box<dyn Module>>) -> ModuleList {
        ModuleList {
            modules,
            training: true,
        }
    }

    /// Append a module (`ModuleList.append`).
    pub fn push(&mut self, module: Box<dyn Module>) {
        self.modules.push(module);
    }

    /// Number of children.
    pub fn len(&self) -> usize {
        self.modules.len()
    }

    /// True when there are no children.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// The children in order.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Module> {
        self.modules.iter().map(|m| m.as_ref())
    }
}

impl std::ops::Index<usize> for ModuleList {
    type Output = dyn Module;

    fn index(&self, i: usize) -> &(dyn Module + 'static) {
        self.modules[i].as_ref()
    }
}

impl Module for ModuleList {
    /// ModuleList has no forward (as in PyTorch): always an error.
    fn forward(&self, _x: &Tensor) -> Result<Tensor> {
        Err(Error::invalid(
            "ModuleList.forward",
            "ModuleList has no forward; index it and call its children",
        ))
    }

    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        indexed_children(&self.modules)
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
        for m in &mut self.modules {
            m.set_training(training);
        }
    }

    fn is_training(&self) -> bool {
        self.training
    }
}
