//! `torch.autograd.grad` and the engine side of `torch.autograd.Function`: a Python
//! `backward` becomes a node of the Rust graph, called back under the GIL when the engine
//! reaches it (the engine runs with the GIL released, so this never waits on itself).

use crate::error::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use tinytorch::{Error, Tensor};

/// A `'static` node name per Function class (node names are static strings; the set of
/// classes in a program is small, so each name is leaked once).
fn static_name(name: String) -> &'static str {
    static NAMES: OnceLock<Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .expect("names lock");
    names
        .entry(name)
        .or_insert_with_key(|k| Box::leak(k.clone().into_boxed_str()))
}

/// `output` (computed by a Function's `forward` under no_grad) as the output of a node
/// named `name` over `inputs`, whose backward calls `backward(grad)`: a sequence with one
/// gradient (a tensor or None) per input.
#[pyfunction]
pub fn _custom_function(
    output: PyRef<'_, PyTensor>,
    inputs: Vec<PyRef<'_, PyTensor>>,
    backward: Py<PyAny>,
    name: String,
) -> PyTensor {
    let name = static_name(name);
    let ins: Vec<Tensor> = inputs.iter().map(|t| t.t.clone()).collect();
    let refs: Vec<&Tensor> = ins.iter().collect();
    let n = ins.len();
    let rule = move |g: &Tensor, _need: &[bool]| -> tinytorch::Result<Vec<Option<Tensor>>> {
        Python::attach(|py| {
            let fail = |e: PyErr| Error::Autograd(format!("{name}: {e}"));
            let grads = backward
                .call1(py, (PyTensor::from(g.clone()),))
                .map_err(fail)?;
            let grads: Vec<Option<PyRef<'_, PyTensor>>> = grads.extract(py).map_err(fail)?;
            if grads.len() != n {
                return Err(Error::Autograd(format!(
                    "{name} returned {} gradients for {n} tensor inputs",
                    grads.len()
                )));
            }
            Ok(grads.into_iter().map(|g| g.map(|g| g.t.clone())).collect())
        })
    };
    output.t.with_custom_backward(name, &refs, rule).into()
}

/// `torch.autograd.grad` for one output: the gradients of `output` with respect to `inputs`
/// (None where the graph does not reach one), leaving every `.grad` alone.
#[pyfunction]
#[pyo3(signature = (output, grad_output, inputs, retain_graph))]
pub fn _autograd_grad(
    py: Python<'_>,
    output: PyRef<'_, PyTensor>,
    grad_output: Option<PyRef<'_, PyTensor>>,
    inputs: Vec<PyRef<'_, PyTensor>>,
    retain_graph: bool,
) -> PyResult<Vec<Option<PyTensor>>> {
    let root = output.t.clone();
    let g = grad_output.map(|g| g.t.clone());
    let ins: Vec<Tensor> = inputs.iter().map(|t| t.t.clone()).collect();
    let grads = py
        .detach(|| tinytorch::autograd::grad(&root, g.as_ref(), &ins, retain_graph))
        .py()?;
    Ok(grads.into_iter().map(|g| g.map(Into::into)).collect())
}
