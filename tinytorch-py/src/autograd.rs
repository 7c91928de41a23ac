//! `torch.autograd.grad` and the engine side of `torch.autograd.Function`: a Python
//! `backward` becomes a node of the Rust graph, called back under the GIL when the engine
//! reaches it (the engine runs with the GIL released, so this never waits on itself).

use crate::error::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use tinytorch::autograd::BackwardOptions;
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
/// (None where the graph does not reach one), leaving every `.grad` alone; with
/// `create_graph`, differentiable (`retain_graph` None: as `create_graph`).
#[pyfunction]
#[pyo3(signature = (output, grad_output, inputs, retain_graph, create_graph=false))]
pub fn _autograd_grad(
    py: Python<'_>,
    output: PyRef<'_, PyTensor>,
    grad_output: Option<PyRef<'_, PyTensor>>,
    inputs: Vec<PyRef<'_, PyTensor>>,
    retain_graph: Option<bool>,
    create_graph: bool,
) -> PyResult<Vec<Option<PyTensor>>> {
    let root = output.t.clone();
    let g = grad_output.map(|g| g.t.clone());
    let ins: Vec<Tensor> = inputs.iter().map(|t| t.t.clone()).collect();
    let options = BackwardOptions {
        retain_graph,
        create_graph,
    };
    let grads = py
        .detach(|| tinytorch::autograd::grad_with_options(&root, g.as_ref(), &ins, options))
        .py()?;
    Ok(grads.into_iter().map(|g| g.map(Into::into)).collect())
}

/// Call a Python function of tensors from the Rust side (a hook, a checkpointed function),
/// under the GIL; its exception becomes an error naming `what`.
fn call_python(
    what: &'static str,
    f: &Py<PyAny>,
    args: &[Tensor],
) -> tinytorch::Result<Option<Tensor>> {
    Python::attach(|py| {
        let fail = |e: PyErr| Error::Autograd(format!("{what}: {e}"));
        let args: Vec<PyTensor> = args.iter().cloned().map(PyTensor::from).collect();
        let args = pyo3::types::PyTuple::new(py, args).map_err(fail)?;
        let out = f.call1(py, args).map_err(fail)?;
        let out: Option<PyRef<'_, PyTensor>> = out.extract(py).map_err(|_| {
            Error::Autograd(format!("{what}: the function must return a Tensor or None"))
        })?;
        Ok(out.map(|t| t.t.clone()))
    })
}

/// `torch.utils.checkpoint.checkpoint(fn, *inputs)` for a Python `fn` of the tensor inputs
/// returning one tensor (`tinytorch::autograd::checkpoint`).
#[pyfunction]
pub fn _checkpoint(
    py: Python<'_>,
    function: Py<PyAny>,
    inputs: Vec<PyRef<'_, PyTensor>>,
) -> PyResult<PyTensor> {
    let ins: Vec<Tensor> = inputs.iter().map(|t| t.t.clone()).collect();
    let f = move |xs: &[Tensor]| -> tinytorch::Result<Tensor> {
        call_python("checkpoint", &function, xs)?.ok_or_else(|| {
            Error::Autograd("checkpoint: the function returned None, not a Tensor".into())
        })
    };
    let out = py
        .detach(|| tinytorch::autograd::checkpoint(f, &ins))
        .py()?;
    Ok(out.into())
}

/// What `Tensor.register_hook` returns: `remove()` unregisters the hook.
#[pyclass(module = "tinytorch", name = "RemovableHandle")]
pub struct PyHookHandle {
    handle: tinytorch::tensor::HookHandle,
}

#[pymethods]
impl PyHookHandle {
    /// Unregister the hook (twice is fine).
    fn remove(&self) {
        self.handle.remove();
    }
}

/// `Tensor.register_hook(hook)` for a Python `hook(grad) -> Tensor or None`.
pub(crate) fn register_hook(t: &Tensor, hook: Py<PyAny>) -> PyResult<PyHookHandle> {
    let handle = t
        .register_hook(move |g| call_python("register_hook", &hook, std::slice::from_ref(g)))
        .py()?;
    Ok(PyHookHandle { handle })
}
