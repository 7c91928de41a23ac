//! `tinytorch.profile`: the layer-by-layer profile of a Python model
//! (`tinytorch::profile::summary`) and the tensor-memory counters behind it (also
//! `torch.cuda.memory_allocated` and friends).

use crate::convert::device_of;
use crate::error::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::prelude::*;
use std::sync::Mutex;
use tinytorch::nn::Module;
use tinytorch::{Error, Result, Tensor};

/// Live tensor bytes on `device` (`torch.cuda.memory_allocated`).
#[pyfunction]
pub fn _memory_allocated(device: &Bound<'_, PyAny>) -> PyResult<usize> {
    Ok(tinytorch::tensor::memory::memory_allocated(device_of(
        device,
    )?))
}

/// The most tensor bytes live on `device` at once since the last reset
/// (`torch.cuda.max_memory_allocated`).
#[pyfunction]
pub fn _max_memory_allocated(device: &Bound<'_, PyAny>) -> PyResult<usize> {
    Ok(tinytorch::tensor::memory::max_memory_allocated(device_of(
        device,
    )?))
}

/// Start the peak over from what is live now (`torch.cuda.reset_peak_memory_stats`).
#[pyfunction]
pub fn _reset_peak_memory_stats(device: &Bound<'_, PyAny>) -> PyResult<()> {
    tinytorch::tensor::memory::reset_peak_memory_stats(device_of(device)?);
    Ok(())
}

/// A Python `nn.Module` seen as a Rust `Module`: forward calls it (taking the GIL), and its
/// parameters are its `named_parameters()`. A Python exception raised inside is kept, to be
/// raised as itself once the profile returns.
struct PythonModel {
    model: Py<PyAny>,
    error: Mutex<Option<PyErr>>,
}

impl PythonModel {
    fn keep(&self, e: PyErr) -> Error {
        let msg = e.to_string();
        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        Error::invalid("profile", format!("the model raised {msg}"))
    }
}

impl Module for PythonModel {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Python::attach(|py| {
            let out = self.model.call1(py, (PyTensor::from(x.clone()),))?;
            Ok(out.bind(py).cast::<PyTensor>()?.borrow().t.clone())
        })
        .map_err(|e: PyErr| self.keep(e))
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let got: PyResult<Vec<(String, Tensor)>> = Python::attach(|py| {
            let mut out = Vec::new();
            for item in self
                .model
                .call_method0(py, "named_parameters")?
                .bind(py)
                .try_iter()?
            {
                let (name, p): (String, Bound<'_, PyAny>) = item?.extract()?;
                out.push((name, p.cast::<PyTensor>()?.borrow().t.clone()));
            }
            Ok(out)
        });
        got.unwrap_or_else(|e| {
            self.keep(e);
            Vec::new()
        })
    }
}

/// Profile one forward and backward pass of `model` on `input`: the profile as JSON text and
/// as a table. The GIL is released while it runs (the model's forward takes it back).
#[pyfunction]
pub fn _profile_summary(
    py: Python<'_>,
    model: Py<PyAny>,
    input: PyRef<'_, PyTensor>,
) -> PyResult<(String, String)> {
    let model = PythonModel {
        model,
        error: Mutex::new(None),
    };
    let input = input.t.clone();
    let result = py.detach(|| tinytorch::profile::summary(&model, &input));
    if let Some(e) = model.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    let p = result.py()?;
    Ok((p.to_json().to_string(), p.to_string()))
}
